"""Trends over stored runs: one figure's statistics run after run (``bootlens history``).

A figure is a total, stage or marker (named as :func:`bootlens.stats.figures.boot_figures` names them)
or one name of a per-name table (an initcall, process, probe or unit): its value in a run is
the statistics over that run's boots, as ``compare`` computes them for one input
(:func:`bootlens.stats.figures.figure_statistics`, :func:`bootlens.stats.compare.sums_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..stats.compare import sums_of
from ..stats.figures import Stat, figure_statistics, stat
from .store import KINDS, NAME_KIND, BootRecord, HistoryError, Store, StoredRun, figure_kind


@dataclass(frozen=True, slots=True)
class Trend:
    """One figure over runs: ``stats[i]`` is over the boots of ``runs[i]`` (None: not measured there)."""

    kind: str  # total, stage, marker, initcall, process, probe, unit
    name: str  # as stored ("  kernel_init" for a sub-stage, "marker ready")
    stats: tuple[Stat | None, ...]

    @property
    def label(self) -> str:
        """The name as shown: a sub-stage without its indent, a per-name figure with its kind."""
        return self.name.strip() if self.kind in ("total", "stage", "marker") else f"{self.kind} {self.name}"


def _run_stats(boots: Sequence[BootRecord]) -> dict[tuple[str, str], Stat]:
    """Every figure of one run: (kind, name) -> statistics over its boots."""
    out = {(figure_kind(s.name), s.name): s for s in figure_statistics(b.figures for b in boots)}
    for table, kind in NAME_KIND.items():
        sums = sums_of(b.sums[table] for b in boots)
        for n, values in sums.ns.items():
            s = stat(n, values)
            if s is not None:
                out[(kind, n)] = s
    return out


def _matches(key: tuple[str, str], wanted: str) -> bool:
    """``--figure``: a name as shown ("userspace", "kernel_init", "marker ready", "total"), or
    KIND:NAME for one kind ("initcall:acpi_init", "process:sleep", "stage:kernel")."""
    kind, name = key
    want_kind, sep, want = wanted.partition(":")
    if sep and want_kind in KINDS:
        return kind == want_kind and (name.strip() == want or (kind == "total" and not want))
    if kind == "total" and wanted == "total":
        return True
    return name.strip() == wanted


def trends(store: Store, runs: Sequence[StoredRun], figures: Sequence[str] = ()) -> list[Trend]:
    """The trend of each figure over ``runs`` (in that order): the totals and stages when no
    ``figures`` are named, else those named (a name matching nothing is a HistoryError)."""
    ids = [r.id for r in runs]
    by_run: dict[int, list[BootRecord]] = {i: [] for i in ids}
    for b in store.boots(ids):
        by_run[b.run_id or 0].append(b)
    per_run = [_run_stats(by_run[i]) for i in ids]
    keys = list(dict.fromkeys(k for d in per_run for k in d))  # first-seen order: stages as a boot lists them
    if figures:
        chosen = []
        for want in figures:
            hit = [k for k in keys if _matches(k, want)]
            if not hit:
                raise HistoryError(f"--figure {want!r}: no stored run has it (names as `bootlens history --json` "
                                   "lists them; KIND:NAME for an initcall, process, probe or unit)")
            chosen += [k for k in hit if k not in chosen]
        keys = chosen
    else:
        keys = [k for k in keys if k[0] in ("total", "stage")]
        keys.sort(key=lambda k: k[0] != "total")  # stable: the stages keep their order
    return [Trend(k, n, tuple(d.get((k, n)) for d in per_run)) for k, n in keys]


__all__ = ["Trend", "trends"]
