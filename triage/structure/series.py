"""series: metric values that only mean something in sequence, read line by line.

Two readers the rules use through events:

- a loss column of a plain table ("step   loss   lr" then rows of numbers), which no
  `loss=` pattern sees: its first non-finite value is a `nonfinite-loss` event;
- a dynamic loss scale (DeepSpeed, apex, fairseq, Megatron) that keeps falling: halving
  after halving with no rise in between means every step overflows, not the warm-up's
  few early skips: a `loss-scale-falling` event once it has fallen often and low enough.

Bounded state per stream (source, rank); pure, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from triage.model import Event, Line

# a header naming a loss column beside a step/iteration/epoch column
_HEADER_WORD = re.compile(r"[A-Za-z_/]+")
_LOSS_COLS = {"loss", "train_loss", "training_loss", "lm_loss", "train/loss", "loss_train"}
_STEP_COLS = {"step", "steps", "iter", "iteration", "it", "epoch", "global_step", "batch"}
_SPLIT = re.compile(r"[\s|,]+")
_DIGIT = re.compile(r"[0-9]")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf|-inf|NaN|Inf|-Inf)$")

# "Attempted loss scale: 2, reducing to 1", "reducing loss scale to 0.5",
# "setting loss scale to: 64.0", "| loss scale: 512.0 |"
_SCALE = re.compile(
    r"(?:reducing to|reducing loss scale to|setting loss scale to:?|\| loss scale:)\s*"
    r"(?P<v>\d+(?:\.\d+)?(?:e[-+]?\d+)?)",
    re.IGNORECASE,
)

FALLING_DROPS = 6  # reductions in a row, with no rise between them...
FALLING_MAX = 1024.0  # ...down to a scale this low: every step overflows


@dataclass
class _Table:
    loss_col: int
    width: int


@dataclass
class _Scale:
    last: float
    drops: int = 0
    reported: bool = False


class SeriesReader:
    """Feed every line; `events` collects what the series say."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._tables: dict[tuple[str, int | None], _Table] = {}
        self._scales: dict[tuple[str, int | None], _Scale] = {}
        self._nonfinite_seen = False

    def feed(self, line: Line) -> float | None:
        """Read one line; returns the loss of a table row, if it is one."""
        text = line.text
        if "scale" in text:
            self._scale(line, text)
        stripped = text.strip()
        if not stripped:
            return None
        if not stripped[:1].isdigit():
            # a header names a loss column (checked without lower-casing every line) and
            # has no digit, which a step line with "loss" on it has
            named = "loss" in stripped or "Loss" in stripped or "LOSS" in stripped
            if named and _DIGIT.search(stripped) is None:
                self._header((line.source, line.rank), stripped)
            return None
        table = self._tables.get((line.source, line.rank))
        if table is None:
            return None
        cells = [c for c in _SPLIT.split(stripped) if c]
        if len(cells) != table.width or not all(_NUMBER.match(c) for c in cells):
            return None
        try:
            value = float(cells[table.loss_col])
        except ValueError:
            return None
        if not math.isfinite(value) and not self._nonfinite_seen:
            self._nonfinite_seen = True
            self.events.append(
                Event("nonfinite-loss", line, {"metric": "loss", "value": cells[table.loss_col]})
            )
        return value

    def _header(self, key: tuple[str, int | None], text: str) -> None:
        """A header line (no digit: `feed` checked) that names a loss and a step column."""
        cells = [c.lower() for c in _SPLIT.split(text) if c]
        if len(cells) < 2 or not all(_HEADER_WORD.fullmatch(c) for c in cells):
            return
        loss = [i for i, c in enumerate(cells) if c in _LOSS_COLS]
        if loss and any(c in _STEP_COLS for c in cells):
            self._tables[key] = _Table(loss[0], len(cells))

    def _scale(self, line: Line, text: str) -> None:
        m = _SCALE.search(text)
        if m is None:
            return
        try:
            v = float(m.group("v"))
        except ValueError:
            return
        key = (line.source, line.rank)
        st = self._scales.get(key)
        if st is None:
            self._scales[key] = _Scale(v)
            return
        if v < st.last:
            st.drops += 1
        elif v > st.last:
            st.drops = 0  # it rose: the scaler found good steps again
        st.last = v
        if st.drops >= FALLING_DROPS and v <= FALLING_MAX and not st.reported:
            st.reported = True
            self.events.append(Event("loss-scale-falling", line, {"scale": v, "drops": st.drops}))
