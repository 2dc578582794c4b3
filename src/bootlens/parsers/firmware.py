"""Firmware and bootloaders other than U-Boot: boot ROMs and DDR blobs, TF-A, OpenSBI, coreboot,
SeaBIOS, GRUB, barebox, iPXE, RedBoot, LK, vendor first stages (MediaTek preloader, Qualcomm
SBL1, Allwinner boot0, NVIDIA's bootloader, Realtek's boot ROM, EcoNet's bootbase).

Banners (which program starts where) come from :mod:`.banners`, shared with the boot splitter.
This module adds what each program says about its own time, all read as the bootloader clock
(``Clock.BOOTLOADER``, zero at reset), so that stages are measured even on a console without
host times:

- Qualcomm SBL1: ``B -    123456 - SBL1, Start`` (microseconds since power-on reset, as the
  log's own header says) and ``D - 8528 - step`` (a step's duration);
- LK (little kernel): ``[8621] booting linux @ 0x40080000`` (milliseconds of its timer: on
  MediaTek the free-running timer from reset, the first LK lines already read seconds; on
  Qualcomm LK's own, ``[0] welcome to lk``, which only gives how long LK ran);
- Allwinner boot0: ``[530]Jump to second Boot.`` (milliseconds since reset);
- NVIDIA's bootloader: ``Bootloader Start at:1257 ms``, ``Jumping to kernel at:2180 ms``;
- Rockchip's SPL: ``Total: 249.82 ms`` (its timer at the jump out of SPL);
- MediaTek's preloader: ``#T#mem_init=435`` (each step's own milliseconds; their sum is how long
  the preloader ran, with no position on any clock);
- coreboot's boot states (ramstage): ``BS: BS_DEV_INIT run times (exec / console): 823 / 1031 ms``
  (coreboot 4.12 on: a phase's time spent running and printing, lib/hardwaremain.c) and
  ``BS: BS_DEV_INIT times (us): entry 15122 run 875144 exit 893`` (before: each phase, printing
  included); ``BS: romstage times (exec / console): total (unknown) / 570 ms`` gives only the time
  a stage spent printing. All are durations of coreboot's monotonic timer, with no position on it:
  read as coreboot's own steps (``Kind.BOOTLOADER``, start None);
- the Raspberry Pi's VideoCore firmware (start4.elf, ``uart_2ndstage=1``):
  ``MESS:00:00:08.727304:0: Kernel relocated to 0x200000``, its system timer since reset; its
  last stamp before the kernel's first line is the handoff to the kernel;
- an EDK2 UEFI firmware's progress codes, as a vendor's post-code library prints them (CIX's
  CixPostCodeLib: ``[13.641] [UEFI] E3C1 XspiInitDxeStart``, its timer in ms since the bootloader
  phase began, not since reset): each ``...Start``/``...End`` pair is how long that driver ran,
  the first and last marks how long the firmware ran between them (no position on any clock).
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.lazyre import lazy
from ..core.lines import Lines
from ..core.numbers import Tally, in_range, to_int
from ..core.model import NS_PER_MS, NS_PER_US, Clock, Event, Fact, Kind, Milestone, ParseResult, Stamp
from . import REGISTRY
from .banners import (
    BOOTLOADER,
    FIRMWARE,
    FIRMWARE_END,
    NEEDLES,
    SPL,
    SPL_END,
    STAGE_TOTAL,
    find_banners,
    milestone_of,
    untimed_grep,
    version,
)
from .base import Parser
from ..core.options import ParseOptions

_SBL = lazy(r"([BD]) -\s+(\d+) - (.*?)\s*$")
_LK = lazy(r"\[(\d{1,7})\] ?")
_LK_OWN_CLOCK_MS = 100  # an LK whose first line reads less started its timer itself
_BOOT0 = lazy(r"\[(\d{1,7})\](?=\S)")
_NVIDIA = lazy(r"(Bootloader Start|Jumping to kernel) at: ?(\d+) ms")
_RK_TOTAL = lazy(r"Total: (\d+)(?:\.(\d+))? ms")
_MTK_STEP = lazy(r"#T#(.+?)=(\d+)\s*$")
_GRUB_TIMEOUT = lazy(r"\s*The highlighted entry will be (?:booted|executed) automatically in (\d+)\s*s")
_GRUB_ENTRY = lazy(r"\s*Booting [`'](.*)'")
_GRUB_LOAD = lazy(r"\s*Loading (?:Linux \S+|initial ramdisk) \.\.\.")
_REDBOOT_DELAY = lazy(r"== Executing boot script in ([\d.]+) seconds")
_REDBOOT_VERSION = lazy(r".*\bversion (\S+)")
# Not read: the "00:00:28 Overall: ..." stamps of a Microchip switch's stage2-loader (corpus 05,
# run by RedBoot's kernel as init). They are the wall clock (HH:MM:SS, 1 s resolution), which
# reads from the epoch because no RTC set it yet: roughly seconds since the kernel started, but no
# line ties that clock to another one (the kernel prints nothing at loglevel=4, no host times), so
# placing them would be a guess. Its one precise figure ("read in 11689 ms") is read as a load.
_SEABIOS_BOOT = lazy(r"Booting from (?:ROM|Hard Disk|Floppy|CD-Rom)\.\.\.")
_BAREBOX_START = lazy(r"Starting kernel in (?:non-)?secure mode")
_CFE_START = lazy(r"Starting program at 0x[0-9a-fA-F]+\s*$")  # CFE's jump to the loaded image
_COREBOOT_JUMP = lazy(r"(?:\[\w+ *\] +)?Jumping to boot code at (\S+)")
_OPENSBI_PLATFORM = lazy(r"Platform Name\s*: (.*?)\s*$")
# coreboot boot-state timings (see the module's docstring); the prefix ("[DEBUG]  ") varies
_CB_STATE = lazy(r"\s*(?:\[\w+ *\] +)?BS: (\w+) (?:(entry|run|exit) )?times \(exec / console\): "
                 r"(?:total \(unknown\)|(\d+)) / (\d+) ms\s*$")
_CB_STATE_US = lazy(r"\s*(?:\[\w+ *\] +)?BS: (\w+) times \(us\): entry (\d+) run (\d+) exit (\d+)\s*$")
_MESS = lazy(r"MESS:(\d\d):(\d\d):(\d\d)\.(\d{6}):\d+:")
_RPI_FIRMWARE = lazy(r"Firmware: ([0-9a-f]{40}) (.*?)\s*$")
_UEFI_CODE = lazy(r"\[(\d{1,5})\.(\d{3})\] \[UEFI\] ([0-9A-Fa-f]{1,8})(?: (\w+))?\s*$")

_KEYWORDS = NEEDLES + ("SBL1", "PBL, ", " - ", " at:", "booting linux @", "Total: ", "#T#", "BOOT0 is starting",
                       "Jump to second Boot", "automatically in", "Booting ", "Loading ", "Executing boot script",
                       "RedBoot> exec", "Starting kernel in", "Jumping to boot code", "Platform Name", "MESS:",
                       "Starting program at", "Firmware: ", "] [UEFI] ", "BS: ")
_SNIFF = ("SBL1", "booting linux @", "Jumping to kernel at", "#T#", "Jumping to boot code", "MESS:", "] [UEFI] ")
_Select = Callable[..., list[int]]


def _host(lines: Lines, i: int) -> Stamp | None:
    h = lines.host[i]
    return Stamp(Clock.HOST, h) if h is not None else None


@REGISTRY.register
class FirmwareParser(Parser):
    """Firmware and non-U-Boot bootloaders: banners, handoffs and their own timers."""

    name = "firmware"
    description = ("boot ROMs, TF-A, OpenSBI, coreboot, SeaBIOS, GRUB, barebox, iPXE, RedBoot, CFE, LK, MediaTek "
                   "preloader, Qualcomm SBL1, Allwinner boot0, NVIDIA bootloader")

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        return min(1.0, len(untimed_grep(lines, NEEDLES + _SNIFF)[:2]) / 2)

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        names: set[str] = set()
        found = find_banners(lines)
        for n, (i, b, m) in enumerate(found):
            names.add(b.name)
            if b.name.startswith("U-Boot"):
                continue  # U-Boot's own parser reads those
            no = lines.no(i)
            if version(m) is None and n + 1 < len(found) and found[n + 1][1].name == b.name \
                    and found[n + 1][0] - i <= 5:
                # "Booting Trusted Firmware" then "BL1: v2.9": one program, the second says more
                events.append(Event(Kind.MILESTONE, milestone_of(b), _host(lines, i), None, no))
                continue
            events.append(Event(Kind.MILESTONE, milestone_of(b), _host(lines, i), None, no))
            v = version(m)
            if b.name == "RedBoot" and i + 1 < len(lines):
                vm = _REDBOOT_VERSION.match(lines.text[i + 1])
                v = vm[1] if vm else None
            if b.role == FIRMWARE:
                facts.append(Fact("firmware", f"{b.name} {v}" if v else b.name, no))
            else:
                facts.append(Fact(b.role, b.name, no))
                if v:
                    facts.append(Fact(f"{b.role}_version", v, no))
        # one pass for the unstamped lines holding any keyword; each reader picks its own
        texts = lines.text
        cand = untimed_grep(lines, _KEYWORDS)

        def sel(*needles: str) -> list[int]:
            return [i for i in cand if any(x in texts[i] for x in needles)]

        tally = Tally("firmware")
        self._clocks(lines, sel, names, events, facts, tally)
        self._handoffs(lines, sel, events, facts)
        events.sort(key=lambda e: e.line_no)
        facts.sort(key=lambda f: f.line_no)
        return ParseResult(tuple(events), tuple(facts), tally.warnings())

    @staticmethod
    def _clocks(lines: Lines, sel: _Select, names: set[str], events: list[Event], facts: list[Fact],
                tally: Tally) -> None:
        """The stamps vendor first stages and bootloaders print with their own timers; ``tally``
        counts the ones out of range, which are not used."""
        texts = lines.text
        untimed = sel("SBL1", "PBL, ", "#T#", " at:", "Total: ")
        if "Qualcomm SBL1" in names or any("SBL1, Start" in texts[i] for i in untimed):
            FirmwareParser._sbl(lines, sel, events, tally)
        for i in untimed:
            t = texts[i]
            if (m := _NVIDIA.search(t)) is not None:
                what = Milestone.BOOTLOADER_START if m[1] == "Bootloader Start" else Milestone.STARTING_KERNEL
                if (at := tally.ns(m[2], NS_PER_MS, line_no=lines.no(i))) is not None:
                    events.append(Event(Kind.MILESTONE, what, Stamp(Clock.BOOTLOADER, at), None, lines.no(i)))
            elif "Total: " in t and "U-Boot SPL" in names and (m := _RK_TOTAL.match(t)) is not None:
                # Rockchip's SPL prints its timer as it jumps out: the end of SPL, from reset
                ms = tally.ns(m[1], NS_PER_MS, line_no=lines.no(i))
                frac = to_int((m[2] + "000000")[:6], NS_PER_MS) if m[2] else 0
                if ms is not None and frac is not None and in_range(ms + frac):
                    events.append(Event(Kind.MILESTONE, SPL_END, Stamp(Clock.BOOTLOADER, ms + frac), None,
                                        lines.no(i)))
        steps = [(i, m) for i in untimed if (m := _MTK_STEP.match(texts[i])) is not None]
        if steps:
            each = [tally.ns(m[2], NS_PER_MS, line_no=lines.no(i)) for i, m in steps]
            total = sum(v for v in each if v is not None)
            if in_range(total):
                events.append(Event(Kind.BOOTLOADER, STAGE_TOTAL + SPL, None, total, lines.no(steps[0][0]),
                                    lines.no(steps[-1][0])))
            facts.append(Fact("preloader_steps", str(len(steps)), lines.no(steps[0][0])))
        FirmwareParser._bracketed(lines, sel, names, events, facts)
        FirmwareParser._videocore(lines, sel, names, events, facts)
        FirmwareParser._uefi_codes(lines, sel, events, facts)
        FirmwareParser._coreboot_states(lines, sel, events, tally)

    @staticmethod
    def _coreboot_states(lines: Lines, sel: _Select, events: list[Event], tally: Tally) -> None:
        """coreboot's own durations of its boot states (one event per phase it printed, named
        ``coreboot BS_DEV_INIT run``) and the time each stage spent printing to its console."""
        texts = lines.text
        for i in sel("BS: "):
            t, no = texts[i], lines.no(i)
            if (m := _CB_STATE.match(t)) is not None:
                console = tally.ns(m[4], NS_PER_MS, field="coreboot time", line_no=no)
                if console is None:
                    continue
                if m[3] is None:  # a stage's summary: only its console time is known
                    events.append(Event(Kind.BOOTLOADER, f"coreboot {m[1]} console output", None, console, no))
                    continue
                run = tally.ns(m[3], NS_PER_MS, field="coreboot time", line_no=no)
                if run is not None and in_range(run + console):
                    # the phase's whole time: running plus printing (what a console at this log
                    # level costs is the second figure)
                    events.append(Event(Kind.BOOTLOADER, f"coreboot {m[1]} {m[2] or 'run'} (console {m[4]} ms)",
                                        None, run + console, no))
            elif (m := _CB_STATE_US.match(t)) is not None:
                for phase, us in zip(("entry", "run", "exit"), m.groups()[1:]):
                    d = tally.ns(us, NS_PER_US, field="coreboot time", line_no=no)
                    if d:  # coreboot prints the zeros too; a phase that took no time is no step
                        events.append(Event(Kind.BOOTLOADER, f"coreboot {m[1]} {phase}", None, d, no))

    @staticmethod
    def _sbl(lines: Lines, sel: _Select, events: list[Event], tally: Tally) -> None:
        """Qualcomm SBL1's log: ``B`` lines are microseconds since power-on reset, ``D`` lines a
        step's duration (its start is the ``B`` line that named it)."""
        texts = lines.text
        marks = {"SBL1, Start": Milestone.SPL_START, "SBL1, End": SPL_END,
                 "PBL, Start": Milestone.FIRMWARE_BANNER, "PBL, End": FIRMWARE_END}
        started: dict[str, int] = {}
        for i in sel(" - "):
            if (m := _SBL.match(texts[i])) is None:
                continue
            ns, msg, no = tally.ns(m[2], NS_PER_US, line_no=lines.no(i)), m[3], lines.no(i)
            if ns is None:
                continue
            if m[1] == "B":
                if (what := marks.get(msg)) is not None:
                    events.append(Event(Kind.MILESTONE, what, Stamp(Clock.BOOTLOADER, ns), None, no))
                if msg.endswith(", Start"):
                    started[msg[:-7]] = ns
            else:
                step = msg[:-7] if msg.endswith(", Delta") else msg.split(" - ")[0]
                at = started.get(step)
                events.append(Event(Kind.BOOTLOADER, f"SBL1: {step}",
                                    None if at is None else Stamp(Clock.BOOTLOADER, at), ns, no))

    @staticmethod
    def _bracketed(lines: Lines, sel: _Select, names: set[str], events: list[Event], facts: list[Fact]
                   ) -> None:
        """LK's ``[ms] message`` and Allwinner boot0's ``[ms]message`` lines."""
        texts, kern = lines.text, lines.kernel
        if "Allwinner boot0" in names:
            for i in sel("BOOT0 is starting"):
                if (m := _BOOT0.match(texts[i])) is not None:
                    events.append(Event(Kind.MILESTONE, Milestone.SPL_START,
                                        Stamp(Clock.BOOTLOADER, int(m[1]) * NS_PER_MS), None, lines.no(i)))
            for i in sel("Jump to second Boot"):
                if (m := _BOOT0.match(texts[i])) is not None:
                    events.append(Event(Kind.MILESTONE, SPL_END, Stamp(Clock.BOOTLOADER, int(m[1]) * NS_PER_MS),
                                        None, lines.no(i)))
        handoff = [i for i in sel("booting linux @") if _LK.match(texts[i])]
        welcome = [i for i in sel("welcome to lk") if _LK.match(texts[i])]
        if not handoff and not welcome:
            return
        if "LK" not in names:
            first = next(i for i, t in enumerate(texts) if kern[i] is None and _LK.match(t) is not None)
            facts.append(Fact(BOOTLOADER, "LK", lines.no(first)))
        ms = {i: int(m[1]) for i in welcome[:1] + handoff[-1:] if (m := _LK.match(texts[i])) is not None}
        if welcome and ms[welcome[0]] < _LK_OWN_CLOCK_MS:
            # Qualcomm's LK starts its timer itself ("[0] welcome to lk"): its stamps say how
            # long LK ran, not when on the clock from reset
            if handoff:
                events.append(Event(Kind.BOOTLOADER, STAGE_TOTAL + BOOTLOADER, None,
                                    (ms[handoff[-1]] - ms[welcome[0]]) * NS_PER_MS, lines.no(welcome[0]),
                                    lines.no(handoff[-1])))
            return
        # MediaTek's LK reads the free-running timer the boot ROM started: time since reset
        for i, what in [(i, Milestone.BOOTLOADER_START) for i in welcome[:1]] + [
                (i, Milestone.STARTING_KERNEL) for i in handoff[-1:]]:
            events.append(Event(Kind.MILESTONE, what, Stamp(Clock.BOOTLOADER, ms[i] * NS_PER_MS), None,
                                lines.no(i)))

    @staticmethod
    def _videocore(lines: Lines, sel: _Select, names: set[str], events: list[Event], facts: list[Fact]
                   ) -> None:
        """The Raspberry Pi firmware's ``MESS:HH:MM:SS.uuuuuu:N:`` lines (its system timer, which
        counts from reset: the boot EEPROM's own lines come before the first of them). Where a run
        of them ends at the kernel's first line, its last stamp is the handoff. The kernel's first
        line often still carries the prefix (``MESS:00:00:08.746506:0:[    0.000000] Booting
        Linux``), but the framing peels it off with the rest of what comes before the printk time;
        the firmware's last line of its own is a few milliseconds earlier (2 ms on a Pi 4)."""
        texts, kern, n = lines.text, lines.kernel, len(lines)
        mess = sel("MESS:")
        if not mess:
            return
        if "Raspberry Pi start.elf" not in names:
            facts.append(Fact(BOOTLOADER, "Raspberry Pi start.elf", lines.no(mess[0])))
        for i in sel("Firmware: "):
            if (m := _RPI_FIRMWARE.match(texts[i])) is not None:
                facts.append(Fact("bootloader_version", f"{m[1][:12]} ({m[2]})", lines.no(i)))
        for i in mess:
            if i + 1 >= n or kern[i + 1] is None:
                continue  # not the run's last line before the kernel
            if (m := _MESS.match(texts[i])) is None:
                continue
            h, mi, s, us = (int(x) for x in m.groups())  # the pattern bounds them: 2 and 6 digits
            ns = ((h * 60 + mi) * 60 + s) * 1_000_000_000 + us * NS_PER_US
            events.append(Event(Kind.MILESTONE, Milestone.STARTING_KERNEL, Stamp(Clock.BOOTLOADER, ns), None,
                                lines.no(i)))

    @staticmethod
    def _uefi_codes(lines: Lines, sel: _Select, events: list[Event], facts: list[Fact]) -> None:
        """EDK2 progress codes with the firmware's own stamps (``[ss.mmm] [UEFI] E115 PlatformDxeStart``):
        durations only, since the timer's zero is the phase's start, not a point bootlens can place.
        A mark cut short on the console (``[19.044] [UEFI] E7``) names nothing and is left out."""
        texts = lines.text
        marks: list[tuple[int, int, str]] = []  # (index, ms, name)
        for i in sel("] [UEFI] "):
            if (m := _UEFI_CODE.match(texts[i])) is not None:
                marks.append((i, int(m[1]) * 1000 + int(m[2]), m[4] or ""))
        if len(marks) < 2:
            return
        started: dict[str, tuple[int, int]] = {}
        for i, ms, name in marks:
            if name.endswith("Start"):
                started[name[:-5]] = (i, ms)
            elif name.endswith("End") and (a := started.pop(name[:-3], None)) is not None and ms >= a[1]:
                events.append(Event(Kind.BOOTLOADER, f"UEFI: {name[:-3]}", None, (ms - a[1]) * NS_PER_MS,
                                    lines.no(a[0]), lines.no(i)))
        (i0, ms0, _), (i1, ms1, _) = marks[0], marks[-1]
        if ms1 >= ms0:
            events.append(Event(Kind.BOOTLOADER, STAGE_TOTAL + FIRMWARE, None, (ms1 - ms0) * NS_PER_MS,
                                lines.no(i0), lines.no(i1)))
        facts.append(Fact("uefi_progress_codes", str(len(marks)), lines.no(i0)))

    @staticmethod
    def _handoffs(lines: Lines, sel: _Select, events: list[Event], facts: list[Fact]) -> None:
        """Where each program hands over, and the waits they announce."""
        texts = lines.text
        n = len(lines)
        seabios = [i for i in sel("Booting from ") if _SEABIOS_BOOT.match(texts[i])]
        cfe = bool(sel("CFE version"))
        # earlier devices failed ("Boot failed: ..."): the last one tried is where it went on
        starting = seabios[-1:]
        grub_at = None
        for i in sel("automatically in", "Booting ", "Loading ", "Executing boot script", "RedBoot> exec",
                     "Starting kernel in", "Jumping to boot code", "Platform Name", "Starting program at"):
            t, no = texts[i], lines.no(i)
            if (m := _GRUB_TIMEOUT.match(t)) is not None:
                st = _host(lines, i)
                events.append(Event(Kind.MILESTONE, Milestone.AUTOBOOT, st, None, no))
                events.append(Event(Kind.BOOTLOADER, f"GRUB menu timeout ({m[1]} s)", st, None, no))
                facts.append(Fact("boot_menu_timeout", m[1], no))
            elif (m := _GRUB_ENTRY.match(t)) is not None:
                events.append(Event(Kind.BOOTLOADER, f"GRUB entry: {m[1]}", _host(lines, i), None, no))
                facts.append(Fact("boot_entry", m[1], no))
                grub_at = i
            elif grub_at is not None and _GRUB_LOAD.match(t):
                grub_at = i  # GRUB jumps after its last load
            elif (m := _REDBOOT_DELAY.match(t)) is not None:
                st = _host(lines, i)
                events.append(Event(Kind.MILESTONE, Milestone.AUTOBOOT, st, None, no))
                events.append(Event(Kind.BOOTLOADER, f"RedBoot script delay ({m[1]} s)", st, None, no))
                facts.append(Fact("boot_script_delay", m[1], no))
            elif t.startswith("RedBoot> exec") or _BAREBOX_START.match(t) or (cfe and _CFE_START.match(t)):
                starting.append(i)
            elif (m := _COREBOOT_JUMP.match(t)) is not None:
                events.append(Event(Kind.MILESTONE, FIRMWARE_END, _host(lines, i), None, no))
                facts.append(Fact("payload_entry", m[1].split("(")[0], no))
            elif (m := _OPENSBI_PLATFORM.match(t)) is not None:
                facts.append(Fact("firmware_platform", m[1], no))
        if grub_at is not None:
            starting.append(grub_at)
        for i in sorted(set(starting)):
            if i < n:
                events.append(Event(Kind.MILESTONE, Milestone.STARTING_KERNEL, _host(lines, i), None, lines.no(i)))
