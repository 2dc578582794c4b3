"""What a summary of many boots keeps while they stream by (issue 29): bounded, whatever the count.

A console left running for days holds thousands of boots, a lab's soak test a million. Past
:data:`MANY_BOOTS` boots in one input, the commands summarise instead of printing every boot:
how many boots, how many measured their total and its median with min and max, the first, the
slowest and the last few boots (their analyses kept whole, :data:`KEEP` each), and each warning
once with how many boots gave it. Everything else of a boot is dropped once it was counted.
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque

from ..core.model import NamedTuple
from .analyze import BootAnalysis

# Past this many boots in one input, a boot is a row of a summary, not a page of its own (20: a
# day's resets of a board under test fit on one screen; a soak test's thousands never do).
MANY_BOOTS = 20
# The first, the slowest and the last boots a summary keeps whole (each).
KEEP = 3
# Distinct warning texts counted; more are counted together (a warning naming a line number
# differs from boot to boot).
MAX_WARNINGS = 200


class Picked(NamedTuple):
    """A boot a summary shows: its place (1-based, in its input) and why it is shown."""

    n: int
    why: str  # "first", "slowest", "last" (joined with ", " when several)
    boot: BootAnalysis


class BootTally:
    """Counts, totals and a few whole boots of one input's boots, added one at a time."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.n = 0  # boots seen
        self.measured = 0  # boots whose total was measured
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.sources: dict[str, int] = {}  # boots per source (a run folder's files)
        self.totals: dict[tuple[str, str], array[int]] = {}  # measured totals by (origin, end name)
        self.first: list[tuple[int, BootAnalysis]] = []
        self.last: deque[tuple[int, BootAnalysis]] = deque(maxlen=keep)
        self._slow: list[tuple[int, int, BootAnalysis]] = []  # a heap of (total, -n, boot): the slowest
        self.warnings: dict[tuple[str, str], int] = {}  # (source, text) -> boots that gave it
        self.other_warnings = 0  # boots' warnings past MAX_WARNINGS distinct texts

    def add(self, b: BootAnalysis) -> None:
        """Count one boot (the next of its input)."""
        self.n += 1
        n = self.n
        boot = b.boot
        if self.first_line is None:
            self.first_line = boot.first_line
        self.last_line = boot.last_line
        src = boot.source
        self.sources[src] = self.sources.get(src, 0) + 1
        t = b.total
        if t.duration_ns is not None:
            self.measured += 1
            key = (t.origin, t.end_name)
            col = self.totals.get(key)
            if col is None:
                col = self.totals[key] = array("q")
            col.append(t.duration_ns)
            item = (t.duration_ns, -n, b)
            if len(self._slow) < self.keep:
                heapq.heappush(self._slow, item)
            elif self.keep and item[:2] > self._slow[0][:2]:
                heapq.heapreplace(self._slow, item)
        if len(self.first) < self.keep:
            self.first.append((n, b))
        else:
            self.last.append((n, b))
        warnings = self.warnings
        for w in dict.fromkeys(b.warnings):
            k = (src, w)
            if k in warnings:
                warnings[k] += 1
            elif len(warnings) < MAX_WARNINGS:
                warnings[k] = 1
            else:
                self.other_warnings += 1

    def slowest(self) -> list[tuple[int, BootAnalysis]]:
        """The slowest boots by measured total, slowest first (ties: the earlier boot)."""
        return [(-m, b) for _, m, b in sorted(self._slow, key=lambda x: (-x[0], -x[1]))]

    def picked(self) -> list[Picked]:
        """The boots a summary shows, in input order: the first, the slowest and the last few."""
        why: dict[int, list[str]] = {}
        boots: dict[int, BootAnalysis] = {}
        for label, items in (("first", self.first), ("slowest", self.slowest()), ("last", list(self.last))):
            for n, b in items:
                why.setdefault(n, []).append(label)
                boots[n] = b
        return [Picked(n, ", ".join(why[n]), boots[n]) for n in sorted(boots)]

    def total_pair(self) -> tuple[str, str] | None:
        """The (origin, end name) of the total most boots measured, or None when none did."""
        if not self.totals:
            return None
        return max(self.totals, key=lambda k: len(self.totals[k]))

    def median_total(self) -> tuple[int, int, int, int] | None:
        """(boots, min, median, max) of the most common total in ns, or None."""
        pair = self.total_pair()
        if pair is None:
            return None
        v = sorted(self.totals[pair])
        k = len(v)
        med = v[k // 2] if k % 2 else (v[k // 2 - 1] + v[k // 2]) // 2
        return k, v[0], med, v[-1]

    def warning_counts(self) -> list[tuple[str, str, int, int]]:
        """(source, text, boots that gave it, boots of that source), in first-seen order."""
        return [(src, w, k, self.sources[src]) for (src, w), k in self.warnings.items()]
