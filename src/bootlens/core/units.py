"""How a duration reads in the terminal: the one short form every table uses."""

from __future__ import annotations


def short(ns: float | None, signed: bool = False) -> str:
    """A duration to four significant figures or so: 2.390 s, 348.7 ms, 987 µs; '—' for None."""
    if ns is None:
        return "—"
    sign = ("+" if ns > 0 else "−" if ns < 0 else "±") if signed else ("−" if ns < 0 else "")
    a = abs(ns)
    if a >= 1e9:
        body = f"{a / 1e9:.3f} s"
    elif a >= 1e6:
        body = f"{a / 1e6:.1f} ms"
    elif a >= 1e3:
        body = f"{a / 1e3:.0f} µs"
    else:
        body = f"{a:.0f} ns"
    return sign + body


def short_range(lo: float, hi: float) -> str:
    """An interval, its unit said once where both ends share it: 70.6–132.4 ms, 950.0 ms–1.012 s."""
    a, b = short(lo), short(hi)
    ua, ub = a.rsplit(" ", 1), b.rsplit(" ", 1)
    if len(ua) == len(ub) == 2 and ua[1] == ub[1]:
        return f"{ua[0]}–{b}"
    return f"{a}–{b}"


def mid_clip(s: str, width: int) -> str:
    """``s`` in at most ``width`` characters, the middle replaced by '…' (both ends of a name
    tell it apart: of_platform_…_populate_init)."""
    if len(s) <= width:
        return s
    if width <= 1:
        return "…"[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return s[:head] + "…" + (s[-tail:] if tail else "")
