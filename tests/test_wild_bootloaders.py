"""Bootloaders and firmware on the real logs of ../shared/corpus/wild (read in place, never
copied): boots, banner and handoff lines, stage labels and statuses, durations read on the
bootloaders' own clocks. Line numbers are the ones the corpus README gives (grep -n)."""

from __future__ import annotations


import pytest
from conftest import GOLDEN, WILD, extra_log, needs_wild, wild_log

from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.core.lines import Lines
from bootlens.core.model import NS_PER_MS, Clock, Kind, Milestone
from bootlens.parsers import ParseOptions
from bootlens.parsers.banners import FIRMWARE_END, SPL_END, banner_of
from bootlens.timeline.stages import ABSENT, MEASURED, NOT_MEASURED

pytestmark = needs_wild


def boots(num: str) -> list[BootAnalysis]:
    return list(analyze_paths([str(wild_log(num))]).boots)


def lines_of(b: BootAnalysis, name: str) -> list[int]:
    return [e.line_no for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name]


def stage(b: BootAnalysis, name: str):  # type: ignore[no-untyped-def]
    return next(s for s in b.stages if s.name == name)


# file: (boot count, per boot: {milestone: first line}, bootloader label); a bootloader proper
# other than U-Boot starts at bootloader_start, U-Boot at uboot_start (issue 28, class 6)
BANNERS = {
    "01": (1, [{Milestone.UBOOT_START: 1, Milestone.STARTING_KERNEL: 189}], "bootloader (U-Boot)"),
    "04": (1, [{Milestone.SPL_START: 1, Milestone.UBOOT_START: 19}], "bootloader (U-Boot)"),
    "05": (1, [{Milestone.BOOTLOADER_START: 16, Milestone.STARTING_KERNEL: 37}], "bootloader (RedBoot)"),
    "06": (1, [{Milestone.FIRMWARE_BANNER: 1, Milestone.SPL_START: 61, Milestone.UBOOT_START: 97,
                Milestone.STARTING_KERNEL: 123}], "bootloader (U-Boot)"),
    "08": (1, [{Milestone.BOOTLOADER_START: 1, Milestone.STARTING_KERNEL: 50}], "bootloader (NVIDIA bootloader)"),
    "13": (1, [{Milestone.SPL_START: 1, Milestone.FIRMWARE_BANNER: 4, Milestone.UBOOT_START: 10,
                Milestone.STARTING_KERNEL: 39}], "bootloader (U-Boot)"),
    "14": (1, [{Milestone.SPL_START: 1, Milestone.FIRMWARE_BANNER: 4, Milestone.UBOOT_START: 24,
                Milestone.STARTING_KERNEL: 58}], "bootloader (U-Boot)"),
    "15": (1, [{Milestone.SPL_START: 1, Milestone.UBOOT_START: 21, Milestone.STARTING_KERNEL: 57}],
           "bootloader (U-Boot)"),
    "16": (1, [{Milestone.SPL_START: 1, Milestone.STARTING_KERNEL: 492}], "bootloader (LK)"),
    "17": (1, [{Milestone.UBOOT_START: 1, Milestone.STARTING_KERNEL: 119}], "bootloader (U-Boot)"),
    "18": (1, [{Milestone.UBOOT_START: 29, Milestone.STARTING_KERNEL: 88}], "bootloader (U-Boot)"),
    "19": (1, [{Milestone.UBOOT_START: 1, Milestone.STARTING_KERNEL: 24}], "bootloader (U-Boot)"),
    "20": (1, [{Milestone.BOOTLOADER_START: 8}], "bootloader (GRUB)"),
    "22": (1, [{Milestone.UBOOT_START: 1, Milestone.STARTING_KERNEL: 32}], "bootloader (U-Boot)"),
    "23": (1, [{Milestone.FIRMWARE_BANNER: 3, Milestone.STARTING_KERNEL: 518}], "bootloader"),
    "25": (1, [{Milestone.UBOOT_START: 4, Milestone.STARTING_KERNEL: 31}], "bootloader (U-Boot)"),
    "31": (1, [{Milestone.UBOOT_START: 3, Milestone.STARTING_KERNEL: 74}], "bootloader (U-Boot)"),
    "32": (2, [{Milestone.FIRMWARE_BANNER: 1, Milestone.UBOOT_START: 12, Milestone.STARTING_KERNEL: 89},
               {Milestone.FIRMWARE_BANNER: 148, Milestone.UBOOT_START: 159, Milestone.STARTING_KERNEL: 317}],
           "bootloader (U-Boot)"),
    "33": (1, [{Milestone.BOOTLOADER_START: 14}], "bootloader (EcoNet bootbase)"),
    "34": (1, [{Milestone.SPL_START: 1, Milestone.FIRMWARE_BANNER: 4, Milestone.UBOOT_START: 11,
                Milestone.STARTING_KERNEL: 55}], "bootloader (U-Boot)"),
}


@pytest.mark.parametrize("num", sorted(BANNERS))
def test_banners_handoffs_and_labels(num: str) -> None:
    count, expected, label = BANNERS[num]
    got = boots(num)
    assert len(got) == count
    for b, want in zip(got, expected):
        for name, line in want.items():
            assert lines_of(b, name)[:1] == [line], (num, name)
        bl = stage(b, "bootloader")
        assert bl.label == label
        # no host times in the corpus: a bootloader seen but untimed is "not measured", never guessed
        if label != "bootloader" and num not in ("08",):
            assert bl.status == NOT_MEASURED and bl.duration_ns is None


@pytest.mark.parametrize("num, n", [("02", 1), ("04", 1), ("12", 1), ("16", 1), ("21", 4), ("23", 1),
                                    ("32", 2), ("35", 2)])
def test_boot_counts(num: str, n: int) -> None:
    assert len(boots(num)) == n


def test_coreboot_boots_start_at_each_bootblock_and_end_at_the_payload_jump() -> None:
    got = boots("21")
    assert [b.boot.first_line for b in got] == [1, 847, 1670, 2493]
    assert [lines_of(b, Milestone.FIRMWARE_BANNER)[0] for b in got] == [4, 847, 1670, 2493]
    assert [lines_of(b, FIRMWARE_END) for b in got] == [[844], [1667], [2490], [3334]]
    for b in got:
        assert stage(b, "firmware").label == "firmware / ROM (coreboot)"
        assert stage(b, "bootloader").status == ABSENT


def test_amd_romstage_resets_stay_one_boot() -> None:
    (b,) = boots("23")
    assert lines_of(b, Milestone.FIRMWARE_BANNER)[:3] == [3, 9, 15]  # three romstage starts
    assert stage(b, "firmware").label == "firmware / ROM (coreboot, then SeaBIOS)"


def test_second_realtek_boot_starts_at_the_boot_rom_banner() -> None:
    first, second = boots("32")
    assert (first.boot.last_line, second.boot.first_line) == (147, 148)
    assert "Realtek boot ROM" in second.boot.split_reason


def test_one_out_of_order_printk_line_is_no_reset() -> None:
    (b,) = boots("12")  # L715 [9.336762] between 10.101447 and 10.195783
    assert b.boot.last_line == 766


def test_rockchip_spl_total_measures_power_on_to_end_of_spl() -> None:
    (b,) = boots("06")
    assert stage(b, "firmware").label == "firmware / ROM (Rockchip DDR init)"
    assert stage(b, "spl").label == "SPL (U-Boot SPL, then TF-A BL31)"
    run = stage(b, "from_reset")
    assert (run.status, run.start_ns, run.duration_ns) == (MEASURED, None, 249_820_000)
    assert lines_of(b, SPL_END) == [76]  # "Total: 249.82 ms"


def test_nvidia_bootloader_times_from_reset() -> None:
    (b,) = boots("08")
    fw, bl = stage(b, "firmware"), stage(b, "bootloader")
    # "Bootloader Start at:1257 ms" (L30), "Jumping to kernel at:2180 ms" (L50); kernel axis
    assert (fw.status, fw.start_ns, fw.duration_ns) == (MEASURED, None, 1257 * NS_PER_MS)
    assert (bl.status, bl.start_ns, bl.duration_ns) == (MEASURED, None, 923 * NS_PER_MS)


def test_mediatek_preloader_and_lk_bootloader_only() -> None:
    (b,) = boots("16")  # refused before with "no boot found"
    assert b.boot.fact("bootloader") is not None and b.boot.fact("bootloader").value == "LK"  # type: ignore[union-attr]
    spl = stage(b, "spl")
    assert spl.label == "SPL (MediaTek preloader)"
    # the sum of the 43 "#T#step=ms" timers, as awk would add them
    path = wild_log("16")
    total = sum(int(s.rsplit("=", 1)[1]) for s in path.read_text().splitlines() if s.startswith("#T#"))
    assert (spl.status, spl.start_ns, spl.duration_ns) == (MEASURED, None, total * NS_PER_MS)
    run = stage(b, "from_reset")
    assert run.label == "power-on to kernel handoff (not split further)"
    assert run.duration_ns == 8621 * NS_PER_MS  # "[8621] booting linux @ 0x40080000"
    assert stage(b, "bootloader").status == NOT_MEASURED  # LK's first lines are cut


def test_waits_of_other_bootloaders() -> None:
    (redboot,) = boots("05")
    assert redboot.boot.fact("boot_script_delay").value == "3.000"  # type: ignore[union-attr]
    (grub,) = boots("20")
    f = grub.boot.fact("boot_menu_timeout")
    assert f is not None and (f.value, f.line_no) == ("1", 28)
    # neither is U-Boot's bootdelay: the U-Boot advice must not fire on them
    assert redboot.boot.fact("bootdelay") is None and grub.boot.fact("bootdelay") is None


@pytest.mark.parametrize("num, version", [("18", "1.1.4-gf5a7e7fc-dirty"), ("19", "2010.06"), ("22", "1.1.4"),
                                          ("31", "unifi-home-.g345bbabc"),
                                          ("32", "2012.07-sw/2936/2936_duowei/bootcode-svn92")])
def test_old_and_vendor_uboot_banners(num: str, version: str) -> None:
    f = boots(num)[0].boot.fact("uboot_version")
    assert f is not None and f.value == version


# -- formats the corpus lacks: hand-written inputs in tests/golden/firmware and uboot -----------

def golden(rel: str) -> BootAnalysis:
    (b,) = analyze_paths([str(GOLDEN / rel)]).boots
    return b


def test_bootstage_report_without_host_times_sets_every_early_stage() -> None:
    b = golden("uboot/tpl-spl-bootstage-notime.log")
    assert b.alignment.axis is Clock.KERNEL
    got = {s.name: (s.label, s.status, s.start_ns, s.duration_ns) for s in b.stages
           if s.name in ("firmware", "tpl", "spl", "bootloader")}
    us = 1000
    assert got == {
        "firmware": ("firmware / ROM", MEASURED, None, 52_104 * us),  # reset -> TPL mark
        "tpl": ("TPL (U-Boot TPL)", MEASURED, None, (161_812 - 52_104) * us),  # TPL -> end tpl
        "spl": ("SPL (U-Boot SPL, then TF-A BL31)", MEASURED, None, (391_077 - 178_331) * us),  # SPL -> end spl
        "bootloader": ("bootloader (U-Boot)", MEASURED, None, (1_103_455 - 402_150) * us),  # board_init_f -> start_kernel
    }


def test_qualcomm_sbl1_and_lk() -> None:
    b = golden("firmware/qcom-sbl1-lk.log")
    got = {s.name: (s.label, s.duration_ns) for s in b.stages if s.status == MEASURED}
    assert got["firmware"] == ("firmware / ROM", 696_380_000)  # B - PBL to "SBL1, Start"
    assert got["spl"] == ("SPL (Qualcomm SBL1)", 1_362_713_000 - 696_380_000)  # to "SBL1, End"
    assert got["bootloader"] == ("bootloader (LK)", 1230 * NS_PER_MS)  # LK's own clock, [0] to [1230]


@pytest.mark.parametrize("rel, label", [("firmware/barebox.log", "bootloader (barebox)"),
                                        ("firmware/grub2.log", "bootloader (GRUB)"),
                                        ("firmware/ipxe.log", "bootloader (iPXE)"),
                                        ("firmware/opensbi-uboot.log", "bootloader (U-Boot)"),
                                        ("firmware/tfa-bl1-bl2-bl31.log", "bootloader (U-Boot)")])
def test_bootloaders_seen_untimed_are_named_and_not_measured(rel: str, label: str) -> None:
    b = golden(rel)
    bl = stage(b, "bootloader")
    assert (bl.label, bl.status, bl.duration_ns) == (label, NOT_MEASURED, None)


def test_firmware_labels() -> None:
    assert stage(golden("firmware/opensbi-uboot.log"), "firmware").label == "firmware / ROM (OpenSBI)"
    tfa = golden("firmware/tfa-bl1-bl2-bl31.log")
    assert stage(tfa, "firmware").label == "firmware / ROM (TF-A BL1)"
    assert stage(tfa, "spl").label == "SPL (TF-A BL2, then TF-A BL31)"


@pytest.mark.parametrize("text, name, version", [
    ("U-Boot TPL 2024.01-rc5 (Dec 28 2023 - 22:53:45)", "U-Boot TPL", "2024.01-rc5"),
    ("U-Boot SPL board init", None, None),
    ("U-Boot 1.1.4 (Feb 19 2018 - 17:27:22)", "U-Boot", "1.1.4"),
    ("barebox 2023.02.0 #1 Mon Feb 6 12:00:00 CET 2023", "barebox", "2023.02.0"),
    ("OpenSBI v1.3", "OpenSBI", "v1.3"),
    ("NOTICE:  BL31: Built : 04:51:16, May 11 2023", None, None),
    ("Found U-Boot script /boot.scr", None, None),
])
def test_banner_table(text: str, name: str | None, version: str | None) -> None:
    found = banner_of(text)
    assert (found[0].name if found else None) == name
    assert (found[1].groupdict().get("v") if found else None) == version


def test_uboot_self_stamped_lines_are_the_bootloader_clock() -> None:
    # Vendor U-Boots stamp their own lines ("[   0.114] ", Allwinner's "[00.608]"): seconds and
    # milliseconds of the bootloader's timer. Read from the text of lines the framing left
    # without a printk time (built by hand here, whatever the framing does with them).
    from bootlens.parsers.uboot import UBootParser, self_stamp

    st, rest = self_stamp("[00.608]CPU:   Allwinner Family")
    assert st is not None and (st.clock, st.ns, rest) == (Clock.BOOTLOADER, 608 * NS_PER_MS, "CPU:   Allwinner Family")
    texts = ["U-Boot 2018.07 (Jan 12 2024 - 03:37:35 +0000) Allwinner Technology", "[   0.114] Loading kernel",
             "[   2.310] Starting kernel ..."]
    lines = Lines(texts, [None] * 3, [None] * 3)
    r = UBootParser().parse(lines, ParseOptions())
    starting = [e for e in r.events if e.name == Milestone.STARTING_KERNEL]
    assert [(e.line_no, e.start) for e in starting] == [(3, (Clock.BOOTLOADER, 2310 * NS_PER_MS, False, 0))]


# Issue 28, class 3: a banner is not a reset. Each of these boots once (the more/ README's facts);
# before the fix each was split in two at the banner named.
@pytest.mark.parametrize(("num", "banners"), [
    ("38", {"spl_start": 25, "tpl_start": 324, "uboot_start": 352}),  # Broadcom: the SPL loads a TPL
    ("51", {"spl_start": 1, "uboot_start": 22}),  # TI AM62A: R5 SPL, "Starting ATF", BL31, A53 SPL (L15)
    ("52", {"spl_start": 13, "uboot_start": 20, "firmware_banner": 85}),  # U-Boot's "Starting kernel" starts OpenSBI
])
def test_a_bootloader_chain_is_one_boot(num: str, banners: dict[str, int]) -> None:
    (b,) = boots(num)
    for name, line in banners.items():
        assert lines_of(b, name)[:1] == [line], (name, lines_of(b, name))


def test_a_boot_rom_after_a_hand_over_is_still_a_reset() -> None:
    """Realtek's boot ROM banner after U-Boot's "Starting kernel ..." (the kernel silent, then a
    reset): nothing hands over to a boot ROM, so it opens the second boot (corpus 32)."""
    first, second = boots("32")
    assert (first.boot.last_line, second.boot.first_line) == (147, 148)
    assert second.boot.split_reason == "new Realtek boot ROM banner"


# Issue 28: "SPL absent" is said only when the chain's first known banner opens the boot. A program
# that printed before it under a banner bootlens does not know may have been the SPL: not measured.
@pytest.mark.parametrize(("num", "first"), [
    ("97", 1),  # RK3368: DDR blob L1, miniloader L8, BL2 L18 before U-Boot
    ("99", 4),  # SAMA5D2: AT91Bootstrap 3.8.10 at L4
    ("103", 2),  # MT7621: its stage1 from L2
])
def test_an_unnamed_first_stage_is_not_absent(num: str, first: int) -> None:
    (b,) = analyze_paths([str(extra_log(num))]).boots
    assert stage(b, "spl").status == NOT_MEASURED
    assert b.boot.lines.text[b.boot.lines.index_of(first)].strip()


def test_a_chain_that_opens_the_boot_has_no_spl() -> None:
    """Corpus 17: U-Boot's banner is the boot's first line: nothing ran before it that printed."""
    (b,) = boots("17")
    assert stage(b, "spl").status == ABSENT
