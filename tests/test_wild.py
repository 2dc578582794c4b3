"""Real boot logs of real boards (../shared/corpus/wild, read in place, never copied here).

The corpus README gives each log's source (repository, path, commit) and the facts a person
measured with grep; the expectations below are those facts, line numbers as ``grep -n`` counts
them. Where bootlens sees more than the README lists (an earlier line that is plainly user space's
own output), the line is bootlens's and the reason is in the comment; docs/real-logs.md has the
table with what each log lets bootlens measure and what it cannot see.

Every log must analyse, advise and report with exit 0 through the real command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import WILD_LOGS as LOGS
from conftest import cli, extra_log, needs_wild, wild_log

from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.core.model import Kind, Milestone

pytestmark = needs_wild


@dataclass(frozen=True)
class Expect:
    """The hand-measured facts of one boot of a corpus log."""

    # the kernel's first line: "Linux version"/"Booting Linux", or the printk lines stamped no later
    # than it just before it ("Initializing cgroup subsys cpu" on 2.6-3.x); the README names the banner
    kernel_start: int | None = None
    kernel_init_end: int | None = None  # "Run /init", else "Freeing ... memory", else the console warning
    kernel_init_s: float | None = None  # its printk time (kernel init's duration on the printk clock)
    userspace_first: int | None = None  # first line user space printed
    login: int | None = None  # login prompt or "Please press Enter"
    bootdelay: str | None = None  # the autoboot countdown's start value
    partial: str | None = None  # a substring of the partial reasons; None: a whole boot


# file number -> the expectations of each of its boots
FACTS: dict[str, tuple[Expect, ...]] = {
    "01": (Expect(kernel_start=191, bootdelay="0", partial="log ends before user space"),),  # cut at the end
    "02": (Expect(1, 202, 1.790915, 210),),  # 4.1: no "Run /init"; systemd[1] at 1.940474
    "03": (Expect(partial="log starts mid-boot (first printk time 13.542176 s"),),  # a WARN splat fragment
    "04": (Expect(bootdelay="0", partial="bootloader only"),),
    "05": (Expect(partial="no kernel output"),),  # RedBoot; kernel silent (loglevel=4)
    "06": (Expect(125, bootdelay="0", partial="log ends before user space"),),  # ends at deferred probe
    "07": (Expect(1, 468, 2.050255, 474),),
    # the README lists no user-space line; "init: could not open /dev/keychord" (5.796276) is
    # Android's init through kmsg
    "08": (Expect(51, userspace_first=543),),  # L51 "Initializing cgroup subsys cpu" (README: L52)
    "09": (Expect(None, 79, None, 80, partial="Linux version"),),  # cut, no timestamps
    "10": (Expect(55, partial="log ends before user space"),),
    "11": (Expect(1, 635, 7.0, 668),),  # dmesg -T: 1 s resolution
    "12": (Expect(1, 604, 4.124552, 614),),  # systemd 229
    "13": (Expect(41, 262, 1.636386, 263, 274, "0"),),  # udevd[151] is user space's first line
    # mkinitcpio's ":: running early hook [udev]" (unstamped, right after Run /init) comes before
    # the README's systemd[1] line 416
    "14": (Expect(60, 402, 3.530060, 403, 681, "2"),),
    # line 196 of the ASCII-art banner is blanks only; 197 is its first visible line
    "15": (Expect(59, 194, 0.673660, 197, 233, "1"),),  # L59, two cgroup lines (README: L61)
    "16": (Expect(partial="bootloader only"),),  # MediaTek preloader and LK
    "17": (Expect(121, 632, 8.895373, 633, 762),),
    "18": (Expect(90, 198, None, 199),),  # no timestamps
    "19": (Expect(26, 44, 0.390000),),  # init=/bin/sh prints nothing
    # console handover: the log starts at 2.8 s; udevd[542] (3.395048) is user space before the
    # README's "INIT: version" line 200
    # GRUB, then the kernel's serial console enabled at 2.807 s (its start went to VGA): not a cut log
    "20": (Expect(None, 184, 3.139384, 194, 282, partial="kernel start not in the log: its first line is at 2.8"),),
    "21": tuple(Expect(partial="bootloader only") for _ in range(4)),  # four coreboot boots
    "22": (Expect(35, 114, 1.364445, 116, 136, "1"),),
    "23": (Expect(partial="bootloader only"),),  # coreboot, SeaBIOS
    "24": (Expect(partial="log starts mid-boot (first printk time 4313.843190 s"),),  # last_kmsg tail
    "25": (Expect(35, 200, 3.390000, 201, bootdelay="1"),),
    # the README lists no user-space line; "<3>[ 9.165977] init: could not open /dev/keychord" is
    # Android's init
    "26": (Expect(1, 687, 9.091765, 692),),  # L1 "<6>... Initializing cgroup" (README: L2)
    "27": (Expect(1, 663, 3.820897, 664),),  # Android: the initial-console warning, then init
    "28": (Expect(1, 418, 3.937386, 453),),  # initramfs /init prints nothing; udevd[824] at 26.157865
    "29": (Expect(1, 754, 6.328614, 756),),  # "Booting Linux" at line 1, "Linux version" at 5
    # three "Freeing unused kernel memory" lines: the first ends kernel init; systemd-tmpfiles
    # reading urandom (0.945752) is user space before the README's systemd[1] line 628
    # L1-3 cgroup lines (README: L4); kernel init ends at the last of 3 "Freeing unused kernel
    # memory" lines, L515 (README: L512, "also L514 @0.938742, L515 @0.939236")
    "30": (Expect(1, 515, 0.939236, 516),),
    # tomoyo-init's output ("13 domains. 17 A", a kernel line glued after it) comes before the
    # README's "init: Console is alive" line 188
    "31": (Expect(76, 182, 1.538482, 184, 237, "0"),),
    "32": (Expect(partial="bootloader only"), Expect(321, userspace_first=533, login=535)),
    # no timestamps: user space's first line is the first after Freeing not shaped as a kernel
    # message ("Pre_initialization script", the README's; issue 28)
    "33": (Expect(35, 295, None, 296),),
    "34": (Expect(57, 406, 4.010899, 407, 527, "0"),),
    "35": (Expect(1, 822, 4.925268, 823), Expect(partial="log starts mid-boot (first printk time 3.637091 s")),
}


def _milestone(b: BootAnalysis, name: str) -> int | None:
    return next((e.line_no for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name), None)


def test_every_corpus_log_has_facts() -> None:
    assert sorted(p.name[:2] for p in LOGS) == sorted(FACTS)


@pytest.mark.parametrize("num", sorted(FACTS))
def test_corpus_log_facts(num: str) -> None:
    a = analyze_paths([str(wild_log(num))])
    want = FACTS[num]
    assert len(a.boots) == len(want), [b.boot.split_reason for b in a.boots]
    for b, x in zip(a.boots, want):
        where = f"{num} boot {b.boot.index + 1}"
        assert _milestone(b, Milestone.KERNEL_START) == x.kernel_start, where
        st = {s.name: s for s in b.stages}
        ki = st["kernel_init"]
        assert (ki.end.line_no if ki.end is not None else None) == x.kernel_init_end, where
        if x.kernel_init_s is None:
            assert ki.duration_ns is None, where
        else:
            assert ki.duration_ns is not None, where
            tol = 1.0 if num == "11" else 1e-6  # dmesg -T prints whole seconds
            assert abs(ki.duration_ns / 1e9 - x.kernel_init_s) <= tol, where
        assert _milestone(b, Milestone.USERSPACE_FIRST) == x.userspace_first, where
        assert _milestone(b, Milestone.LOGIN_PROMPT) == x.login, where
        delay = b.boot.fact("bootdelay")
        assert (delay.value if delay else None) == x.bootdelay, where
        reasons = "; ".join(b.partial_reasons)
        if x.partial is None:
            assert not b.partial, (where, reasons)
        else:
            assert x.partial in reasons, (where, reasons)
        if x.partial is not None and "mid-boot" in x.partial:
            # a cut log measures nothing before its first line: no early init, no kernel load
            assert all(s.duration_ns is None for s in b.stages if s.name in ("kernel_early", "kernel_load")), where


def test_login_prompt_ends_the_boot_without_a_ready_marker() -> None:
    """34 (Orange Pi Zero3, Poky): the login prompt at line 527 ends the boot, and says so."""
    b = analyze_paths([str(wild_log("34"))]).boots[0]
    assert b.total.end_name == "login prompt"
    assert b.total.end.startswith("login prompt at line 527")
    us = next(s for s in b.stages if s.name == "userspace")
    assert us.start is not None and us.start.line_no == 406 and us.end is not None and us.end.line_no == 527



# Issue 28: the kernel prints before its banner. The facts are the corpus's more/ README and the
# extra logs' manifest (first kernel line, by grep); before the fix each was the banner's line.
@pytest.mark.parametrize(("where", "num", "first", "banner"), [
    ("wild", "36", 1, 2),  # x86 Pop!_OS 6.4 dmesg: "microcode: updated early" @0, then Linux version
    ("wild", "61", 1, 4),  # x86 grml 3.10: "Initializing cgroup subsys cpuset" x3 @0
    ("extra", "95", 1, 14),  # ppc64le 4.19 dmesg: 13 "dt-cpu-ftrs:" lines @0 before Linux version
    ("extra", "97", 104, 106),  # RK3368 Android 3.10 after U-Boot: two lines @0 before it
    ("extra", "100", 1, 2),  # RK30 last_kmsg 3.0.8: "<6>[    0.000000] Initializing cgroup subsys cpu"
    ("extra", "103", 195, 197),  # MT7621 OpenWrt 3.10 after U-Boot 1.1.3
])
def test_the_kernel_starts_at_its_first_line(where: str, num: str, first: int, banner: int) -> None:
    """Kernel init starts at the kernel's first line, not at its banner: the printk lines just
    before "Linux version", stamped no later than it, are the same kernel's."""
    (b, *_) = analyze_paths([str(wild_log(num) if where == "wild" else extra_log(num))]).boots
    assert _milestone(b, Milestone.KERNEL_START) == first
    assert b.boot.fact("kernel_version") is not None and b.boot.fact("kernel_version").line_no == banner
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert ki.start is not None and ki.start.line_no == first


# Issue 28 (N1): vendor printk prefixes. Amlogic prints the CPU inside the stamp
# ("[    5.434249@0]", native/src/read/prefix.rs), MediaTek 3.18 the level before its caller
# ("[    0.000000] <0>-(0)[0:swapper]", read/quirks.py); MediaTek's TF-A stamps its own lines
# "[ATF](0)[0.000000]" on its own clock. Before the fix: "no kernel output" (45, 47) and
# "Linux version not in the log" (44). Facts from the more/ README.
@pytest.mark.parametrize(("num", "boot", "start", "init_end", "init_s", "user"), [
    ("45", 0, 197, None, None, None),  # two cgroup lines before Linux version L199; cut at L235 @0.024761
    ("47", 0, 246, 1015, 5.434249, 1016),  # ODROID-C4 Android recovery
    ("44", 1, 4978, None, None, None),  # attempt B: "[   0.000000] <0>-(0)[0:swapper]Initializing cgroup"
])
def test_vendor_printk_prefixes(num: str, boot: int, start: int, init_end: int | None, init_s: float | None,
                                user: int | None) -> None:
    b = analyze_paths([str(wild_log(num))]).boots[boot]
    assert _milestone(b, Milestone.KERNEL_START) == start
    assert b.boot.fact("kernel_version") is not None
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert (ki.end.line_no if ki.end is not None and ki.duration_ns is not None else None) == init_end
    assert (None if ki.duration_ns is None else ki.duration_ns / 1e9) == init_s
    assert _milestone(b, Milestone.USERSPACE_FIRST) == user


# Issue 28 (N2, class 9): journalctl's short format stamps in whole seconds, and journald imports the
# kernel's lines at once: kernel init there is "0 ns" between two lines of the same second, below the
# clock's resolution, so not measured (before: 0 ns, measured); 76's 1 s is a measurement at it.
@pytest.mark.parametrize(("where", "num", "seconds"), [
    ("wild", "37", None),  # Pop!_OS: L2 to Run /init L759, both 08:20:26
    ("extra", "75", None), ("extra", "77", None),
    ("extra", "76", 1.0),  # L1 10:07:51 to Run /init L662 10:07:52
])
def test_under_the_clocks_resolution_is_not_measured(where: str, num: str, seconds: float | None) -> None:
    (b, *_) = analyze_paths([str(wild_log(num) if where == "wild" else extra_log(num))]).boots
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert (None if ki.duration_ns is None else ki.duration_ns / 1e9) == seconds
    assert ki.status == ("measured" if seconds else "not measured")


# Issue 28: a quiet kernel after a bootloader is not a cut log. Its first printk line comes late
# (loglevel, quiet, a console enabled late), and the unstamped output after it is user space's.
# Before: "log starts mid-boot ... a fragment" and "log ends before user space" (94, 96).
@pytest.mark.parametrize(("num", "user"), [
    ("94", 214),  # POWER9: Hostboot, skiboot, the zImage wrapper; one printk line @4.074167; Petitboot
    ("96", 9),  # STM32MP151: TF-A BL2, one printk line @1.010185, "Starting initramfs ..."
])
def test_a_quiet_kernel_after_a_bootloader(num: str, user: int) -> None:
    (b,) = analyze_paths([str(extra_log(num))]).boots
    reasons = "; ".join(b.partial_reasons)
    assert "mid-boot" not in reasons and "before user space" not in reasons, reasons
    assert "kernel start not in the log: its first line is at" in reasons
    assert _milestone(b, Milestone.USERSPACE_FIRST) == user


# Issue 28 (N5): an unstamped "Linux version" after the kernel's stamped lines is the output of a
# typed `cat /proc/version` (more/52, L688, after the login at L635), not the kernel's start; the
# kernel and user-space parsers share the rule (parsers.kernel.kernel_start_index).
def test_a_typed_banner_is_not_the_kernels_start() -> None:
    (b,) = analyze_paths([str(wild_log("52"))]).boots
    assert _milestone(b, Milestone.KERNEL_START) is None
    assert _milestone(b, Milestone.LOGIN_PROMPT) == 635
    assert not any("before user space" in r for r in b.partial_reasons), b.partial_reasons


# Issue 28 (class 11): a journal of several boots is cut at journalctl's "-- Reboot --" lines, not
# one line later at the next "Linux version": the power-off between two boots is no "silence" of
# the first (more/41: 8 boots; a 28,672 s silence before).
def test_a_journal_is_cut_at_its_reboot_lines() -> None:
    a = analyze_paths([str(wild_log("41"))])
    assert [b.boot.first_line for b in a.boots] == [1, 3494, 6225, 16110, 17895, 19634, 21482, 23463]
    assert all(b.boot.split_reason == "journal: -- Reboot --" for b in a.boots[1:])
    assert max(s.duration_ns for s in a.boots[0].silences) < 3600 * 10**9


# Issue 28 (N6): without "Run /init", kernel init ends at the last of the "Freeing unused kernel
# memory" lines free_initmem and mark_rodata_ro print in a row (before: the first).
@pytest.mark.parametrize(("num", "end", "seconds"), [
    ("61", 558, 4.888009),  # x86 grml 3.10: L555 @4.850777, L557, L558; udevd at L559
    ("30", 515, 0.939236),  # x86 Arch 4.4: L512, L514, L515
])
def test_kernel_init_ends_at_the_last_free(num: str, end: int, seconds: float) -> None:
    (b, *_) = analyze_paths([str(wild_log(num))]).boots
    ki = next(s for s in b.stages if s.name == "kernel_init")
    assert ki.end is not None and ki.end.line_no == end and ki.duration_ns == round(seconds * 1e9)


@pytest.mark.parametrize("command", ["analyze", "advise"])
def test_every_corpus_log_exits_0(command: str) -> None:
    r = cli(command, *map(str, LOGS))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_every_corpus_log_reports(tmp_path: Path) -> None:
    for log in LOGS:
        out = tmp_path / (log.stem + ".html")
        r = cli("report", str(log), "-o", str(out))
        assert r.returncode == 0, (log.name, r.stderr[-2000:])
        assert out.stat().st_size > 10_000


@pytest.mark.parametrize("fmt", ["svg", "perfetto"])
def test_corpus_logs_report_as(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"all.{fmt}"
    r = cli("report", *map(str, LOGS), "--format", fmt, "-o", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize(("num", "boot", "init"), [
    ("02", 0, "systemd"), ("14", 0, "systemd"), ("17", 0, "sysvinit"), ("20", 0, "sysvinit"), ("22", 0, "procd"),
    ("25", 0, "buildroot"), ("27", 0, "android"), ("32", 1, None), ("33", 0, None),
])
def test_init_system_is_named_from_its_own_output(num: str, boot: int, init: str | None) -> None:
    """32's "Welcome to Realtek Linux" is a BusyBox system's banner, not systemd's "Welcome to X!"."""
    b = analyze_paths([str(wild_log(num))]).boots[boot]
    fact = b.boot.fact("init_system")
    assert (fact.value if fact else None) == init
