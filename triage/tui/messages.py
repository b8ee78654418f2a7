"""Messages between the watch loop and the widgets: small dataclasses."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from triage.watch.events import Event


@dataclass
class WatchEvents(Message):
    """Events from one poll of the watch session (posted from the poll thread)."""

    events: list[Event]


@dataclass
class Polled(Message):
    """A poll finished: new lines may be in the tail, metrics may have moved."""

    new_lines: int


@dataclass
class JumpTo(Message):
    """Show this line of the capture (evidence of a diagnosis, a search hit)."""

    lineno: int
