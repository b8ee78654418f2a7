"""dataloader-worker-crash: a DataLoader worker process raises on a corrupt sample.

Failing configuration: a token dataset stored as JSON-lines shards (written by this
script into the run's folder), one of them cut off in the middle of a record, as an
interrupted copy or download leaves it; a `torch.utils.data.DataLoader` with 2 worker
processes reads the records lazily in `__getitem__`. The worker that meets the cut
record raises `json.JSONDecodeError`; the DataLoader re-raises it in the training
process as `JSONDecodeError: Caught JSONDecodeError in DataLoader worker process N`
with the worker's original traceback, and training stops.

Fix: validate the shards once before training and drop (and report) records that do
not parse, so that workers only ever see good records.

Run alone: `python dataloader_worker_crash.py WORKDIR [--fix]`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from triage.repro.spec import Context, Run

NAME = "dataloader-worker-crash"
ORDER = 50
EXPECTED = "dataloader-worker-crash"
DEVICE = "cpu"
SUMMARY = "a DataLoader with 2 workers reads JSON-lines shards, one cut mid-record: a worker raises"
FAILURE = (
    "torch DataLoader(num_workers=2) over JSON-lines shards, one truncated mid-record "
    "(the worker's JSONDecodeError is re-raised in the trainer)"
)
FIX = "validate the shards before training and drop records that do not parse"
TIMEOUT_S = 90.0
NOT = ["host-oom-killed"]

SHARDS, RECORDS, SEQ = 4, 24, 32


def command(ctx: Context) -> list[str]:
    """Run this file with the scenario's interpreter."""
    return [ctx.python, __file__, str(ctx.workdir), *(["--fix"] if ctx.fix else [])]


def reproduced(run: Run) -> bool:
    """The training process died of an exception raised in a DataLoader worker."""
    return not run.ok and run.has("in DataLoader worker process")


def write_shards(data: Path) -> None:
    """SHARDS JSON-lines shards of RECORDS token records; the last one cut mid-record."""
    import json
    import random

    data.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for s in range(SHARDS):
        lines = [json.dumps({"input_ids": [rng.randrange(256) for _ in range(SEQ)]}) for _ in range(RECORDS)]
        text = "\n".join(lines) + "\n"
        if s == SHARDS - 1:  # the interrupted copy: ends in the middle of record 12
            cut = text.index("\n", len(text) // 2) + 20
            text = text[:cut] + "\n"
        (data / f"shard-{s:03d}.jsonl").write_text(text)


def shard_dataset(root: Path, validate: bool) -> Any:
    """A torch Dataset over the shards' records, parsed lazily in the worker (as big
    corpora are); with `validate`, records that do not parse are dropped up front."""
    import json

    import torch
    from torch.utils.data import Dataset

    class Shards(Dataset[torch.Tensor]):
        """Records located by (file, line); parsed lazily in the worker, like big corpora."""

        def __init__(self) -> None:
            self.index: list[tuple[Path, int]] = []
            for f in sorted(root.glob("*.jsonl")):
                for i, line in enumerate(f.read_text().splitlines()):
                    if validate:
                        try:
                            json.loads(line)
                        except json.JSONDecodeError as e:
                            print(f"Skipping malformed record {f.name}:{i + 1} ({e.msg})", flush=True)
                            continue
                    self.index.append((f, i))

        def __len__(self) -> int:
            return len(self.index)

        def __getitem__(self, k: int) -> torch.Tensor:
            f, i = self.index[k]
            rec = json.loads(f.read_text().splitlines()[i])
            return torch.tensor(rec["input_ids"])

    return Shards()


def train(ds: Any) -> None:
    """Train a tiny model over `ds` with 2 DataLoader worker processes."""
    import torch
    from torch.utils.data import DataLoader

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(256, 32), torch.nn.Linear(32, 256))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loader = DataLoader(ds, batch_size=8, shuffle=False, num_workers=2)
    for step, ids in enumerate(loader, start=1):
        logits = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)


def main(workdir: str, fix: bool) -> int:
    """Write the shards, then train a tiny model over them with worker processes."""
    data = Path(workdir) / "data"
    write_shards(data)
    print("Loading dataset...", flush=True)
    ds = shard_dataset(data, validate=fix)
    print(f"{len(ds)} records in {SHARDS} shards", flush=True)
    train(ds)
    print("Training completed.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], "--fix" in sys.argv[2:]))
