"""``bootlens compare``: each input against the first one, the baseline.

An input is a :class:`~bootlens.timeline.inputs.Group`: one log, one recording, or a run folder of
repeated boots. Every quantity is reduced to its median over the group's boots and compared
with the baseline's median; a test over the boots says whether the difference means anything.

Significance rule
-----------------
Each difference is decided by a two-sample t-test and a practical floor, in the spirit of
criterion.rs (a statistical test *and* a noise threshold) and Google Benchmark's compare.py
(a test per row, with a minimum of repetitions):

- **significant** when the test gives p < ALPHA = 0.0005 (two-sided) *and* the difference of
  medians is at least the floor, max(1 ms, 1% of the baseline median), in the direction of the
  difference of means (what the test compares);
- **not significant** when the difference of medians is under the floor (too small to matter,
  however sure), or when, at the noise the boots show, it would not reach p < 0.0005 within
  HORIZON = 50 boots a side, or when the means go the other way than the medians (an outlier)
  ("within the noise");
- **unknown, need N more boots** otherwise: the difference is above the floor but these boots
  cannot decide it. N is projected from the boots' own noise (their pooled variance): the fewest
  boots a side with which the same difference would reach p < 0.0005 (stats.boots_needed). With a
  single boot on a side the test cannot run; the other side's noise stands in for the projection.

The test is Student's t (pooled variance, 2n - 2 degrees of freedom) when both sides have as many
boots, which ``experiment`` and ``optimize`` always boot, and Welch's otherwise (scipy.stats.ttest_ind).
Why these choices:

- A rank test cannot decide 3 boots a side: an exact Mann-Whitney U or permutation test of 3
  against 3 has 20 arrangements, so its smallest two-sided p is 0.1. The t-test uses the size
  of the differences, not only their order, and can decide a clear change from 3 boots a side.
- Student's and not Welch's with as many boots a side: the false-positive rate is decided where
  the change does nothing, and there the two sides are one configuration on one machine, with
  one variance, which is Student's assumption; with equal sizes the pooled test keeps its level
  even when a real change also changes the variance (the classic equal-n robustness of the
  t-test), and it keeps 2n - 2 degrees of freedom where Welch's fall towards n - 1: at 3 boots
  a side the critical |t| at 0.0005 is 10.3 (4 df), against up to 44.7 (2 df) for Welch's. With
  unequal sizes that robustness is gone, and Welch's is used.
- ALPHA = 0.0005, not the usual 0.05: a comparison has a row per stage and marker (about 7 on
  the reference target), and "the same configuration against itself over 10 reruns never says
  significant" must hold because false positives are rare, not because one was lucky. Measured
  on real boots (tests/data/rerun: 12 boots of the reference target with bootdelay=2 and 12 with
  bootdelay=0, booted interleaved on the loaded 2-core host; bench/bench_significance.py): over
  every way of splitting one configuration's boots into two disjoint sets of 3, 4 or 5 (69,762
  comparisons), 0.28%, 0.36% and 0.42% of comparisons had a row called significant, so 10
  reruns of one comparison all stay clean with a chance of 96-97%; the total alone was called
  significant in 0.006-0.032% of them. At 0.001 the rate doubles (0.6-0.8%); the max - min rule
  this replaces flagged a row in 65% of those comparisons at 2 boots a side and 28% at 3. The
  boots are not independent draws: the host's load drifts between them, so one configuration
  booted at two moments does differ, and no test of a few boots can tell that drift from a
  change (which is why ``experiment`` interleaves its configurations).
- The floor (max(1 ms, 1% of the baseline median), as criterion.rs's 1% noise threshold):
  below it a difference is not worth a verdict however many boots confirm it; 1 ms because the
  host timestamps of a serial console are no finer (a line at 115200 baud takes milliseconds).

The clock's tick
----------------
Every figure knows the tick of the clock it was read off (Stat.tick_ns, :mod:`bootlens.core.ticks`):
an initcall timed before the kernel's clocksource switch counts whole jiffies (4 ms at HZ=250:
``after 0 usecs``, ``4000``, ``8000``), printk times count µs, a journal without fractions whole
seconds. A row's tick is the coarser of its two sides' (either side's readings may be off by it):

- a difference of medians at least the floor but not larger than the tick is **not
  significant**, "within the clock's 4 ms tick": two readings one tick apart can come from the
  same duration (4.0 ms against 0 ns is an initcall that took somewhere under 8 ms both times);
- when the tick is at least 1 ms (FLOOR_NS: finer ticks round by less than any floor), the test
  and its "need N more boots" count each side's variance as at least tick² / 6, the rounding
  noise of a duration read off that clock (:func:`bootlens.stats.figures.noise_var`): boots that
  all read 8 ms against boots that all read 0 ns are not "no noise, p = 0", they are rounded
  alike; a difference of many ticks still decides, from a few boots more.

The power this leaves, on the same real boots: the 2 s autoboot countdown (bootloader stage,
noise 0.1-0.2 s) is significant in 99.94% of the 48,400 ways of taking 3 boots a side (the rest
ask for one more boot). On that loaded host the total's noise (standard deviation about 2 s)
hides the same 2 s: with 3 boots a side its verdict is "need N more boots" (59%) or "within the
noise" (41%), and after 12 a side it still asks for 19 more; on a quiet host (standard
deviation 0.35 s, README) 4 boots a side decide it.

The per-name tables (hundreds of initcalls) are many questions at once: their p-values are
adjusted by Benjamini-Hochberg within each table (scipy.stats.false_discovery_control) before
the 0.0005 test, so that when no name changed the chance of any false positive in the table stays
at 0.0005 or less; their "need N" projections use 0.0005 / names. ``delta_ns`` is the difference
of medians (what the tables show); the test compares means.

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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ..timeline.analyze import BootAnalysis
from ..core.errors import UsageError
from ..core.units import duration
from ..timeline.inputs import Group
from ..core.model import Event, InitcallDetail, Kind, ProcessDetail
from ..core.ticks import tick_text
from .figures import (Stat, TTest, adjust_bh, boots_needed, diff_se_df, noise_var, stat, statistics_of, t_critical,
                      t_test)

MIN_BOOTS = 2  # boots a side the test needs (a variance on each side)
ALPHA = 0.0005  # two-sided level of the test (module docstring: why so strict)
FLOOR_NS = 1_000_000  # the practical floor: 1 ms ...
FLOOR_REL = 0.01  # ... or 1% of the baseline median, whichever is larger
HORIZON = 50  # boots a side beyond which a projection "need N more boots" reads "not significant"
RULE = (f"significant when a t-test (Student's with as many boots a side, else Welch's) gives p < {ALPHA} "
        f"and the difference of medians is at least max({FLOOR_NS // 1_000_000} ms, {FLOOR_REL:.0%} of the "
        f"baseline median); unknown (need N more boots) when it is above that floor but p >= {ALPHA}, and "
        f"N boots a side would reach p < {ALPHA} at the noise observed (N <= {HORIZON}); else not "
        "significant (under the floor, or within the noise). Never significant within the clock's tick "
        "(the coarser side's: 4 ms for jiffies at HZ=250), and a tick of 1 ms or more counts as noise "
        "(variance tick^2/6 a side at least). Per-name tables: p adjusted by Benjamini-Hochberg within "
        "the table")


class Significance(StrEnum):
    """The verdict on a difference (see the module docstring); UNKNOWN: more boots are needed."""

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
    seen, on that side. ``threshold_ns`` is the run-to-run spread, the larger max - min of the
    two sides (shown for reference; the verdict comes from the test). ``p_value`` is the test's
    two-sided p (Benjamini-Hochberg adjusted in the per-name tables), None where it could not
    run; ``need_boots`` how many more boots the side with fewer needs (UNKNOWN only).
    """

    name: str
    baseline: Stat | None
    other: Stat | None
    change: Change
    delta_ns: float | None  # median(other) - median(baseline)
    delta_pct: float | None  # relative to the baseline median; None when that is 0 or unknown
    significance: Significance
    threshold_ns: int | None  # max of the two spreads; None when unknown
    reason: str  # the verdict in words: "p = 2e-06", "need 3 more boots a side (p = 0.01)", ...
    baseline_count: float | None = None  # processes only: median processes of this name per boot
    other_count: float | None = None
    p_value: float | None = None
    floor_ns: float | None = None  # the practical floor the difference was held against
    need_boots: int | None = None
    test: str | None = None  # "student" | "welch"; None where the test could not run
    tick_ns: int | None = None  # the coarser clock tick of the two sides (0: unknown); None: no difference

    @property
    def impact_ns(self) -> float:
        """|delta|, what the per-name tables are sorted by (0 when there is no difference)."""
        return abs(self.delta_ns) if self.delta_ns is not None else 0.0


@dataclass(frozen=True, slots=True)
class Figure:
    """A total, stage (with sub-stages) or marker time, across all inputs.

    Names are those of :func:`bootlens.targets.runs.boot_figures`: sub-stages are indented by two
    spaces, markers are ``marker NAME``.
    """

    name: str
    stats: tuple[Stat | None, ...]  # one per input, baseline first; None = not measured there
    deltas: tuple[Delta, ...]  # one per input after the baseline


@dataclass(frozen=True, slots=True)
class NameDeltas:
    """The largest per-name differences of one kind (initcalls, processes, probes)."""

    kind: str  # "initcalls", "processes", "probes", "units"
    rows: tuple[Delta, ...]  # the top ones by |delta|, largest first
    names: int  # names compared in all
    added: int
    removed: int
    significant: int  # over all names; every one of them is among the rows
    note: str | None = None  # why nothing was compared, e.g. no initcall_debug on one side
    more_significant: int = 0  # rows after the top ones: significant, with a smaller |delta|


@dataclass(frozen=True, slots=True)
class Pair:
    """One input against the baseline: its per-name tables."""

    other: int  # index into Comparison.inputs (>= 1)
    initcalls: NameDeltas
    processes: NameDeltas
    probes: NameDeltas
    units: NameDeltas  # systemd units' start jobs


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


@dataclass(frozen=True, slots=True)
class Verdict:
    """The rule's answer for one difference (module docstring)."""

    significance: Significance
    reason: str
    p_value: float | None
    floor_ns: float
    need_boots: int | None
    test: str | None
    tick_ns: int = 0


def floor_of(base: Stat) -> float:
    """The practical floor: max(1 ms, 1% of the baseline median)."""
    return max(float(FLOOR_NS), FLOOR_REL * abs(base.median))


def row_tick(base: Stat, other: Stat) -> int:
    """The tick a difference is held against: the coarser of the two sides' clocks (0: unknown)."""
    return max(base.tick_ns, other.tick_ns)


def noise_tick(tick_ns: int) -> int:
    """The tick whose rounding the test counts as noise: ticks of 1 ms or more (module docstring);
    0 for finer ones, whose rounding is under any floor (and exact repeats still read p = 0)."""
    return tick_ns if tick_ns >= FLOOR_NS else 0


def ttest_of(base: Stat, other: Stat) -> TTest | None:
    """The t-test of the two sides (None with fewer than 2 boots on a side), with the rounding
    noise of a coarse clock tick (:func:`noise_tick`)."""
    return t_test(base, other, noise_tick(row_tick(base, other)))


def _boots(k: int) -> str:
    return f"{k} more boot{'s' if k != 1 else ''}"


def judge(base: Stat, other: Stat, delta_ns: float, labels: tuple[str, str] = ("A", "B"),
          tt: TTest | None = None, p: float | None = None, alpha_need: float = ALPHA) -> Verdict:
    """The verdict on a difference of medians ``delta_ns`` (the rule in the module docstring).
    ``tt`` is the t-test when already run; ``p`` replaces its p-value (an adjusted one);
    ``alpha_need`` is the level the "need N more boots" projection aims at."""
    floor = floor_of(base)
    tick = row_tick(base, other)
    if tt is None and base.n >= MIN_BOOTS and other.n >= MIN_BOOTS:
        tt = ttest_of(base, other)
    if p is None and tt is not None:
        p = tt.p
    test = None if tt is None else "student" if tt.pooled else "welch"
    ptext = "" if p is None else f"p = {p:.2g}"
    if abs(delta_ns) < floor:
        return Verdict(Significance.NOT_SIGNIFICANT, "under the floor" + (f" ({ptext})" if ptext else ""), p, floor,
                       None, test, tick)
    if abs(delta_ns) <= tick:
        # readings one tick apart can come from one duration (jiffies: 0 and 4 ms are both "under 4 ms or so")
        return Verdict(Significance.NOT_SIGNIFICANT, f"within the clock's {tick_text(tick)} tick", p, floor, None,
                       test, tick)
    diff_means = other.mean - base.mean
    if tt is not None and p is not None and p < ALPHA and diff_means * delta_ns > 0:
        return Verdict(Significance.SIGNIFICANT, ptext, p, floor, None, test, tick)
    fewer = min(base.n, other.n)
    if tt is not None and diff_means * delta_ns <= 0:
        # the means (what the test compares) and the medians go opposite ways: an outlier; no
        # number of boots at this noise would show one direction
        return Verdict(Significance.NOT_SIGNIFICANT, "within the noise" + (f" ({ptext})" if ptext else ""), p, floor,
                       None, test, tick)
    n = boots_needed(base, other, diff_means if tt is not None else delta_ns, alpha_need, HORIZON, noise_tick(tick))
    if n is None:
        if tt is None:  # one boot a side: no noise known at all, nothing to project from
            return Verdict(Significance.UNKNOWN, f"1 boot a side: need {_boots(2)} a side", None, floor, 2, None, tick)
        return Verdict(Significance.NOT_SIGNIFICANT, "within the noise" + (f" ({ptext})" if ptext else ""), p, floor,
                       None, test, tick)
    need = max(n - fewer, 1)
    if base.n == other.n:
        where = " a side"
    else:
        where = f" of {labels[0] if base.n < other.n else labels[1]}"
    return Verdict(Significance.UNKNOWN, f"need {_boots(need)}{where}" + (f" ({ptext})" if ptext else ""), p, floor,
                   need, test, tick)


NI_ALPHA = 0.05  # one-sided level of the non-inferiority test (a 95% upper bound)
NI_MARGIN_REL = 0.02  # its margin: worse by less than 2% of the baseline median (and at least the floor)


@dataclass(frozen=True, slots=True)
class NonInferiority:
    """Whether B is not worse than A by ``margin_ns`` or more: ``holds`` True when the one-sided
    95% upper bound of mean(B) - mean(A) is under the margin, False when B is worse by the margin
    for certain (the lower bound is above it), None when more boots would decide (``need_boots``
    a side, projected; None when even HORIZON boots a side would not, at this noise)."""

    holds: bool | None
    upper_ns: float | None
    margin_ns: float
    need_boots: int | None
    reason: str


def ni_margin(base: Stat) -> float:
    """The non-inferiority margin: max(the floor, 2% of the baseline median)."""
    return max(floor_of(base), NI_MARGIN_REL * abs(base.median))


def non_inferior(base: Stat, other: Stat, margin_ns: float | None = None, alpha: float = NI_ALPHA,
                 most: int = HORIZON) -> NonInferiority:
    """The non-inferiority test of B against A (a t bound, Student's with as many boots a side as
    :func:`judge`'s test, with its rounding noise of a coarse tick): B is "not worse" when
    mean(B) - mean(A) + t(1 - alpha) x SE < margin; the default margin is never under the two
    sides' clock tick (worse by less than a tick is not a reading)."""
    tick = row_tick(base, other)
    margin = max(ni_margin(base), float(tick)) if margin_ns is None else margin_ns
    if base.n < MIN_BOOTS or other.n < MIN_BOOTS:
        return NonInferiority(None, None, margin, 2, f"1 boot a side: need {_boots(1)} a side")
    vt = noise_tick(tick)
    se, df = diff_se_df(base, other, vt)
    d = other.mean - base.mean
    h = t_critical(2 * alpha, df) * se
    upper = d + h
    said = f"upper bound {_signed(upper)} against a margin of {_ms(margin)}"
    if upper < margin:
        return NonInferiority(True, upper, margin, None, said)
    if d - h > margin:
        return NonInferiority(False, upper, margin, None, f"worse by {_ms(d)} on average ({said})")
    var = ((base.n - 1) * noise_var(base, vt) + (other.n - 1) * noise_var(other, vt)) / (base.n + other.n - 2)
    sd = math.sqrt(var)
    # the projection keeps the observed difference, or takes none when it is already past the
    # margin but not surely (a noisy total: more boots pull its mean back or show it is worse)
    room = margin - (d if d < margin else 0.0)
    for n in range(max(base.n, other.n) + 1, most + 1):
        if t_critical(2 * alpha, 2 * n - 2) * sd * math.sqrt(2.0 / n) < room:
            return NonInferiority(None, upper, margin, n - min(base.n, other.n),
                                  f"need {_boots(n - min(base.n, other.n))} a side ({said})")
    return NonInferiority(None, upper, margin, None, f"too noisy to show it is not worse within {most} boots a side "
                          f"({said})")


_NI_DIGITS = {"s": 3, "ms": 0}  # the non-inferiority test's figures: 103 ms, 2.175 s


def _ms(ns: float) -> str:
    return duration(ns, _NI_DIGITS)


def _signed(ns: float) -> str:
    return duration(ns, _NI_DIGITS, signs=("−", "+", "+"))


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
    v = judge(base, other, d, labels)
    return Delta(name, base, other, Change.CHANGED, d, _pct(d, base.median), v.significance, _spread(base, other),
                 v.reason, p_value=v.p_value, floor_ns=v.floor_ns, need_boots=v.need_boots, test=v.test,
                 tick_ns=v.tick_ns)


def _spread(base: Stat, other: Stat) -> int | None:
    """The larger max - min of the two sides; None with a single boot on either."""
    return None if base.n < 2 or other.n < 2 else max(base.range_ns, other.range_ns)


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
    """The total, stage and marker table over all inputs (:func:`figures_from` their boots'
    statistics and t=0s)."""
    return figures_from([statistics_of(g.analysis.boots) for g in groups],
                        [frozenset(b.total.origin for b in g.analysis.boots) for g in groups])


def figures_from(per_input: Sequence[Sequence[Stat]], origins: Sequence[frozenset[str]],
                 labels: Sequence[str] = ()) -> tuple[Figure, ...]:
    """The total, stage and marker table from each input's statistics (named as boot_figures
    names them) and the t=0s its boots count from (``history``'s stored runs come here too);
    ``labels`` name the inputs in the verdicts' reasons (default A, B, ...).

    A marker's figure is its time from t=0, so it is compared only between inputs whose boots
    all count from the same t=0 (power-on, first byte or kernel start); a total's name already
    says where it counts from, and durations of stages do not depend on it."""
    per_group = [{s.name: s for s in stats} for stats in per_input]
    sides = list(labels) or [label(i) for i in range(len(per_group))]
    # totals, then stages, then markers, as boot_figures lists them, whatever each input has
    names = sorted(_merge_order(list(d) for d in per_group),
                   key=lambda n: 0 if n.startswith("total ") else 2 if n.startswith("marker ") else 1)
    figures = []
    for n in names:
        stats = tuple(d.get(n) for d in per_group)
        deltas = tuple(
            figure_delta(n, stats[0], stats[i], (sides[0], sides[i]),
                         not n.startswith("marker ") or (len(origins[0]) == 1 and origins[0] == origins[i]))
            for i in range(1, len(per_group))
        )
        figures.append(Figure(n, stats, deltas))
    return tuple(figures)


@dataclass(frozen=True, slots=True)
class Sums:
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


def _unit_key(e: Event) -> str | None:
    return e.name if e.kind is Kind.UNIT and e.duration_ns is not None else None


def boot_sums(b: BootAnalysis, key: Callable[[Event], str | None]) -> tuple[dict[str, int], dict[str, int]]:
    """One boot's per-name total ns and count of one kind (``key`` names an event, or None)."""
    ns: dict[str, int] = {}
    count: dict[str, int] = {}
    for e in b.boot.events:
        k = key(e)
        if k is None:
            continue
        ns[k] = ns.get(k, 0) + (e.duration_ns or 0)
        count[k] = count.get(k, 0) + 1
    return ns, count


def sums_of(boots: Iterable[tuple[dict[str, int], dict[str, int]]]) -> Sums:
    """Per-name sums over boots (each as :func:`boot_sums` gives it): only boots that show the
    kind take part, and in those a name the boot does not show counts as 0 ns."""
    per_boot = [(ns, count) for ns, count in boots if count]
    names = list(dict.fromkeys(n for _, c in per_boot for n in c))
    return Sums(len(per_boot),
                {n: [ns.get(n, 0) for ns, _ in per_boot] for n in names},
                {n: [c.get(n, 0) for _, c in per_boot] for n in names})


# the per-name tables: kind, and the name an event counts under (None: not of that kind)
NAME_KINDS: tuple[tuple[str, Callable[[Event], str | None]], ...] = (
    ("initcalls", _initcall_key), ("processes", _process_key), ("probes", _probe_key), ("units", _unit_key))


def _median_count(counts: list[int] | None) -> float | None:
    s = stat("", counts) if counts else None
    return None if s is None else s.median


def name_deltas(kind: str, base: Sums, other: Sums, top: int, labels: tuple[str, str] = ("A", "B"),
                with_counts: bool = False) -> NameDeltas:
    """Compare per-name sums of one kind; keep the ``top`` largest differences (``labels``
    name the two sides in the note when one side has none of this kind)."""
    if not base.boots or not other.boots:
        side = "either input" if not base.boots and not other.boots else \
            (labels[0] if not base.boots else labels[1])
        return NameDeltas(kind, (), 0, 0, 0, 0, f"no {kind} in {side}")
    names = list(dict.fromkeys([*base.ns, *other.ns]))
    pairs: list[tuple[Stat, Stat]] = []
    for n in names:
        b, o = stat(n, base.ns.get(n, [0] * base.boots)), stat(n, other.ns.get(n, [0] * other.boots))
        assert b is not None and o is not None  # both sides have boots
        pairs.append((b, o))
    tests = [ttest_of(b, o) for b, o in pairs]
    tested = [i for i, t in enumerate(tests) if t is not None]
    adjusted = dict(zip(tested, adjust_bh([t.p for t in tests if t is not None])))
    alpha_need = ALPHA / max(len(tested), 1)
    rows: list[Delta] = []
    for i, (n, (b, o)) in enumerate(zip(names, pairs)):
        d = o.median - b.median
        v = judge(b, o, d, labels, tests[i], adjusted.get(i), alpha_need)
        change = Change.ADDED if n not in base.ns else Change.REMOVED if n not in other.ns else Change.CHANGED
        rows.append(Delta(
            n, b if n in base.ns else None, o if n in other.ns else None, change, d, _pct(d, b.median),
            v.significance, _spread(b, o), v.reason,
            _median_count(base.count.get(n)) if with_counts else None,
            _median_count(other.count.get(n)) if with_counts else None,
            v.p_value, v.floor_ns, v.need_boots, v.test, v.tick_ns,
        ))
    ranked = sorted(rows, key=lambda r: -r.impact_ns)  # stable: ties keep first-seen order
    # what the summary counts as significant is shown, however small its |delta|
    more = [r for r in ranked[top:] if r.significance is Significance.SIGNIFICANT]
    return NameDeltas(
        kind, tuple(ranked[:top] + more), len(rows),
        sum(r.change is Change.ADDED for r in rows), sum(r.change is Change.REMOVED for r in rows),
        sum(r.significance is Significance.SIGNIFICANT for r in rows), None, len(more),
    )


def compare_groups(groups: Sequence[Group], top: int = 20) -> Comparison:
    """Compare every group with the first; raises UsageError with fewer than two."""
    if len(groups) < 2:
        raise UsageError("compare needs at least two inputs: a baseline and one to compare with it")
    inputs = tuple(
        InputSummary(label(i), g.name, g.folder, len(g.analysis.boots), sum(b.partial for b in g.analysis.boots))
        for i, g in enumerate(groups)
    )
    sums = [{k: sums_of(boot_sums(b, key) for b in g.analysis.boots) for k, key in NAME_KINDS} for g in groups]
    pairs = []
    for i in range(1, len(groups)):
        ab = (label(0), label(i))
        pairs.append(Pair(
            i,
            name_deltas("initcalls", sums[0]["initcalls"], sums[i]["initcalls"], top, ab),
            name_deltas("processes", sums[0]["processes"], sums[i]["processes"], top, ab, with_counts=True),
            name_deltas("probes", sums[0]["probes"], sums[i]["probes"], top, ab),
            name_deltas("units", sums[0]["units"], sums[i]["units"], top, ab),
        ))
    return Comparison(inputs, figures_of(groups), tuple(pairs), top)
