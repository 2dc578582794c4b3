"""How a duration reads: one formatter for every output (terminal tables, advice prose, SVG
labels, the systemd-style chain), its styles told apart by parameters rather than by copies.

A style says which units a duration may take, each with its digits after the point (``{"s": 3,
"ms": 1}``): the duration is written in the first of them it reaches, else in the last, the
smallest. What else differs between outputs is said by the call: the text for None (not
measured), the text between number and unit, how the sign is written.
"""

from __future__ import annotations

from collections.abc import Mapping

# The ns in a unit. Floats: the figures are divided as they always were (ns / 1e9).
UNIT_NS: Mapping[str, float] = {"s": 1e9, "ms": 1e6, "µs": 1e3, "ns": 1.0}

# Tables (terminal, compare, budget): about four significant figures, 2.390 s, 348.7 ms, 987 µs, 12 ns.
SHORT: Mapping[str, int] = {"s": 3, "ms": 1, "µs": 0, "ns": 0}
# Advice prose: the same, never finer than µs ('2.089 s', '84.1 ms', '912 µs').
PROSE: Mapping[str, int] = {"s": 3, "ms": 1, "µs": 0}

# The sign before a duration's magnitude, as (negative, zero, positive): a minus sign (U+2212)
# that reads as one in a table; or a change that always says its direction.
TYPESET = ("−", "", "")
SIGNED = ("−", "±", "+")


def unit_of(ns: float, digits: Mapping[str, int] = SHORT, by_magnitude: bool = True) -> str:
    """The unit of ``digits`` a duration is written in: the first whose size it reaches (by
    ``|ns|``; by ``ns`` itself when not ``by_magnitude``, so a negative one takes the last), else
    the last, the smallest."""
    size = abs(ns) if by_magnitude else ns
    unit = ""
    for unit in digits:
        if size >= UNIT_NS[unit]:
            break
    return unit


def duration(ns: float | None, digits: Mapping[str, int] = SHORT, *, none: str = "—", sep: str | None = " ",
             signs: tuple[str, str, str] | None = None, by_magnitude: bool = True) -> str:
    """``ns`` in its unit of ``digits`` (:func:`unit_of`) to that unit's digits: ``none`` for
    None; ``sep`` between the number and the unit ('' for systemd's ``1.234s``; None leaves the
    unit out, for a column whose header says it). ``signs`` (negative, zero, positive) go before
    the magnitude; without them the number is signed as Python writes it (``-84.1 ms``)."""
    if ns is None:
        return none
    unit = unit_of(ns, digits, by_magnitude)
    div, places = UNIT_NS[unit], digits[unit]
    if signs is None:
        body = f"{ns / div:.{places}f}"
    else:
        body = (signs[0] if ns < 0 else signs[2] if ns > 0 else signs[1]) + f"{abs(ns) / div:.{places}f}"
    return body if sep is None else body + sep + unit


def short(ns: float | None, signed: bool = False) -> str:
    """A duration in a table: 2.390 s, 348.7 ms, 987 µs, −12 ns; '—' for None; ``signed``: a
    change, +1.2 ms, −3.0 ms, ±0 ns."""
    return duration(ns, SHORT, signs=SIGNED if signed else TYPESET)


def short_range(lo: float, hi: float) -> str:
    """An interval, its unit said once where both ends share it: 70.6–132.4 ms, 950.0 ms–1.012 s."""
    a, b = short(lo), short(hi)
    ua, ub = a.rsplit(" ", 1), b.rsplit(" ", 1)
    if len(ua) == len(ub) == 2 and ua[1] == ub[1]:
        return f"{ua[0]}–{b}"
    return f"{a}–{b}"

