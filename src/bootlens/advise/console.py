"""What the kernel's console was doing while a stretch of the log was printed, and what it cost.

A printk line is stamped when it is logged; a console that prints synchronously then writes it
out before the caller goes on (the legacy console path, every kernel here), so on a serial
console the time between two printk stamps holds the wire time of the lines printed between
them. Rules that read a duration off two lines (the RTC read, SMP bring-up, the delay-loop
calibration) take that console time off, or say they cannot.

Whether a line went out at once is read from the console's own lines:

- ``bootconsole [uart8250] enabled`` / ``earlycon: ... (options '1500000n8')``: a boot console
  prints from the start of the kernel until ``bootconsole [...] disabled`` (or ``console
  [ttyS0] enabled, bootconsole disabled`` before 4.x);
- ``console [ttyS0] enabled`` (``printk: `` and ``legacy `` prefixes in newer kernels): the
  real console prints from there on; ``console [ttyS0] disabled`` stops it (the 8250 driver
  re-registers its port);
- before any of these, printk only buffers the lines (they are printed later, at once, when
  the console registers): no console time is spent at their stamps.

Consoles that wait for no UART (the VT consoles ``tty0``..., ``ram``/``ramoops``/``pstore``,
``netcon``, USB gadget serial ``ttyGS``, the EFI and VGA early consoles) cost nothing here.
With ``quiet`` or ``loglevel=`` 6 or less, informational lines are not printed at all.

The line rate: ``--baud`` or a recording's header first; else the boot console's earlycon
options; else the ``console=NAME,BAUD`` of that console on the command line; else the command
line's ``console_baud`` fact (the preferred console's); else unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from ..timeline.analyze import BootAnalysis
from ..core.numbers import BAUD_MAX, INT_MAX, to_int
from ..core.units import duration
from .base import Context
from .evidence import BITS_PER_BYTE, LINE_END_BYTES, PRINTK_PREFIX_BYTES, wire_ns
from .memo import per_boot

ASSUMED_BAUD = 115200  # the common rate, used only where a rule says it assumed it


def console_output(ba: BootAnalysis) -> bool:
    """True when the boot's lines are what a console printed (a capture, a dmesg, a journal);
    False for a boot a side format made of its own figures (``bootlens analyze`` of side files
    alone, :func:`bootlens.timeline.analyze.analyze_side_boot`): systemd-analyze outputs, given
    alone or pasted in a transcript (their lines are systemd's report, e.g. its ``Startup
    finished`` line, written after the boot), and a bootchart, ftrace buffer or strace alone (no
    lines). Rules that count console bytes (:attr:`Rule.console`) have nothing to count there."""
    from ..sources.systemd_analyze import ALONE

    b = ba.boot
    return len(b.lines) > 0 and b.split_reason != ALONE

_LINE = re.compile(r"(?:printk: )?(?:legacy )?(bootconsole|console) \[([^\]]+)\] (enabled|disabled)"
                   r"(, bootconsole disabled)?")
_EARLYCON = re.compile(r"earlycon: (\S+) at .*\(options '([^']*)'\)")
_UNPACED = re.compile(r"(?:tty\d|ram|pstore|netcon|ttyGS|ttynull|efi|vga|earlyvga|earlyfb|hvc)")
_BAUD = re.compile(r"(\d+)")


class State(StrEnum):
    """How the lines of a stretch reached the console."""

    PACED = "paced"  # a serial console printed them as they were logged
    BUFFERED = "buffered"  # no serial console yet: logged only, printed later
    QUIET = "quiet"  # not printed: quiet or a low loglevel
    UNKNOWN = "unknown"  # the log does not show (cut before the kernel's start)


@dataclass(frozen=True, slots=True)
class ConsoleAt:
    """The console at one line of a boot."""

    state: State
    name: str | None  # the serial console printing (PACED), e.g. "ttyS0" or "uart8250"
    line_no: int | None  # the line that enabled it
    baud: int | None
    baud_how: str  # where the rate comes from, for the arithmetic ("" when unknown)

    def describe(self) -> str:
        """One clause for a finding's arithmetic."""
        if self.state is State.PACED:
            rate = f"{self.baud} baud ({self.baud_how})" if self.baud else "a rate the log does not give"
            return f"the serial console [{self.name}] (enabled at line {self.line_no}) printed them at {rate}"
        if self.state is State.BUFFERED:
            return ("no serial console was printing yet (none enabled before them): the lines were only "
                    "buffered, so no console time is in the span")
        if self.state is State.QUIET:
            return "the command line's quiet/loglevel keeps these informational lines off the console"
        return "the log does not show whether a serial console was printing (it starts after the kernel did)"


@dataclass(frozen=True, slots=True)
class _Switch:
    idx: int
    boot: bool  # a boot console (earlycon)
    name: str
    enabled: bool
    boot_off: bool  # "console [X] enabled, bootconsole disabled"


NEEDLES = ("console [", "earlycon:")  # what the helpers here grep for, found in advise()'s one pass


@per_boot
def _switches(ba: BootAnalysis) -> tuple[_Switch, ...]:
    texts = ba.boot.lines.text
    out = []
    for i in ba.boot.lines.grep("console ["):
        m = _LINE.search(texts[i])
        if m is not None:
            out.append(_Switch(i, m[1] == "bootconsole", m[2], m[3] == "enabled", bool(m[4])))
    return tuple(out)


def _cmdline(ba: BootAnalysis) -> list[str]:
    f = ba.boot.fact("cmdline") or ba.boot.fact("early_cmdline")
    return f.value.split() if f is not None else []


def _quiet(args: list[str]) -> bool:
    if "ignore_loglevel" in args:
        return False
    level = None
    for a in args:
        if a == "quiet":
            level = 4
        elif a.startswith("loglevel=") and (lv := to_int(a[9:], INT_MAX)) is not None:
            level = lv
    return level is not None and level <= 6  # KERN_INFO (6) is printed when console_loglevel > 6


def _started_before(ba: BootAnalysis, idx: int) -> bool:
    """True if the kernel's first lines (``Booting Linux`` / ``Linux version``) are before idx."""
    lines = ba.boot.lines
    return any(i <= idx for i in lines.starting("Linux version", "Booting Linux"))


def _baud(ba: BootAnalysis, ctx: Context, name: str, boot: bool) -> tuple[int | None, str]:
    if ctx.baud:
        return ctx.baud, "the capture's line rate: --baud or the recording's header"
    texts = ba.boot.lines.text
    if boot:
        for i in ba.boot.lines.grep("earlycon:"):
            m = _EARLYCON.search(texts[i])
            if m is not None and (b := _BAUD.match(m[2])) is not None and (rate := to_int(b[1], BAUD_MAX)):
                return rate, f"earlycon options '{m[2]}', line {ba.boot.lines.no(i)}"
    for a in _cmdline(ba):
        if a.startswith(f"console={name},"):
            b = _BAUD.match(a.partition(",")[2])
            if b is not None and (rate := to_int(b[1], BAUD_MAX)):
                return rate, f"{a} on the command line"
    f = ba.boot.fact("console_baud")
    if f is not None and (rate := to_int(f.value, BAUD_MAX)):
        what = "the boot console keeps the rate the bootloader set, taken as " if boot else ""
        return rate, f"{what}the kernel command line's console=...,{f.value} (line {f.line_no})"
    return None, ""


def rate(ba: BootAnalysis, ctx: Context) -> tuple[int | None, str]:
    """The console's line rate and where it comes from: the capture's (``--baud``, a recording's
    header), else the kernel command line's ``console=...,BAUD`` (the ``console_baud`` fact)."""
    return _baud(ba, ctx, "", False)


def console_at(ba: BootAnalysis, ctx: Context, idx: int) -> ConsoleAt:
    """The console state for the line at index ``idx`` (see the module docstring)."""
    if _quiet(_cmdline(ba)):
        return ConsoleAt(State.QUIET, None, None, None, "")
    if not _started_before(ba, idx):
        baud, how = _baud(ba, ctx, "", False)
        return ConsoleAt(State.UNKNOWN, None, None, baud, how)
    active: dict[str, tuple[bool, int]] = {}  # name -> (boot console, index of its line)
    for s in _switches(ba):
        if s.idx >= idx:
            break
        if s.enabled:
            active[s.name] = (s.boot, s.idx)
            if s.boot_off:
                active = {k: v for k, v in active.items() if not v[0]}
        else:
            active.pop(s.name, None)
    paced = [(k, v) for k, v in active.items() if not _UNPACED.match(k)]
    if not paced:
        return ConsoleAt(State.BUFFERED, None, None, None, "")
    name, (boot, at) = paced[-1]
    baud, how = _baud(ba, ctx, name, boot)
    return ConsoleAt(State.PACED, name, ba.boot.lines.no(at), baud, how)


def line_bytes(ba: BootAnalysis, first: int, last: int) -> int:
    """Bytes lines ``first``..``last`` (indices, inclusive) take on the console: text, printk
    prefix where stamped, CR LF."""
    lines = ba.boot.lines
    n = 0
    for i in range(max(first, 0), min(last, len(lines) - 1) + 1):
        n += len(lines.text[i].encode("utf-8", "replace")) + LINE_END_BYTES
        if lines.kernel[i] is not None:
            n += PRINTK_PREFIX_BYTES
    return n


@dataclass(frozen=True, slots=True)
class ConsoleTime:
    """Console time within a span, as far as the log tells."""

    ns: int | None  # None: a serial console printed, at a rate not known
    assumed: bool  # the rate is ASSUMED_BAUD, not read anywhere
    text: str  # the arithmetic clause


def console_time(ba: BootAnalysis, ctx: Context, first: int, last: int, assume: bool = True) -> ConsoleTime:
    """Wire time of lines ``first``..``last`` (indices, inclusive) if a serial console printed
    them as they were logged: an upper bound on the console time inside the span from line
    ``first``'s stamp to the stamp of the line after ``last`` (lines logged by other CPUs may be
    printed later). With ``assume``, an unknown rate is taken as :data:`ASSUMED_BAUD` and said."""
    c = console_at(ba, ctx, first)
    count = last - first + 1
    if c.state in (State.BUFFERED, State.QUIET):
        return ConsoleTime(0, False, f"{c.describe()}")
    nbytes = line_bytes(ba, first, last)
    what = f"{count} line{'s' if count != 1 else ''}, {nbytes} bytes"
    baud, assumed = c.baud, False
    if baud is None:
        if not assume:
            return ConsoleTime(None, False, f"{what}; {c.describe()}")
        baud, assumed = ASSUMED_BAUD, True
    ns = wire_ns(nbytes, baud)
    src = "assumed: the log gives no rate" if assumed else None
    if c.state is State.PACED:
        head = c.describe() if not assumed else (f"the serial console [{c.name}] (enabled at line {c.line_no}) "
                                                 f"printed them at {baud} baud ({src})")
    else:
        head = f"{c.describe()}; counted as printed at {baud} baud" + (f" ({src})" if src else "")
    return ConsoleTime(ns, assumed, f"{head}: {what} x {BITS_PER_BYTE} bits / {baud} baud = {duration(ns, {'ms': 3})}")
