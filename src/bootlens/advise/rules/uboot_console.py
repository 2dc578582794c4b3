"""U-Boot's own console output: every byte waits for the UART.

Only U-Boot (a ``uboot_version`` fact: RedBoot, GRUB or a vendor loader have no
CONFIG_SILENT_CONSOLE). The bytes counted run from U-Boot's banner to ``Starting kernel ...``,
or to the line before the kernel's first line; where neither is in the log the rule says
nothing. The rate is the capture's, else the kernel command line's ``console=...,BAUD``, taken
as U-Boot's too (most boards pass U-Boot's ``baudrate`` on in ``bootargs``; said, and the
confidence is then low).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.kindpos import located
from ...core.model import Kind, Milestone
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..console import rate
from ..evidence import BAUD_UNKNOWN, BITS_PER_BYTE, console_bytes, evidence, first_event, secs, wire_ns

# Reference targets whose U-Boot was checked for CONFIG_SILENT_CONSOLE (docs/rules/bootloader-and-image.md):
# Debian's u-boot-qemu 2023.01 has no "silent" in its binary, and a boot with silent=1 prints the
# same bytes as one without.
NO_SILENT_CONSOLE = {"qemu-arm64": "Debian's u-boot-qemu"}


@REGISTRY.register
class BootloaderConsole(Rule):
    """U-Boot's putc polls the UART until its FIFO has room: printing N bytes costs about
    N x 10 / baud seconds of boot time."""

    id = "uboot.console"
    title = "U-Boot console output"
    console = True

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        b = boot.boot
        version = b.fact("uboot_version")
        if version is None:
            return  # not U-Boot: another bootloader's console is its own matter
        start = next((i for i, e in located(b.events, Kind.MILESTONE)
                      if e.name == Milestone.UBOOT_START and e.line_no == version.line_no), None)
        if start is None:
            return
        a_no = b.events[start].line_no
        end = first_event(boot, Kind.MILESTONE, Milestone.STARTING_KERNEL)
        if end is None:  # bootefi/go hand over with "## Starting (EFI) application at ..."
            end = next((i for i, e in located(b.events, Kind.BOOTLOADER)
                        if e.name.startswith("start application")), None)
        kernel = first_event(boot, Kind.MILESTONE, Milestone.KERNEL_START)
        lines = b.lines
        ai = lines.index_of(a_no)
        if end is not None and b.events[end].line_no >= a_no:
            z_no = b.events[end].line_no
        elif kernel is not None and b.events[kernel].line_no > a_no:
            z_no = b.events[kernel].line_no - 1  # up to the kernel's first line
        else:
            zi = next((i - 1 for i in range(ai, len(lines)) if lines.kernel[i] is not None), None)
            if zi is None:
                return  # where U-Boot's output ends is not in the log
            z_no = lines.no(max(zi, ai))
        nbytes, nlines = console_bytes(b, ai, lines.index_of(z_no))
        counted = f"{nbytes:,} bytes in {nlines} lines from line {a_no} (U-Boot banner) to line {z_no}, with CR LF"
        baud, how = rate(boot, ctx)
        confidence = Confidence.MEDIUM
        if baud is None:
            saving = None
            arithmetic = f"no estimate: {BAUD_UNKNOWN}, and the kernel command line names no console rate; {counted}"
        else:
            saving = wire_ns(nbytes, baud)
            if not ctx.baud:
                how += ", taken as U-Boot's rate too"
                confidence = Confidence.LOW
            arithmetic = f"{counted}; x {BITS_PER_BYTE} bits per byte (8N1) / {baud} baud ({how}) = {secs(saving)}"
        description = ("rebuild U-Boot with CONFIG_SILENT_CONSOLE=y (and CONFIG_SILENT_U_BOOT_ONLY=y to keep "
                       "the kernel's console), then set the U-Boot variable silent=1")
        built = NO_SILENT_CONSOLE.get(ctx.target or "")
        if built is not None:
            description += (f"; {built} is built without CONFIG_SILENT_CONSOLE, so silent=1 alone changes "
                            "nothing on this target (tested)")
            if saving is not None:
                arithmetic += "; under QEMU the console is not paced at a baud rate (docs/target.md)"
        yield Finding(
            rule=self.id,
            title=f"U-Boot prints {nbytes:,} bytes on the console before starting the kernel",
            stage="bootloader",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=confidence,
            tradeoff="the bootloader says nothing on the console: no banner, no autoboot prompt, no "
                     "error messages when a load fails; set silent= (empty) from the U-Boot shell to "
                     "debug, and keep the UART FIFO in mind (its 16-64 bytes cost nothing)",
            change=Change(ChangeKind.KCONFIG, "CONFIG_SILENT_CONSOLE=y", description),
            evidence=evidence(b, (a_no, z_no)),
        )
