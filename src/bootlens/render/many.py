"""An input of many boots in a report (issue 29): the boots counted and summed up, a few kept whole.

A report page, an SVG boot graph or a Perfetto trace of a soak test's million boots would hold
a million timelines; none can be read and none fits in memory. Past :data:`MANY_BOOTS` boots in
one input (the threshold ``bootlens analyze`` summarises at), :func:`condense` reads the boots
one at a time and keeps:

- whole, the first, the slowest and the last :data:`KEEP` boots (as ``analyze`` shows them), and
  boot ``--boot N`` when asked for; the report opens on boot N, else on the slowest boot that
  measured its total (the one to look at first when hunting a slow boot), else the last;
- over every boot: the headline (the median total with min and max), the statistics per stage
  and marker (8 bytes a boot each), and the advisor's findings merged
  (:class:`bootlens.advise.summary.Merger`);
- nothing else of a boot once it was counted.

An input of :data:`MANY_BOOTS` boots or fewer is reported whole, as before.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import chain, islice

from ..advise import advise, default_registry
from ..advise.base import Finding
from ..advise.context import context_for_group, context_of
from ..advise.summary import MergedFinding, Merger
from ..core.model import InputStats
from ..stats.figures import Stat, boot_figures, stat
from ..timeline.analyze import Analysis, BootAnalysis
from ..timeline.inputs import Group
from ..timeline.tally import KEEP, MANY_BOOTS, BootTally
from .headline import BootsTotal


@dataclass(frozen=True, slots=True)
class ManyBoots:
    """An input of more than :data:`MANY_BOOTS` boots as a report holds it; the group beside it
    holds the boots kept whole (``analysis.boots``), in input order."""

    boots: int  # boots in the input
    positions: tuple[int, ...]  # each kept boot's 0-based place among the input's boots
    why: tuple[str, ...]  # why each is kept: "first", "slowest", "last", "asked" (joined with ", ")
    opened: int  # the kept boot a report opens on (an index into ``positions``)
    measured: int  # boots that measured their total
    total: BootsTotal  # over every boot
    stats: tuple[Stat, ...]  # per quantity (stats.figures.boot_figures) over every boot; values dropped
    merged: tuple[MergedFinding, ...]  # the advisor's findings over every boot
    findings: tuple[tuple[Finding, ...], ...]  # each kept boot's own findings


def condense(name: str, inputs: tuple[InputStats, ...], folder: bool, boots: Iterator[BootAnalysis],
             whole: Group | None = None, boot: int | None = None) -> tuple[Group, ManyBoots | None]:
    """One input for a report: the group as analysed whole and None when it holds
    :data:`MANY_BOOTS` boots or fewer; else the group of the boots kept and what the report
    shows of the others (module docstring). ``boot``: a boot to keep and open on (1-based).
    ``whole``: the input's group when it was analysed whole (a run folder, side files)."""
    head = list(islice(boots, MANY_BOOTS + 1))
    if len(head) <= MANY_BOOTS:
        return (whole if whole is not None else Group(name, Analysis(inputs, tuple(head)), folder)), None
    ctx = context_for_group(whole) if whole is not None else context_of(name, folder, ())
    reg = default_registry()
    tally = BootTally(KEEP)
    merger = Merger()
    figures: dict[str, array[int]] = {}
    asked: tuple[int, BootAnalysis] | None = None
    for n, b in enumerate(chain(head, boots), 1):
        if n == MANY_BOOTS + 2:
            head = []  # the first boots are the tally's now
        tally.add(b)
        merger.add(advise(b, ctx, reg, []))
        for k, v in boot_figures(b).items():
            col = figures.get(k)
            if col is None:
                col = figures[k] = array("q")
            col.append(v)
        if n == boot:
            asked = (n, b)
    kept: dict[int, tuple[list[str], BootAnalysis]] = {}
    for p in tally.picked():
        kept[p.n] = (p.why.split(", "), p.boot)
    if asked is not None:
        kept.setdefault(asked[0], ([], asked[1]))[0].append("asked")
    order = sorted(kept)
    slowest = tally.slowest()
    opened = asked[0] if asked is not None else slowest[0][0] if slowest else order[-1]
    kept_boots = tuple(kept[n][1] for n in order)
    return Group(name, Analysis(inputs, kept_boots), folder), ManyBoots(
        tally.n, tuple(n - 1 for n in order), tuple(", ".join(kept[n][0]) for n in order), order.index(opened),
        tally.measured, _total(tally), _stats(figures), merger.result(),
        tuple(tuple(advise(b, ctx, reg, [])) for b in kept_boots))


def _total(t: BootTally) -> BootsTotal:
    """:func:`bootlens.render.headline.boots_total` from a tally's totals."""
    pair = t.total_pair()
    if pair is None:
        first = t.first[0][1].total
        return BootsTotal(first.origin, "ready", t.n, None)
    s = stat("total", t.totals[pair].tolist())
    return BootsTotal(pair[0], pair[1], t.n, replace(s, values=()) if s is not None else None)


def _stats(figures: dict[str, array[int]]) -> tuple[Stat, ...]:
    """:func:`bootlens.stats.figures.figure_statistics` of the columns, one at a time (a Stat
    keeps its values for a test between inputs; a report of a million boots drops them)."""
    out = []
    for k, col in figures.items():
        s = stat(k, col.tolist())
        if s is not None:
            out.append(replace(s, values=()))
    return tuple(out)


def condensed(groups: Iterable[tuple[Group, ManyBoots | None]]) -> tuple[list[Group], dict[int, ManyBoots]]:
    """The groups, and the ManyBoots of those that have one by the group's index."""
    out: list[Group] = []
    many: dict[int, ManyBoots] = {}
    for i, (g, m) in enumerate(groups):
        out.append(g)
        if m is not None:
            many[i] = m
    return out, many
