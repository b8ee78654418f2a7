"""The target model: transformers Qwen3ForCausalLM, built from a config or loaded from a folder."""

from __future__ import annotations

import copy
import time
from typing import cast

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from dflash_runtime.config import Config
from dflash_runtime.data import make_loader


def qwen3_config(cfg: Config, num_layers: int | None = None) -> Qwen3Config:
    """A Qwen3Config with the shapes of `cfg` (`num_layers` overrides the target depth)."""
    return Qwen3Config(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=num_layers if num_layers is not None else cfg.num_target_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        head_dim=cfg.head_dim,
        max_position_embeddings=cfg.max_position,
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_theta},
        tie_word_embeddings=cfg.tie_embeddings,
        pad_token_id=cfg.pad_token_id,
        use_cache=False,
    )


def shapes_from_checkpoint(cfg: Config, path: str) -> Config:
    """`cfg` with the target shapes of the checkpoint in `path` (its config.json)."""
    hf = Qwen3Config.from_pretrained(path)
    rope = hf.rope_parameters or {}
    return cfg.replace(
        vocab_size=hf.vocab_size,
        hidden_size=hf.hidden_size,
        intermediate_size=hf.intermediate_size,
        num_target_layers=hf.num_hidden_layers,
        num_heads=hf.num_attention_heads,
        num_kv_heads=hf.num_key_value_heads,
        head_dim=hf.head_dim,
        rope_theta=float(cast(float, rope.get("rope_theta", cfg.rope_theta))),
        tie_embeddings=bool(hf.tie_word_embeddings),
        mask_token_id=cfg.mask_token_id if cfg.mask_token_id < hf.vocab_size else -1,
        target_path=path,
    )


def pretrain(model: Qwen3ForCausalLM, cfg: Config, seed: int) -> float:
    """Train the target briefly on generated data so its predictions follow the chain.

    Returns the final next-token accuracy. Nothing is cached on disk.
    """
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.target_lr, weight_decay=0.0)
    loader = iter(make_loader(cfg.replace(num_samples=512), seed=seed + 1))
    model.train()
    acc = 0.0
    for _ in range(cfg.target_pretrain_steps):
        batch = next(loader)
        ids = batch["input_ids"]  # [B, S]
        labels = ids.masked_fill(ids == cfg.pad_token_id, -100)
        out = model(input_ids=ids, labels=labels)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        pred = out.logits[:, :-1].argmax(-1)
        valid = labels[:, 1:] != -100
        acc = ((pred == labels[:, 1:]) & valid).sum().item() / max(1, valid.sum().item())
    model.eval()
    return acc


def build_target(cfg: Config, seed: int, log: bool = True) -> Qwen3ForCausalLM:
    """A randomly initialised target with `cfg` shapes, pretrained if the preset asks for it."""
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(qwen3_config(cfg))
    if cfg.target_pretrain_steps > 0:
        t0 = time.perf_counter()
        acc = pretrain(model, cfg, seed)
        if log:
            print(
                f"Pretrained target {cfg.target_pretrain_steps} steps "
                f"acc {acc:.3f} in {time.perf_counter() - t0:.1f}s",
                flush=True,
            )
    return freeze(model)


def load_target(path: str, device: str, dtype: torch.dtype = torch.float32) -> Qwen3ForCausalLM:
    """Load a local checkpoint folder with device_map (this is the path that needs accelerate)."""
    model = Qwen3ForCausalLM.from_pretrained(path, device_map=device, dtype=dtype)
    return freeze(model)


def freeze(model: Qwen3ForCausalLM) -> Qwen3ForCausalLM:
    """Eval mode, no gradients: the target is never trained by the drafter run."""
    model.eval()
    model.requires_grad_(False)
    return model


def load_targets(
    cfg: Config, devices: list[str], seed: int, dtype: torch.dtype = torch.float32
) -> list[Qwen3ForCausalLM]:
    """T target models, one per entry of `devices`, with the phase markers the logs rely on."""
    print(f"Loading {len(devices)} target models...", flush=True)
    base = None if cfg.target_path else build_target(cfg, seed)
    targets = []
    for i, device in enumerate(devices):
        print(f"Target {i} on {device}...", flush=True)
        if cfg.target_path:
            targets.append(load_target(cfg.target_path, device, dtype))
        else:
            assert base is not None
            # transformers wraps `.to` in a decorator its stubs type as unbound
            targets.append(copy.deepcopy(base).to(device=device, dtype=dtype))  # type: ignore[call-arg]
    return targets


@torch.no_grad()
def target_features(
    model: Qwen3ForCausalLM, input_ids: torch.Tensor, layer_ids: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states of the chosen layers, concatenated, and the logits.

    input_ids: [B, S]. Returns features [B, S, K*d] and logits [B, S, V].
    hidden_states[0] is the embedding output, so layer i is at index i + 1.
    """
    out = model(input_ids=input_ids, output_hidden_states=True)
    feats = torch.cat([out.hidden_states[i + 1] for i in layer_ids], dim=-1)
    return feats, out.logits


def save_target(model: Qwen3ForCausalLM, path: str) -> None:
    """Write a checkpoint folder that `load_target` (from_pretrained) can read."""
    model.save_pretrained(path)
