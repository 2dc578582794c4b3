"""Issue 28: where one boot ends and the next begins, and which printk stamps to trust.

Golden facts from real logs (the corpus READMEs and the extra logs' MANIFEST.md, checked with
grep; line numbers as ``grep -n`` counts them), and, for the invariants of class 11, corpus logs
mutated in the test the way the issue found them.

- N4: a reset is the kernel saying it restarts, then the board's next program (a banner, the
  console garbled by the reset); the new boot starts right after the old kernel's last line. A
  few lines stamped off the run around them are no reset: they stay in the boot, named.
- N3: a printk stamp one bit off, out of the run of its neighbours, is decay (pstore, last_kmsg):
  no time of it is used, and the lines are named.
- 11: silences are never negative; stages stay ordered inside the total, or a warning says why.
"""

from __future__ import annotations

import re
from pathlib import Path

from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.core.model import Kind, Milestone
from bootlens.parsers import MarkerSpec, ParseOptions

from conftest import extra_log, needs_wild, wild_log

GRAB = Path(__file__).parent / "data" / "corpus" / "qemu-arm64-uboot-initcall.grabserial-t.log"
_GRAB_PRINTK = re.compile(rb"(\[[\d.]+ [\d.]+\] )\[ *(\d+)\.(\d{6})\](.*)")


def _spans(boots: tuple[BootAnalysis, ...]) -> list[tuple[int, int]]:
    return [(b.boot.lines.first, b.boot.lines.first + len(b.boot.lines) - 1) for b in boots]


def _warning(b: BootAnalysis, start: str) -> str:
    (w,) = [w for w in b.warnings if w.startswith(start)]
    return w


def _milestone(b: BootAnalysis, name: str) -> int | None:
    return next((e.line_no for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name), None)


# --------------------------------------------------------------------------------------------
# N4: resets found, and placed on the new boot's first line


@needs_wild
def test_mediatek_preloader_restarts_after_a_panic_are_three_boots() -> None:
    """more/44 (MT6735, PuTTY): the kernel panics, says "Rebooting in 1 seconds.." and
    machine_restart (L1169/L1171, L7727), and the UART garbles at the reset (a line of NUL and
    0x80 bytes, L1356 and L8214) before the preloader's "just_rst"/"[6328]e-data" lines. Before:
    2 boots, cut at L1593 (an ATF line whose "[0.000000]" read as printk), attempt C merged."""
    a = analyze_paths([str(wild_log("44"))])
    assert _spans(a.boots) == [(1, 1355), (1356, 8213), (8214, 8364)]
    one, two, three = a.boots
    assert two.boot.split_reason.startswith("reset after line 1171 (machine_restart")
    assert three.boot.split_reason.startswith("reset after line 7727 (Rebooting in 1 seconds..)")
    assert _milestone(two, Milestone.KERNEL_START) == 4978  # attempt B's kernel
    assert three.partial_reasons == ("no kernel output",)


def test_a_reset_after_a_panic_starts_at_the_dram_init() -> None:
    """104 (EcoNet EN7512): "Machine restart ..." (L80), then the new boot's DDR init from "BGA IC"
    (L81), its bootbase banner at L92. Before: the second boot started at L92, 11 lines late."""
    a = analyze_paths([str(extra_log("104"))])
    assert _spans(a.boots) == [(1, 80), (81, 109)]
    assert a.boots[1].boot.split_reason == "new EcoNet bootbase banner"
    assert _milestone(a.boots[0], Milestone.KERNEL_PANIC) == 79


@needs_wild
def test_second_last_kmsg_record_starts_at_its_torn_first_line() -> None:
    """35 (Tegra 3, two kernels in one last_kmsg): the first record ends with "Restarting system
    with command ''." (L1566) and the kernel's own "Restarting Linux version" lines in its
    "[12-31 18:43:16.325]" form (L1567-1569); the second record's first line is the torn
    "nteractive_up_task+0x1b8/0x248) from ..." (L1570), its first stamp 3.637091 at L1571.
    Before: the second boot started at L1571, one line late."""
    a = analyze_paths([str(wild_log("35"))])
    assert _spans(a.boots) == [(1, 1569), (1570, 2301)]
    # the last time of record 1 is its last wall-clock line's, read through the RTC (L1569
    # "[12-31 18:43:16.325]" = 4.924714 + 101.325 s: tests/test_framing_wild.py)
    assert a.boots[1].boot.split_reason == "printk time went back from 106.249714 to 3.637091"


@needs_wild
def test_samsung_last_kmsg_is_one_ring_buffer_and_a_second_sboot_run() -> None:
    """more/55 (Samsung Tab E last_kmsg): sboot L1-267, the previous kernel's ring buffer up to
    L2570 (sprd_set_reboot_mode), the second sboot run from "[ 1.006] ###Enter sboot" L2571.
    Before: 6 boots from decayed stamps and the buffer's overlaps; the sboot run not split off."""
    a = analyze_paths([str(wild_log("55"))])
    assert _spans(a.boots) == [(1, 2570), (2571, 3069)]
    ring, sboot = a.boots
    assert sboot.boot.split_reason == "new Samsung sboot banner"
    assert sboot.boot.fact("bootloader").value == "Samsung sboot"
    # the ring buffer's overlaps: a passage read twice, e.g. L1905-1908 repeat L1900-1903
    w = _warning(ring, "25 lines stamped off the printk run around them")
    assert w.endswith("lines 1905–1908, 2023–2026, 2247–2250, 2276–2277, 2308–2310 and 4 more runs")
    (decay,) = [w for w in a.inputs[0].warnings if w.startswith("5 printk stamps look decayed")]
    assert "lines 345, 351, 2302, 2554, 2560)" in decay  # "[    2.000000]" among 0.000000 lines, ...
    assert ring.boot.lines.kernel[345 - 1] is None and ring.boot.lines.kernel[2302 - 1] is None
    # boot 1's sboot starts at L1, its banner decayed ("[ 1.044] ###ENt%r sboot mach_board_initialize");
    # the next run's first lines inside the ring's overlap (L2564-2568, between two copies of the
    # kernel's last lines at 83.855590) are no reset: the kernel's clock goes straight on
    starts = [e.line_no for e in ring.boot.events if e.name == "bootloader_start"]
    assert starts == [1] and ring.boot.fact("bootloader").line_no == 1  # type: ignore[union-attr]


@needs_wild
def test_lines_pasted_with_far_off_stamps_stay_in_their_boot(tmp_path: Path) -> None:
    """Class N4, built from corpus 30 (one boot, dmesg to 5.3 s): three lines of another boot
    stamped ~200 s later, and three stamped ~4.5 s earlier, pasted into the middle. One boot, the
    same kernel init, and the pasted lines named. Before: each paste cut the boot in two."""
    src = wild_log("30").read_bytes().split(b"\n")
    base = analyze_paths([str(wild_log("30"))]).boots[0]
    late = [b"[  201.100000] pasted: late %d" % n for n in range(3)]
    early = [b"[    0.500000] pasted: early %d" % n for n in range(3)]
    # after L672 "[    5.031638] systemd[1]: Started Setup Virtual Console." and after L673
    lines = src[:672] + late + [src[672]] + early + src[673:]
    path = tmp_path / "pasted.log"
    path.write_bytes(b"\n".join(lines))
    (b,) = analyze_paths([str(path)]).boots
    w = _warning(b, "6 lines stamped off the printk run around them")
    assert w.endswith("lines 673–675, 677–679")
    ki = {s.name: s for s in b.stages}["kernel_init"]
    ki0 = {s.name: s for s in base.stages}["kernel_init"]
    assert (ki.duration_ns, ki.end.line_no if ki.end else None) == (ki0.duration_ns, 515)
    assert all(s.duration_ns >= 0 for s in b.silences)
    assert not any(s.line_before in range(673, 680) or s.line_after in range(673, 680) for s in b.silences)


# --------------------------------------------------------------------------------------------
# N3: decayed stamps


@needs_wild
def test_decayed_stamps_make_no_silence() -> None:
    """more/56 (Qualcomm console-ramoops): "0.160425" at L751 is a decayed 0.560425 (between
    0.558893 L749 and 0.563381 L756), "0.040000" at L64 among 0.000000 lines, "0.406133" at L504
    a decayed 0.446133. Before: a 403 ms silence at L751-756 that never happened; now the longest
    is the real 71.5 ms at L202-203 ("alternatives: patching kernel code")."""
    a = analyze_paths([str(wild_log("56"))])
    (b,) = a.boots
    assert "3 printk stamps look decayed (one bit off, out of the run of their neighbours: lines 64, 504, 751): not used for times" \
        in a.inputs[0].warnings
    top = b.silences[0]
    assert (top.line_before, top.line_after, top.duration_ns) == (202, 203, 71_507_000)
    assert not any(751 in (s.line_before, s.line_after) for s in b.silences)
    assert all(s.duration_ns >= 0 for s in b.silences)


# --------------------------------------------------------------------------------------------
# 11: invariants under mutations of corpus logs


@needs_wild
def test_a_line_stamped_4s_early_makes_no_negative_silence(tmp_path: Path) -> None:
    """11 (a): corpus 30 with a line "[    1.381888]" after L674 "[    5.310409]" (two consoles
    interleaved): no silence is negative, and none is measured from the early line."""
    src = wild_log("30").read_bytes().split(b"\n")
    lines = src[:674] + [b"[    1.381888] b: from the other console"] + src[674:]
    path = tmp_path / "interleaved.log"
    path.write_bytes(b"\n".join(lines))
    (b,) = analyze_paths([str(path)]).boots
    assert b.silences and all(s.duration_ns >= 0 for s in b.silences)
    assert not any(675 in (s.line_before, s.line_after) for s in b.silences)


def _grab_with_printk(shift_ns: int, only_line: int | None = None) -> bytes:
    out = []
    for n, line in enumerate(GRAB.read_bytes().split(b"\n"), 1):
        m = _GRAB_PRINTK.match(line)
        if m is not None and (only_line is None or n == only_line):
            us = int(m[2]) * 1_000_000 + int(m[3]) + shift_ns // 1000
            line = m[1] + b"[%5d.%06d]" % (us // 1_000_000, us % 1_000_000) + m[4]
        out.append(line)
    return b"\n".join(out)


READY = ParseOptions(markers=(MarkerSpec.parse("ready=APP READY"),))


def test_a_printk_clock_that_does_not_start_at_zero_keeps_the_stages_in_order(tmp_path: Path) -> None:
    """11 (b): the reference grabserial capture with every printk time 3.1 s later (a timer
    counting from power-on): "Starting kernel ..." arrives at 2.260787 s (L23), the kernel's
    first line at L25. Before: kernel init started at -0.628 s, before the bootloader, and the
    stages added up to 113.8% of the total, silently."""
    path = tmp_path / "late-clock.log"
    path.write_bytes(_grab_with_printk(3_100_000_000))
    (b,) = analyze_paths([str(path)], READY).boots
    st = {s.name: s for s in b.stages}
    assert st["kernel_init"].start is not None and st["kernel_init"].start.line_no == 25
    assert st["kernel_load"].start_ns == 2_260_787_000 and st["kernel_load"].end.line_no == 25
    top = [s for s in b.stages if s.parent is None and s.duration_ns is not None]
    assert all(x.end_ns <= y.start_ns for x, y in zip(top, top[1:]))
    assert b.total.duration_ns is not None and sum(s.duration_ns for s in top) <= b.total.duration_ns
    # the one warning for a kernel whose clock already ran at its first line (class 1 says it too)
    assert _warning(b, "the kernel's first line (line 25) reads 3.100000 s on the printk clock").endswith(
        "kernel init is counted from there; the time before it passed before the kernel (in firmware and "
        "bootloader, if the clock counts from reset)")


def test_a_line_whose_printk_time_disagrees_with_its_arrival_moves_nothing(tmp_path: Path) -> None:
    """11 (c): the reference grabserial capture with L2063's printk time 5 s late. Before: the
    lower envelope rested on that one line, kernel init began at -2.519 s, and the boot split in
    two (the late line read as a reset); with "Run /init" as the ready marker the total went
    negative. Now: one boot, kernel init as in the undamaged capture, the line named."""
    base = analyze_paths([str(GRAB)], READY).boots[0]
    path = tmp_path / "one-late-line.log"
    path.write_bytes(_grab_with_printk(5_000_000_000, only_line=2063))
    for opts in (READY, ParseOptions(markers=(MarkerSpec.parse("ready=Run /init"),))):
        (b,) = analyze_paths([str(path)], opts).boots
        assert b.total.duration_ns is not None and b.total.duration_ns > 0
        ki = {s.name: s for s in b.stages}["kernel_init"]
        ki0 = {s.name: s for s in base.stages}["kernel_init"]
        assert (ki.start_ns, ki.duration_ns) == (ki0.start_ns, ki0.duration_ns)
        assert _warning(b, "1 lines' printk times disagree with when they arrived").startswith(
            "1 lines' printk times disagree with when they arrived (line 2063: 6.275648 s, arrived at 3.756881 s)")
