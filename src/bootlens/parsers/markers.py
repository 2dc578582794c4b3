"""User markers (``--marker NAME=REGEX``) and ``uptime: A B`` lines printed from /proc/uptime.

A marker on a host-timestamped capture gets its line's arrival time. On a printk-only console a
user-space line has no time of its own: it is placed at the kernel line before it, marked as an
estimate bounded by the kernel line after it.

``uptime:`` lines carry user space's CLOCK_BOOTTIME reading. It is close to the printk clock but
not the same (it starts at timekeeping init and /proc/uptime truncates to 10 ms; on the reference
target it reads 10-30 ms behind printk), so it is kept as its own clock domain and its events are
marked as estimates. Because it reads behind printk, a reading printed before an untimed
marker raises that marker's lower bound.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..lines import estimate_stamp
from ..model import NS_PER_MS, Clock, Event, Fact, Kind, Line, ParseResult, Stamp
from . import REGISTRY
from .base import ParseOptions, Parser

_UPTIME = re.compile(r"uptime: (\d+)\.(\d{1,9}) +\d+(?:\.\d+)?\s*$")


def _estimate(lines: Sequence[Line], idx: int, uptime_floor: int | None) -> Stamp | None:
    """A marker's time; an earlier /proc/uptime reading tightens an untimed line's lower bound.

    CLOCK_BOOTTIME reads at or behind the printk clock (10-30 ms behind on the reference
    targets), so a reading taken before this line is a valid lower bound in printk time.
    """
    st = estimate_stamp(lines, idx)
    if st is None or not st.estimated or uptime_floor is None or uptime_floor <= st.ns:
        return st
    err = None if st.error_ns is None else max(0, st.ns + st.error_ns - uptime_floor)
    return Stamp(st.clock, uptime_floor, True, err)


@REGISTRY.register
class MarkerParser(Parser):
    """User-defined markers and /proc/uptime readings."""

    name = "markers"
    description = "user markers (--marker NAME=REGEX) and 'uptime: A B' lines"

    def sniff(self, lines: Sequence[Line], options: ParseOptions) -> float:
        if options.markers:
            return 1.0
        return 1.0 if any(line.text.startswith("uptime: ") for line in lines) else 0.0

    def parse(self, lines: Sequence[Line], options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        searches = [(spec.name, spec.pattern.search) for spec in options.markers]
        uptime_floor: int | None = None  # latest /proc/uptime reading since the last kernel line
        for idx, line in enumerate(lines):
            t = line.text
            if line.kernel_ns is not None:
                uptime_floor = None
            if t.startswith("uptime: "):
                m = _UPTIME.match(t)
                if m is not None:
                    ns = int(m[1]) * 1_000_000_000 + int((m[2] + "000000000")[:9])
                    uptime_floor = ns
                    events.append(
                        Event(Kind.MARKER, "uptime", Stamp(Clock.UPTIME, ns, True, 10 * NS_PER_MS), None, line.no)
                    )
                    facts.append(Fact("uptime", f"{m[1]}.{m[2]}", line.no))
            for name, search in searches:
                if search(t) is not None:
                    events.append(Event(Kind.MARKER, name, _estimate(lines, idx, uptime_floor), None, line.no))
        return ParseResult(tuple(events), tuple(facts), ())

