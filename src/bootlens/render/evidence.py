"""A measured duration as the reader should take it: its figure marked by how sure it is
(``≤ 1.035 s`` an upper bound, ``≥`` a lower bound, ``~`` or a range an estimate, ``± 1 s`` where
the clock's tick is coarse), and the sentence that says what it rests on (the HTML report's and
the SVG's hover text). One home for the terminal, the HTML report and the SVG.
"""

from __future__ import annotations

from ..core.lines import Lines, clip
from ..core.units import short, short_range
from ..timeline.stages import ESTIMATE, EXACT, LOWER, UPPER, Evidence, Point

_CLOCK = {"kernel": "printk clock", "host": "host's arrival time", "bootloader": "bootloader's own clock",
          "uptime": "/proc/uptime", "derived": "derived"}


def mark(ev: Evidence | None) -> str:
    """'≤', '≥', '~' or '' before a figure."""
    if ev is None or ev.kind == EXACT:
        return ""
    return {UPPER: "≤", LOWER: "≥"}.get(ev.kind, "~")


def figure(ns: int | None, ev: Evidence | None) -> str:
    """A duration with its mark: ``1.035 s``, ``≤ 1.035 s``, ``≥ 2.992 s``, ``70.6–132.4 ms``,
    ``~1.2 s``, ``7.000 s ± 1 s`` (the tick shown where it is over 1% of the figure)."""
    if ns is None:
        return short(ns)
    if ev is None:
        return short(ns)
    if ev.kind == ESTIMATE:
        if ev.low_ns is not None and ev.high_ns is not None:
            return short_range(ev.low_ns, ev.high_ns)
        return f"~{short(ns)}"
    body = short(ns)
    if ev.tick_ns > 1 and ev.tick_ns * 100 > ns:
        body += f" ± {short(ev.tick_ns)}"
    m = mark(ev)
    return f"{m} {body}" if m else body


def _end(p: Point | None, lines: Lines | None) -> str:
    if p is None:
        return "—"
    how = "estimated (the line has no time of its own)" if p.estimated else (
        "at the latest" if p.upper else "exact")
    clock = _CLOCK.get(p.clock.value if p.clock is not None else "derived", "")
    where = f"line {p.line_no}" if p.line_no else p.what
    if lines is not None and p.line_no:
        i = lines.index_of(p.line_no)
        if 0 <= i < len(lines):
            where += f" “{clip(lines.text[i].strip(), 60)}”"
    return f"{where} ({clock}, {how})"


def evidence_text(ev: Evidence | None, lines: Lines | None = None) -> str:
    """'upper bound, ±1 µs: from line 12 “Starting kernel ...” (host's arrival time, exact) to
    line 40 “Booting Linux …” (printk clock, at the latest)'; '' when not measured."""
    if ev is None:
        return ""
    tick = f", ±{short(ev.tick_ns)}" if ev.tick_ns > 1 else ""
    return f"{ev.kind}{tick}: from {_end(ev.start, lines)} to {_end(ev.end, lines)}"
