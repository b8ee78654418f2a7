"""Turn raw bytes of one physical line into clean logical lines.

Decoding, ANSI stripping, carriage-return redraws, progress bars with text glued
after them, rank prefixes, timestamps and logger prefixes. Prefixes are tables of
(regex, handler) tried in one loop, so a new launcher or logger is one row.
"""

from __future__ import annotations

import calendar
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from triage.native import written_from

ANSI_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"  # other control characters (not \t \n \r)
)

# A tqdm-style bar: "42%|████▍     | 42/100 [00:03<00:04, 12.1it/s]" (postfix optional)
BAR_RE = re.compile(
    r"\d{1,3}%\|[^|\n]{0,400}\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?\s*"
    r"\[[^\]\n]{0,80}\]"
)

# A bar of unknown total, as Lightning draws one: "Epoch 0: |    | 3871/? [06:42<00:00,  9.62it/s]"
UNKNOWN_TOTAL = "/? ["
BAR_UNKNOWN_RE = re.compile(r"\|[^|\n]{0,400}\|\s*[\d.]+[kMG]?/\?\s*\[[^\]\n]{0,80}\]")

# Escaped newlines of logs that went through JSON or a paste that collapsed them.
ESCAPED_NL_RE = re.compile(r"\\n(?=\s*(?:File \"|Traceback|[A-Za-z_.]+(?:Error|Exception)\b|\S))")


@dataclass(slots=True)
class Peeled:
    text: str
    rank: int | None = None
    ts: float | None = None


_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}


def _frac(text: str | None) -> float:
    """A fraction of a second written as its digits after the point ("123" -> 0.123)."""
    return float("0." + text) if text else 0.0


@functools.lru_cache(maxsize=256)
def _hour_start(y: int, mo: int, d: int, h: int) -> int:
    """`calendar.timegm` of the hour's start (the date part is the costly one; minutes
    and seconds add linearly, so the sum is timegm's exactly)."""
    return calendar.timegm((y, mo, d, h, 0, 0, 0, 0, 0))


def _epoch(y: str, mo: int | str, d: str, h: str, mi: str, s: str, frac: str | None = None) -> float | None:
    """Seconds since the epoch of a dated time (UTC), or None for an impossible one."""
    try:
        return _hour_start(int(y), int(mo), int(d), int(h)) + int(mi) * 60 + int(s) + _frac(frac)
    except (ValueError, OverflowError):
        return None


def _iso_ts(m: re.Match[str]) -> float | None:
    return _epoch(*m.group("y", "mo", "d", "h", "mi", "s", "frac"))


def _glog_ts(m: re.Match[str]) -> float | None:
    # glog has no year: seconds within a nominal year keep order inside one run
    mo, d, h, mi, s, frac = m.group("mo", "d", "h", "mi", "s", "frac")
    day = (int(mo) * 31 + int(d)) * 24 + int(h)
    return day * 3600 + int(mi) * 60 + int(s) + _frac(frac) + _YEARLESS_BASE


def _syslog_ts(m: re.Match[str]) -> float | None:
    mon, d, h, mi, s = m.group("mon", "d", "h", "mi", "s")
    mo = _MONTHS.get(mon, 0)
    return ((mo * 31 + int(d)) * 24 + int(h)) * 3600 + int(mi) * 60 + int(s) + _YEARLESS_BASE


_YEARLESS_BASE = 0.0


def _ctime_ts(m: re.Match[str]) -> float | None:
    mon, d, h, mi, s, y = m.group("mon", "d", "h", "mi", "s", "y")
    mo = _MONTHS.get(mon)
    return None if mo is None else _epoch(y, mo, d, h, mi, s)


def _clock_ts(m: re.Match[str]) -> float | None:
    # a time of day only: orders lines within a day (a run across midnight goes back)
    h, mi, s = int(m.group("h")), int(m.group("mi")), int(m.group("s"))
    if h > 23 or mi > 59 or s > 60:
        return None
    return h * 3600 + mi * 60 + s + _frac(m.group("frac")) + _YEARLESS_BASE


Handler = Callable[[re.Match[str], Peeled], None]


def _rank(group: str) -> Handler:
    def h(m: re.Match[str], p: Peeled) -> None:
        if p.rank is None:
            p.rank = int(m.group(group))

    return h


def _ts(fn: Callable[[re.Match[str]], float | None]) -> Handler:
    def h(m: re.Match[str], p: Peeled) -> None:
        if p.ts is None:
            p.ts = fn(m)

    return h


def _drop(m: re.Match[str], p: Peeled) -> None:
    return None


# "2026-12-02 06:11:24", and the slashed date Go's log package and some cluster log viewers
# write before each line ("2026/12/02 06:11:24 text")
_ISO = (
    r"(?P<y>\d{4})[-/](?P<mo>\d{2})[-/](?P<d>\d{2})[T _](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[.,](?P<frac>\d{1,9}))?(?:Z|[+-]\d{2}:?\d{2})?"
)
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL)"

# (name, regex anchored at the start, handler). Tried in order, repeatedly, so
# "[default3]:[rank3]:[E1129 13:02:11.1 ProcessGroupNCCL.cpp:616] " peels in three steps.
PREFIXES: list[tuple[str, re.Pattern[str], Handler]] = [
    # launchers: torchrun --tee ("[default0]:"), c10d excepthook ("[rank3]: "), OpenMPI
    ("torchrun-role", re.compile(r"\[(?:default|trainer|worker|role)(?P<r>\d+)\]:\s?"), _rank("r")),
    ("rank-bracket", re.compile(r"\[rank(?P<r>\d+)\]:\s?"), _rank("r")),
    ("rank-colon", re.compile(r"rank(?P<r>\d+)\]?:\s"), _rank("r")),
    ("openmpi", re.compile(r"\[\d+,(?P<r>\d+)\]<(?:stdout|stderr)>:\s?"), _rank("r")),
    ("slurm-node-rank", re.compile(r"[\w.-]+-\d+: (?P<r>\d{1,4}): "), _rank("r")),
    # a process's own name and pid before its output: Ray's actor and task prefixes
    # ("(RayTrainWorker pid=30871, ip=10.0.0.5) ", "(pid=9287, ip=...) ", "(raylet) "),
    # SkyPilot's ("(worker1, rank=1, pid=31877, ip=...) ", "(head, rank=0, pid=4121) ") and
    # vLLM's ("(EngineCore_DP0 pid=812) "); the pid is a process, not a rank: dropped
    (
        "actor-pid",
        re.compile(r"\((?:[A-Za-z_][\w.-]*(?:, rank=\d+)?,? )?pid=\d+(?:, ip=[\w.:-]+)?\)\s?"),
        _drop,
    ),
    ("raylet", re.compile(r"\(raylet(?:, ip=[\w.:-]+)?\)\s?"), _drop),
    # kubectl logs --prefix, docker compose
    ("kubectl", re.compile(r"\[pod/[\w.-]+/[\w.-]+\]\s"), _drop),
    # docker compose: "trainer-1  | text"; a numbered service keeps its line's indentation
    # ("trainer-1  |   File ..."), any other name needs text right after the bar
    ("compose", re.compile(r"[\w.-]{2,40}\s+\|\s(?=\S)|[\w.-]{1,38}[-_]\d{1,3} +\| "), _drop),
    # timestamps
    ("iso", re.compile(r"\[?" + _ISO + r"\]?(?:\s+|:\s*|\s*\|\s*|(?<=\])(?=\[))"), _ts(_iso_ts)),
    # a logger's name before the time in one bracket: "[trainer 2026-07-29 04:11:02] "
    ("named-iso", re.compile(r"\[[A-Za-z][\w.-]{0,39} " + _ISO + r"\]\s?"), _ts(_iso_ts)),
    (
        "glog",
        re.compile(
            r"\[?[IWEF](?P<mo>\d{2})(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
            r"(?:\.(?P<frac>\d{1,9}))?(?:\s+\d+)?\s+[^\]\s]+:\d+\]\s?"
        ),
        _ts(_glog_ts),
    ),
    ("glog-old", re.compile(r"\[[IWEF] [\w./-]+:\d+\]\s?"), _drop),
    (
        "syslog",
        re.compile(
            r"(?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
            r"(?:\.\d+)? [\w.-]+ [\w./@-]+(?:\[\d+\])?:\s"
        ),
        _ts(_syslog_ts),
    ),
    # ctime / `date`, as OpenMPI's --timestamp-output writes it before "[1,0]<stdout>:"
    (
        "ctime",
        re.compile(
            r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
            r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) (?P<y>\d{4})(?:\s+|(?=\[))"
        ),
        _ts(_ctime_ts),
    ),
    # `dmesg -T`: the kernel's ctime in brackets ("[Tue Nov 25 03:14:07 2026] NVRM: Xid ...")
    (
        "dmesg-T",
        re.compile(
            r"\[[A-Z][a-z]{2} (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
            r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) (?P<y>\d{4})\]\s?"
        ),
        _ts(_ctime_ts),
    ),
    ("dmesg", re.compile(r"\[\s*\d+\.\d{3,}\]\s?"), _drop),
    (
        "clock",
        re.compile(r"\[?(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:[.,](?P<frac>\d+))?\]?\s+(?=\S)"),
        _ts(lambda m: _clock_ts(m)),
    ),
    # logger prefixes
    ("deepspeed", re.compile(r"\[" + _LEVEL + r"\]\s*(?:\[[\w./-]+:\d+:\w+\]\s*)?"), _drop),
    ("py-logging", re.compile(_LEVEL + r":[\w.<>-]*:\s?"), _drop),
    ("py-logging-dash", re.compile(r"-?\s*[\w.<>-]+ - " + _LEVEL + r" - "), _drop),
    ("hf-logging", re.compile(r"\[" + _LEVEL + r"\|[\w./-]+:\d+\]\s*(?:[\d\-: ,]+>>\s*)?"), _drop),
    ("hydra", re.compile(r"\[[\w.-]+\]\[" + _LEVEL + r"\]\s*-\s*"), _drop),
    ("level-bracket", re.compile(r"\[\s*" + _LEVEL + r"\s*\]\s*"), _drop),
    ("level-word", re.compile(_LEVEL + r"(?:\s*[:|]\s*|\s+-\s+)(?=\S)"), _drop),
    ("logger-name", re.compile(r"[\w.]+\.py:\d+\]\s"), _drop),
    # a terminal's echo of Ctrl-C glued before the traceback it caused
    ("ctrl-c-echo", re.compile(r"(?:\^C)+(?=\S)"), _drop),
    # log viewers and pastes: "  123 | text", "L123: ", "[51322] [rank0]: text"; one space
    # exactly after "[N]", so bash's job notices ("[2]   Killed   python ...") stay whole
    ("viewer-lineno", re.compile(r"\s{0,6}\d{1,7}\s*[|│]\s?"), _drop),
    ("viewer-lineno-bracket", re.compile(r"\[\d{1,7}\] (?=\S)"), _drop),
    ("gh-lineno", re.compile(r"L?\d{1,7}:\s"), _drop),
]


def _combine(
    rows: list[tuple[str, re.Pattern[str], Handler]], only: frozenset[str] | None = None
) -> re.Pattern[str]:
    """The rows (those named in `only`, if given) in one alternation, in table order;
    row i is group "r<i>" whatever the subset."""
    parts = []
    for i, (name, rx, _h) in enumerate(rows):
        if only is not None and name not in only:
            continue
        body = re.sub(r"\(\?P<(\w+)>", rf"(?P<g{i}_\1>", rx.pattern)
        parts.append(f"(?P<r{i}>{body})")
    return re.compile("|".join(parts))


# One match call tries every row (leftmost alternative wins, as the ordered loop did).
PREFIX_ANY = _combine(PREFIXES)

# The rows a line led by some characters can start with: a lower-case letter (not "r",
# which rank-colon starts with) or "_" leads only the word-led rows, and each of those
# needs ": ", "|", " - " or ".py:" in the line; an upper-case letter leads those and a
# few more.
# tests/test_line_path.py derives every row's first characters from its regex to check.
_WORD_LED = frozenset("abcdefghijklmnopqstuvwxyz_")
_WORD_ROWS = frozenset({"slurm-node-rank", "compose", "py-logging-dash", "logger-name"})
_UPPER_LED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_UPPER_ROWS = _WORD_ROWS | {"glog", "syslog", "ctime", "py-logging", "level-word", "gh-lineno"}
PREFIX_WORD = _combine(PREFIXES, _WORD_ROWS)
PREFIX_UPPER = _combine(PREFIXES, _UPPER_ROWS)


def _lead(c: str) -> tuple[bool, re.Pattern[str] | None]:
    """What a line led by `c` may start with: an srun label (after a space or a digit)
    or not, and the rows to try (None: the word-led rows, if the line holds what one of
    them needs, else none)."""
    srun = c.isspace() or c.isdigit()
    if c in _WORD_LED:
        return srun, None
    return srun, PREFIX_UPPER if c in _UPPER_LED else PREFIX_ANY


_LEADS = {chr(i): _lead(chr(i)) for i in range(128)}  # one look-up per step for ASCII


# PREFIX_ANY's outer group name -> (the row's own regex, its handler), None for a row
# that only drops its prefix (most of them: no groups to read). A handler reads the
# row's own match: the same match as the row's alternative in PREFIX_ANY (nothing follows
# it there), with the row's group names, read at native speed.
_ROWS: dict[str, tuple[re.Pattern[str], Handler | None]] = {
    f"r{i}": (rx, None if handler is _drop else handler) for i, (_name, rx, handler) in enumerate(PREFIXES)
}

# the rows that label a line with its rank: one that is nothing else is that rank's blank line
_RANK_ROWS = frozenset(
    f"r{i}"
    for i, (name, _rx, _h) in enumerate(PREFIXES)
    if name in ("torchrun-role", "rank-bracket", "openmpi")
)

SRUN_LABEL = re.compile(r"\s{0,3}(?P<r>\d{1,4}): ")


# `native.plain`, where the module was written from these rows (its PREFIX_PATTERNS)
native_plain = written_from(
    "plain", PREFIX_PATTERNS=(*(rx.pattern for _name, rx, _h in PREFIXES), SRUN_LABEL.pattern)
)


@dataclass(slots=True)
class SourceState:
    """Per-source state the prefix peeler needs: are leading 'N: ' rank labels (srun
    -l) or line numbers from a viewer?"""

    last_label: int | None = None
    consecutive: int = 0
    labels_are_linenos: bool = False
    seen_ranks: set[int] = field(default_factory=set)


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def strip_ansi(text: str) -> str:
    if "\x1b" not in text and not _has_ctrl(text):
        return text
    return ANSI_RE.sub("", text)


_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _has_ctrl(text: str) -> bool:
    return _CTRL.search(text) is not None


def _has_ctrl_cr(text: str) -> bool:
    """`_has_ctrl` of a line redrawn with \r (a bar): printable without its \r, it has
    none (control characters are not printable), which a native test says at once."""
    return not text.replace("\r", "").isprintable() and _CTRL.search(text) is not None


def resolve_redraws(text: str) -> str:
    """Keep the final frame of a line redrawn with \\r (the last non-empty one)."""
    if "\r" not in text:
        return text
    frames = [f for f in text.split("\r") if f.strip()]
    return frames[-1] if frames else ""


def split_glued(text: str) -> list[str]:
    """Split text glued after a progress bar ("...[00:01<00:00]RuntimeError: x")
    and escaped newlines of collapsed logs into separate logical lines.

    Escaped newlines are split first, over the whole line, and bars within each piece:
    so no piece keeps a `\\n` that a second pass would split (normalising is idempotent).
    """
    out: list[str] = []
    for piece in _split_escaped(text):
        out.extend(_split_bars(piece))
    return out


def _split_escaped(text: str) -> list[str]:
    if "\\n" in text and ("Traceback" in text or "Error" in text or 'File "' in text):
        parts = [p for p in ESCAPED_NL_RE.split(text) if p.strip()]
        return parts or [text]
    return [text]


def _has_bar(text: str) -> bool:
    return "%|" in text or UNKNOWN_TOTAL in text


def _split_bars(text: str) -> list[str]:
    if "%|" in text:
        # a bar holds "%|" one to three characters after its start: none begins before that
        bars = BAR_RE.finditer(text, max(0, text.find("%|") - 3))
    elif UNKNOWN_TOTAL in text:
        bars = BAR_UNKNOWN_RE.finditer(text)
    else:
        return [text]
    out: list[str] = []
    pos = 0
    for m in bars:
        # a postfix such as ", loss=0.1]" is part of the bar: it ends at the closing ]
        if text[m.end() :].strip():
            out.append(text[pos : m.end()].strip())
            pos = m.end()
    if not out:
        return [text]
    out.append(text[pos:].lstrip())
    return out


def peel(text: str, state: SourceState) -> Peeled:
    """Peel launcher, timestamp and logger prefixes (repeatedly) off one line."""
    p = Peeled(text)
    t = text  # the handlers set rank and ts only: the text is kept here until the end
    for _ in range(8):
        c = t[:1]
        srun, rows = _LEADS.get(c) or _lead(c)
        if srun:
            m = SRUN_LABEL.match(t)
            if m:
                _srun_label(int(m.group("r")), state, p)
                t = t[m.end() :]
                continue
        if rows is None:  # word-led: most lines, once peeled, have no prefix left
            if not (": " in t or "|" in t or " - " in t or ".py:" in t):
                break
            rows = PREFIX_WORD
        m2 = rows.match(t)
        if m2 is None or m2.lastgroup is None:
            break
        end = m2.end()
        if not 0 < end < len(t):
            if end and m2.lastgroup in _RANK_ROWS:  # "[rank3]:" alone: a blank line of rank 3
                rx, handler = _ROWS[m2.lastgroup]
                m3 = rx.match(t)
                if m3 is not None and handler is not None:
                    handler(m3, p)
                t = ""
            break
        rx, handler = _ROWS[m2.lastgroup]
        if handler is not None:
            m3 = rx.match(t)
            if m3 is not None:  # always: it is the alternative that matched
                handler(m3, p)
        t = t[end:]
    p.text = t
    return p


def _srun_label(value: int, state: SourceState, p: Peeled) -> None:
    if state.last_label is not None and value == state.last_label + 1:
        state.consecutive += 1
    else:
        state.consecutive = 0
    state.last_label = value
    if state.consecutive >= 20 or value > 4096:
        state.labels_are_linenos = True
    if not state.labels_are_linenos and p.rank is None:
        p.rank = value


def _clean(data: bytes) -> str:
    """The text of one physical line: decoded, its final \r, escapes and control
    characters dropped, redraws resolved (the steps of `strip_ansi` and
    `resolve_redraws`, with their cheap "nothing to do" tests made here)."""
    text = data.decode("utf-8", errors="replace")
    if text.endswith("\r"):
        text = text[:-1]
    if not text.isprintable():  # escapes, control characters and \r are not printable
        if "\x1b" in text or (_has_ctrl(text) if "\r" not in text else _has_ctrl_cr(text)):
            text = ANSI_RE.sub("", text)
        if "\r" in text:
            text = resolve_redraws(text)
    return text


def normalize(data: bytes, state: SourceState) -> Iterator[Peeled]:
    """One raw physical line -> zero or more clean logical lines (`_clean`, then
    `split_glued` where a bar or an escaped newline may split it): this runs once per
    line of every log."""
    text = _clean(data)
    # A rank prefix may stand before a progress bar's final frame: "[rank1]: 10%|..."
    for piece in split_glued(text) if ("\\n" in text or _has_bar(text)) else (text,):
        p = peel(piece.rstrip(), state)
        if p.rank is not None:
            state.seen_ranks.add(p.rank)
        yield p


def normalize_plain(data: bytes, state: SourceState) -> Peeled | None:
    """`normalize` of a physical line that gives one logical line, that line, or None
    where the line needs the whole of `normalize` (an escaped newline, text glued
    after a bar): most lines of a log give one, and this costs them no generator.

    A printable ASCII line is cleaned and peeled by the native module where it is built
    (`native.plain`: every row of PREFIXES as its regex matches, tests/test_native.py);
    what it gives back is what the Python path below gives, the srun label's step of
    the source state included (`peeled`)."""
    if native_plain is not None:
        got = native_plain(data)
        if got is not None:
            return peeled(got, state)
    return normalize_plain_python(data, state)


def peeled(got: tuple[str, int | None, float | None, int | None, bool], state: SourceState) -> Peeled:
    """The `Peeled` of what `native.plain` read: the text, the first rank a row gave,
    the first time, and the srun label (with whether it came before that rank), whose
    step of `state` is taken here as `peel` takes it."""
    text, rank, ts, label, label_first = got
    if label is None:
        p = Peeled(text, rank, ts)
    else:
        p = Peeled(text, None if label_first else rank, ts)
        _srun_label(label, state, p)
        if p.rank is None:
            p.rank = rank
    if p.rank is not None:
        state.seen_ranks.add(p.rank)
    return p


def normalize_plain_python(data: bytes, state: SourceState) -> Peeled | None:
    """`normalize_plain` in Python: any line, and every line without the module."""
    text = _clean(data)
    if "\\n" in text or (_has_bar(text) and len(_split_bars(text)) != 1):
        return None
    p = peel(text.rstrip(), state)
    if p.rank is not None:
        state.seen_ranks.add(p.rank)
    return p
