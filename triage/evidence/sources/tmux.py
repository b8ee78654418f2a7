"""Source `tmux`: the state of the pane a run ran in (dead or alive, exit status, pid,
scrollback), when the snapshot is taken for one (`triage snapshot --tmux TARGET`)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from triage.evidence.snapshot import section, unknown, value
from triage.evidence.sources.base import Context, Facts, Source, first_line, iso, run_cmd
from triage.model import Unknown
from triage.vocabulary import SNAPSHOT_SOURCES

TMUX_FIELDS = (
    "session_name",
    "window_index",
    "pane_index",
    "pane_id",
    "pane_pid",
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_dead_time",
    "pane_current_command",
    "pane_start_command",
    "history_size",
    "history_limit",
    "pane_pipe",
    "remain-on-exit",
)
_TMUX_INTS = {
    "window_index",
    "pane_index",
    "pane_pid",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_dead_time",
    "history_size",
    "history_limit",
}
# The pane keys the rules read, as `tmux.<key>` (triage.vocabulary.TMUX_KEYS).
FACT_KEYS = (
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    "pane_pid",
    "history_size",
    "pane_pipe",
    "remain_on_exit",
)


def tmux_pane(target: str) -> dict[str, Any]:
    """A pane's state: dead or alive, exit status, pid, scrollback size, piped or not."""
    if not shutil.which("tmux"):
        return unknown("tmux is not installed")
    fmt = "\t".join("#{" + f + "}" for f in TMUX_FIELDS)
    rc, out, err = run_cmd(["tmux", "display-message", "-p", "-t", target, fmt])
    if rc != 0:
        return unknown(f"tmux: {first_line(err) or f'exit {rc}'} (target {target!r})")
    res: dict[str, Any] = {"target": target}
    for k, v in zip(TMUX_FIELDS, out.rstrip("\n").split("\t"), strict=False):
        res[k.replace("-", "_")] = _field(k, v)
    if res.get("pane_dead") is False and isinstance(res.get("pane_dead_status"), int):
        res["pane_dead_status"] = None
    if isinstance(res.get("pane_dead_time"), int):
        res["pane_dead_time"] = iso(res["pane_dead_time"])
    return res


def _field(k: str, v: str) -> Any:
    """One `display-message` field as a value: numbers, flags, or the text."""
    if v == "":
        return unknown("not reported by this tmux") if k != "pane_dead_status" else None
    if k in _TMUX_INTS:
        return int(v) if v.removeprefix("-").isdecimal() and v.isascii() else v
    if k in ("pane_dead", "pane_pipe"):
        return v == "1"
    if k == "remain-on-exit":
        return v in ("on", "1", "failed")
    return v


def collect(ctx: Context) -> dict[str, Any]:
    """The pane's section, only when a pane was named."""
    return {"tmux": tmux_pane(ctx.tmux_target)} if ctx.tmux_target else {}


def facts(snap: Mapping[str, Any], earlier: Mapping[str, Any]) -> Facts:
    """`tmux.<key>`: the pane's state (unknown when no pane was recorded)."""
    tm, why = section(snap, "tmux")
    return {f"tmux.{key}": value(tm.get(key, why or Unknown("not recorded"))) for key in FACT_KEYS}


SOURCE = Source(
    name="tmux",
    what="tmux",
    sections=("tmux",),
    provides=SNAPSHOT_SOURCES["tmux"],
    facts=facts,
    collect=collect,
)
