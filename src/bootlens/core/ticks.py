"""The tick of a clock seen in a set of values: the step its readings move in.

A figure read off a clock is only as fine as that clock. Initcall durations of a kernel still
timing on the jiffies clocksource (every initcall before ``clocksource: Switched to clocksource``,
or a whole boot without a high-resolution timer) move in whole jiffies: 4 ms at HZ=250, 10 ms at
HZ=100; printk times and ``after N usecs`` in µs; a journal or syslog without fractions in whole
seconds. Two readings one tick apart may come from the same duration, so a difference within
the tick says nothing (``bootlens compare``, ``regress``, budgets, ``optimize``).

The rule (:func:`tick_of`)
--------------------------
The tick is the coarsest of the known clock steps (:data:`TICKS_NS`) that the values sit on:

- zeros say nothing (a zero is on every grid), and neither does a value closer to 0 than the
  tolerance below; with no other value the tick is 0: unknown;
- a value sits on a step T when it is within 1 µs of a whole multiple of T (``after N usecs``
  is a truncated µs: HZ=300's 3,333,333 ns jiffy prints as 3333, 6666, 9999 µs, and kernels
  before ``ktime_us_delta`` printed ``ns >> 10`` as usecs, so 4 ms jiffies read 3906, 7812,
  11718 µs: those are steps of their own, 4 ms / 1.024);
- every value must sit on it, except a few odd ones: 1 in 20 (none below 20 values), for a
  line from another clock or a corrupted digit in a long list.

Limits: the steps are a list, not a search (a clock of 5 ms or 100 µs reads as the next finer
step on the list, 1 ms or 1 µs: too fine, never too coarse). A few values can sit on a coarser
step by chance: a single 10 ms reading off a 1 ms clock reads as a 10 ms tick (1 chance in 10);
a µs clock lands on a multiple of 4 ms once in 4000 readings. A set mixing clocks (a boot's
initcalls before and after the clocksource switch) has the finer tick, unless nearly all of it is
on the coarse one: ask per figure (each initcall's readings), not per log.
"""

from __future__ import annotations

from collections.abc import Iterable

_HZ_TICK_NS = {100: 10_000_000, 250: 4_000_000, 300: 3_333_333, 1000: 1_000_000}  # TICK_NSEC per HZ

# Known clock steps in ns, coarsest first: whole seconds; jiffies at HZ=100, 250, 300, 1000, each
# also as old kernels printed it (ns >> 10 as "usecs": the jiffy / 1.024); ms; µs; ns.
TICKS_NS: tuple[float, ...] = (
    1e9,
    *sorted((t for ns in _HZ_TICK_NS.values() for t in (float(ns), ns / 1.024)), reverse=True),
    1e3,
    1.0,
)
TOLERANCE_NS = 1000  # a printed µs is truncated: a reading may sit up to 1 µs under the true step
ODD_SHARE = 20  # one value in 20 may be off the step (none in fewer than 20 values)


def _on(v: int, step: float) -> bool | None:
    """True when ``v`` is a whole multiple (>= 1) of ``step`` within the tolerance, None when it
    is within the tolerance of 0 (no evidence), False otherwise."""
    k = round(v / step)
    if k == 0:
        return None if v < TOLERANCE_NS else False
    return abs(v - k * step) < (TOLERANCE_NS if step > TOLERANCE_NS else 0.5)


def tick_of(values_ns: Iterable[int]) -> int:
    """The tick of the clock the values were read off, in ns (rounded to whole ns: 4,000,000,
    3,906,250, 1,000, 1); 0 when the values say nothing (none, or all zero). The rule and its
    limits are in the module docstring."""
    vals = [abs(v) for v in values_ns if v]
    if not vals:
        return 0
    odd_allowed = len(vals) // ODD_SHARE
    for step in TICKS_NS:
        odd = evidence = 0
        for v in vals:
            on = _on(v, step)
            if on is False:
                odd += 1
                if odd > odd_allowed:
                    break
            elif on:
                evidence += 1
        else:
            if evidence:
                return round(step)
    return 1


def tick_text(ns: float) -> str:
    """A tick as it reads in a sentence: '4 ms', '3.906 ms', '1 s', '1 µs'."""
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= size:
            return f"{ns / size:.3f}".rstrip("0").rstrip(".") + " " + unit
    return f"{ns:.0f} ns"
