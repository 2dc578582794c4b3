"""The headline of an input of several boots (a run folder): the median total with its min and
max, the same in the HTML report and the SVG boot graph."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..timeline.analyze import BootAnalysis
from ..stats.figures import Stat, stat


@dataclass(frozen=True, slots=True)
class BootsTotal:
    """The total (origin → end) over the boots of one input that measured it.

    Boots whose total runs between other points (one that never printed its ready line ends at
    the login prompt, or is not measured) are left out of the figure and counted in ``boots``
    only, so a median never mixes two different totals."""

    origin: str  # "power-on", "first byte", "kernel start"
    end_name: str  # "ready", "login prompt"
    boots: int  # boots of the input
    stat: Stat | None  # over the boots that measured this total; None when none did

    def text(self, fmt: Callable[[int], str]) -> str:
        """``power-on → ready: median 4.403 s · min–max 3.903–6.903 s · 3 boots`` (durations
        written by ``fmt``, as the HTML report writes them by its own)."""
        head = f"{self.origin} → {self.end_name}: "
        s = self.stat
        if s is None:
            return head + f"not measured in any of {self.boots:,} boots"
        of = f"{s.n:,} boots" if s.n == self.boots else f"{s.n:,} of {self.boots:,} boots"
        lo, hi = fmt(s.min), fmt(s.max)
        unit = lo[lo.rfind(" "):] if " " in lo else ""
        span = f"{lo[:-len(unit)]}–{hi}" if unit and hi.endswith(unit) else f"{lo} – {hi}"
        return head + f"median {fmt(round(s.median))} · min–max {span} · {of}"


def boots_total(boots: Sequence[BootAnalysis]) -> BootsTotal:
    """The median total of these boots with its min and max, over the boots whose total runs
    between the most common pair of points."""
    pairs = Counter((b.total.origin, b.total.end_name) for b in boots if b.total.duration_ns is not None)
    if not pairs:
        first = boots[0].total if boots else None
        return BootsTotal(first.origin if first else "start", "ready", len(boots), None)
    (origin, end_name), _ = pairs.most_common(1)[0]
    values = [b.total.duration_ns for b in boots if b.total.duration_ns is not None
              and (b.total.origin, b.total.end_name) == (origin, end_name)]
    return BootsTotal(origin, end_name, len(boots), stat("total", values))
