"""A log hard-wrapped at a terminal's width, read with its lines joined again.

A paste copied out of a terminal (or a pane captured without joining) breaks every line
longer than the terminal at exactly W columns: "RuntimeError: CUDA out of me" / "mory.
Tried to allocate ...". No rule can match a message cut in two like that. A source is
taken for wrapped when, in its first lines, several different lines (not banners) all
have the longest length W (at least MIN_WIDTH); enough of them are followed by a
shorter line (a cut line's last piece; padding makes every line W long); most of them
do not end as a sentence or a record does; few lines are just short of W (a terminal
cuts every longer line to exactly W, while lines of a fixed format vary around their
longest); and the line after one does not begin the way the log's own lines begin (a
message every rank repeats, a logger that shortens its messages to W characters or a
table padded to W all start a new record on the next line). Then each line of exactly
W characters is joined with the one after it; the joined line keeps the first piece's
number. Anything else is passed through unchanged.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator

from triage.ingest.raw import Gap, RawLine

DECIDE_LINES = 400  # physical lines read before deciding
MIN_WIDTH = 60  # a terminal narrower than this is not one a log is read in
MIN_WRAPPED = 3  # different lines of exactly the width, at least


def _text(raw: RawLine) -> str:
    return raw.data.decode("utf-8", errors="replace").removesuffix("\r")


_NATURAL_END = frozenset(".)]}:;!?'\"`>|")  # how a line that was not cut usually ends


def wrap_width(raws: list[RawLine]) -> int | None:
    """The width the lines were wrapped at, or None when they were not."""
    if any(r.cut_bytes for r in raws):
        return None  # a huge line: not a terminal's
    texts = [_text(r) for r in raws]
    width = max((len(t) for t in texts), default=0)
    if width < MIN_WIDTH:
        return None
    # lines of exactly the width, followed by a line: banners ("=" * 80) are no cut
    at = [i for i, t in enumerate(texts[:-1]) if len(t) == width and texts[i + 1] and len(set(t.strip())) > 2]
    natural = sum(1 for i in at if texts[i][-1] in _NATURAL_END)
    # a terminal cuts every longer line to exactly the width: lines just short of it are
    # few; lines of a fixed format (step lines) come in lengths around their longest
    near = sum(1 for t in texts if width - 3 <= len(t) < width)
    if len({texts[i] for i in at}) < MIN_WRAPPED:
        return None  # one message repeated (every rank's) is as long each time: no cut
    if sum(1 for i in at if len(texts[i + 1]) < width) * 10 < len(at) * 3:
        return None  # a cut line's last piece is shorter; padding (a pane, a table) is not
    if natural * 2 > len(at):
        return None  # they end as sentences and records do, not at an arbitrary column
    if near * 3 > len(at):
        return None
    # the line after a cut one starts mid-word, not as the log's own lines start
    nexts = {i + 1 for i in at}
    own = Counter(t[:3] for i, t in enumerate(texts) if t and i not in nexts)
    if sum(1 for i in at if own[texts[i + 1][:3]]) * 2 > len(at):
        return None
    return width


class Unwrapper:
    """`__call__(raws)`: the raws with a wrapped source's pieces joined; `width` is the
    width found (None: not wrapped), `joined` how many pieces were joined onto the line
    before them, `last_lineno` the last physical line read (of a wrapped source)."""

    def __init__(self) -> None:
        self.width: int | None = None
        self.joined = 0
        self.last_lineno = 0

    def __call__(self, raws: Iterable[RawLine | Gap]) -> Iterator[RawLine | Gap]:
        """The head is read here, to decide; a log that is not wrapped (most) then goes
        on as the iterator it was, behind its head, at no cost a line."""
        it = iter(raws)
        head: list[RawLine] = []
        stop: Gap | None = None
        try:
            for raw in it:
                if isinstance(raw, Gap):
                    stop = raw
                    break
                head.append(raw)
                if len(head) >= DECIDE_LINES:
                    break
        except Exception as e:  # a damaged stream ends here: the lines before it go out first
            self.width = wrap_width(head) if head else None
            return self._then_raise(self._join(iter(head)) if self.width else iter(head), e)
        self.width = wrap_width(head) if head else None
        rest = itertools.chain(head, () if stop is None else (stop,), it)
        return rest if self.width is None else self._join(rest)

    @staticmethod
    def _then_raise(raws: Iterator[RawLine | Gap], error: Exception) -> Iterator[RawLine | Gap]:
        yield from raws
        raise error

    def _join(self, raws: Iterator[RawLine | Gap]) -> Iterator[RawLine | Gap]:
        width = self.width or 1
        pending: RawLine | None = None  # a line of exactly the width: its next piece follows
        for raw in raws:
            if isinstance(raw, Gap):
                if pending is not None:
                    yield pending
                    pending = None
                yield raw
                continue
            self.last_lineno = raw.lineno
            if pending is not None and not raw.data.strip(b"\r"):
                yield pending  # a terminal never wraps onto an empty line: it is one
                pending = None
            if pending is not None:
                head = pending.data.removesuffix(b"\r")  # CRLF: the piece's own line end
                raw = RawLine(pending.lineno, head + raw.data, raw.complete, raw.cut_bytes, raw.length)
                self.joined += 1
                pending = None
            if raw.complete and not raw.cut_bytes and len(_text(raw)) % width == 0 and raw.data:
                pending = raw
                continue
            yield raw
        if pending is not None:
            yield pending
