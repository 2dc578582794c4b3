"""U-Boot's own console output: every byte waits for the UART."""

from __future__ import annotations

from collections.abc import Iterable

from ...analyze import BootAnalysis
from ...model import Kind, Milestone
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
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

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        b = boot.boot
        start = first_event(boot, Kind.MILESTONE, Milestone.UBOOT_START)
        if start is None:
            return
        a_no = b.events[start].line_no
        end = first_event(boot, Kind.MILESTONE, Milestone.STARTING_KERNEL)
        lines = b.lines
        if end is not None and b.events[end].line_no >= a_no:
            z_no = b.events[end].line_no
        else:
            # up to the last line before the kernel's first timestamped line
            ai = lines.index_of(a_no)
            zi = next((i - 1 for i in range(ai, len(lines)) if lines.kernel[i] is not None), len(lines) - 1)
            z_no = lines.no(max(zi, ai))
        nbytes, nlines = console_bytes(b, lines.index_of(a_no), lines.index_of(z_no))
        counted = f"{nbytes:,} bytes in {nlines} lines from line {a_no} (U-Boot banner) to line {z_no}, with CR LF"
        if ctx.baud is None:
            saving = None
            arithmetic = f"no estimate: {BAUD_UNKNOWN}; {counted}"
        else:
            saving = wire_ns(nbytes, ctx.baud)
            arithmetic = f"{counted}; x {BITS_PER_BYTE} bits per byte (8N1) / {ctx.baud} baud = {secs(saving)}"
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
            confidence=Confidence.MEDIUM,
            tradeoff="the bootloader says nothing on the console: no banner, no autoboot prompt, no "
                     "error messages when a load fails; set silent= (empty) from the U-Boot shell to "
                     "debug, and keep the UART FIFO in mind (its 16-64 bytes cost nothing)",
            change=Change(ChangeKind.KCONFIG, "CONFIG_SILENT_CONSOLE=y", description),
            evidence=evidence(b, a_no, z_no),
        )
