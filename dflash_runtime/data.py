"""Generated training data: a low-entropy Markov chain, bucketed by length.

Each token has one likely successor (probability `chain_p`) and otherwise a uniform
random one. A target trained briefly on it is predictable, so a drafter can learn to
guess several tokens ahead and acceptance length means something.

With `data_period` P > 0 the data is a copy task instead: the first P tokens are
random and every later token repeats the one P positions back (probability `chain_p`,
else a random token). The anchor of a draft block then says nothing about what follows
it; the context before the anchor, which the drafter sees only through the target's
features, says everything. A drafter that ignores the target is right 1 time in
`data_vocab`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from dflash_runtime.config import Config

Sample = dict[str, torch.Tensor]


def chain_successors(cfg: Config) -> torch.Tensor:
    """The deterministic successor of each data token: one random cycle through all tokens.

    A single cycle (no fixed points or short loops) keeps greedy continuations varied.
    """
    g = torch.Generator().manual_seed(cfg.chain_seed)
    order = torch.randperm(cfg.data_vocab, generator=g)
    succ = torch.empty_like(order)
    succ[order] = order.roll(-1)
    return succ


def generate_sequence(cfg: Config, length: int, g: torch.Generator) -> torch.Tensor:
    """One sequence of `length` tokens from the chain (or the copy task). Returns [length]."""
    succ = chain_successors(cfg).tolist()
    period = cfg.data_period
    follow = (torch.rand(length, generator=g) < cfg.chain_p).tolist()
    noise = torch.randint(cfg.data_vocab, (length,), generator=g).tolist()
    ids = [noise[0]]
    for t in range(1, length):
        if period:
            ids.append(ids[t - period] if t >= period and follow[t] else noise[t])
        else:
            ids.append(succ[ids[-1]] if follow[t] else noise[t])
    return torch.tensor(ids, dtype=torch.long)


class ChainDataset(Dataset[Sample]):
    """`num_samples` sequences of random length in [min_len, seq_len] with a loss mask."""

    def __init__(self, cfg: Config, seed: int, num_samples: int | None = None) -> None:
        g = torch.Generator().manual_seed(seed)
        n = num_samples if num_samples is not None else cfg.num_samples
        lengths = torch.randint(cfg.min_len, cfg.seq_len + 1, (n,), generator=g).tolist()
        self.samples: list[Sample] = []
        for length in lengths:
            ids = generate_sequence(cfg, length, g)
            loss_mask = torch.ones(length, dtype=torch.long)
            loss_mask[: cfg.prompt_len] = 0  # the "prompt" is context only
            self.samples.append({"input_ids": ids, "loss_mask": loss_mask})

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> Sample:
        return self.samples[i]


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar length: sort chunks of `bucket_batches` batches by length, shuffle.

    Iterates forever (one shuffled epoch after another) so the trainer decides when to stop.
    """

    def __init__(self, lengths: list[int], batch_size: int, seed: int, bucket_batches: int = 8):
        self.lengths = lengths
        self.batch_size = batch_size
        self.seed = seed
        self.chunk = batch_size * bucket_batches

    def __iter__(self) -> Iterator[list[int]]:
        rng = random.Random(self.seed)
        while True:
            order = list(range(len(self.lengths)))
            rng.shuffle(order)
            batches: list[list[int]] = []
            for c in range(0, len(order), self.chunk):
                chunk = sorted(order[c : c + self.chunk], key=lambda i: self.lengths[i])
                batches += [
                    chunk[b : b + self.batch_size]
                    for b in range(0, len(chunk) - self.batch_size + 1, self.batch_size)
                ]
            rng.shuffle(batches)
            yield from batches


class Collate:
    """Right-pad a list of samples to `cfg.padded_len(longest)` (a picklable callable)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def __call__(self, samples: list[Sample]) -> Sample:
        width = self.cfg.padded_len(max(len(s["input_ids"]) for s in samples))
        ids = torch.full((len(samples), width), self.cfg.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(samples), width), dtype=torch.long)
        for row, s in enumerate(samples):
            n = len(s["input_ids"])
            ids[row, :n] = s["input_ids"]
            mask[row, :n] = s["loss_mask"]
        return {"input_ids": ids, "loss_mask": mask}  # each: [B, S]


def bucket_widths(cfg: Config) -> list[int]:
    """Every padded batch width the bucketing can produce (one flex compile each)."""
    return sorted({cfg.padded_len(n) for n in range(cfg.min_len, cfg.seq_len + 1)})


def resize_batch(batch: Sample, width: int, cfg: Config) -> Sample:
    """`batch` cut or right-padded to `width` positions (padding unsupervised), so a
    warm-up can compile the shape of a batch it has not drawn yet."""
    ids, mask = batch["input_ids"][:, :width], batch["loss_mask"][:, :width]
    extra = width - ids.shape[1]
    if extra > 0:
        ids = torch.cat([ids, ids.new_full((ids.shape[0], extra), cfg.pad_token_id)], dim=1)
        mask = torch.cat([mask, mask.new_zeros((mask.shape[0], extra))], dim=1)
    return {"input_ids": ids, "loss_mask": mask}


def make_loader(cfg: Config, seed: int, num_workers: int = 0) -> DataLoader[Sample]:
    """An endless DataLoader of bucketed, padded batches."""
    ds = ChainDataset(cfg, seed)
    lengths = [len(s["input_ids"]) for s in ds.samples]
    return DataLoader(
        ds,
        batch_sampler=BucketBatchSampler(lengths, cfg.batch_size, seed),
        collate_fn=Collate(cfg),
        num_workers=num_workers,
        persistent_workers=num_workers > 0,
    )


def eval_prompts(cfg: Config, seed: int) -> list[torch.Tensor]:
    """Held-out prompts for speculative decoding, each [prompt_len]."""
    g = torch.Generator().manual_seed(seed + 10_007)
    return [generate_sequence(cfg, cfg.prompt_len, g) for _ in range(cfg.eval_prompts)]
