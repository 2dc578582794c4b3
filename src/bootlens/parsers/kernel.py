"""Kernel milestones from printk: ``Linux version``, the command line, delay-loop calibration,
console registration, ``Freeing unused kernel ... memory``, ``VFS: Mounted root``,
``Run /init as init process``, panics.
"""

from __future__ import annotations

from ..core.lazyre import lazy
from ..core.lines import Lines, stamp_at
from ..core.numbers import BAUD_MAX, LPJ_MAX, Tally
from ..core.model import Event, Fact, Kind, Milestone, ParseResult
from . import REGISTRY
from .base import Parser
from ..core.options import ParseOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# Dispatch on the first four characters: one dict lookup per line instead of a dozen searches.
_PREFIXES = frozenset({"Linu", "Boot", "Kern", "Comm", "Cali", "VFS:", "Run ", "prin", "cloc", "Warn"})

# The messages the parse visits start with one of these. "Freeing" is looked up on its own
# (below): a log can hold tens of thousands of such lines (every page freed by a driver), of
# which two are milestones.
_HEADS = ("Linux version", "Booting Linux", "Kernel command line:", "Command line:",
          "Calibrating delay", "VFS: Mounted root", "Run ", "printk:",
          "clocksource: Switched", "Kernel panic", "Warning: unable to open an initial console")
_VERSION = lazy(r"Linux version (\S+)")
# "Calibrating delay using timer specific routine.." (calibrate_delay_direct) also measures,
# for several timer ticks; both are skipped by lpj= on the command line.
_CALIBRATE = lazy(
    r"Calibrating delay (?:loop|using timer specific routine)(?: \((skipped)\))?(?: preset value)?"
    r"[^(]*?([\d.]+) BogoMIPS \(lpj=(\d+)\)"
)
# free_initmem() runs right before init is exec'd: "Freeing unused kernel memory" (most arches,
# 2.6.3x-6.x), "Freeing init memory" (ARM and MIPS before 3.x), "Freeing unused kernel image
# (initmem) memory" (x86 and RISC-V 5.x-6.x), "Freeing unused kernel image memory" (5.0-5.x).
# The "(text/rodata gap)" and "alternatives" lines that follow on some arches are not matched.
_INITMEM = lazy(r"Freeing (?:unused kernel (?:image (?:\(initmem\) )?)?memory|init memory)")
# Printed by kernel_init after free_initmem when /dev/console cannot be opened (Android kernels
# before 3.x print no "Run /init" and often no "Freeing"): init is exec'd right after it.
_NO_CONSOLE = "Warning: unable to open an initial console"
_ROOT = lazy(r"VFS: Mounted root \((\S+) filesystem\)( readonly)?(?: on device (\S+))?")
_RUN = lazy(r"Run (\S+) as init process")
_CONSOLE = lazy(r"printk: (?:console|legacy console) \[(\S+)\] enabled")
_CLOCKSOURCE = lazy(r"clocksource: Switched to clocksource (\S+)")
_BAUDS = lazy(r"(?:^|\s)console=[^,\s]+,(\d+)")  # console=ttyS0,115200 on the command line


@REGISTRY.register
class KernelParser(Parser):
    """Kernel boot milestones and facts (version, command line, lpj, root filesystem)."""

    name = "kernel"
    description = "kernel milestones: Linux version, command line, lpj, root mount, Run /init"
    prefixes = (*_HEADS, "Freeing")

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        texts = lines.text
        if any(texts[i].startswith(("Linux version", "Booting Linux"))
               for i in lines.starting("Linux version", "Booting Linux")):
            return 1.0
        if lines.has_kernel_time(2000):
            return 0.5
        # an unstamped dmesg cut before its "Linux version" (a ring buffer that overflowed)
        return 0.3 if lines.starting("Freeing", "VFS: Mounted root", "Run ", "Kernel panic") else 0.0

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        warnings: list[str] = []
        tally = Tally("kernel")
        seen: set[str] = set()

        def once(name: str, i: int, duration: int | None = None) -> None:
            if name not in seen:
                seen.add(name)
                events.append(Event(Kind.MILESTONE, name, stamp_at(lines, i), duration, lines.no(i)))

        prefixes = _PREFIXES
        kern, texts = lines.kernel, lines.text
        freeing = lines.starting("Freeing")
        initrd = next((i for i in freeing if texts[i].startswith("Freeing initrd memory")), None)
        if initrd is not None:
            once(Milestone.INITRD_FREED, initrd)
        frees = [i for i in freeing if _INITMEM.match(texts[i])]
        if frees:
            once(Milestone.INITMEM_FREED, last_free(kern, frees))
        stamped_at = first_stamped(lines)
        for idx in lines.starting(*_HEADS):
            t = texts[idx]
            if t[:4] not in prefixes:
                continue
            no = lines.no(idx)
            typed = _typed(kern, idx, stamped_at)
            if t.startswith("Booting Linux") and not typed:
                once(Milestone.KERNEL_START, _first_of_run(kern, idx))
            elif t.startswith("Linux version") and not typed:
                once(Milestone.KERNEL_START, _first_of_run(kern, idx))
                m = _VERSION.match(t)
                if m and "kernel_version" not in seen:
                    seen.add("kernel_version")
                    facts.append(Fact("kernel_version", m[1], no))
            elif t.startswith("Kernel command line:"):
                if "cmdline" not in seen:
                    seen.add("cmdline")
                    facts.append(Fact("cmdline", t[len("Kernel command line:"):].strip(), no))
                    # the serial console's line rate, "console=ttyS0,115200n8": the last console=
                    # that names one (the kernel's preferred console, /dev/console)
                    bauds = _BAUDS.findall(t)
                    if bauds:
                        baud = tally.take(bauds[-1], BAUD_MAX, field="baud rate", line_no=no)
                        if baud:  # console=ttyS0,0 names no rate
                            facts.append(Fact("console_baud", str(baud), no))
            elif t.startswith("Command line:"):
                if "early_cmdline" not in seen:
                    seen.add("early_cmdline")
                    facts.append(Fact("early_cmdline", t[len("Command line:"):].strip(), no))
            elif t.startswith("Calibrating delay"):
                m = _CALIBRATE.match(t)
                if m is None:
                    continue
                if m[1]:
                    how = "preset" if "preset value" in t else "timer"
                else:
                    how = "calibrated"
                lpj = tally.take(m[3], LPJ_MAX, field="lpj", line_no=no)
                if lpj is None:
                    continue
                facts.append(Fact("lpj", str(lpj), no))
                facts.append(Fact("lpj_source", how, no))
                facts.append(Fact("bogomips", m[2], no))
                dur = None
                here = kern[idx]
                if how == "calibrated" and here is not None:
                    # The calibration runs between this line's timestamp and the next line's.
                    for nxt in kern[idx + 1 : idx + 50]:
                        if nxt is not None:
                            dur = max(0, nxt - here)
                            break
                once(Milestone.CALIBRATE_DELAY, idx, dur)
            elif t.startswith("VFS: Mounted root"):
                m = _ROOT.match(t)
                once(Milestone.ROOT_MOUNTED, idx)
                if m and "rootfs" not in seen:
                    seen.add("rootfs")
                    facts.append(Fact("rootfs_type", m[1], no))
                    if m[3]:
                        facts.append(Fact("root_device", m[3], no))
            elif t.startswith("Run "):
                m = _RUN.match(t)
                if m:
                    once(Milestone.RUN_INIT, idx)
                    if "init" not in seen:
                        seen.add("init")
                        facts.append(Fact("init", m[1], no))
            elif t.startswith("printk:"):
                m = _CONSOLE.match(t)
                if m:
                    once(Milestone.CONSOLE_ENABLED, idx)
                    facts.append(Fact("console", m[1], no))
            elif t.startswith("clocksource: Switched"):
                m = _CLOCKSOURCE.match(t)
                if m:
                    once(Milestone.CLOCKSOURCE, idx)
                    facts.append(Fact("clocksource", m[1], no))
            elif t.startswith(_NO_CONSOLE):
                once(Milestone.NO_INITIAL_CONSOLE, idx)
            elif t.startswith("Kernel panic"):
                once(Milestone.KERNEL_PANIC, idx)
                warnings.append(f"kernel panic at line {no}: {t.strip()[:120]}")
        events.sort(key=lambda e: e.line_no)  # the Freeing milestones were taken first
        return ParseResult(tuple(events), tuple(facts), tuple(warnings) + tally.warnings())


def _first_of_run(kern: Sequence[int | None], idx: int) -> int:
    """The kernel's first line of the run that holds its banner at ``idx``: the printk-stamped
    lines just before it, stamped no later than it, are the same kernel's earlier messages
    (``dt-cpu-ftrs`` on powerpc, ``Initializing cgroup subsys`` on 3.x, x86's microcode line:
    the kernel prints before its ``Linux version``). An unstamped banner is its own start."""
    k = kern[idx]
    if k is None:
        return idx
    j = idx
    while j > 0 and (prev := kern[j - 1]) is not None and prev <= k:
        j -= 1
    return j


def last_free(kern: Sequence[int | None], frees: Sequence[int]) -> int:
    """The last of the first run of "Freeing unused kernel memory" lines: free_initmem prints one,
    then mark_rodata_ro frees the text and rodata gaps with the same words (x86_64 3.x-4.x: three
    in a row), all before init is exec'd; the run ends at a gap of more than 8 lines or, on a
    printk-stamped log, at a line without a stamp (user space's own output) between two."""
    last = frees[0]
    for i in frees[1:]:
        if i - last > 8 or (kern[last] is not None and any(kern[j] is None for j in range(last + 1, i))):
            break
        last = i
    return last


# What kernel_init prints after free_initmem and before init is exec'd (mark_readonly, the W+X
# check, the rodata self-test): the kernel's lines, though no Run/Freeing line heads them.
_AFTER_FREE = ("Write protecting the kernel", "This architecture does not have kernel memory protection",
               "Kernel memory protection disabled", "rodata_test:", "x86/mm: Checked W+X", "Run ", "Freeing",
               _NO_CONSOLE)
# Lines the kernel writes to the UART itself, around printk, so without a printk time on a stamped
# console: the FIQ debugger's prompt (Android BSP kernels: Tegra, Rockchip).
UNSTAMPED_KERNEL = ("<hit enter to activate fiq debugger>",)
# A kernel message's usual head on a console without printk times: a subsystem, driver or device
# name and a colon ("usb 1-1: ", "EXT4-fs (sda1): ", "igb 0000:02:00.0 enp2s0: ", "clocksource: ",
# "jffs2_scan_inode_node(): "), or an indented continuation (" sdb: sdb1 sdb2 < sdb5 >").
_KERNEL_HEAD = lazy(r"\s|[\w./-]+(?:\(\))?(?: [^\s:]\S*){0,2}?: ")


def kernel_shaped(text: str) -> bool:
    """True when an unstamped line reads as the kernel's own message by its shape (a console
    without printk times): what kernel_init prints after freeing its memory, the kernel's own
    UART lines, a ``name: `` head or an indented continuation. Lines of user space shaped so
    ("udhcpc: started") are passed over too: user space is then found a line late, never early."""
    return text.startswith((*_AFTER_FREE, *UNSTAMPED_KERNEL)) or _KERNEL_HEAD.match(text) is not None


def went_quiet(lines: Lines) -> bool:
    """True when a stamped console shows the kernel's banner but never its ``Kernel command line:``
    (start_kernel prints it at KERN_NOTICE after parse_early_param): ``quiet`` or ``loglevel=``
    took effect as the early parameters were read, and the console shows errors and warnings only
    from there on (a Jetson TX2's L4T: ``bootconsole [uart8250] enabled``, then 15 lines in 13 s)."""
    return lines.has_kernel_time() and not lines.starting("Kernel command line:")


def first_stamped(lines: Lines) -> int | None:
    """Index of the first line with a printk time, or None."""
    kern = lines.kernel
    if len(kern) > 64 and not lines.has_kernel_time():  # no stamp: the native count, not a walk in Python
        return None
    return next((i for i, k in enumerate(kern) if k is not None), None)


def _typed(kern: Sequence[int | None], idx: int, stamped_at: int | None) -> bool:
    """An unstamped kernel banner after the kernel's stamped lines is not its start: text a shell
    printed (``cat /proc/version`` at the prompt), as the boot splitter also reads it."""
    return kern[idx] is None and stamped_at is not None and stamped_at < idx


def kernel_start_index(lines: Lines, banners: Sequence[int]) -> int | None:
    """The kernel's first line, from the indices of its banner lines (``Linux version``/``Booting
    Linux``) in order: the first banner that is not typed text, back to the first of its run
    (:func:`_first_of_run`); None without one. The one rule the kernel and user-space parsers share."""
    stamped_at = first_stamped(lines)
    kern = lines.kernel
    for idx in banners:
        if not _typed(kern, idx, stamped_at):
            return _first_of_run(kern, idx)
    return None
