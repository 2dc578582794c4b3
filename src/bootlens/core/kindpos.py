"""The events of one kind with their positions, from the native block's columns.

Over :meth:`model.Events.located`, for any sequence of events (a boot's block or a tuple): the passes that look for a few kinds of event (the chain's units and milestones, the report's
and the rules' unit, marker and bootloader rows) read the events outside the block, already
grouped by kind, and the block's position column for its kinds, so no Event is built for a
row nobody reads (1M events: an Event per row cost ~1 s a pass).
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import Event, Events, Kind


def located(events: Sequence[Event], kind: Kind) -> list[tuple[int, Event]]:
    """(position, event) of the events of ``kind`` in ``events``, in order (a tuple too)."""
    return Events.of(events).located(kind)


def first(events: Sequence[Event], kind: Kind, name: str, times: Sequence[int | None] | None = None) -> int | None:
    """The position of the first event of ``kind`` named ``name`` (with a time in ``times``,
    when given), or None."""
    for i, e in located(events, kind):
        if e.name == name and (times is None or times[i] is not None):
            return i
    return None
