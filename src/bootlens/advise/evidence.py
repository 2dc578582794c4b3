"""What rules share: quoting log lines as evidence, counting console bytes, formatting figures.

Console bytes are counted from the framed lines: each line's text (UTF-8), the printk timestamp
prefix ``[%5lu.%06lu] `` (15 bytes) where the line had one, and CR LF (the kernel's and U-Boot's
serial consoles both end lines with CR LF). On a recording of the reference target this gives
the exact byte count the console sent from ``Booting Linux`` to ``Run /init`` (14,732 bytes).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..timeline.analyze import BootAnalysis
from ..core.kindpos import first
from ..core.lines import clip
from ..core.model import Boot, Kind
from ..core.units import PROSE, duration
from .base import Evidence

PRINTK_PREFIX_BYTES = 15  # "[    1.234567] "
LINE_END_BYTES = 2  # CR LF
BITS_PER_BYTE = 10  # 8N1: start bit, 8 data bits, stop bit

BAUD_UNKNOWN = ("console baud unknown: pass --baud to bootlens advise or capture with bootlens capture --baud "
                "(a recording remembers its line rate)")  # report has no --baud: the hint names its command


def line_text(boot: Boot, line_no: int) -> str:
    """The text of an input line of this boot (prefixes removed), clipped for quoting."""
    i = boot.lines.index_of(line_no)
    if 0 <= i < len(boot.lines):
        return clip(boot.lines.text[i].strip())
    return ""


def evidence(boot: Boot, line_nos: Iterable[int | None], at_most: int | None = None) -> tuple[Evidence, ...]:
    """Evidence for these input lines, each quoted once, in log order (None skipped): the first
    ``at_most`` of them when given (the kernel rules quote 6 and name the rest by count in their
    arithmetic), else all."""
    nos = sorted({n for n in line_nos if n is not None})
    return tuple(Evidence(n, line_text(boot, n)) for n in nos[:at_most])


def console_bytes(boot: Boot, first: int, last: int) -> tuple[int, int]:
    """(bytes, lines) the console sent for lines ``first``..``last`` (indices, inclusive)."""
    lines = boot.lines
    a, b = max(first, 0), min(last, len(lines) - 1) + 1
    if b <= a:
        return 0, 0
    count = b - a
    # one join and one encode: C speed on a million-line log
    text = len("".join(lines.text[a:b]).encode("utf-8", "replace"))
    stamped = count - lines.kernel[a:b].count(None)
    return text + count * LINE_END_BYTES + stamped * PRINTK_PREFIX_BYTES, count


def wire_ns(nbytes: int, baud: int, bits_per_byte: int = BITS_PER_BYTE) -> int:
    """Time ``nbytes`` take on a serial line at ``baud``."""
    return nbytes * bits_per_byte * 1_000_000_000 // baud


def first_event(boot: BootAnalysis, kind: Kind, name: str) -> int | None:
    """Index in ``boot.boot.events`` of the first event of this kind and name, or None."""
    return first(boot.boot.events, kind, name)  # the kind's rows only, not every event


def secs(ns: float) -> str:
    """A duration for prose: '2.089 s', '84.1 ms', '912 µs'."""
    return duration(ns, PROSE)


def size(n: float) -> str:
    """A byte count for prose: '32.96 MB (32,956,352 bytes)' style, short."""
    if n >= 1e6:
        return f"{n / 1e6:.2f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.1f} kB"
    return f"{n:.0f} bytes"
