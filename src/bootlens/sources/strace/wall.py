"""Placing an strace on a recorded boot by the wall clock, when no line is in both.

A recording (``bootlens capture``/``run``) says when its t=0 was on the host's wall clock
(``Header.started_wall``, ISO 8601 with microseconds, UTC); an strace with absolute times says
when each call was on the *board's* clock (``-ttt``: seconds since 1970; ``-tt``/``-t``: the time
of day, whose date is taken from ``started_wall``, in UTC: the zone a board without TZ runs in).
Then host ns = trace epoch ns - started_wall epoch ns. That rests on the board's clock being
right, which at boot it often is not (no RTC, NTP not yet up): :func:`strace_summary.align`
prefers a line both show, and when both methods are possible reports their difference (the
board's clock error). docs/strace.md says the same for users.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ...core.model import NS_PER_S

if TYPE_CHECKING:
    from ...core.model import Boot
    from .summary import Summary

DAY_NS = 86_400 * NS_PER_S
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def wall_ns(iso: str) -> int | None:
    """Nanoseconds since 1970 (UTC) of an ISO 8601 time; a time without a zone is UTC.
    None when it is not one (a damaged header's, or empty)."""
    try:
        dt = datetime.fromisoformat(iso.strip())
    except (ValueError, TypeError):
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    d = dt - _EPOCH  # integer days/seconds/microseconds: no float rounding of 1.7e18 ns
    return (d.days * 86_400 + d.seconds) * NS_PER_S + d.microseconds * 1000


def started_wall_of(source: str) -> str | None:
    """The ``started_wall`` of the recording a boot was read from (only its header line is
    read), or None: not a file (stdin), not a recording, no such field."""
    from ...capture.recording import header_of

    h = header_of(source)
    wall = h.started_wall if h is not None else None
    return wall or None


def wall_offset(clock: str, first_ns: int | None, last_ns: int | None, started_ns: int,
                span: tuple[int, int]) -> int | None:
    """The offset (host ns = trace ns + offset) the wall clock gives, or None when the trace
    has no absolute times (``-r``, none). ``clock`` is the trace's ("epoch" or "wall", see
    :class:`bootlens.sources.strace.reader.Trace`). A time of day has no date: of the day of
    ``started_wall``, the day before and the day after (a boot across midnight), the one that
    puts the trace nearest to ``span`` (the console's first and last host times) wins."""
    if clock == "epoch":
        return -started_ns
    if clock != "wall" or first_ns is None or last_ns is None:
        return None
    midnight = started_ns - started_ns % DAY_NS  # epoch days are UTC days

    def distance(off: int) -> int:  # 0 when the trace overlaps the console
        a, b = first_ns + off, last_ns + off
        return max(0, span[0] - b, a - span[1])

    return min((midnight + k * DAY_NS - started_ns for k in (0, -1, 1)), key=distance)


SLACK_NS = 300 * NS_PER_S  # a quiet app may run on after the console's last line; a wrong clock is off by more


def on_console(first_ns: int | None, offset: int, span: tuple[int, int]) -> bool:
    """Whether the trace's first call, placed by ``offset``, falls within the console's span
    (widened by ``SLACK_NS``: a trace of the boot starts while the console is recorded, but an
    app may print nothing after it). Outside, the board's clock is wrong (a board without an RTC
    starts in 1970 or at its build date) or in another time zone."""
    return first_ns is not None and span[0] - SLACK_NS <= first_ns + offset <= span[1] + SLACK_NS


@dataclass(frozen=True, slots=True)
class WallClock:
    """What the wall clock says about a trace on a recorded console."""

    offset_ns: int  # host ns = trace ns + offset_ns
    started_wall: str  # the recording's header, as written
    on_console: bool  # the trace's start falls within the console's host times (:func:`on_console`)
    span: tuple[int, int]  # the console's first and last host times

    def refused(self, first_ns: int | None) -> str:
        """Why the wall clock did not place a trace that starts at ``first_ns`` (its clock)."""
        at = (first_ns or 0) + self.offset_ns
        return (f"by the wall clock it would start at {at / 1e9:.3f} s, outside the console's "
                f"{self.span[0] / 1e9:.3f}-{self.span[1] / 1e9:.3f} s (recording started {self.started_wall}): "
                "the board's clock is not the host's")


def wall_clock(boot: Boot, summary: Summary) -> WallClock | None:
    """The wall clock's placement of a trace with absolute times on a recorded console (its
    host times count from the recording's ``started_wall``), or None: another console, a
    trace with relative times or none."""
    if summary.clock not in ("epoch", "wall"):
        return None
    host = boot.lines.host
    first = next((t for t in host if t is not None), None)
    last = next((host[i] for i in range(len(host) - 1, -1, -1) if host[i] is not None), None)
    started = started_wall_of(boot.source) if first is not None else None
    started_ns = wall_ns(started) if started else None
    if started is None or started_ns is None or first is None or last is None:
        return None
    span = (first, last)
    off = wall_offset(summary.clock, summary.first_ns, summary.last_ns, started_ns, span)
    if off is None:
        return None
    return WallClock(off, started, on_console(summary.first_ns, off, span), span)
