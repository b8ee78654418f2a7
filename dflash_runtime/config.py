"""Run configuration: one dataclass, derived fields in __post_init__, named presets."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

# Paper Eq. 4 decay constants per block size (dflash.md section 2, "Loss").
_GAMMA_FOR_BLOCK = {16: 7.0, 10: 5.0, 8: 4.0}


def build_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """Evenly spaced target layers from 1 to n-3 (the middle one for a single draft layer).

    36 target layers and 5 draft layers give [1, 9, 17, 25, 33], as in z-lab/dflash.
    """
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, max(1, num_target_layers - 3)
    span = end - start
    return [round(start + i * span / (num_draft_layers - 1)) for i in range(num_draft_layers)]


@dataclass
class Config:
    """Everything a run needs. Shapes of the target, the drafter, the data and the optimiser."""

    preset: str = "tiny"
    # Target (Qwen3ForCausalLM).
    vocab_size: int = 256
    hidden_size: int = 64
    intermediate_size: int = 128
    num_target_layers: int = 6
    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 16
    rope_theta: float = 10000.0
    max_position: int = 1024
    tie_embeddings: bool = False
    target_path: str | None = None  # local checkpoint folder; required by real-size presets
    needs_checkpoint: bool = False
    target_pretrain_steps: int = 120  # brief training on generated data so the target is predictable
    target_lr: float = 3e-3
    # Drafter.
    num_draft_layers: int = 2
    block_size: int = 8
    gamma: float = 0.0  # 0: derived from block_size
    mask_token_id: int = -1  # -1: derived (last vocab row, never produced by the data)
    pad_token_id: int = -1  # -1: derived (second to last vocab row)
    target_layer_ids: list[int] = field(default_factory=list)  # empty: derived
    # Data (a low-entropy Markov chain over `data_vocab` tokens, see data.py).
    data_vocab: int = 32
    chain_seed: int = 1234  # the "world": fixed across runs so target and drafter share it
    chain_p: float = 0.9  # probability of the deterministic successor
    # 0: the Markov chain, whose anchor alone fixes a block's continuation (a drafter
    # needs no target for it). P > 0: a copy task with period P (data.py), where only the
    # context before the anchor, seen through the target's features, tells what follows.
    data_period: int = 0
    seq_len: int = 64  # maximum sequence length
    min_len: int = 40
    prompt_len: int = 8  # unsupervised prefix (loss_mask 0), like a chat prompt
    pad_multiple: int = 64  # pad batches to a multiple of this (= seq_len: fixed shapes for flex)
    num_samples: int = 4096
    batch_size: int = 16
    num_anchors: int = 8
    # Memory: the loss over `head_chunk` positions at a time (0: the full logits at once),
    # and draft layers recomputed in backward instead of keeping their activations.
    head_chunk: int = 0
    activation_checkpointing: bool = False
    # Optimiser.
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup_steps: int = 5
    grad_clip: float = 1.0
    steps: int = 60
    seed: int = 0
    # Evaluation.
    eval_prompts: int = 8
    eval_new_tokens: int = 40
    # Ablation: the drafter sees zeros instead of the target's features (in training and
    # decoding), to measure how much it relies on them.
    zero_target_features: bool = False

    def __post_init__(self) -> None:
        if self.gamma <= 0:
            self.gamma = _GAMMA_FOR_BLOCK.get(self.block_size, max(1.0, self.block_size / 2))
        if self.mask_token_id < 0:
            self.mask_token_id = self.vocab_size - 1
        if self.pad_token_id < 0:
            self.pad_token_id = self.vocab_size - 2
        if not self.target_layer_ids:
            self.target_layer_ids = build_target_layer_ids(self.num_target_layers, self.num_draft_layers)
        if len(self.target_layer_ids) != self.num_draft_layers:
            raise ValueError("target_layer_ids needs one layer per draft layer")
        if max(self.target_layer_ids) >= self.num_target_layers:
            raise ValueError(f"target_layer_ids {self.target_layer_ids} out of range")
        if self.data_period and not self.block_size <= self.data_period <= self.prompt_len:
            # A shorter period puts a block's copy source at or after its anchor; a longer
            # one than the prompt leaves the eval continuation undetermined.
            raise ValueError("data_period must be between block_size and prompt_len")
        if self.data_vocab > self.vocab_size - 2:
            raise ValueError("data_vocab must leave room for the pad and mask tokens")
        self.pad_multiple = max(1, self.pad_multiple)
        self.min_len = min(self.min_len, self.seq_len)

    @property
    def num_kv_groups(self) -> int:
        """Query heads per key/value head (GQA)."""
        return self.num_heads // self.num_kv_heads

    def padded_len(self, length: int) -> int:
        """Length a batch whose longest sequence is `length` is padded to."""
        return math.ceil(length / self.pad_multiple) * self.pad_multiple

    def replace(self, **changes: Any) -> Config:
        """A copy with `changes`, derived fields recomputed unless given."""
        base = dataclasses.asdict(self)
        for derived in ("gamma", "mask_token_id", "pad_token_id", "target_layer_ids"):
            if derived not in changes:
                base[derived] = field_default(derived)
        base.update(changes)
        return Config(**base)


def field_default(name: str) -> Any:
    """The declared default of a Config field (derived fields use a sentinel)."""
    f = Config.__dataclass_fields__[name]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


_QWEN3_06B = dict(
    vocab_size=151936,
    hidden_size=1024,
    intermediate_size=3072,
    num_target_layers=28,
    num_heads=16,
    num_kv_heads=8,
    head_dim=128,
    rope_theta=1_000_000.0,
    tie_embeddings=True,
    max_position=40960,
    mask_token_id=151669,
)

# What the real-size presets share: a local checkpoint, 5 draft layers (z-lab's drafters),
# no target pretraining, and the SpecForge recipe's lr.
_REAL_SIZE: dict = dict(
    needs_checkpoint=True,
    num_draft_layers=5,
    block_size=16,
    target_pretrain_steps=0,
    data_vocab=4096,
    min_len=1024,
    prompt_len=64,
    lr=6e-4,
    eval_prompts=2,
    head_chunk=4096,
    activation_checkpointing=True,
)

PRESETS: dict[str, dict[str, Any]] = {
    # CPU in seconds: 6-layer d=64 target trained briefly on a Markov chain, 2-layer drafter.
    "tiny": {},
    # The tiny shapes on a copy task: a drafter must read the target's features to know
    # what follows an anchor (on the Markov chain the anchor alone tells it).
    "tiny-copy": dict(data_period=12, prompt_len=12, num_samples=1024, target_pretrain_steps=140),
    # Qwen3-0.6B shapes with random init, for one GPU: throughput and MFU, not quality.
    "small": dict(
        _QWEN3_06B,
        num_draft_layers=5,
        block_size=16,
        target_pretrain_steps=0,
        data_vocab=4096,
        seq_len=1024,
        min_len=768,
        prompt_len=64,
        pad_multiple=256,
        batch_size=4,
        num_anchors=64,
        lr=6e-4,
        num_samples=2048,
        eval_prompts=2,
        eval_new_tokens=64,
    ),
    # Real sizes: shapes are read from the local checkpoint given with --target-path.
    "qwen3-0.6b": dict(
        _QWEN3_06B,
        **_REAL_SIZE,
        seq_len=2048,
        pad_multiple=256,
        batch_size=2,
        num_anchors=256,
    ),
    "qwen3-8b": dict(
        _REAL_SIZE,
        vocab_size=151936,
        hidden_size=4096,
        intermediate_size=12288,
        num_target_layers=36,
        num_heads=32,
        num_kv_heads=8,
        head_dim=128,
        rope_theta=1_000_000.0,
        max_position=40960,
        mask_token_id=151669,
        seq_len=3072,
        pad_multiple=512,
        batch_size=4,
        num_anchors=512,
    ),
}


def preset(name: str, **overrides: Any) -> Config:
    """The named preset with `overrides` applied (None values are ignored)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    values = {"preset": name, **PRESETS[name]}
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Config(**values)
