"""Fingerprints: "the same failure" as data.

A failure with an error is its signature (the leading diagnosis the log itself shows),
the root error's template (numbers, addresses, paths, ranks, times masked) and the
innermost frame of the user's own code. A log that just stops is its end state, the
phase it stopped in and its masked last line. Two crashes with equal parts have the
same id, whatever the run's pids, step counts, hosts or timestamps.

Pure: reads a Report, imports no store.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from triage.model import Report

# Masks, in order: the wider shapes first, so a timestamp is one <time>, not three <n>.
MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)?"), "<time>"),
    (re.compile(r"\b\d\d?:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<addr>"),
    # a path starts at a slash (or ~/, ./) that no word char precedes: "tok/s" stays
    (re.compile(r"(?<![\w.<>/-])(?:~|\.{1,2})?(?:/[^\s'\"`:,;()\[\]{}<>]+)+/?"), "<path>"),
    (
        re.compile(r"\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b|\b[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]*\b", re.I),
        "<hex>",
    ),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
)
MAX_TEMPLATE = 240
# Frames of libraries, not of the user's code: the innermost in-app frame is the first
# frame from the end whose file is under none of these.
LIBRARY_PARTS = (
    "site-packages/",
    "dist-packages/",
    "/lib/python",
    "<frozen",
    "/usr/lib/",
    "importlib/",
    "<string>",
)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line \d+, in (?P<fn>[^\s]+)')


def mask(text: str) -> str:
    """`text` with what varies between two crashes of the same failure masked."""
    hexes = MASKS[5][0]
    for pattern, token in MASKS:
        if pattern is hexes:
            # only runs of 6+ characters are hashes or ids; "fe80" or "add" are words
            text = pattern.sub(lambda m: "<hex>" if len(m.group()) >= 6 else m.group(), text)
        else:
            text = pattern.sub(token, text)
    return " ".join(text.split())[:MAX_TEMPLATE]


def in_app_frame(frames: tuple[str, ...]) -> str | None:
    """The innermost frame of the user's own code, as `file.py:function` (the line number
    is masked: an edit above it moves it)."""
    for f in reversed(frames):
        m = _FRAME.search(f)
        if m and not any(part in m.group("file") for part in LIBRARY_PARTS):
            return f"{m.group('file').rsplit('/', 1)[-1]}:{m.group('fn')}"
    return None


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A failure's identity: `id` (kind + a hash of the parts) and the parts themselves."""

    id: str
    kind: str  # "error": a root error the log shows; "end": a log that just stops
    parts: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "parts": dict(self.parts)}

    @property
    def label(self) -> str:
        """A short line for people: what failed."""
        p = self.parts
        if self.kind == "error":
            return " ".join(x for x in (p.get("signature"), p.get("error")) if x)[:120]
        phase = f" in {p['last_phase']}" if p.get("last_phase") else ""
        return f"log ends ({p.get('end_state')}{phase}): {p.get('last_line') or ''}"[:120]


def signature_of(report: Report) -> str | None:
    """The leading diagnosis the log itself shows (not one inferred from how it ends or
    from a snapshot: those move with the evidence, the failure does not)."""
    for d in report.diagnoses:
        if d.role == "consequence" or d.fallback:
            continue
        if any(
            e.source not in (None, "snapshot") and not e.text.startswith("log ends (") for e in d.evidence
        ):
            return d.signature
    return None


def fingerprint(report: Report, redact: Any = None) -> Fingerprint:
    """The fingerprint of a report. `redact`: a text -> text function applied before
    masking (stored parts must hold no secret)."""
    clean = redact or (lambda t: t)
    err = report.root_error or report.last_error
    end = report.end_state
    parts: dict[str, Any]
    if err is not None:
        kind = "error"
        parts = {
            "signature": signature_of(report) or "unclassified",
            "error": mask(clean(err.text.split("\n", 1)[0])),
            "frame": in_app_frame(report.error_frames or err.context),
        }
    else:
        kind = "end"
        sig = signature_of(report)
        parts = {
            "end_state": end.kind,
            "last_phase": end.last_phase,
            "last_line": mask(clean(end.last_text)) if end.last_text else "",
        }
        if sig:  # a log that shows a cause but no traceback (a bare NCCL WARN, Killed)
            parts["signature"] = sig
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
    return Fingerprint(f"{kind}-{digest}", kind, parts)
