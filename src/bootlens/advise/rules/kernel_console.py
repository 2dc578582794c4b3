"""Serial console cost: every byte the kernel prints before user space is waited for.

The line rate is the capture's (``--baud``, a recording's header), else the kernel command line's
``console=ttyS0,115200n8`` (:func:`..console.rate`). The bytes are counted only where they went
out on a serial console: the log is a capture of the console itself (the bootloader's lines
are in it), or a serial console was enabled (``console [ttyS0] enabled``) by the end of the
count. A dmesg of a board whose only consoles are a RAM buffer or a screen (``console=none``,
``[ram-1]``, ``[tty0]``) printed nothing on a UART, and the rule says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.lines import Lines
from ...core.model import BOOTLOADER_STARTS, Kind, Milestone
from ...core.numbers import INT_MAX, to_int
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..console import State, console_at, rate
from ..evidence import BAUD_UNKNOWN, BITS_PER_BYTE, LINE_END_BYTES, console_bytes, evidence, first_event, secs, wire_ns
from . import _kernel as K

QEMU_TARGETS = ("qemu-arm64", "qemu-x86_64")

# The first and last lines of the reports the kernel prints at any loglevel: oops_begin(), panic()
# and __warn() call console_verbose() (lib/bug.c, kernel/panic.c, arch/*/kernel/traps.c)
_VERBOSE_START = ("------------[ cut here ]------------", "Unable to handle kernel", "Internal error: ",
                  "Kernel panic - not syncing", "BUG: ", "Oops: ", "Oops[")
_VERBOSE_END = ("---[ end trace", "---[ end Kernel panic")


def _verbose_lines(lines: Lines, a: int, z: int) -> list[int]:
    """Indices in [a, z] inside an oops, WARN or panic report (its start line to its end
    trace line, or to z)."""
    out: list[int] = []
    inside = False
    for i in range(a, z + 1):
        t = lines.text[i].lstrip()
        if not inside and t.startswith(_VERBOSE_START):
            inside = True
        if inside:
            out.append(i)
            if t.startswith(_VERBOSE_END):
                inside = False
    return out


def _wrapped_lines(lines: Lines, a: int, z: int) -> list[int]:
    """Indices in [a, z] of non-empty lines without a printk stamp between two stamped lines, in a
    log whose kernel lines are stamped (none on a console with printk.time off)."""
    kern, text = lines.kernel, lines.text
    if kern[a] is None:
        return []
    out = []
    for i in range(a + 1, z):
        if kern[i] is None and text[i].strip() and kern[i - 1 if kern[i - 1] is not None else i] is None:
            continue
        if kern[i] is None and text[i].strip():
            out.append(i)
    # only runs that sit between stamped lines: a continuation follows a stamped line
    return [i for i in out if any(kern[j] is not None for j in range(i + 1, min(z + 1, i + 4)))]


@REGISTRY.register
class SerialConsole(Rule):
    """The kernel's serial console driver writes each byte into the UART and waits for room in
    its FIFO: at 115200 baud 10 bits take 86.8 µs, and the CPU spends them with the line."""

    id = "kernel.serial_console"
    title = "kernel messages on a serial console"
    console = True

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        b = boot.boot
        start = first_event(boot, Kind.MILESTONE, Milestone.KERNEL_START)
        if start is None:
            return
        cmdline = b.fact("cmdline")
        args = cmdline.value.split() if cmdline is not None else []
        if "quiet" in args or any(a.startswith("loglevel=") and (to_int(a[9:], INT_MAX) or 99) <= 4
                                  for a in args):
            return  # already quiet: what is left is errors and warnings
        a_no = b.events[start].line_no
        lines = b.lines
        # where kernel init ends is the stages' knowledge (stages.py): Run /init, else the
        # Freeing line or the initial-console warning that come right before init is exec'd
        ki_end = next((s.end for s in boot.stages if s.name == "kernel_init"), None)
        if ki_end is not None and ki_end.line_no is not None and ki_end.what == Milestone.RUN_INIT:
            init = b.fact("init")
            z_no, upto = ki_end.line_no, f"`Run {init.value if init is not None else '/init'}`"
        elif ki_end is not None and ki_end.line_no is not None:
            what = ("`Freeing ... memory`" if ki_end.what == Milestone.INITMEM_FREED
                    else "the initial-console warning")
            z_no, upto = ki_end.line_no, f"{what}, right before init runs"
        elif (first := first_event(boot, Kind.MILESTONE, Milestone.USERSPACE_FIRST)) is not None and (
                last := next((i for i in range(lines.index_of(b.events[first].line_no) - 1, -1, -1)
                              if lines.kernel[i] is not None), None)) is not None and lines.no(last) > a_no:
            # the kernel lines printed once user space runs are not waited for before it
            z_no, upto = lines.no(last), f"the last kernel line before user space's first (line {b.events[first].line_no})"
        else:
            last = next((i for i in range(len(lines) - 1, -1, -1) if lines.kernel[i] is not None), None)
            if last is None:
                return
            z_no, upto = lines.no(last), "the last kernel line; no `Run /init` in the log"
        captured = any(t.event.name in (*BOOTLOADER_STARTS, Milestone.STARTING_KERNEL)
                       for t in K.events(boot, Kind.MILESTONE))
        if not captured and console_at(boot, ctx, lines.index_of(z_no)).state is State.BUFFERED:
            return  # no serial console shows in this log: the lines went to a RAM buffer or a screen
        ai, zi = lines.index_of(a_no), lines.index_of(z_no)
        nbytes, nlines = console_bytes(b, ai, zi)
        counted = (f"{nbytes:,} bytes on the console in {nlines} lines from line {a_no} (kernel start) "
                   f"to line {z_no} ({upto}), counting the 15-byte printk timestamps and CR LF")
        verbose, wrapped = _verbose_lines(lines, ai, zi), _wrapped_lines(lines, ai, zi)
        if verbose:
            # an oops, a WARN or a panic calls console_verbose(): printed whatever the loglevel
            vb = sum(console_bytes(b, i, i)[0] for i in verbose)
            nbytes -= vb
            counted += (f", less {vb:,} bytes of {len(verbose)} lines of an oops, WARN or panic report (printed "
                        f"whatever the loglevel: console_verbose) from line {lines.no(verbose[0])}")
        if wrapped:
            # a line without the printk stamp its neighbours have is the end of the line before
            # (wrapped by a mail client or a terminal, or a pr_cont): one line on the wire, no CR LF
            nbytes -= len(wrapped) * LINE_END_BYTES
            counted += (f", less the line ends of {len(wrapped)} unstamped lines (the end of the stamped line "
                        f"before, wrapped or continued; first at line {lines.no(wrapped[0])})")
        bound = ("an upper bound: the log carries no message levels, and quiet (console loglevel 4) still prints "
                 "errors and worse (levels 0-3)")
        if not captured:
            bound += "; and this is the kernel's log (a dmesg), not what its console printed"
        qemu = ctx.target in QEMU_TARGETS
        baud, how = rate(boot, ctx)
        if baud is None:
            saving = None
            arithmetic = f"no estimate: {BAUD_UNKNOWN}, and the command line names no console rate; {counted}"
        else:
            saving = wire_ns(nbytes, baud)
            arithmetic = (f"{counted}; x {BITS_PER_BYTE} bits per byte (8N1) / {baud} baud ({how}) = {secs(saving)}; "
                          f"{bound}")
        if qemu:
            arithmetic += ("; under QEMU the console is not paced at a baud rate (docs/target.md): a boot "
                           "measured on QEMU saves far less than this unless it was run with --baud, and "
                           "even then only where the output outruns the line")
        change = Change(ChangeKind.CMDLINE, "quiet",
                        "add quiet to the kernel command line (or loglevel=3; CONFIG_CONSOLE_LOGLEVEL_QUIET "
                        "sets what quiet keeps)")
        if "ignore_loglevel" in args:
            # ignore_loglevel prints everything whatever the loglevel: quiet alone changes nothing
            change = Change(ChangeKind.MANUAL, "quiet",
                            "remove ignore_loglevel (a debugging option) and add quiet to the kernel command line")
            arithmetic += "; the command line has ignore_loglevel, which quiet cannot override"
        yield Finding(
            rule=self.id,
            title=f"the kernel prints {nbytes:,} bytes on the serial console before user space (at most this saved)",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=Confidence.MEDIUM,
            tradeoff="boot messages no longer appear on the console (they stay in the kernel log: dmesg); "
                     "a board that fails to boot in the field says less; loglevel=3 keeps errors too",
            change=change,
            evidence=evidence(b, (a_no, z_no)),
        )
