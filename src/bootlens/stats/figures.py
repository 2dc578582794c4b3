"""Statistics over repeated boots: per stage and per marker, the median with a confidence
interval, min, max and standard deviation (with a warning when the spread, max - min, exceeds
5% of the median); and the two-sample test that ``bootlens compare`` decides with.

The median's interval
---------------------
An exact, distribution-free interval from the order statistics: for n boots sorted
x(1) <= ... <= x(n), the interval [x(k), x(n+1-k)] holds the true median with probability
1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2), whatever the distribution of boot times (ties make
it hold at least as often). ``k`` is the largest rank that keeps that level at 95% or more;
with fewer than 6 boots even (min, max) falls short, and the level it has is reported:

    boots  2      3      4      5      6      7      8      9      10     15     20
    k      1      1      1      1      1      1      1      2      2      4      6
    level  50.0%  75.0%  87.5%  93.8%  96.9%  98.4%  99.2%  96.1%  97.9%  96.5%  95.9%

(the first inner interval comes at 9 boots). The binomial sum is exact integer arithmetic
(``math.comb``), kept here rather than taken from scipy so that ``run --repeat`` and the
reports do not import scipy for it; tests/test_stats.py checks it against scipy.stats.binom.
A bootstrap interval was not chosen: with 3 to 5 boots it can only return boots' values
too, with a coverage it cannot state.

The test
--------
:func:`t_test`: the two-sample t-test (as scipy.stats.ttest_ind, with scipy's t distribution),
Student's pooled form when both sides have as many boots (what ``experiment`` and ``optimize``
always boot) and Welch's otherwise. The reasons, and the rule built on it, are in :mod:`bootlens.stats.compare`.

The clock's tick
----------------
Every Stat carries the tick of the clock its values were read off (:func:`bootlens.core.ticks.tick_of`):
4 ms for an initcall timed on the jiffies clocksource at HZ=250, 1 µs for printk times. Given a
tick, the test and its projections count each side's variance as at least tick² / 6
(:func:`noise_var`): a duration is the difference of two readings, each rounded to the tick at a
phase of its own, and that rounding error is triangular over (−tick, tick), of variance tick² / 6.
Boots that all read 4 ms have not shown that the initcall takes 4 ms every time, only that it
rounds to it: "no noise" there is the clock's, not the boot's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..timeline.analyze import BootAnalysis
from ..core.model import Kind
from ..core.ticks import tick_of

SPREAD_WARN = 0.05
CI_TARGET = 0.95  # the median's interval: the narrowest order-statistic interval at this level or more


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(low, high, level): the order-statistic interval of the median and the probability that
    it holds the true median (0 for a single value: no interval)."""
    v = sorted(values)
    n = len(v)
    if n < 2:
        return (v[0], v[0], 0.0) if v else (math.nan, math.nan, 0.0)
    if n > EXACT_UP_TO:
        k, level = _rank_many(n)
        return v[k - 1], v[n - k], level
    k, level = 1, _coverage(n, 1)
    for j in range(2, (n + 1) // 2 + 1):
        c = _coverage(n, j)
        if c < CI_TARGET:
            break
        k, level = j, c
    return v[k - 1], v[n - k], level


# Up to this many values the interval's rank is found by exact integer arithmetic, one rank after
# the other; past it (a soak test's thousands of boots: that walk is quadratic in n, hours at
# 10^5) by bisection over the coverage summed in floating point (:func:`_coverage_float`).
EXACT_UP_TO = 1000


def _rank_many(n: int) -> tuple[int, float]:
    """(k, level) of :func:`median_interval` for n > EXACT_UP_TO: the largest k whose coverage
    is at least CI_TARGET (coverage falls as k grows), by bisection."""
    lo, hi = 1, (n + 1) // 2  # coverage(lo) >= target (n is large); find the last such k
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _coverage_float(n, mid) >= CI_TARGET:
            lo = mid
        else:
            hi = mid - 1
    return lo, _coverage_float(n, lo)


def _coverage_float(n: int, k: int) -> float:
    """:func:`_coverage` in floating point: P(B <= k - 1) summed from its largest term down
    (log-gamma terms) until the terms no longer change the sum."""
    head = math.lgamma(n + 1) - n * math.log(2)
    tail = 0.0
    for i in range(k - 1, -1, -1):
        t = math.exp(head - math.lgamma(i + 1) - math.lgamma(n - i + 1))
        tail += t
        if t < tail * 1e-17:
            break
    return 1.0 - 2 * tail


def _coverage(n: int, k: int) -> float:
    """P(x(k) <= median <= x(n+1-k)) = 1 - 2 P(Binomial(n, 1/2) <= k - 1), exactly."""
    tail = sum(math.comb(n, i) for i in range(k))
    return 1.0 - 2 * tail / (1 << n)


@dataclass(frozen=True, slots=True)
class Stat:
    """One quantity over repeated boots, in ns; ``n`` boots measured it.

    ``ci_low``..``ci_high`` is the median's order-statistic interval and ``ci_level`` the
    probability that it holds the true median (module docstring); ``values`` are the boots'
    figures in boot order, for the test; ``tick_ns`` the tick of the clock they were read off
    (:func:`bootlens.core.ticks.tick_of`; 0: unknown, every value 0)."""

    name: str
    n: int
    min: int
    median: float
    max: int
    stdev: float
    values: tuple[int, ...] = field(default=(), repr=False)
    ci_low: float = 0.0
    ci_high: float = 0.0
    ci_level: float = 0.0
    tick_ns: int = 0

    @property
    def range_ns(self) -> int:
        """max - min: the run-to-run spread in ns (0 for a single value)."""
        return self.max - self.min

    @property
    def spread(self) -> float:
        """(max - min) / median; 0 for fewer than two values."""
        return 0.0 if self.n < 2 or not self.median else (self.max - self.min) / self.median

    @property
    def mean(self) -> float:
        """The mean, what the t-test compares."""
        return statistics.fmean(self.values) if self.values else self.median


def stat(name: str, values: Sequence[int]) -> Stat | None:
    """Statistics of the values, or None when there are none."""
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    lo, hi, level = median_interval(values)
    return Stat(name, len(values), min(values), statistics.median(values), max(values), sd, tuple(values),
                lo, hi, level, tick_of(values))


@dataclass(frozen=True, slots=True)
class TTest:
    """A two-sample t-test of B against A: ``p`` two-sided; ``df`` its degrees of freedom;
    ``pooled`` True for Student's form (as many boots a side), False for Welch's."""

    p: float
    t: float
    df: float
    pooled: bool


def noise_var(s: Stat, tick_ns: float = 0) -> float:
    """The side's variance for the test: its boots', but at least the rounding noise of
    readings on a clock of ``tick_ns`` (tick² / 6, module docstring)."""
    return max(s.stdev**2, tick_ns**2 / 6.0)


def t_test(a: Stat, b: Stat, tick_ns: float = 0) -> TTest | None:
    """The t-test of the two sides' means; None when a side has fewer than 2 values (no noise
    to measure). Two sides without any noise (every boot the same figure, and no ``tick_ns``
    of a clock to round) differ for certain when their values differ (p = 0) and not at all
    when they are equal (p = 1): the test has no answer (0/0) there. With ``tick_ns`` each
    side's variance is at least its rounding noise (:func:`noise_var`).

    The statistic and its degrees of freedom are the textbook ones (what scipy.stats.ttest_ind
    computes, which tests/test_stats.py checks); the p-value comes from scipy.special's
    Student t distribution. ttest_ind itself is not called: it costs milliseconds a call, and
    compare tests every initcall of a table, hundreds of them."""
    if a.n < 2 or b.n < 2:
        return None
    pooled = a.n == b.n
    d = b.mean - a.mean
    va, vb = noise_var(a, tick_ns), noise_var(b, tick_ns)
    if va == 0 and vb == 0:
        same = d == 0
        return TTest(1.0 if same else 0.0, 0.0 if same else math.copysign(math.inf, d), float(a.n + b.n - 2),
                     pooled)
    se, df = _se_df(a, b, tick_ns)
    t = d / se
    return TTest(min(1.0, 2.0 * _t_cdf(-abs(t), df)), t, df, pooled)


def diff_se_df(a: Stat, b: Stat, tick_ns: float = 0) -> tuple[float, float]:
    """The standard error of mean(b) - mean(a) and its degrees of freedom (:func:`t_test`'s)."""
    return _se_df(a, b, tick_ns)


def _se_df(a: Stat, b: Stat, tick_ns: float = 0) -> tuple[float, float]:
    """The standard error of mean(b) - mean(a) and its degrees of freedom: pooled (Student)
    with as many values a side, Welch-Satterthwaite otherwise (variances :func:`noise_var`)."""
    va, vb = noise_var(a, tick_ns), noise_var(b, tick_ns)
    if a.n == b.n:
        return math.sqrt((va + vb) / a.n), 2.0 * a.n - 2
    qa, qb = va / a.n, vb / b.n
    return math.sqrt(qa + qb), (qa + qb) ** 2 / (qa**2 / (a.n - 1) + qb**2 / (b.n - 1))


def _t_cdf(t: float, df: float) -> float:
    from scipy import special  # type: ignore[import-untyped]  # a second to import: only here

    return float(special.stdtr(df, t))


@lru_cache(maxsize=1024)
def t_critical(alpha: float, df: float) -> float:
    """The two-sided critical |t| at level ``alpha`` with ``df`` degrees of freedom."""
    from scipy import special

    return float(special.stdtrit(df, 1.0 - alpha / 2.0))


def diff_interval(a: Stat, b: Stat, level: float = 0.95, tick_ns: float = 0) -> tuple[float, float] | None:
    """The t interval of mean(b) - mean(a) at ``level`` (Student's with as many values a side,
    else Welch's, as :func:`t_test`, with its ``tick_ns``); None with fewer than 2 values on a side."""
    if a.n < 2 or b.n < 2:
        return None
    se, df = _se_df(a, b, tick_ns)
    d = b.mean - a.mean
    h = t_critical(1.0 - level, df) * se if se else 0.0
    return d - h, d + h


def boots_needed(a: Stat, b: Stat, delta: float, alpha: float, most: int, tick_ns: float = 0) -> int | None:
    """The fewest boots a side (at least as many as either side has, at most ``most``) with
    which a difference of means ``delta`` would reach ``p < alpha``, if the noise stayed what
    the boots so far show (their pooled variance, each side's at least its rounding noise on a
    clock of ``tick_ns``: :func:`noise_var`); None beyond ``most``. A projection from a
    few boots, which is all there is to go on: booting that many more and testing again is
    what ``--repeat auto`` does."""
    df = a.n + b.n - 2
    if df < 1 or delta == 0:
        return None
    var = ((a.n - 1) * noise_var(a, tick_ns) + (b.n - 1) * noise_var(b, tick_ns)) / df
    if var == 0:
        return max(a.n, b.n, 2)
    sd = math.sqrt(var)
    for n in range(max(a.n, b.n, 2), most + 1):
        if abs(delta) / (sd * math.sqrt(2.0 / n)) >= t_critical(alpha, 2 * n - 2):
            return n
    return None


def adjust_bh(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control); comparing
    them with alpha keeps the chance of any false positive among names that did not change at
    all at alpha or less."""
    if len(ps) < 2:
        return list(ps)
    from scipy import stats as sps

    return [float(p) for p in sps.false_discovery_control(list(ps), method="bh")]


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
    return figure_statistics(boot_figures(b) for b in boots)


def figure_statistics(per_boot: Iterable[dict[str, int]]) -> list[Stat]:
    """Per-quantity statistics of boots' figures (as :func:`boot_figures` gives them, or as
    ``history`` stored them), in the order quantities first appear."""
    names: list[str] = []
    values: dict[str, list[int]] = {}
    for figures in per_boot:
        for k, v in figures.items():
            if k not in values:
                names.append(k)
                values[k] = []
            values[k].append(v)
    return [s for k in names if (s := stat(k, values[k])) is not None]
