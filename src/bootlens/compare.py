"""``bootlens compare``: each input against the first one, the baseline.

An input is a :class:`~bootlens.inputs.Group`: one log, one recording, or a run folder of
repeated boots. Every quantity is reduced to its median over the group's boots and compared
with the baseline's median; the per-boot spread says whether the difference means anything.

Significance rule
-----------------
A difference of medians is **significant** when both sides have at least two boots and it is
larger than the run-to-run spread (max - min) of either side::

    |median(B) - median(A)| > max(max(A) - min(A), max(B) - min(B))

It is **not significant** when it is not larger: the two inputs differ by no more than one of
them differs from itself. With a single boot on either side the spread is unknown, and so is
the verdict ("unknown", reason "1 boot"). A quantity measured on one side only has no
difference at all (``delta_ns`` None).

Why a range and not a statistical test: run folders hold a handful of boots, and with three a
side even a rank test (Mann-Whitney U) cannot go below p = 0.1; the range rule needs no
distribution, is strict in the same spirit (a lone outlier widens the spread and mutes the
verdict), and a reader can check it by eye against the min/max columns. It is a per-row
rule with no correction for the number of rows: among hundreds of initcalls compared over two
or three boots a side, some pass by chance (two boots on a loaded host flagged 91 of 915
initcalls, most under 1 ms); read the per-name tables by size and boot more to confirm.

Per-name tables
---------------
Initcalls (by function name, ``name [module]`` for a module's), device probes (by device) and
user processes (by executable name, else comm) are summed per name within each boot (a forked
busybox repeats its name; ``count`` says how many ran), then compared like the stages. Only
boots that show that kind of event at all take part (a log without initcall_debug says nothing
about initcalls); in those, a name the boot does not show counts as 0 ns. A name no boot of
one side shows is *added* or *removed*, and its absent side counts as 0 ns in each boot.
Initcalls that never returned and processes that never exited add no time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .analyze import BootAnalysis
from .errors import UsageError
from .inputs import Group
from .model import Event, InitcallDetail, Kind, ProcessDetail
from .stats import Stat, stat, statistics_of

MIN_BOOTS = 2  # boots a side needs before its spread, and so a verdict, is known


class Significance(StrEnum):
    """Whether a difference is larger than the run-to-run spread (see the module docstring)."""

    SIGNIFICANT = "significant"
    NOT_SIGNIFICANT = "not significant"
    UNKNOWN = "unknown"


class Change(StrEnum):
    """How a quantity or name is present on the two sides."""

    CHANGED = "changed"  # on both sides (the difference may be zero)
    ADDED = "added"  # a name only the other input shows
    REMOVED = "removed"  # a name only the baseline shows
    NOT_MEASURED = "not measured"  # a stage or marker one side did not measure: no difference
    NOT_COMPARABLE = "not comparable"  # a marker time counted from a different t=0 on each side


@dataclass(frozen=True, slots=True)
class InputSummary:
    """One compared input: ``label`` ("A", "B", ...) names it in tables; A is the baseline."""

    label: str
    name: str  # the input as the user gave it
    folder: bool  # a run folder
    boots: int
    partial: int  # boots with pieces missing from the log


@dataclass(frozen=True, slots=True)
class Delta:
    """One quantity or name of one input against the baseline; times in ns.

    ``baseline`` and ``other`` are None where the quantity was not measured, or the name not
    seen, on that side. ``threshold_ns`` is the spread the difference was held against.
    """

    name: str
    baseline: Stat | None
    other: Stat | None
    change: Change
    delta_ns: float | None  # median(other) - median(baseline)
    delta_pct: float | None  # relative to the baseline median; None when that is 0 or unknown
    significance: Significance
    threshold_ns: int | None  # max of the two spreads; None when unknown
    reason: str  # the verdict in words: "1 boot", "larger than the spread", ...
    baseline_count: float | None = None  # processes only: median processes of this name per boot
    other_count: float | None = None

    @property
    def impact_ns(self) -> float:
        """|delta|, what the per-name tables are sorted by (0 when there is no difference)."""
        return abs(self.delta_ns) if self.delta_ns is not None else 0.0


@dataclass(frozen=True, slots=True)
class Figure:
    """A total, stage (with sub-stages) or marker time, across all inputs.

    Names are those of :func:`bootlens.runs.boot_figures`: sub-stages are indented by two
    spaces, markers are ``marker NAME``.
    """

    name: str
    stats: tuple[Stat | None, ...]  # one per input, baseline first; None = not measured there
    deltas: tuple[Delta, ...]  # one per input after the baseline


@dataclass(frozen=True, slots=True)
class NameDeltas:
    """The largest per-name differences of one kind (initcalls, processes, probes)."""

    kind: str  # "initcalls", "processes", "probes"
    rows: tuple[Delta, ...]  # the top ones by |delta|, largest first
    names: int  # names compared in all
    added: int
    removed: int
    significant: int  # over all names, not only the rows shown
    note: str | None = None  # why nothing was compared, e.g. no initcall_debug on one side


@dataclass(frozen=True, slots=True)
class Pair:
    """One input against the baseline: its per-name tables."""

    other: int  # index into Comparison.inputs (>= 1)
    initcalls: NameDeltas
    processes: NameDeltas
    probes: NameDeltas


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every input against ``inputs[0]``: the figure table, then one Pair per other input."""

    inputs: tuple[InputSummary, ...]
    figures: tuple[Figure, ...]
    pairs: tuple[Pair, ...]
    top: int


def label(i: int) -> str:
    """A, B, ... Z, then I27, I28, ..."""
    return chr(ord("A") + i) if i < 26 else f"I{i + 1}"


def judge(base: Stat, other: Stat, delta_ns: float) -> tuple[Significance, int | None, str]:
    """The verdict on a difference of medians (the rule in the module docstring)."""
    if base.n < MIN_BOOTS or other.n < MIN_BOOTS:
        return Significance.UNKNOWN, None, "1 boot"
    threshold = max(base.range_ns, other.range_ns)
    if abs(delta_ns) > threshold:
        return Significance.SIGNIFICANT, threshold, "larger than the run-to-run spread"
    return Significance.NOT_SIGNIFICANT, threshold, "within the run-to-run spread"


def _pct(delta_ns: float, base: float) -> float | None:
    return 100.0 * delta_ns / base if base else None


def figure_delta(name: str, base: Stat | None, other: Stat | None, labels: tuple[str, str] = ("A", "B"),
                 comparable: bool = True) -> Delta:
    """A stage or marker: no difference unless both sides measured it (``labels`` name the two
    sides in the reason); ``comparable`` False for a marker time on axes with different t=0."""
    if base is None or other is None:
        where = f" in {labels[0]}" if other is not None else f" in {labels[1]}" if base is not None else ""
        return Delta(name, base, other, Change.NOT_MEASURED, None, None, Significance.UNKNOWN, None,
                     f"not measured{where}")
    if not comparable:
        return Delta(name, base, other, Change.NOT_COMPARABLE, None, None, Significance.UNKNOWN, None,
                     "different t=0")
    d = other.median - base.median
    sig, threshold, reason = judge(base, other, d)
    return Delta(name, base, other, Change.CHANGED, d, _pct(d, base.median), sig, threshold, reason)


def _merge_order(lists: Iterable[Sequence[str]]) -> list[str]:
    """The union of several ordered name lists: a name new in a later list goes right after
    its predecessor there, so a stage only one input measured stays among the stages."""
    out: list[str] = []
    for names in lists:
        for i, n in enumerate(names):
            if n in out:
                continue
            prev = next((names[j] for j in range(i - 1, -1, -1) if names[j] in out), None)
            out.insert(0 if prev is None else out.index(prev) + 1, n)
    return out


def figures_of(groups: Sequence[Group]) -> tuple[Figure, ...]:
    """The total, stage and marker table over all inputs.

    A marker's figure is its time from t=0, so it is compared only between inputs whose boots
    all count from the same t=0 (power-on, first byte or kernel start); a total's name already
    says where it counts from, and durations of stages do not depend on it."""
    per_group = [{s.name: s for s in statistics_of(g.analysis.boots)} for g in groups]
    origins = [frozenset(b.total.origin for b in g.analysis.boots) for g in groups]
    # totals, then stages, then markers, as boot_figures lists them, whatever each input has
    names = sorted(_merge_order(list(d) for d in per_group),
                   key=lambda n: 0 if n.startswith("total ") else 2 if n.startswith("marker ") else 1)
    figures = []
    for n in names:
        stats = tuple(d.get(n) for d in per_group)
        deltas = tuple(
            figure_delta(n, stats[0], stats[i], (label(0), label(i)),
                         not n.startswith("marker ") or (len(origins[0]) == 1 and origins[0] == origins[i]))
            for i in range(1, len(groups))
        )
        figures.append(Figure(n, stats, deltas))
    return tuple(figures)


@dataclass(frozen=True, slots=True)
class _Sums:
    """Per-name totals of one kind over one group: one value per boot that shows the kind."""

    boots: int
    ns: dict[str, list[int]]
    count: dict[str, list[int]]


def _initcall_key(e: Event) -> str | None:
    if e.kind is not Kind.INITCALL or e.duration_ns is None:
        return None
    det = e.detail
    return f"{e.name} [{det.module}]" if isinstance(det, InitcallDetail) and det.module else e.name


def _probe_key(e: Event) -> str | None:
    return e.name if e.kind is Kind.PROBE and e.duration_ns is not None else None


def _process_key(e: Event) -> str | None:
    det = e.detail
    if e.kind is not Kind.PROCESS or not isinstance(det, ProcessDetail) or det.kthread:
        return None
    return e.name


def _sums(boots: Sequence[BootAnalysis], key: Callable[[Event], str | None]) -> _Sums:
    per_boot: list[tuple[dict[str, int], dict[str, int]]] = []
    for b in boots:
        ns: dict[str, int] = {}
        count: dict[str, int] = {}
        for e in b.boot.events:
            k = key(e)
            if k is None:
                continue
            ns[k] = ns.get(k, 0) + (e.duration_ns or 0)
            count[k] = count.get(k, 0) + 1
        if count:
            per_boot.append((ns, count))
    names = list(dict.fromkeys(n for _, c in per_boot for n in c))
    return _Sums(len(per_boot),
                 {n: [ns.get(n, 0) for ns, _ in per_boot] for n in names},
                 {n: [c.get(n, 0) for _, c in per_boot] for n in names})


def _median_count(counts: list[int] | None) -> float | None:
    s = stat("", counts) if counts else None
    return None if s is None else s.median


def name_deltas(kind: str, base: _Sums, other: _Sums, top: int, labels: tuple[str, str] = ("A", "B"),
                with_counts: bool = False) -> NameDeltas:
    """Compare per-name sums of one kind; keep the ``top`` largest differences (``labels``
    name the two sides in the note when one side has none of this kind)."""
    if not base.boots or not other.boots:
        side = "either input" if not base.boots and not other.boots else \
            (labels[0] if not base.boots else labels[1])
        return NameDeltas(kind, (), 0, 0, 0, 0, f"no {kind} in {side}")
    rows: list[Delta] = []
    for n in dict.fromkeys([*base.ns, *other.ns]):
        b_vals = base.ns.get(n, [0] * base.boots)
        o_vals = other.ns.get(n, [0] * other.boots)
        b, o = stat(n, b_vals), stat(n, o_vals)
        assert b is not None and o is not None  # both sides have boots
        d = o.median - b.median
        sig, threshold, reason = judge(b, o, d)
        change = Change.ADDED if n not in base.ns else Change.REMOVED if n not in other.ns else Change.CHANGED
        rows.append(Delta(
            n, b if n in base.ns else None, o if n in other.ns else None, change, d, _pct(d, b.median), sig,
            threshold, reason,
            _median_count(base.count.get(n)) if with_counts else None,
            _median_count(other.count.get(n)) if with_counts else None,
        ))
    ranked = sorted(rows, key=lambda r: -r.impact_ns)  # stable: ties keep first-seen order
    return NameDeltas(
        kind, tuple(ranked[:top]), len(rows),
        sum(r.change is Change.ADDED for r in rows), sum(r.change is Change.REMOVED for r in rows),
        sum(r.significance is Significance.SIGNIFICANT for r in rows),
    )


def compare_groups(groups: Sequence[Group], top: int = 20) -> Comparison:
    """Compare every group with the first; raises UsageError with fewer than two."""
    if len(groups) < 2:
        raise UsageError("compare needs at least two inputs: a baseline and one to compare with it")
    inputs = tuple(
        InputSummary(label(i), g.name, g.folder, len(g.analysis.boots), sum(b.partial for b in g.analysis.boots))
        for i, g in enumerate(groups)
    )
    kinds = (("initcalls", _initcall_key), ("processes", _process_key), ("probes", _probe_key))
    sums = [{k: _sums(g.analysis.boots, key) for k, key in kinds} for g in groups]
    pairs = []
    for i in range(1, len(groups)):
        ab = (label(0), label(i))
        pairs.append(Pair(
            i,
            name_deltas("initcalls", sums[0]["initcalls"], sums[i]["initcalls"], top, ab),
            name_deltas("processes", sums[0]["processes"], sums[i]["processes"], top, ab, with_counts=True),
            name_deltas("probes", sums[0]["probes"], sums[i]["probes"], top, ab),
        ))
    return Comparison(inputs, figures_of(groups), tuple(pairs), top)
