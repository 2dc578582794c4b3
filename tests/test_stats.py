"""bootlens.stats.figures: the median's order-statistic interval and the t-test, against scipy.stats
and textbook values (the figures scipy or the textbook gives are written out, so a wrong
formula cannot pass by being compared with itself)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from bootlens.stats.figures import (
    Stat, adjust_bh, boots_needed, diff_interval, median_interval, stat, t_critical, t_test,
)


def s(values: list[int], name: str = "x") -> Stat:
    st = stat(name, [int(v) for v in values])
    assert st is not None
    return st


# ---- the median's interval ----------------------------------------------------------------

# boots -> (rank k from each end, level): the table in bootlens/stats.py's docstring
TABLE = {2: (1, 0.5), 3: (1, 0.75), 4: (1, 0.875), 5: (1, 0.9375), 6: (1, 0.96875), 7: (1, 0.984375),
         8: (1, 0.9921875), 9: (2, 0.9609375), 10: (2, 0.978515625), 15: (4, 0.96484375), 20: (6, 0.958610534667969)}


@pytest.mark.parametrize("n", sorted(TABLE))
def test_order_statistic_interval_rank_and_level(n: int) -> None:
    k, level = TABLE[n]
    values = [10 * (i + 1) for i in range(n)][::-1]  # given unsorted
    lo, hi, got = median_interval(values)
    assert (lo, hi) == (10 * k, 10 * (n + 1 - k))
    assert got == pytest.approx(level, abs=1e-12)
    # the level is P(k <= B <= n - k) for B ~ Binomial(n, 1/2): scipy's binomial says the same
    assert got == pytest.approx(1 - 2 * sps.binom.cdf(k - 1, n, 0.5), abs=1e-12)
    if k + 1 <= (n + 1) // 2:  # and the next rank inwards would fall below 95%
        assert 1 - 2 * sps.binom.cdf(k, n, 0.5) < 0.95


def test_interval_of_one_value_is_no_interval() -> None:
    assert median_interval([7]) == (7, 7, 0.0)
    st = stat("one", [7])
    assert st is not None and (st.ci_low, st.ci_high, st.ci_level) == (7, 7, 0.0)


def test_interval_on_stat_uses_boot_values() -> None:
    st = stat("total", [14, 13, 15, 10, 9, 12, 13, 16, 14, 11, 8, 12])
    assert st is not None
    assert (st.ci_low, st.ci_high) == (10, 14)  # 3rd and 10th of 12 sorted: k = 3
    assert st.ci_level == pytest.approx(1 - 2 * sps.binom.cdf(2, 12, 0.5))
    assert st.median == 12.5 and st.values[0] == 14


# ---- the t-test -----------------------------------------------------------------------------


def test_student_t_textbook_value() -> None:
    # [1, 2, 3] against [4, 5, 6]: pooled sd 1, t = 3 / sqrt(2/3) = 3.674, 4 df, p = 0.02131
    r = t_test(s([1, 2, 3]), s([4, 5, 6]))
    assert r is not None and r.pooled
    assert r.t == pytest.approx(3.6742346, rel=1e-6) and r.df == 4
    assert r.p == pytest.approx(0.021311641, rel=1e-6)


@pytest.mark.parametrize("a,b", [
    ([100, 120, 130], [140, 150, 170]),
    ([2_754_000, 2_606_000, 3_041_000, 2_943_000], [508_000, 442_000, 604_000, 498_000]),
    ([10, 11, 12, 30, 11], [13, 14, 15]),  # unequal sizes: Welch
    ([5, 5, 5, 6], [7, 9, 8, 10, 12, 7]),
])
def test_t_test_matches_scipy_ttest_ind(a: list[int], b: list[int]) -> None:
    r = t_test(s(a), s(b))
    ref = sps.ttest_ind(b, a, equal_var=len(a) == len(b))
    assert r is not None and r.pooled == (len(a) == len(b))
    assert r.t == pytest.approx(ref.statistic, rel=1e-9)
    assert r.df == pytest.approx(ref.df, rel=1e-9)
    assert r.p == pytest.approx(ref.pvalue, rel=1e-9)
    iv = diff_interval(s(a), s(b))
    assert iv is not None
    lo, hi = iv
    ci = ref.confidence_interval(0.95)
    assert lo == pytest.approx(ci.low, rel=1e-9) and hi == pytest.approx(ci.high, rel=1e-9)


def test_welch_textbook_value() -> None:
    # by hand: means 3 and 6, variances 1 and 18, n 3 and 4:
    # se^2 = 1/3 + 18/4 = 4.8333, t = 3 / 2.19848 = 1.36458,
    # df = 4.8333^2 / ((1/3)^2 / 2 + (18/4)^2 / 3) = 23.3611 / (0.055556 + 6.75) = 3.43265
    r = t_test(s([2, 3, 4]), s([3, 3, 6, 12]))
    assert r is not None and not r.pooled
    assert r.t == pytest.approx(1.36458, rel=1e-4) and r.df == pytest.approx(3.43265, rel=1e-4)


def test_no_noise_on_either_side() -> None:
    same = t_test(s([5, 5, 5]), s([5, 5, 5]))
    diff = t_test(s([5, 5, 5]), s([7, 7, 7]))
    assert same is not None and same.p == 1.0
    assert diff is not None and diff.p == 0.0 and diff.t == math.inf
    assert t_test(s([5]), s([7, 8, 9])) is None  # one value: no noise known on that side


def test_critical_t_values() -> None:
    # two-sided 0.001: 4 df 8.610, 2 df 31.599 (tables); 0.05 with 10 df: 2.228
    assert t_critical(0.001, 4) == pytest.approx(8.6103, abs=1e-4)
    assert t_critical(0.001, 2) == pytest.approx(31.5991, abs=1e-4)
    assert t_critical(0.05, 10) == pytest.approx(2.2281, abs=1e-4)


def test_boots_needed_is_the_first_size_that_reaches_the_level() -> None:
    a, b = s([100, 110, 120]), s([130, 140, 150])  # sd 10 a side, delta 30
    n = boots_needed(a, b, 30.0, 0.0005, 50)
    assert n is not None

    def reaches(k: int) -> bool:
        return bool(30 / (10 * math.sqrt(2 / k)) >= sps.t.ppf(1 - 0.0005 / 2, 2 * k - 2))

    assert reaches(n) and not reaches(n - 1) and n > 3
    assert boots_needed(a, b, 0.3, 0.0005, 50) is None  # 3% of the noise: beyond 50 boots


def test_benjamini_hochberg_by_hand() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4/1, x4/2, x4/3, x4/4 = 0.02, 0.02, 0.04, 0.04
    assert adjust_bh([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_bh([0.3]) == [0.3]
