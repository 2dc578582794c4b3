"""Numbers read from log text, bounded to what a kernel or bootloader can print.

A serial line delivers noise: a digit run of any length where a time, a pid or a byte count
should be. Every parser turns log digits into integers through :func:`to_int` (or a
:class:`Tally`, which also counts what it refused), never through a bare ``int()``:

- the value is an ASCII digit run (``str.isdigit`` also takes '²' and Devanagari digits, which
  ``int()`` refuses or reads), with a sign only where the field is signed;
- its length is checked before ``int()`` runs, so Python's 4,300-digit conversion limit can
  never raise;
- a value outside the field's range is not used: the caller gets None and counts it.

The native core (native/src/lib.rs ``bounded``) applies the same bounds (``_scan.BOUNDS``);
tests/test_native.py checks the scans use nothing outside them.

Why these bounds: time is integer nanoseconds, and the analysis adds and subtracts times (clock
offsets, a start as end minus duration, stage spans) that the native code and every JSON writer
hold in 64 bits. Times and durations are capped at 2**60 ns (36.5 years of uptime, far beyond
any boot log) so that any few of them summed stay inside 64 bits.
"""

from __future__ import annotations

TIME_NS_MAX = 2**60  # any time or duration, in ns (36.5 years)
PID_MAX = 4_194_304  # PID_MAX_LIMIT: the largest pid a 64-bit kernel hands out
INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # a C int: initcall and probe return values, U-Boot's bootdelay
BYTES_MAX = 2**48  # a byte count (an image, a RAM size): 256 TiB, no board loads more at boot
LPJ_MAX = 2**48  # loops_per_jiffy (an unsigned long; a 10 GHz CPU at HZ=100 gives 10**8)
BAUD_MAX = 2**31 - 1  # a console line rate (the kernel's uart speed is an unsigned int)
CPUS_MAX = 2**16  # CPUs a kernel brings up (NR_CPUS is at most 8192 on every architecture)

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


def to_int(text: str, hi: int, lo: int = 0) -> int | None:
    """The integer ``text`` writes (ASCII digits, a leading '-' when ``lo`` < 0), when it lies
    in ``lo..hi``; None for anything else (empty, not digits, out of range)."""
    if len(text) < 10 and text.isdigit() and text.isascii():  # the common case, in C: a short unsigned run
        v = int(text)
        return v if lo <= v <= hi else None
    neg = text[:1] == "-"
    digits = text[1:] if neg else text
    if not digits or not digits.isascii() or not digits.isdigit() or (neg and lo >= 0):
        return None
    digits = digits.lstrip("0") or "0"
    if len(digits) > len(str(max(hi, -lo))):  # before int(): a 4,301-digit run never reaches it
        return None
    v = -int(digits) if neg else int(digits)
    return v if lo <= v <= hi else None


_HEX = frozenset("0123456789abcdefABCDEF")


def hex_to_int(text: str, hi: int) -> int | None:
    """The value of a run of hex digits (no 0x), when at most ``hi``; else None."""
    if not text or not _HEX.issuperset(text):
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > len(f"{hi:x}"):
        return None
    v = int(digits, 16)
    return v if v <= hi else None


def to_ns(text: str, unit: int, hi: int = TIME_NS_MAX) -> int | None:
    """A count of ``unit`` ns (``NS_PER_US``, ``NS_PER_MS``, ``NS_PER_S``) as ns, when the ns
    value is at most ``hi``; else None."""
    v = to_int(text, hi // unit)
    return None if v is None else v * unit


def in_range(v: int | None, hi: int = TIME_NS_MAX, lo: int = 0) -> bool:
    """True for an int already computed (a sum, a product) that lies in ``lo..hi``."""
    return v is not None and lo <= v <= hi


class Tally:
    """The numbers of one parse that were out of range, for one counted warning.

    ``take`` is :func:`to_int` that remembers what it refused and where::

        tally = Tally("U-Boot")
        size = tally.take(m[1], BYTES_MAX, line_no=no)  # None, and counted, if out of range
        ...
        warnings += tally.warnings()
    """

    __slots__ = ("what", "count", "first_line", "fields")

    def __init__(self, what: str) -> None:
        self.what = what
        self.count = 0
        self.first_line: int | None = None
        self.fields: dict[str, int] = {}

    def refuse(self, field: str, line_no: int | None) -> None:
        """Count one value that was not used."""
        self.count += 1
        self.fields[field] = self.fields.get(field, 0) + 1
        if self.first_line is None:
            self.first_line = line_no

    def take(self, text: str, hi: int, lo: int = 0, *, field: str = "number", line_no: int | None = None
             ) -> int | None:
        """:func:`to_int`, counting a refusal."""
        v = to_int(text, hi, lo)
        if v is None:
            self.refuse(field, line_no)
        return v

    def hex(self, text: str, hi: int, *, field: str = "number", line_no: int | None = None) -> int | None:
        """:func:`hex_to_int`, counting a refusal."""
        v = hex_to_int(text, hi)
        if v is None:
            self.refuse(field, line_no)
        return v

    def ns(self, text: str, unit: int, *, field: str = "time", line_no: int | None = None) -> int | None:
        """:func:`to_ns`, counting a refusal."""
        v = to_ns(text, unit)
        if v is None:
            self.refuse(field, line_no)
        return v

    def warnings(self) -> tuple[str, ...]:
        """One warning for everything refused, or none."""
        if not self.count:
            return ()
        fields = ", ".join(f"{n} {f}" for f, n in sorted(self.fields.items()))
        where = f"; first at line {self.first_line}" if self.first_line is not None else ""
        return (f"{self.what}: {self.count} numbers out of range were not used ({fields}{where})",)
