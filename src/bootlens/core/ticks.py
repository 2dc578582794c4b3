"""The resolution of a clock, seen in the values read on it.

A printk clock counts microseconds, but a kernel whose sched_clock runs on jiffies moves in
4 ms (HZ=250) or 10 ms (HZ=100) steps; journalctl's short format and ``dmesg -T`` print whole
seconds; a bootloader's ``[ms]`` stamps count milliseconds. A difference smaller than the tick is
not something the log measured. The tick is the coarsest of a few known steps that (nearly)
every non-zero value is a multiple of; a few off-grid values (a line typed in by hand, a decayed
stamp) do not hide it.
"""

from __future__ import annotations

from collections.abc import Iterable

# coarse to fine: whole seconds, 100 ms, HZ=100 and HZ=250 jiffies, ms, then the µs of a printk
# clock; below that the values themselves are the limit (1 ns)
_STEPS = (1_000_000_000, 100_000_000, 10_000_000, 4_000_000, 1_000_000, 100_000, 10_000, 1_000)
_ENOUGH = 8  # values needed before a coarse step is believed (3 whole seconds can be chance)
_SHARE = 0.95  # share of the values on the grid
_SAMPLE = 4096  # the first values suffice: the clock does not change its step mid-boot


def tick_of(values_ns: Iterable[int]) -> int:
    """The clock's observed resolution in ns: the coarsest step of :data:`_STEPS` that at least
    95% of the first 4096 non-zero values are multiples of, given 8 of them at least (1 µs with
    fewer: the finest step a printed stamp usually has); 1 ns when no step fits. Zeros say
    nothing (every step divides them) and are skipped."""
    vals: list[int] = []
    for v in values_ns:
        if v:
            vals.append(v)
            if len(vals) >= _SAMPLE:
                break
    if len(vals) < _ENOUGH:
        return 1_000
    need = _SHARE * len(vals)
    for step in _STEPS:
        if sum(1 for v in vals if v % step == 0) >= need:
            return step
    return 1
