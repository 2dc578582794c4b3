"""The first lines of the programs that run before the kernel: boot ROMs and DDR blobs, TPL, SPL
and their vendor equivalents, runtime firmware (TF-A, OpenSBI, SeaBIOS), bootloaders proper.

One table, read by the parsers (which stage starts where, what it is called) and by the boot
splitter (a banner of an early stage, seen after a later stage ran, is a new boot). Each banner
has a *rank*, its place in the chain: 0 boot ROM / first stage, 1 TPL, 2 SPL or its equivalent,
3 runtime firmware, 4 bootloader proper; the kernel ranks :data:`RANK_KERNEL`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.lazyre import LazyPattern, lazy
from ..core.lines import Lines, looks_garbled
from ..core.model import Milestone, NamedTuple

RANK_KERNEL = 9

# A program handing over to the next one. A banner after it, before any kernel output, is the chain
# going on (U-Boot's "Starting kernel ..." starts OpenSBI on a TH1520; TI's R5 SPL says "Starting
# ATF on ARM64 core..." before TF-A starts the A53's own SPL), not a reset (timeline.boots); a
# kernel whose first printk line comes late after one was quiet, not cut (parsers.userspace).
HANDOVERS = ("Starting kernel", "Starting ATF", "Jumping to", "## Starting application")


def handed_over_before(lines: Lines, end: int) -> bool:
    """True when a hand-over line (:data:`HANDOVERS`; indexed as prefixes) comes before index ``end``."""
    texts = lines.text
    return any(i < end and texts[i].startswith(HANDOVERS) for i in lines.starting(*HANDOVERS))


def output_before(lines: Lines, end: int, at_least: int = 1) -> bool:
    """True when ``at_least`` lines before index ``end`` hold letters: something printed before
    (a program bootlens does not name, a bootloader the kernel's quiet console followed)."""
    n = 0
    texts = lines.text
    for i in range(min(end, len(texts))):
        t = texts[i]
        if any(c.isalpha() for c in t) and not looks_garbled(t):  # noise at a wrong baud rate is no program's
            n += 1
            if n >= at_least:
                return True
    return False

# Stage roles a banner opens, and the milestone each one is reported as.
FIRMWARE, TPL, VPL, SPL, BOOTLOADER = "firmware", "tpl", "vpl", "spl", "bootloader"
ROLE_MILESTONE = {FIRMWARE: Milestone.FIRMWARE_BANNER, TPL: Milestone.TPL_START, VPL: Milestone.VPL_START,
                  SPL: Milestone.SPL_START, BOOTLOADER: Milestone.UBOOT_START}

# Where a stage says it ended, when the next stage's start is on another clock or not printed
# (a Qualcomm SBL1 "SBL1, End" mark, U-Boot bootstage's "end_spl"). Not in model.Milestone:
# they only bound stages, and are reported as milestones under these names.
TPL_END = "tpl_end"
VPL_END = "vpl_end"
SPL_END = "spl_end"
FIRMWARE_END = "firmware_end"

# A duration-only event a stage prints about itself: Kind.BOOTLOADER, start None, named
# ``STAGE_TOTAL + role`` (a MediaTek preloader's step timers summed).
STAGE_TOTAL = "total of "


class Banner(NamedTuple):
    """One kind of first line: which program it is and which stage it opens (a NamedTuple, not a
    frozen dataclass: the class is built at every start-up, ~5x faster so)."""

    name: str  # "U-Boot SPL", "TF-A BL31", "coreboot romstage", ...
    role: str  # FIRMWARE, TPL, SPL or BOOTLOADER
    rank: int
    needle: str  # a substring every such line holds (the keyword index finds candidates by it)
    pattern: LazyPattern  # (compiled on first use) matched at the line's start; group "v": the version
    repeat_splits: bool = True  # a second one after a first of the same rank is a new boot
    vendor: str = ""  # how the program is called in facts and labels, when not ``name``


def _b(name: str, role: str, rank: int, needle: str, rx: str, repeat: bool = True) -> Banner:
    return Banner(name, role, rank, needle, lazy(r"\s*" + rx), repeat)


# A U-Boot build date: "(Jan 09 2023 - 10:00:00 +0000)"; vendor builds put anything before it.
_DATE = r"\s*\(\w{3} +\d{1,2} \d{4}"

BANNERS: tuple[Banner, ...] = (
    # rank 0: boot ROMs, DDR blobs, first stages
    _b("Rockchip DDR init", FIRMWARE, 0, "DDR Version", r"DDR Version (?P<v>V?[\d.]+)"),
    _b("Realtek boot ROM", FIRMWARE, 0, "Hello world, ", r"Hello world, (?P<v>\d{3,4}x)!"),
    _b("TF-A BL1", FIRMWARE, 0, "Booting Trusted Firmware", r"NOTICE: +Booting Trusted Firmware"),
    _b("TF-A BL1", FIRMWARE, 0, "BL1: v", r"NOTICE: +BL1: (?P<v>v\d\S*)", repeat=False),
    _b("coreboot bootblock", FIRMWARE, 0, "coreboot-",
       r"(?:\[\w+ *\] +)?coreboot-(?P<v>\S+) .*\bbootblock starting"),
    # rank 1: TPL and its equivalents
    _b("U-Boot TPL", TPL, 1, "U-Boot TPL", r"U-Boot TPL (?P<v>\S+)"),
    # U-Boot's VPL (verified boot: it picks the SPL to run) comes between TPL and SPL; TPL's rank,
    # so that TPL then VPL is one chain
    _b("U-Boot VPL", VPL, 1, "U-Boot VPL", r"U-Boot VPL (?P<v>\S+)"),
    # AMD's romstage resets the board itself early on (three starts in a row is one boot)
    _b("coreboot romstage", FIRMWARE, 1, "coreboot-",
       r"(?:\[\w+ *\] +)?coreboot-(?P<v>\S+) .*\bromstage starting", repeat=False),
    # rank 2: SPL and its equivalents
    _b("U-Boot SPL", SPL, 2, "U-Boot SPL", r"U-Boot SPL (?P<v>\d\S*)"),
    _b("SPL loader", SPL, 2, "SPL loader", r"SPL loader (?P<v>v[\d.]+)"),
    _b("TF-A BL2", SPL, 2, "BL2: v", r"NOTICE: +BL2: (?P<v>v\d\S*)"),
    _b("MediaTek preloader", SPL, 2, "#T#Preloader Start", r"#T#Preloader Start"),
    _b("Qualcomm SBL1", SPL, 2, "Format: Log Type", r"Format: Log Type - Time\(microsec\)"),
    _b("Allwinner boot0", SPL, 2, "BOOT0 is starting", r"(?:\[\d+\])?HELLO! BOOT0 is starting"),
    # the Raspberry Pi 4's boot EEPROM (with BOOT_UART=1): it brings up SDRAM and loads start4.elf
    _b("Raspberry Pi boot EEPROM", SPL, 2, "RPi: BOOTLOADER", r"RPi: BOOTLOADER release VERSION:(?P<v>\w+)"),
    _b("coreboot ramstage", FIRMWARE, 2, "coreboot-",
       r"(?:\[\w+ *\] +)?coreboot-(?P<v>\S+) .*\bramstage starting", repeat=False),
    # rank 3: runtime firmware loaded by the SPL, and PC firmware payloads
    _b("TF-A BL31", FIRMWARE, 3, "BL31: v", r"NOTICE: +BL31: (?P<v>v\d\S*)"),
    _b("OpenSBI", FIRMWARE, 3, "OpenSBI v", r"OpenSBI (?P<v>v\d\S*)"),
    # EDK2's ArmPlatformPkg PrePi (the UEFI firmware of Arm boards, TF-A's BL33; also PPC64LE ports):
    # "UEFI firmware (version X built at 17:14:47 on Feb 18 2026)", a vendor's name before it
    # ("Cix UEFI firmware ..."), the version empty in an untagged build
    _b("EDK2 UEFI", FIRMWARE, 3, "UEFI firmware (version", r"(?:\S+ )?UEFI firmware \(version (?P<v>\S*) *built at"),
    # SeaBIOS prints its banner again after relocating itself
    _b("SeaBIOS", FIRMWARE, 3, "SeaBIOS (version", r"SeaBIOS \(version (?P<v>[^)]*)\)", repeat=False),
    # rank 4: bootloaders proper
    _b("U-Boot", BOOTLOADER, 4, "U-Boot ",
       r"U-Boot (?!SPL |TPL |VPL )(?P<v>\d{4}\.\d{2}\S*|[^\s(]+(?=" + _DATE + r"))"),
    _b("barebox", BOOTLOADER, 4, "barebox ", r"barebox (?P<v>\d{4}\.\d{2}\.\d+\S*) #\d+"),
    # GRUB 2 says "Welcome" once per start, and heads its menu with its version at each redraw
    _b("GRUB", BOOTLOADER, 4, "Welcome to GRUB", r"Welcome to GRUB!"),
    _b("GRUB", BOOTLOADER, 4, "GNU GRUB", r"GNU GRUB +version (?P<v>\S+)", repeat=False),
    _b("iPXE", BOOTLOADER, 4, "iPXE initialising", r"iPXE initialising devices"),
    _b("iPXE", BOOTLOADER, 4, "Open Source Network Boot Firmware",
       r"iPXE (?P<v>\d\S*) -- Open Source Network Boot Firmware", repeat=False),
    _b("RedBoot", BOOTLOADER, 4, "RedBoot(tm)", r"RedBoot\(tm\) bootstrap and debug environment"),
    # Broadcom's Common Firmware Environment on MIPS routers and gateways (BCM63xx/68xx)
    _b("CFE", BOOTLOADER, 4, "CFE version", r"CFE version (?P<v>\d\S*) for BCM"),
    # the EEPROM's last line: the VideoCore firmware (start4.elf, start4x.elf, ...) loads the kernel
    _b("Raspberry Pi start.elf", BOOTLOADER, 4, "Starting start", r"Starting start\w*\.elf @"),
    _b("LK", BOOTLOADER, 4, "welcome to lk", r"(?:\[\s*\d+\]\s*)?welcome to lk"),
    _b("NVIDIA bootloader", BOOTLOADER, 4, "Bootloader AVP Init", r"Bootloader AVP Init"),
    _b("NVIDIA bootloader", BOOTLOADER, 4, "[bootloader] (built on", r"\[bootloader\] \(built on", repeat=False),
    # Samsung's sboot (phones, tablets: Exynos, Spreadtrum), on its own "[ s.mmm]" clock; its log
    # comes first in an Android last_kmsg (corpus more/55), a RAM buffer whose bits decay: the
    # word before "sboot" may read "ENt%r" ("### sboot mach_board_initialize" is its first line)
    _b("Samsung sboot", BOOTLOADER, 4, " sboot mach_board_init",
       r"(?:\[ *\d+\.\d{3}\] +)?###[^ ]{5} sboot mach_board_init"),
    _b("EcoNet bootbase", BOOTLOADER, 4, "bootbase",
       r"(?:EN75|TC3)\w* at .* version (?P<v>\S+) .*bootbase"),
)

NEEDLES: tuple[str, ...] = tuple(dict.fromkeys(b.needle for b in BANNERS))
_BY_NEEDLE: dict[str, tuple[Banner, ...]] = {
    n: tuple(b for b in BANNERS if b.needle == n) for n in NEEDLES}


def banner_of(text: str) -> tuple[Banner, re.Match[str]] | None:
    """The banner this line is, with its match, or None."""
    for needle, banners in _BY_NEEDLE.items():
        if needle in text:
            for b in banners:
                m = b.pattern.match(text)
                if m is not None:
                    return b, m
    return None


def untimed_grep(lines: Lines, needles: tuple[str, ...]) -> list[int]:
    """Ascending indices of the lines without a printk time that hold any of the needles.

    Firmware and bootloaders print before the kernel: on a printk-stamped log of a million
    lines the few unstamped ones are scanned directly (the keyword index would pass over every
    line once per needle); on a console without printk times the index is the faster way.
    """
    kern = lines.kernel
    n_untimed = kern.count(None)  # C speed
    if n_untimed == 0:
        return []
    if n_untimed * 8 < len(kern):
        texts = lines.text
        out, i = [], -1
        for _ in range(n_untimed):
            i = kern.index(None, i + 1)  # a C scan to the next unstamped line
            if any(x in texts[i] for x in needles):
                out.append(i)
        return out
    return [i for i in lines.grep(*needles) if kern[i] is None]


def find_banners(lines: Lines) -> list[tuple[int, Banner, re.Match[str]]]:
    """(index, banner, match) of every banner line, in order. Lines with a printk time are the
    kernel's (a banner quoted in a kernel message is not one), and so is a banner amid a kernel's
    lines whose clock goes straight on after it (:func:`kernel_goes_on`)."""
    out = []
    texts, kern = lines.text, lines.kernel
    for i in untimed_grep(lines, NEEDLES):
        found = banner_of(texts[i])
        if found is not None and not kernel_goes_on(kern, i):
            out.append((i, found[0], found[1]))
    return out


GOES_ON_LINES = 8  # a banner this close before the kernel's next stamped line is no start...
GOES_ON_NS = 10_000_000  # ...when that line is stamped no earlier than the kernel's last (less 10 ms)


def kernel_goes_on(kern: Sequence[int | None], i: int, look: int | None = GOES_ON_LINES,
                   slack: int = GOES_ON_NS) -> bool:
    """True when line i sits among a kernel's lines whose printk clock goes straight on after it:
    the kernel's next stamped line within :data:`GOES_ON_LINES` lines, stamped no earlier than its
    last before i (less :data:`GOES_ON_NS`). A bootloader's text inside a last_kmsg's ring buffer
    where it overlaps (more/55: the next sboot run's first lines between two copies of the kernel's
    last lines), or pasted into a log: not that program starting. After a real reset the kernel's
    next line comes after the bootloader's whole output, its clock from 0. ``look`` None: the next
    stamped line anywhere after i; ``slack`` 0: not earlier at all."""
    stop = len(kern) if look is None else min(i + 1 + look, len(kern))
    after = next((kern[j] for j in range(i + 1, stop) if kern[j] is not None), None)
    if after is None:
        return False
    before = next((kern[j] for j in range(i - 1, -1, -1) if kern[j] is not None), None)
    return before is not None and after >= before - slack


def milestone_of(b: Banner) -> str:
    """The milestone a banner line is reported as: its role's, except that a bootloader proper
    other than U-Boot (barebox, GRUB, RedBoot, LK, ...) is ``bootloader_start``, not ``uboot_start``."""
    if b.role == BOOTLOADER and b.name != "U-Boot":
        return Milestone.BOOTLOADER_START
    return ROLE_MILESTONE[b.role]


def version(m: re.Match[str]) -> str | None:
    """The version a banner match carries, if any."""
    v = m.groupdict().get("v")
    return v.strip() if v else None


def bootloader_before(lines: Lines, end: int) -> bool:
    """True when a bootloader's banner or hand-over line comes before index ``end``."""
    return handed_over_before(lines, end) or any(i < end for i, _, _ in find_banners(lines))


QUIET_FIRST_NS = 60_000_000_000  # a quiet kernel's first console line comes within a minute of its start


def quiet_kernel(lines: Lines, first_printk: int) -> bool:
    """True when the lines before the boot's first printk line show it did not start mid-boot,
    its kernel was quiet (a loglevel, ``quiet``, a console enabled late): a bootloader's banner or
    hand-over before it, or three lines of other output and a first printk time within a minute
    (a cut ring buffer, a last_kmsg's tail at 4313 s, has at most a header before it)."""
    if bootloader_before(lines, first_printk):
        return True
    k = lines.kernel[first_printk] if first_printk < len(lines.kernel) else None
    return k is not None and k < QUIET_FIRST_NS and output_before(lines, first_printk, 3)
