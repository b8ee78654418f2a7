"""Accuracy of `triage logs` on an independent corpus of messy, realistic logs.

    python bench/accuracy.py                    # tests/corpus, one line per log, then totals
    python bench/accuracy.py --misses           # only the logs that miss or violate
    python bench/accuracy.py --json out.json    # per-log results for scripts
    python bench/accuracy.py --only nccl        # logs whose path contains a word
    python bench/accuracy.py --corpus tests/corpus_real --top1-min 0.95 --top3-min 0.98 --benign-min 0.95

The corpus (tests/corpus/labels.toml + logs/) stands in for the hidden set of issue 4:
real third-party logs pasted into public issue threads. Every log runs through the whole
pipeline (`triage.engine.analyze`, with `--evidence` semantics where a snapshot sits
beside it). Measured, as issue 4 states the goals:

- top-1: the first diagnosis is the expected signature (or a listed alternate);
- top-3: it is among the first three;
- wrong confirmed: a `confirmed` diagnosis whose signature is neither expected, an
  alternate, nor listed in `also` (consequences really present in the log);
- benign violations: a log labelled "none" that gets any `likely` or `confirmed` diagnosis.

top-1/top-3 are over the logs that have a signature; a benign log counts as right when it
has no likely/confirmed diagnosis (reported separately). Exit 1 when top-1 < 0.90,
top-3 < 0.97, any wrong confirmed, or any benign violation; 2 on a bad corpus. A corpus
with other goals passes its own thresholds: --top1-min, --top3-min, and --benign-min (the
share of benign logs that must stay quiet; 1.0, the default, allows no violation).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from triage.engine import analyze, get_rules  # noqa: E402
from triage.model import Confidence, Report  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
TOP1_MIN = 0.90
TOP3_MIN = 0.97
ROOT_LINE_MIN = 0.90
BENIGN_MIN = 1.0  # share of benign logs with no likely/confirmed diagnosis: all of them

# The canonical ids of shared/reference/signatures.md (kept here so the corpus can be
# checked from a fresh clone, which has no shared/ folder).
CANONICAL = (
    "missing-accelerate",
    "missing-module",
    "extension-import-error",
    "cuda-version-mismatch",
    "hub-unreachable",
    "fx-tracing-flag-race",
    "inductor-compile-error",
    "torch-compile-recompile-limit",
    "cuda-oom",
    "host-oom-killed",
    "dataloader-shm",
    "dataloader-worker-crash",
    "cuda-illegal-memory-access",
    "device-side-assert",
    "gpu-fell-off-bus",
    "gpu-ecc-error",
    "xid-error",
    "nccl-timeout",
    "nccl-error",
    "rendezvous-failure",
    "torchrun-child-failed",
    "nan-loss",
    "checkpoint-save-failed",
    "checkpoint-load-corrupt",
    "disk-full",
    "killed-by-signal",
    "training-hang",
    "truncated-unknown",
)
BENIGN = "none"
# Signatures added after the first list (issue 14): real logs needed them. Kept apart so
# the older corpora's per-signature coverage checks stay over the first list.
ADDED = ("cuda-launch-failure", "fatal-signal")
# No signature fits: the report must still lead with the root error line (label `root`).
UNCLASSIFIED = "unclassified-error"


class CorpusError(Exception):
    """The corpus or its labels are malformed (exit 2)."""


@dataclass(frozen=True)
class Label:
    """One [[log]] entry of labels.toml."""

    path: Path
    expected: str
    alternates: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    evidence: Path | None = None
    origin: str = ""
    why: str = ""
    source: str = ""  # the public thread a reconstructed log came from: owner/repo#N
    root: str = ""  # unclassified-error: text of the root error line

    @property
    def accepted(self) -> frozenset[str]:
        """Signatures that count as a right answer."""
        return frozenset((self.expected, *self.alternates)) - {BENIGN}


@dataclass
class Result:
    """What triage said about one log, and how that scores."""

    path: str
    expected: str
    accepted: list[str]
    diagnoses: list[tuple[str, str, str]]  # (signature, confidence, role), best first
    top1: bool
    top3: bool
    wrong_confirmed: list[str] = field(default_factory=list)
    benign_violation: bool = False
    error: str = ""
    root_line: bool | None = None  # labels with `root`: the top diagnosis's first evidence is it

    @property
    def benign(self) -> bool:
        return self.expected == BENIGN

    @property
    def ok(self) -> bool:
        return (
            self.top1
            and not self.wrong_confirmed
            and not self.benign_violation
            and not self.error
            and self.root_line is not False
        )


@dataclass
class Summary:
    """Totals over the corpus and the verdict against issue 4's thresholds."""

    logs: int
    signature_logs: int
    benign_logs: int
    top1: float
    top3: float
    wrong_confirmed: int
    benign_violations: int
    errors: int
    seconds: float
    root_logs: int = 0
    root_line: float = 1.0
    # the thresholds this corpus is held to (issue 4's unless a corpus has its own goals)
    top1_min: float = TOP1_MIN
    top3_min: float = TOP3_MIN
    benign_min: float = BENIGN_MIN

    @property
    def benign_quiet(self) -> float:
        """Share of benign logs with no likely/confirmed diagnosis (1.0 without benign logs)."""
        return (self.benign_logs - self.benign_violations) / self.benign_logs if self.benign_logs else 1.0

    @property
    def passed(self) -> bool:
        """Whether the corpus meets every threshold."""
        return (
            self.top1 >= self.top1_min
            and self.top3 >= self.top3_min
            and self.wrong_confirmed == 0
            and self.benign_quiet >= self.benign_min
            and self.errors == 0
            and self.root_line >= ROOT_LINE_MIN
        )


def load_labels(corpus: Path = CORPUS) -> list[Label]:
    """Read and check labels.toml: known signatures, files that exist, no unlabelled log."""
    path = corpus / "labels.toml"
    # labels.toml, or one file per part under labels.d/ (several authors at once)
    parts = ([path] if path.is_file() else []) + sorted(corpus.glob("labels.d/*.toml"))
    data: dict[str, list[dict[str, Any]]] = {"log": []}
    for part in parts or [path]:
        try:
            data["log"] += tomllib.loads(part.read_text(encoding="utf-8")).get("log", [])
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise CorpusError(f"{part}: {e}") from None
    known = set(CANONICAL) | set(ADDED) | {BENIGN, UNCLASSIFIED}
    labels: list[Label] = []
    for i, raw in enumerate(data.get("log", [])):
        where = f"{path} [[log]] #{i + 1}"
        unknown = set(raw) - {
            "path",
            "expected",
            "alternates",
            "also",
            "evidence",
            "origin",
            "why",
            "source",
            "root",
        }
        if unknown:
            raise CorpusError(f"{where}: unknown keys {sorted(unknown)}")
        for key in ("path", "expected", "origin"):
            if not raw.get(key):
                raise CorpusError(f"{where}: missing {key!r}")
        sigs = [raw["expected"], *raw.get("alternates", []), *raw.get("also", [])]
        bad = [s for s in sigs if s not in known]
        if bad:
            raise CorpusError(f"{where}: unknown signatures {bad}")
        if raw["expected"] == UNCLASSIFIED and not raw.get("root"):
            raise CorpusError(f"{where}: unclassified-error needs 'root' (the root error line's text)")
        if raw.get("alternates") and not raw.get("why"):
            raise CorpusError(f"{where}: alternates need a 'why'")
        log = corpus / raw["path"]
        if not log.is_file():
            raise CorpusError(f"{where}: no file {log}")
        ev = corpus / raw["evidence"] if raw.get("evidence") else None
        if ev is not None and not ev.is_file():
            raise CorpusError(f"{where}: no evidence file {ev}")
        labels.append(
            Label(
                log,
                raw["expected"],
                tuple(raw.get("alternates", ())),
                tuple(raw.get("also", ())),
                ev,
                raw["origin"],
                raw.get("why", ""),
                raw.get("source", ""),
                raw.get("root", ""),
            )
        )
    if not labels:
        raise CorpusError(f"{path}: no [[log]] entries")
    dupes = {lb.path for lb in labels if sum(o.path == lb.path for o in labels) > 1}
    if dupes:
        raise CorpusError(f"{path}: logs labelled twice: {sorted(map(str, dupes))}")
    labelled = {lb.path.resolve() for lb in labels}
    stray = [p for p in sorted((corpus / "logs").glob("*.log")) if p.resolve() not in labelled]
    if stray:
        raise CorpusError(f"{path}: logs without a label: {[p.name for p in stray]}")
    return labels


def _facts(label: Label) -> dict[str, Any] | None:
    if label.evidence is None:
        return None
    from triage.evidence import facts_from_snapshot, load_snapshot

    return facts_from_snapshot(load_snapshot(str(label.evidence)))


def score_one(label: Label, corpus: Path = CORPUS) -> Result:
    """Triage one log and score it against its label."""
    rel = str(label.path.relative_to(corpus))
    try:
        report: Report = analyze([str(label.path)], rules=get_rules(), facts=_facts(label))
    except Exception as e:  # a crash is a miss, not the end of the benchmark
        return Result(
            rel, label.expected, sorted(label.accepted), [], False, False, error=f"{type(e).__name__}: {e}"
        )
    diags = [(d.signature, d.confidence.label, d.role) for d in report.diagnoses]
    sigs = [s for s, _, _ in diags]
    violation = False
    if label.expected == BENIGN:
        violation = any(d.confidence >= Confidence.LIKELY for d in report.diagnoses)
        top1 = top3 = not violation
    else:
        top1 = bool(sigs) and sigs[0] in label.accepted
        top3 = any(s in label.accepted for s in sigs[:3])
    fine = label.accepted | set(label.also)
    wrong = [
        d.signature
        for d in report.diagnoses
        if d.confidence == Confidence.CONFIRMED and d.signature not in fine
    ]
    root_line = None
    if label.root:
        top = report.diagnoses[0] if report.diagnoses else None
        first = top.evidence[0].text if top is not None and top.evidence else ""
        root_line = label.root in first
    return Result(
        rel, label.expected, sorted(label.accepted), diags, top1, top3, wrong, violation, root_line=root_line
    )


def score(
    corpus: Path = CORPUS,
    only: str | None = None,
    *,
    top1_min: float = TOP1_MIN,
    top3_min: float = TOP3_MIN,
    benign_min: float = BENIGN_MIN,
) -> tuple[list[Result], Summary]:
    """Score every labelled log of `corpus` (optionally those whose path contains `only`).

    The thresholds go into the summary, whose `passed` holds the corpus to them.
    """
    t0 = time.perf_counter()
    labels = [lb for lb in load_labels(corpus) if not only or only in str(lb.path)]
    results = [score_one(lb, corpus) for lb in labels]
    sig = [r for r in results if not r.benign]
    ben = [r for r in results if r.benign]
    summary = Summary(
        logs=len(results),
        signature_logs=len(sig),
        benign_logs=len(ben),
        top1=sum(r.top1 for r in sig) / len(sig) if sig else 1.0,
        top3=sum(r.top3 for r in sig) / len(sig) if sig else 1.0,
        wrong_confirmed=sum(len(r.wrong_confirmed) for r in results),
        benign_violations=sum(r.benign_violation for r in ben),
        errors=sum(bool(r.error) for r in results),
        seconds=time.perf_counter() - t0,
        root_logs=sum(r.root_line is not None for r in results),
        root_line=(
            sum(bool(r.root_line) for r in results if r.root_line is not None) / n_root
            if (n_root := sum(r.root_line is not None for r in results))
            else 1.0
        ),
        top1_min=top1_min,
        top3_min=top3_min,
        benign_min=benign_min,
    )
    return results, summary


def _fraction(text: str) -> float:
    """An argparse type: a threshold between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction from 0 to 1")
    return value


def _fmt(r: Result) -> str:
    mark = "ok  " if r.ok else ("top3" if r.top3 and not r.top1 else "MISS")
    if r.benign:
        mark = "ok  " if r.ok else "VIOL"
    got = ", ".join(f"{s}:{c}" for s, c, _ in r.diagnoses[:3]) or "(no diagnosis)"
    extra = ""
    if r.wrong_confirmed:
        extra += f"  WRONG-CONFIRMED {r.wrong_confirmed}"
    if r.error:
        extra += f"  ERROR {r.error}"
    if r.root_line is False:
        extra += "  ROOT-LINE-MISSED"
    return f"{mark} {r.path:<62} want {r.expected:<29} got {got}{extra}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="folder with labels.toml and logs/")
    ap.add_argument("--only", help="score only logs whose path contains this text")
    ap.add_argument("--misses", action="store_true", help="print only logs that are not fully right")
    ap.add_argument("--json", type=Path, help="also write per-log results and totals as JSON here")
    ap.add_argument("--check", action="store_true", help="only check the labels (no triage run, no score)")
    ap.add_argument("--top1-min", type=_fraction, default=TOP1_MIN, help=f"top-1 goal (default {TOP1_MIN})")
    ap.add_argument("--top3-min", type=_fraction, default=TOP3_MIN, help=f"top-3 goal (default {TOP3_MIN})")
    ap.add_argument(
        "--benign-min",
        type=_fraction,
        default=BENIGN_MIN,
        help=f"share of benign logs that must get no likely/confirmed diagnosis (default {BENIGN_MIN}: all)",
    )
    args = ap.parse_args(argv)
    if args.check:
        try:
            n = len(load_labels(args.corpus))
        except CorpusError as e:
            print(f"accuracy: {e}", file=sys.stderr)
            return 2
        print(f"{n} labels ok")
        return 0
    try:
        results, s = score(
            args.corpus, args.only, top1_min=args.top1_min, top3_min=args.top3_min, benign_min=args.benign_min
        )
    except CorpusError as e:
        print(f"accuracy: {e}", file=sys.stderr)
        return 2
    for r in results:
        if not args.misses or not r.ok:
            print(_fmt(r))
    print()
    print(f"logs {s.logs} ({s.signature_logs} with a signature, {s.benign_logs} benign) in {s.seconds:.2f} s")
    print(f"top-1 {s.top1:.3f} (goal >= {s.top1_min})   top-3 {s.top3:.3f} (goal >= {s.top3_min})")
    # with the default goal (all quiet) the line reads as it always has
    benign_goal = (
        "(goal 0)" if s.benign_min >= 1.0 else f"benign quiet {s.benign_quiet:.3f} (goal >= {s.benign_min})"
    )
    print(
        f"wrong confirmed {s.wrong_confirmed} (goal 0)   benign violations "
        f"{s.benign_violations}/{s.benign_logs} {benign_goal}   crashes {s.errors}"
    )
    if s.root_logs:
        print(f"root error line first evidence {s.root_line:.3f} of {s.root_logs} (goal >= {ROOT_LINE_MIN})")
    print("PASS" if s.passed else "FAIL")
    if args.json:
        payload = {
            "summary": asdict(s) | {"passed": s.passed},
            "results": [asdict(r) | {"ok": r.ok} for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if s.passed else 1


if __name__ == "__main__":
    sys.exit(main())
