"""Framing of logs from the wild: the shared corpus read in place (../shared/corpus/wild), the
framings other tools write (LAVA, journalctl, dmesg -T/-x), stamps that are not printk, vendor
caller prefixes and host clocks that restart (grabserial -m). Golden cases for each framing are
in tests/golden/lines/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CORPUS, GOLDEN, INDEX_NEEDLES, INDEX_PREFIXES, WILD, needs_wild, wild_log

from bootlens.read import reader as L
from bootlens.core import lines as LC
from bootlens.read.reader import frame_bytes, read_path
from bootlens.core.lines import steps_back



def wild(prefix: str) -> LC.Lines:
    return read_path(str(wild_log(prefix)))[0]


def timed(lines: LC.Lines) -> list[int]:
    return [i for i, k in enumerate(lines.kernel) if k is not None]


def at(lines: LC.Lines, no: int) -> tuple[int | None, str]:
    i = lines.index_of(no)
    return lines.kernel[i], lines.text[i]


@needs_wild
def test_dmesg_T_corpus_11_on_the_kernel_clock() -> None:
    path = wild_log("11")
    lines, stats = read_path(str(path))
    assert stats.framing == "dmesg-T" and len(lines) == 754
    assert len(timed(lines)) == 754 and not lines.has_host_time()
    assert at(lines, 1) == (0, lines.text[0]) and lines.text[0].startswith("Linux version 6.12.16")
    assert at(lines, 633) == (7_000_000_000, "Freeing unused kernel image (initmem) memory: 2324K")
    assert at(lines, 635) == (7_000_000_000, "Run /init as init process")
    assert lines.kernel[lines.index_of(668)] == 8_000_000_000
    assert lines.text[lines.index_of(668)].startswith("systemd[1]: ")
    assert lines.kernel[-1] == 17_000_000_000
    assert any("1 s resolution" in w for w in stats.warnings)


@needs_wild
def test_mediatek_last_kmsg_corpus_24() -> None:
    lines = wild("24")
    assert len(lines) == 856
    t = timed(lines)
    assert len(t) == 760 and lines.no(t[0]) == 4 and lines.no(t[-1]) == 785
    assert lines.kernel[t[0]] == 4_313_843_190_000 and lines.kernel[t[-1]] == 4_530_240_690_000
    assert steps_back(lines.kernel) == []
    # the caller prefix is gone: " (0)[151:bat_thread_kthr]" and "-(0)[0:swapper/0]"
    assert at(lines, 5)[1].startswith("AvgVbat=(3987,3995)")
    assert at(lines, 4)[1].startswith("[Power/swap]DP: No enter")
    assert not [i for i in t if re.match(r"[- ]?\(\d+\)\[\d+:", lines.text[i])]
    # the ">  268.531068<" section (L786-856) is another clock: no kernel time from it
    assert all(lines.kernel[lines.index_of(no)] is None for no in range(786, 857))


@needs_wild
def test_android_2_6_priority_prefixes_corpus_26() -> None:
    lines = wild("26")
    assert len(lines) == 1400 and len(timed(lines)) == 1400
    assert at(lines, 2)[1].startswith("Linux version 2.6.36.3")
    assert at(lines, 687) == (9_091_765_000, at(lines, 687)[1]) and at(lines, 687)[1].startswith("Freeing init memory")
    assert lines.kernel[-1] == 554_462_844_000


@needs_wild
@pytest.mark.parametrize(("prefix", "n", "anchor", "walls", "first", "first_ns", "last", "last_ns"), [
    # 27: "[    3.820166] rtc_tps6591x ...: setting system clock to 2018-01-03 09:43:51 UTC" (L659);
    # L664 "[01-03 09:43:51.503] init: init first stage started!" = 3.820166 + 0.503 s; the last
    # line L893 "[01-03 11:45:22.987]" (shutdown) = 3.820166 + 7291.987 s
    ("27", 893, 659, 230, 664, 4_323_166_000, 893, 7_295_807_166_000),
    # 35: "[    4.924714] ...: setting system clock to 2017-12-31 18:41:35 UTC" (L819); L823
    # "[12-31 18:41:35.554]" = 5.478714 s; L1569 "[12-31 18:43:16.325]" = 106.249714 s
    ("35", 2301, 819, 747, 823, 5_478_714_000, 1569, 106_249_714_000),
])
def test_android_wall_clock_stamps_read_through_the_rtc(prefix: str, n: int, anchor: int, walls: int, first: int,
                                                        first_ns: int, last: int, last_ns: int) -> None:
    """last_kmsg switches to "[01-03 09:43:51.503]" wall-clock stamps (the kernel's CLOCK_REALTIME
    before what user space writes to /dev/kmsg); the RTC set that clock at a printk time, so each is
    read on the printk clock through it (issue 28, class 12), its prefix taken off the text."""
    lines = wild(prefix)
    assert len(lines) == n
    assert "setting system clock to" in lines.text[lines.index_of(anchor)]
    k, text = at(lines, first)
    assert k == first_ns and not re.match(r"\[\d\d-\d\d ", text)
    assert at(lines, last)[0] == last_ns
    left = [i for i, s in enumerate(lines.text) if re.match(r"\[\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] ", s)]
    assert left == []  # all {walls} read
    placed = [i for i in range(lines.index_of(first), lines.index_of(last) + 1) if lines.kernel[i] is not None]
    assert len(placed) == walls
    # 35's only step back is its second (cut) kernel, not a wall stamp
    assert [lines.no(i) for i, _ in steps_back(lines.kernel)] == ([] if prefix == "27" else [1571])


@needs_wild
def test_ten_millisecond_printk_of_a_3_4_kernel_corpus_25() -> None:
    lines = wild("25")
    assert at(lines, 200) == (3_390_000_000, "Freeing init memory: 128K")
    assert lines.no(timed(lines)[0]) == 35


@needs_wild
@pytest.mark.parametrize(("prefix", "no", "glued", "ns", "text"), [
    ("14", 681, "orange-os login: ", 32_006_402_000, "hdmi-audio-codec hdmi-audio-codec.2.auto: Only one"),
    ("15", 233, "(none) login: ", 1_476_188_000, "device <tmi8152> not found"),
    ("31", 231, "Section 'misc' h", 11_187_844_000, "procd: - early -"),
    ("31", 232, "as not been writ", 11_191_255_000, "procd: - watchdog -"),
])
def test_kernel_line_glued_after_console_text(prefix: str, no: int, glued: str, ns: int, text: str) -> None:
    """A kernel line written over an unterminated prompt: the kernel's time and message, and the
    prompt kept beside it (a login prompt is still there for the user-space parser)."""
    lines = wild(prefix)
    i = lines.index_of(no)
    assert lines.kernel[i] == ns and lines.text[i].startswith(text)
    assert lines.glued[i] == glued
    assert lines.console_text(i) == glued + lines.text[i]


@needs_wild
def test_torn_level_of_a_cut_ring_buffer_corpus_09() -> None:
    lines = wild("09")
    assert len(lines) == 445 and lines.text[0] == "TCP reno registered"
    assert at(lines, 79) == (None, "Freeing init memory: 112K")


@needs_wild
@pytest.mark.parametrize("path", sorted(WILD.glob("*.log")) if WILD.is_dir() else [], ids=lambda p: p.name[:2])
def test_corpus_index_stays_true_after_the_quirks_pass(path: Path) -> None:
    """The quirks pass rewrites some texts (glued and quoted stamps): the index follows."""
    text, _ = L.clean_text(path.read_bytes())
    nat = L.frame_text(text, L._detect_framing(text), INDEX_NEEDLES, INDEX_PREFIXES)
    texts = list(nat.text)
    for p in INDEX_PREFIXES:
        assert nat.starting(p) == [i for i, t in enumerate(texts) if t.startswith(p)], p
    for n in INDEX_NEEDLES:
        assert nat.grep(n) == [i for i, t in enumerate(texts) if n in t], n


def test_kselftest_quotes_are_text_and_glued_noise_is_not() -> None:
    lines, _ = read_path(str(GOLDEN / "lines" / "kselftest-quoted.log"))
    quoted = [i for i, t in enumerate(lines.text) if t.startswith(("# [", "# # ["))]
    assert len(quoted) == 2 and all(lines.kernel[i] is None for i in quoted)
    boot = lines.index_of(9)
    assert lines.kernel[boot] == 0 and lines.text[boot].startswith("Booting Linux")
    assert lines.starting("Booting Linux") == [boot]


def test_uboot_millisecond_stamps_are_not_printk() -> None:
    lines, _ = read_path(str(GOLDEN / "lines" / "uboot-ms-stamps.log"))
    ms = [i for i, t in enumerate(lines.text) if re.match(r"\[ *\d+\.\d{3}\] ", t)]
    assert len(ms) == 4 and all(lines.kernel[i] is None for i in ms)
    assert lines.kernel[lines.starting("Linux version")[0]] == 0


def test_lava_keeps_line_numbers_and_counts_dispatcher_lines() -> None:
    lines, stats = read_path(str(GOLDEN / "lines" / "lava-job.log"))
    assert stats.framing == "lava" and len(lines) == 14
    assert lines.starting("Linux version") == [8] and lines.kernel[8] == 0 and lines.host[8] == 1_900_100_000
    assert 'café "quoted"' in lines.text[8]
    assert lines.text[9] == "" and lines.kernel[9] is None  # feedback from another board
    assert any("5 dispatcher lines" in w for w in stats.warnings)


def test_wild_framings_are_framed_in_python_and_indexed() -> None:
    """The native pass declines the framings it does not know; framings.py frames them, and their
    index is the native grep of the messages."""
    native = LC.native_module()
    seen = set()
    for case in sorted((GOLDEN / "lines").glob("*.log")):
        text, _ = L.clean_text(case.read_bytes())
        framing = L._detect_framing(text)
        if framing in ("lava", "journalctl-short", "dmesg-T", "dmesg-x"):
            seen.add(framing)
            assert native.frame(text, framing, [], []) is None
            lines = L.frame_text(text, framing, INDEX_NEEDLES, INDEX_PREFIXES)
            texts = list(lines.text)
            for n in INDEX_NEEDLES:
                assert lines.grep(n) == [i for i, t in enumerate(texts) if n in t], (case.name, n)
    assert seen == {"lava", "journalctl-short", "dmesg-T", "dmesg-x"}


def _grabserial_m(src: str, pattern: str) -> tuple[str, list[int]]:
    """``src`` (grabserial -t) as grabserial -m PATTERN would have written it: at the end of a
    line matching PATTERN the base time becomes that line's start and the previous time 0, so
    the next line shows the time since the match both as elapsed and as delta. Returns the text
    and every line's original elapsed time in ns."""
    rx = re.compile(r"\[(\d+)\.(\d{6}) (-?\d+)\.(\d{6})\] ?")
    out, orig = [], []
    base = prev = 0
    for line in src.split("\n")[:-1]:
        m = rx.match(line)
        assert m is not None
        t = int(m[1] + m[2]) * 1000
        orig.append(t)
        el = t - base
        out.append(f"[{el // 10**9}.{el % 10**9 // 1000:06d} {(el - prev) / 1e9:.6f}] {line[m.end():]}")
        prev = el
        if re.match(pattern, line[m.end():]):
            base, prev = t, 0
    return "\n".join(out) + "\n", orig


def test_grabserial_restart_is_put_back_on_one_axis() -> None:
    src = (CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log").read_text()
    text, orig = _grabserial_m(src, "Starting kernel")
    lines, stats = frame_bytes("gs-m.log", text.encode())
    start = next(i for i, t in enumerate(lines.text) if t.startswith("Starting kernel"))
    assert lines.host[start + 1] == orig[start + 1] - orig[start] + orig[start]  # the line after the match
    assert lines.host == orig  # every line back on the capture's own axis, to the microsecond
    assert steps_back(lines.host) == []
    (note,) = [w for w in stats.warnings if "host clock restarted" in w]
    assert f"line {start + 2} " in note and "1 time(s)" in note


def test_grabserial_restart_every_boot_and_a_clock_stepped_back() -> None:
    src = (CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log").read_text()
    one, orig = _grabserial_m(src, "Starting kernel")
    text = one + one  # two boots, each restarting at its "Starting kernel"
    lines, stats = frame_bytes("gs-m2.log", text.encode())
    assert steps_back(lines.host) == []
    assert any("restarted 3 time(s)" in w for w in stats.warnings)  # boot 2's first line too
    # an NTP step back: negative delta, the line keeps the previous line's time
    stepped = "[5.000000 0.100000] a\n[4.500000 -0.500000] b\n[4.600000 0.100000] c\n"
    lines, _ = frame_bytes("ntp.log", stepped.encode())
    assert lines.host == [5_000_000_000, 5_000_000_000, 5_100_000_000]


def test_journalctl_short_monotonic_user_space_lines_lose_the_host_name() -> None:
    text = ("[    0.000000] board kernel: Linux version 6.6.0\n"
            "[    2.104551] board systemd[1]: systemd 254 running\n"
            "[    2.301773] board systemd-journald[95]: Journal started\n"
            "[    3.000000] board just some words here\n")
    lines = L.frame_text(text, "journalctl")
    assert lines.text == ["Linux version 6.6.0", "systemd[1]: systemd 254 running",
                          "systemd-journald[95]: Journal started", "board just some words here"]
