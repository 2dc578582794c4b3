"""No bootloader stage in between: the kernel started directly.

U-Boot proper (its banner to ``Starting kernel ...``) initialises the board a second time,
probes its own drivers, runs the boot command and loads the kernel. With U-Boot's falcon mode
the SPL loads the kernel (and its device tree) and jumps to it, and U-Boot proper never runs;
on a QEMU reference target the analogue is QEMU's direct kernel boot (``-kernel`` with no
``-bios``), which ``optimize`` applies itself. The estimate is the measured bootloader stage:
on a board, the SPL still has to read the kernel from storage, so part of it moves rather
than vanishes (medium confidence).

While U-Boot counts down for a key press the rule says nothing: ``bootdelay=0``
(uboot.autoboot_delay) is the first change, a setting rather than a new boot path, and the
stage's own work is measured once the countdown is gone (``optimize``'s next round).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...core.kindpos import located
from ...core.model import Kind
from ...core.units import duration
from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

MIN_NS = 10_000_000
CHANGE = Change(ChangeKind.BOOTLOADER, "direct",
                "start the kernel with no U-Boot proper in between: U-Boot's falcon mode on a board "
                "(CONFIG_SPL_OS_BOOT: the SPL loads the kernel and its device tree, 'spl export' prepares "
                "the arguments); a QEMU reference target boots with -kernel and no -bios")
TRADEOFF = ("no bootloader prompt and no boot menu: a board needs another way in for recovery (a GPIO or key "
            "checked by the SPL sends it to U-Boot proper); the kernel's arguments and device tree are fixed "
            "when falcon mode is prepared")


@REGISTRY.register
class DirectBoot(Rule):
    """U-Boot proper's whole stage, which falcon mode (or a direct kernel boot) removes."""

    id = "uboot.direct_boot"
    title = "Bootloader stage before the kernel"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        stage = next((s for s in boot.stages if s.name == "bootloader"), None)
        if stage is None or stage.start is None or stage.end is None or stage.start.line_no is None \
                or stage.end.line_no is None:
            return
        if stage.duration_ns is not None and stage.duration_ns < MIN_NS:
            return
        if boot.boot.bootloader_at(stage.start.line_no or 0) not in ("U-Boot", None):
            return  # barebox, GRUB: another bootloader, another change
        delay = boot.boot.fact("bootdelay")
        counting = delay is None or delay.value.strip() not in ("0", "-2")  # -2: no key check at all
        if counting and any(e.name.startswith("autoboot delay") and e.duration_ns != 0
                            for _, e in located(boot.boot.events, Kind.BOOTLOADER)):
            return  # the countdown first (uboot.autoboot_delay)
        lines = [stage.start.line_no, stage.end.line_no]
        where = f"line {stage.start.line_no} ({stage.start.what}) to line {stage.end.line_no} ({stage.end.what})"
        if stage.duration_ns is None:
            # read on a clock U-Boot does not print (the guest's, --deterministic): the stage is there, untimed
            pre = next((s.duration_ns for s in boot.stages if s.name == "pre_kernel"), None)
            title = "U-Boot proper runs before the kernel starts (not timed on this clock)"
            arithmetic = (f"no estimate: U-Boot's stage ({where}) carries no time on this boot's clock"
                          + (f"; power-on to the kernel (firmware, U-Boot and the kernel's load together) took "
                             f"{K.ms(pre)}" if pre is not None else "")
                          + "; with the kernel started directly U-Boot proper's part of it is gone")
        else:
            title = f"U-Boot proper runs for {duration(stage.duration_ns, {'s': 3})} before the kernel starts"
            arithmetic = (f"the bootloader stage, {where}: {K.ms(stage.duration_ns)}; with the kernel started "
                          "directly it is gone (on a board the SPL still reads the kernel from storage: that part "
                          "moves, it does not vanish)")
        yield Finding(
            rule=self.id,
            title=title,
            stage="bootloader",
            saving_ns=stage.duration_ns,
            arithmetic=arithmetic,
            confidence=Confidence.MEDIUM,
            tradeoff=TRADEOFF,
            change=CHANGE,
            evidence=evidence(boot.boot, lines),
        )
