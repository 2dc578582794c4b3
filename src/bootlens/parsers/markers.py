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

from ..core.lazyre import lazy
from ..core.lines import Lines, estimate_stamp
from ..core.numbers import NS_PER_S, Tally, in_range, to_ns
from ..core.model import NS_PER_MS, Clock, Event, Fact, Kind, Milestone, ParseResult, Stamp
from . import REGISTRY
from .base import Parser
from ..core.options import ParseOptions

_UPTIME = lazy(r"uptime: (\d+)\.(\d{1,9}) +\d+(?:\.\d+)?\s*$")
GUEST_CLOCK = "bootlens: guest clock "
_GUEST = lazy(r"bootlens: guest clock (\d{1,20}) ticks at (\d{1,12}) Hz\s*$")


def _estimate(lines: Lines, idx: int, uptime_floor: int | None) -> Stamp | None:
    """A marker's time; an earlier /proc/uptime reading tightens an untimed line's lower bound.

    CLOCK_BOOTTIME reads at or behind the printk clock (10-30 ms behind on the reference
    targets), so a reading taken before this line is a valid lower bound in printk time.
    """
    st = estimate_stamp(lines, idx)
    if st is None or not st.estimated or uptime_floor is None or uptime_floor <= st.ns:
        return st
    err = None if st.error_ns is None else max(0, st.ns + st.error_ns - uptime_floor)
    return Stamp(st.clock, uptime_floor, True, err)


def _floor(lines: Lines, idx: int) -> int | None:
    """The latest /proc/uptime reading printed since the last kernel line before idx."""
    texts, kern = lines.text, lines.kernel
    for j in range(idx - 1, -1, -1):
        if kern[j] is not None:
            return None
        m = _UPTIME.match(texts[j]) if texts[j].startswith("uptime: ") else None
        if m is not None:
            return _uptime_ns(m)
    return None


def _uptime_ns(m: re.Match[str]) -> int | None:
    """An ``uptime: S.F`` reading in ns, or None when out of range."""
    s = to_ns(m[1], NS_PER_S)
    ns = None if s is None else s + int((m[2] + "000000000")[:9])
    return ns if in_range(ns) else None


@REGISTRY.register
class MarkerParser(Parser):
    """User-defined markers and /proc/uptime readings."""

    name = "markers"
    description = "user markers (--marker NAME=REGEX) and 'uptime: A B' lines"
    # the literal markers of the options are indexed too (ParseOptions.needles)
    prefixes = ("uptime: ", GUEST_CLOCK)

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        if options.markers:
            return 1.0
        texts = lines.text
        return 1.0 if any(texts[i].startswith(p) for p in self.prefixes for i in lines.starting(p)) else 0.0

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        texts = lines.text
        tally = Tally("uptime")
        uptimes = [i for i in lines.starting("uptime: ") if texts[i].startswith("uptime: ")]
        for i in uptimes:
            m = _UPTIME.match(texts[i])
            if m is not None:
                if (ns := _uptime_ns(m)) is None:
                    tally.refuse("uptime", lines.no(i))
                    continue
                # On a host-stamped capture the line's arrival is a measurement; the reading
                # itself (CLOCK_BOOTTIME, behind printk) is kept as a fact either way.
                h = lines.host[i]
                st = Stamp(Clock.HOST, h) if h is not None else Stamp(Clock.UPTIME, ns, True, 10 * NS_PER_MS)
                events.append(Event(Kind.MARKER, "uptime", st, None, lines.no(i)))
                facts.append(Fact("uptime", f"{m[1]}.{m[2]}", lines.no(i)))
        events += _guest_clock(lines, tally, facts)
        literal = [m for m in options.markers if m.literal is not None]
        for spec in literal:  # plain strings: the lines holding them come from the index
            lit = spec.literal
            assert lit is not None
            for i in lines.grep(lit):
                events.append(Event(Kind.MARKER, spec.name, _estimate(lines, i, _floor(lines, i)), None,
                                    lines.no(i)))
        regex = [m for m in options.markers if m.literal is None]
        if regex:
            # One search over the joined text per marker (C speed); a match's line is found by
            # counting newlines since the previous match, also in C.
            # re.M keeps ^ and $ meaning "start/end of a line", as with a per-line search.
            joined = "\n".join(texts)
            for spec in regex:
                rx = re.compile(spec.pattern.pattern, spec.pattern.flags | re.M)
                last = -1
                i, pos = 0, 0
                for m in rx.finditer(joined):
                    i += joined.count("\n", pos, m.start())
                    pos = m.start()
                    if i == last or ("\n" in m.group(0) and spec.pattern.search(texts[i]) is None):
                        continue
                    last = i
                    events.append(Event(Kind.MARKER, spec.name, _estimate(lines, i, _floor(lines, i)), None,
                                        lines.no(i)))
        events.sort(key=lambda e: e.line_no)
        return ParseResult(tuple(events), tuple(facts), tally.warnings())


def _guest_clock(lines: Lines, tally: Tally, facts: list[Fact]) -> list[Event]:
    """Power-on on the printk clock from each guest-clock reading with a printk time (the first
    one wins in the alignment; a boot has one)."""
    texts, kern = lines.text, lines.kernel
    out: list[Event] = []
    for i in lines.starting(GUEST_CLOCK):
        m = _GUEST.match(texts[i]) if texts[i].startswith(GUEST_CLOCK) else None
        if m is None:
            continue
        ticks, hz, k = int(m[1]), int(m[2]), kern[i]
        if k is None or hz == 0 or not in_range(ticks * NS_PER_S // hz):
            tally.refuse("guest clock", lines.no(i))
            continue
        since_reset = ticks * NS_PER_S // hz
        facts.append(Fact("guest_clock", f"{ticks} ticks at {hz} Hz", lines.no(i)))
        out.append(Event(Kind.MILESTONE, Milestone.POWER_ON, Stamp(Clock.KERNEL, k - since_reset), None, lines.no(i)))
    return out
