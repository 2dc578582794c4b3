"""User space as the console shows it: the first line init or its children printed, the login
prompt, and which init system it was.

Kernels before 4.x and most vendor BSP kernels print no ``Run /init as init process``; user space
is then seen through what it prints itself, or what the kernel prints on its behalf:

    systemd[1]: systemd 229 running in system mode. (+PAM ...)     systemd (through /dev/kmsg)
    Welcome to Arch Linux ARM!                                      systemd, on the console
    [  OK  ] Started Journal Service.                               systemd status lines
    INIT: version 2.88 booting                                      sysvinit
    init started: BusyBox v1.31.1 (2020-03-04 10:11:12 UTC)         BusyBox init
    Starting logging: OK                                            Buildroot init scripts
    Loading, please wait...                                         initramfs-tools
    init: Console is alive                                          OpenWrt procd (through kmsg)
    init: init first stage started!                                 Android init (through kmsg)
    udevd[183]: starting version 182                                udev (through kmsg)
    random: init: uninitialized urandom read (4 bytes read, ...)    the kernel naming the reader
    EXT4-fs (mmcblk0p1): re-mounted. Opts: (null)                   a remount user space asked for
    type=1403 audit(...): policy loaded                             SELinux policy loaded by init

A line without a printk timestamp printed after init was exec'd, on a console whose kernel
lines are stamped, is user space's own output too (an init script, an ASCII-art banner); it is
used when nothing above came first; so is the unstamped output after a quiet kernel's lines (no
exec seen: a console quiet from the start after a bootloader's hand-over, or from the early
parameters on), the FIQ debugger's own prompt excepted. On a console without printk times, the
first line after the exec not shaped as a kernel message (``usb 1-1: ...``, an indented
continuation) is user space's. In a journal each entry says who logged it: user space's first line
is the first entry after the kernel's that the kernel did not log. Lines are only taken after the
kernel started (a bootloader's "Welcome to GRUB!" is not user space).
"""

from __future__ import annotations

from itertools import islice

from ..core.lazyre import LazyPattern, lazy
from ..core.lines import Lines, estimate_stamp, looks_garbled
from ..core.model import CUT_START_NS, Clock, Event, Fact, Kind, Milestone, ParseResult, Stamp
from . import REGISTRY
from .banners import HANDOVERS, bootloader_before, quiet_kernel
from .kernel import UNSTAMPED_KERNEL, first_stamped, kernel_shaped, kernel_start_index, last_free, went_quiet
from .base import Parser
from ..core.options import ParseOptions

# Android logs user space through the kernel's ring buffer with a wall-clock prefix of its own
# in last_kmsg ("[01-03 09:43:51.503] init: ..."); the evidence follows it.
_ANDROID_WALL = r"(?:\[\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] )?"

# (needle, regex, init system it reveals or None). Order matters only for the init-system fact.
# The needle is a plain string every match holds: a line without it is not tried against the
# regex, which is compiled only when some line holds it (start-up: most logs show two or three
# of these, and compiling all 16 cost ~3 ms here).
_EVIDENCE: tuple[tuple[str, LazyPattern, str | None], ...] = tuple(
    (needle, lazy(_ANDROID_WALL + rx), init) for needle, rx, init in (
        ("systemd[1]: ", r"systemd\[1\]: ", "systemd"),
        # systemd's "Welcome to Debian GNU/Linux 12 (bookworm)!"; then an /etc/issue, a vendor
        # banner ("Welcome to GRUB!" is skipped below)
        ("Welcome to ", r"Welcome to \S.*!\s*$", "systemd"),
        ("Welcome to ", r"Welcome to \S", None),
        ("OK", r"\[ *OK *\] (?:Started|Reached|Finished|Mounted|Listening|Created) ", "systemd"),
        ("INIT: version ", r"INIT: version \d", "sysvinit"),
        ("init started: ", r"init started: +BusyBox", "busybox"),
        ("init: ", r"init: (?:Console is alive|- preinit -|- watchdog -)", "procd"),
        ("procd: ", r"procd: ", "procd"),
        ("init: ", r"init: (?:init first stage started|init second stage started|Starting service|"
         r"/init\.rc|Loading SELinux|Running restorecon)", "android"),
        # Android and procd init log through kmsg; the kernel never says "init: "
        ("init: ", r"init: \S", None),
        ("Loading, please wait...", r"Loading, please wait\.\.\.", "initramfs-tools"),
        ("Starting ", r"Starting (?:logging|syslogd|klogd|mdev|udev|network|dropbear|sshd)\b.*?: (?:OK|FAIL)",
         "buildroot"),
        ("udevd[", r"(?:systemd-)?udevd\[\d+\]: ", None),
        ("random: ", r"random: (?!crng|fast init|nonblocking)[\w./-]+:? (?:uninitialized )?urandom read", None),
        ("re-mounted", r"EXT[234]-fs \([^)]*\): re-mounted", None),
        ("policy loaded", r"type=1403 audit\([^)]*\): policy loaded", None),
    )
)
# An init script's status line (Buildroot's and BusyBox's /etc/init.d/S*: "Starting bluetoothd: OK",
# "Running sysctl: OK", "Saving random seed: SKIP ..."): user space's, never the kernel's.
_SCRIPT_STATUS = lazy(r"(?:Starting|Stopping|Running|Saving|Loading|Populating|Initializing|Mounting|Setting up|"
                      r"Configuring|Checking|Cleaning|Creating|Seeding) [^:\[\]]{1,60}: (?:OK|FAIL(?:ED)?|done|SKIP)\b")
# The first two characters of every pattern above ("[0"/"[1": Android's wall-clock prefix), so
# that most lines cost one set lookup.
_FIRST = frozenset({"sy", "We", "[ ", "IN", "in", "pr", "Lo", "St", "ud", "ra", "EX", "ty", "[0", "[1"})
_INIT_LOOKAHEAD = 5000  # lines after the first evidence searched for the init system's name
# "hostname login:" (getty, BusyBox login), and BusyBox/procd's "Please press Enter".
_LOGIN = lazy(r"(?:[\w().-]+ )?login: ?(?:$|\S)")
_PRESS_ENTER = "Please press Enter to activate this console"
# The kernel's first words (_start_index) and what it prints as init is exec'd (_exec_index).
_KERNEL_START = ("Linux version", "Booting Linux")
_EXEC = ("Run ", "Freeing", "Warning: unable to open an initial console")


def _start_index(lines: Lines) -> tuple[int, bool]:
    """Index of the kernel's first line (``Linux version``/``Booting Linux``), or of the first
    stamped line: user space cannot come before it; and whether the kernel's start was seen."""
    texts = lines.text
    banners = [i for i in lines.starting(*_KERNEL_START) if texts[i].startswith(_KERNEL_START)]
    at = kernel_start_index(lines, banners)
    if at is not None:
        return at, True
    return first_stamped(lines) or 0, False


def _exec_index(lines: Lines, start: int) -> int | None:
    """Index of the line after which init runs: ``Run /init``, else the last of the ``Freeing
    ...`` lines of init memory in a row (or the initial-console warning); None when the log shows none."""
    texts = lines.text
    found: list[int] = []
    for i in lines.starting(*_EXEC):
        if i < start:
            continue
        t = texts[i]
        if t.startswith("Run ") and " as init process" in t:
            return i
        if t.startswith(("Freeing unused kernel", "Freeing init memory", "Warning: unable to open")):
            found.append(i)
    # the last of the frees printed in a row, as the kernel parser's INITMEM_FREED (one rule)
    return last_free(lines.kernel, found) if found else None


def _mostly_stamped(lines: Lines, start: int, end: int) -> bool:
    """True when the kernel lines of [start, end) carry printk timestamps (so an unstamped line
    after init ran is not the kernel's)."""
    part = lines.kernel[start:end]
    return bool(part) and part.count(None) * 4 < len(part)


def _ahead_of_exec(lines: Lines, start: int, exec_i: int | None) -> tuple[int, int] | None:
    """(the first, the exec line) of two or more init-script status lines without a printk time among the kernel's
    stamped lines before its exec line ``exec_i`` (a console where the kernel's output lags behind
    user space's: c/130's ttyFIQ0), else None. One such line could be a stray; on an ordinary console
    user space prints nothing before the kernel runs init."""
    if exec_i is None:
        return None
    kern, texts = lines.kernel, lines.text
    found = [i for i in lines.grep(": OK", ": FAIL", ": done", ": SKIP")
             if start < i < exec_i and kern[i] is None and _SCRIPT_STATUS.match(texts[i]) is not None]
    return (found[0], exec_i) if len(found) >= 2 else None


def _user_shaped(text: str) -> bool:
    """A line of a console without printk times that reads as user space's output: words, not a
    kernel message's shape (:func:`~bootlens.parsers.kernel.kernel_shaped`), not noise."""
    return any(c.isalpha() for c in text) and not kernel_shaped(text) and not looks_garbled(text)


def _stamp(lines: Lines, i: int) -> Stamp | None:
    """Time of line i; console text a kernel line was glued after was printed before that line's
    timestamp, after the previous stamped line: an estimate bounded by both."""
    st = estimate_stamp(lines, i)
    if i not in lines.glued or st is None or st.clock is not Clock.KERNEL or st.estimated or i == 0:
        return st
    before = estimate_stamp(lines, i - 1)
    if before is None or before.clock is not Clock.KERNEL or before.ns > st.ns:
        return st
    return Stamp(Clock.KERNEL, before.ns, True, st.ns - before.ns)


@REGISTRY.register
class UserspaceParser(Parser):
    """First user-space output, login prompt, init system."""

    name = "userspace"
    description = "first user-space output (systemd, sysvinit, BusyBox, procd, Android init), login prompt"
    needles = ("login:", _PRESS_ENTER)  # _login
    # _start_index, _exec_index, quiet_kernel, went_quiet
    prefixes = (*_KERNEL_START, *_EXEC, *HANDOVERS, "Kernel command line:")

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        return 0.5 if len(lines) else 0.0

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        texts, kern, glued = lines.text, lines.kernel, lines.glued
        start, kernel_start_seen = _start_index(lines)
        exec_i = _exec_index(lines, start)
        first_k = next((k for k in islice(kern, start, None) if k is not None), None)  # a slice copies the column
        quiet = False
        if exec_i is None and not kernel_start_seen and first_k is not None:
            if first_k >= CUT_START_NS:
                if not quiet_kernel(lines, start):
                    # a fragment (a ring buffer's tail): user space may have run long before its first
                    # line, so what it shows is not user space's first output (after a bootloader's
                    # hand-over the kernel was quiet instead, and what follows its lines is user space's)
                    return ParseResult()
                quiet = True
            else:
                # the kernel's first line soon after its start, no banner before it: a console quiet
                # from the start (a TH1520's 6.6 prints its first line at 0.193 s after OpenSBI), when
                # a bootloader handed over before it; else its banner was lost (bit decay, a cut). A
                # kernel whose first line is stamped 0.000000 printed from its start: not quiet
                # (more/55: its banner decayed to "Bootilg Dinux on physical CPU")
                quiet = first_k > 0 and bootloader_before(lines, start)
        elif exec_i is None and kernel_start_seen:
            quiet = went_quiet(lines)  # the banner, then quiet from the early parameters on
        first: int | None = None
        init: tuple[str, int] | None = None
        initramfs: int | None = None
        # a journal that holds the kernel's entries (not a grep of user space's, not `journalctl -u`);
        # logcat marks them too, but logd takes a "[8086:a74d]" in a kernel message for a pid: there
        # only the evidence below counts
        marked = lines.first_kernel_entry() is not None
        journal = lines.journal and marked
        # unstamped output after the kernel's lines is user space's: where init's exec is seen and
        # the kernel's lines were stamped, or where a quiet kernel printed (almost) nothing; on a
        # console without printk times, the first line after the exec not shaped as a kernel message
        stamped_exec = exec_i is not None and _mostly_stamped(lines, start, exec_i)
        fallback_ok = stamped_exec or quiet
        by_shape = exec_i is not None and not stamped_exec and not marked
        if not kernel_start_seen and first_k is None and lines.fields:
            # no kernel in the log, and the framing says which entries user-space processes wrote
            # (logcat: a pid other than the kernel's 0): a log that starts in user space
            first = next((i for i in sorted(lines.fields) if "_PID" in lines.fields[i]), None)
        by_init = set(lines.by_init)
        for i in range(exec_i + 1 if exec_i is not None else start, len(texts)):
            t = texts[i]
            if journal and (lines.kernel_entry(i) or not t or lines.host[i] is None and kern[i] is None):
                # a journal says who logged each entry: the kernel's (its lines naming a process,
                # "random: plymouthd: uninitialized urandom read", too) are not user space's, nor
                # journalctl's own lines ("-- Reboot --", catalog text)
                continue
            # a line a vendor caller prefix says the exec'd pid 1 logged (Samsung's and
            # MediaTek's Android kernels: "[3:  init:    1]", read.quirks) is user space's
            evidence = i in by_init
            if evidence and first is None:
                first = i
            if t[:2] in _FIRST:
                for needle, rx, system in _EVIDENCE:
                    if needle in t and rx.match(t) is not None and not t.startswith("Welcome to GRUB"):
                        evidence = True
                        if first is None:
                            first = i
                        if system == "initramfs-tools":  # the initramfs, not the root's init
                            if initramfs is None:
                                initramfs = i
                        elif system is not None:
                            init = (system, i)
                        break
            if not evidence and first is None:
                if journal:
                    first = i  # the first entry after the kernel's that the kernel did not log
                elif fallback_ok and (kern[i] is None and t.strip() and not t.startswith(UNSTAMPED_KERNEL)
                                      or i in glued):
                    # unstamped output, or console text a kernel line was glued after
                    first = i
                elif by_shape and _user_shaped(t):
                    first = i
            if first is not None and (init is not None or i - first > _INIT_LOOKAHEAD):
                break
        warnings: list[str] = []
        ahead = _ahead_of_exec(lines, start, exec_i) if stamped_exec and not lines.fields else None
        if first is not None and ahead is not None:
            # user space printed before the kernel's exec line: the kernel's console lags behind
            # user space's (a Rockchip BSP's ttyFIQ0), and user space's first line cannot be told
            # from line order: no claim
            warnings.append(f"user space printed before the kernel's exec line (init-script status at line "
                            f"{lines.no(ahead[0])}, exec at line {lines.no(ahead[1])}): the kernel console lags "
                            "behind user space; its first line is not claimed")
        elif first is not None:
            events.append(Event(Kind.MILESTONE, Milestone.USERSPACE_FIRST, _stamp(lines, first), None,
                                lines.no(first)))
        if initramfs is not None:
            facts.append(Fact("initramfs", "initramfs-tools", lines.no(initramfs)))
        if init is not None:
            facts.append(Fact("init_system", init[0], lines.no(init[1])))
        login = self._login(lines, start)
        if login is not None:
            events.append(Event(Kind.MILESTONE, Milestone.LOGIN_PROMPT, _stamp(lines, login), None,
                                lines.no(login)))
        return ParseResult(tuple(events), tuple(facts), tuple(warnings))

    @staticmethod
    def _login(lines: Lines, start: int) -> int | None:
        """The first login prompt (or BusyBox's 'Please press Enter') after the kernel started."""
        # a prompt with a kernel line printed right after it keeps its text in lines.glued
        glued = [i for i, g in lines.glued.items() if "login:" in g or _PRESS_ENTER in g]
        for i in sorted({*lines.grep("login:", _PRESS_ENTER), *glued}):
            if i < start:
                continue
            t = lines.console_text(i)
            if t.startswith(_PRESS_ENTER) or _LOGIN.match(t) is not None:
                return i
        return None
