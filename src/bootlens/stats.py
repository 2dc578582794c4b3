"""Statistics over repeated boots: per stage and per marker, min, median, max and standard
deviation, with a warning when the spread (max - min) exceeds 5% of the median."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .analyze import BootAnalysis
from .model import Kind

SPREAD_WARN = 0.05


@dataclass(frozen=True, slots=True)
class Stat:
    """One quantity over repeated boots, in ns; ``n`` boots measured it."""

    name: str
    n: int
    min: int
    median: float
    max: int
    stdev: float

    @property
    def range_ns(self) -> int:
        """max - min: the run-to-run spread in ns (0 for a single value)."""
        return self.max - self.min

    @property
    def spread(self) -> float:
        """(max - min) / median; 0 for fewer than two values."""
        return 0.0 if self.n < 2 or not self.median else (self.max - self.min) / self.median


def stat(name: str, values: Sequence[int]) -> Stat | None:
    """Statistics of the values, or None when there are none."""
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return Stat(name, len(values), min(values), statistics.median(values), max(values), sd)


def boot_figures(b: BootAnalysis) -> dict[str, int]:
    """The quantities compared across boots: total, each measured stage, each marker's time."""
    out: dict[str, int] = {}
    if b.total.duration_ns is not None:
        out["total (power-on → ready)" if b.total.origin == "power-on" else f"total ({b.total.origin} → ready)"] = \
            b.total.duration_ns
    for s in b.stages:
        if s.duration_ns is not None:
            out[("  " if s.parent else "") + s.name] = s.duration_ns
    seen = set()
    for e, t in zip(b.boot.events, b.times):
        if e.kind is Kind.MARKER and t is not None and e.name not in seen and e.name != "uptime":
            seen.add(e.name)
            out[f"marker {e.name}"] = t
    return out


def statistics_of(boots: Sequence[BootAnalysis]) -> list[Stat]:
    """Per-quantity statistics, in the order quantities first appear."""
    names: list[str] = []
    values: dict[str, list[int]] = {}
    for b in boots:
        for k, v in boot_figures(b).items():
            if k not in values:
                names.append(k)
                values[k] = []
            values[k].append(v)
    return [s for k in names if (s := stat(k, values[k])) is not None]
