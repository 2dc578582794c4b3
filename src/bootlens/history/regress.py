"""``bootlens regress``: a new run against reference values from the history store.

The reference is one or more stored runs (their boots pooled: reference values are what those
boots measured); the new run is a stored run or an input analysed now. Both sides go through
the statistics of ``compare`` unchanged (:mod:`bootlens.stats.compare`: a t-test and a practical
floor per figure, never a difference within the clock's tick, Benjamini-Hochberg within each
per-name table): the totals, stages and markers (:func:`bootlens.stats.compare.figures_from`),
then initcalls, processes, probes and units (:func:`bootlens.stats.compare.name_deltas` on
:func:`bootlens.stats.compare.sums_of`). A regression is a row judged significant whose
difference of medians is positive (the new run is slower); a row above the floor that these
boots cannot decide yet is *undecided* and says how many more boots would decide it. Nothing
is a regression for being slower without confidence, nor for a reading one tick of its clock
slower (an initcall timed on jiffies: 0 ns against 4.0 ms).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..stats.compare import NAME_KINDS, Change, Delta, NameDeltas, Significance, figures_from, name_deltas, sums_of
from ..stats.figures import figure_statistics
from .store import NAME_KIND, BootRecord, HistoryError, Store, StoredRun

ALL = 10**9  # name_deltas keeps the top N rows: regress judges every name
SIDES = ("the reference", "the new run")  # how the verdicts' reasons name the two sides


@dataclass(frozen=True, slots=True)
class Side:
    """One side of the comparison: the stored runs it pools (empty for an input analysed now),
    what it is called, how many boots."""

    name: str
    runs: tuple[int, ...]
    boots: int


@dataclass(frozen=True, slots=True)
class Row:
    """One judged quantity: ``kind`` total, stage, marker, initcall, process, probe or unit."""

    kind: str
    delta: Delta


@dataclass(frozen=True, slots=True)
class Regression:
    """The new run against the reference: every row judged, and the per-name tables' notes
    (why a kind was not compared, e.g. no initcall_debug on one side)."""

    reference: Side
    new: Side
    rows: tuple[Row, ...]
    tables: tuple[NameDeltas, ...]

    def _pick(self, significance: Significance, slower: bool) -> tuple[Row, ...]:
        picked = [r for r in self.rows if r.delta.significance is significance and r.delta.delta_ns is not None
                  and (r.delta.delta_ns > 0 if slower else r.delta.delta_ns < 0)]
        return tuple(sorted(picked, key=lambda r: -r.delta.impact_ns))

    @property
    def slower(self) -> tuple[Row, ...]:
        """The regressions: significantly slower, largest first."""
        return self._pick(Significance.SIGNIFICANT, True)

    @property
    def faster(self) -> tuple[Row, ...]:
        """Significantly faster, largest first."""
        return self._pick(Significance.SIGNIFICANT, False)

    @property
    def missing(self) -> tuple[Row, ...]:
        """Totals, stages and markers the reference measured and the new run did not."""
        return tuple(r for r in self.rows if r.delta.change is Change.NOT_MEASURED and r.delta.other is None
                     and r.delta.baseline is not None)

    @property
    def undecided(self) -> tuple[Row, ...]:
        """Slower by more than the floor, but these boots cannot tell (need N more boots)."""
        return self._pick(Significance.UNKNOWN, True)


def _figure_kind(name: str) -> str:
    return "total" if name.startswith("total ") else "marker" if name.startswith("marker ") else "stage"


def regress(reference: Sequence[BootRecord], new: Sequence[BootRecord], ref_side: Side, new_side: Side) -> Regression:
    """Judge ``new``'s boots against ``reference``'s, row by row (module docstring)."""
    if not reference:
        raise HistoryError("the reference has no boots")
    if not new:
        raise HistoryError("the new run has no boots")
    sides = (reference, new)
    figures = figures_from([figure_statistics(b.figures for b in side) for side in sides],
                           [frozenset(b.origin for b in side) for side in sides], SIDES)
    rows = [Row(_figure_kind(f.name), f.deltas[0]) for f in figures]
    tables = []
    for table, _key in NAME_KINDS:
        nd = name_deltas(table, sums_of(b.sums[table] for b in reference), sums_of(b.sums[table] for b in new),
                         ALL, SIDES, with_counts=table == "processes")
        tables.append(nd)
        rows += [Row(NAME_KIND[table], d) for d in nd.rows]
    return Regression(ref_side, new_side, tuple(rows), tuple(tables))


def parse_selector(selector: str) -> tuple[list[int], dict[str, str]]:
    """``--reference``: run ids ("12" or "3,4,5") or labels ("board=rpi4,branch=main")."""
    ids: list[int] = []
    labels: dict[str, str] = {}
    for part in (p.strip() for p in selector.split(",")):
        if not part:
            continue
        if "=" in part:
            k, _, v = part.partition("=")
            if not k.strip():
                raise HistoryError(f"--reference {selector!r}: {part!r} has no label name before '='")
            labels[k.strip()] = v.strip()
        elif part.isascii() and part.isdigit():
            ids.append(int(part))
        else:
            raise HistoryError(f"--reference {selector!r}: {part!r} is neither a run id nor a label KEY=VALUE")
    if not ids and not labels:
        raise HistoryError(f"--reference {selector!r}: give run ids (12 or 3,4) or labels (board=rpi4,build=main)")
    return ids, labels


def select_reference(store: Store, selector: str, last: int | None = None, exclude: int | None = None,
                     extra_labels: Mapping[str, str] | None = None) -> list[StoredRun]:
    """The stored runs ``selector`` names (ids, or every run carrying its labels), without the
    run being judged (``exclude``); with ``last``, only the latest ``last`` of them."""
    ids, labels = parse_selector(selector)
    runs = store.runs({**labels, **(extra_labels or {})}, ids)
    runs = [r for r in runs if r.id != exclude]
    if last is not None:
        runs = runs[-last:]
    if not runs:
        raise HistoryError(f"--reference {selector!r}: no stored run matches" +
                           (" (other than the new run)" if exclude is not None else ""))
    return runs
