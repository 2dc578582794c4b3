"""Every measured figure carries its evidence (issue 28, part 1): the two lines it rests on, the
clocks they were read on, whether it is exact, an upper or lower bound, or an estimate, and the
clock's tick. Built from real logs: the project's own reference capture (tests/data/corpus, made
here with grabserial -t), corpus logs of real boards, and mutations of them where the issue found
the class that way (a console without printk times).

The facts below are grep's: in the reference capture `Starting kernel ...` is line 23 at host
2.260787 s, `Booting Linux` line 25 at host 2.652267 s (printk 0.000000), `Run /init` line 2103
at printk 1.343115 s, `APP READY` line 2110 at host 3.903449 s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CORPUS, cli, extra_log, needs_wild, wild_log
from test_report import Loaded, browser, needs_browser, report  # noqa: F401 - browser is a fixture

from bootlens.core.options import MarkerSpec, ParseOptions
from bootlens.core.ticks import tick_of
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.timeline.stages import ESTIMATE, EXACT, LOWER, UPPER

GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
READY = ParseOptions(markers=(MarkerSpec.parse("ready=APP READY"),))


def _boot(path: Path, opts: ParseOptions | None = None) -> BootAnalysis:
    (b,) = analyze_paths([str(path)], opts or ParseOptions()).boots
    return b


def _stages(b: BootAnalysis) -> dict[str, object]:
    return {s.name: s for s in b.stages}


def test_reference_capture_every_measured_figure_is_exact_with_its_lines() -> None:
    b = _boot(GRAB, READY)
    st = {s.name: s for s in b.stages}
    for s in b.stages:
        if s.status == "measured":
            assert s.evidence is not None and s.evidence.kind == EXACT, s
    kl = st["kernel_load"].evidence
    assert kl is not None and kl.clocks == ("host", "kernel")
    assert (kl.start.line_no, kl.end.line_no) == (23, 25)  # type: ignore[union-attr]
    ki = st["kernel_init"].evidence
    assert ki is not None and ki.clocks == ("kernel", "kernel") and ki.tick_ns == 1_000
    assert (ki.start.line_no, ki.end.line_no) == (25, 2103)  # type: ignore[union-attr]
    assert st["kernel_init"].duration_ns == 1_343_115_000
    t = b.total.evidence
    assert t is not None and t.kind == EXACT and t.end is not None and t.end.line_no == 2110


def test_json_quotes_the_lines_a_figure_rests_on() -> None:
    r = cli("analyze", "--json", "--marker", "ready=APP READY", str(GRAB))
    assert r.returncode == 0, r.stderr
    (boot,) = json.loads(r.stdout)["boots"]
    ev = {s["name"]: s["evidence"] for s in boot["stages"]}
    assert ev["kernel_init"]["kind"] == "exact" and ev["kernel_init"]["resolution_s"] == 1e-06
    assert ev["kernel_init"]["start"] == {"what": "kernel_start", "line": 25, "clock": "kernel", "bound": "exact",
                                          "text": "Booting Linux on physical CPU 0x0000000000 [0x411fd070]"}
    assert ev["kernel_init"]["end"]["text"] == "Run /init as init process"
    # not measured: the boundary it saw (U-Boot's banner ends the firmware), no figure
    assert ev["firmware"]["kind"] is None and ev["firmware"]["start"] is None
    assert ev["firmware"]["end"]["line"] == 3 and ev["firmware"]["end"]["clock"] == "host"
    assert ev["spl"] is None  # absent: no boundary seen at all
    assert boot["total"]["evidence"]["end"]["line"] == 2110


def test_a_console_without_printk_times_bounds_the_kernel_start(tmp_path: Path) -> None:
    """The reference capture with its printk stamps taken off (printk.time=0): the kernel's first
    line arrived when the kernel had started at the latest, so kernel load is at most 391.480 ms
    (2.652267 - 2.260787) and kernel init at least its span: marked, never given as exact."""
    text = GRAB.read_text()
    stripped = re.sub(r"^(\[[\d.]+ [\d.]+\] )\[ *\d+\.\d+\] ", r"\1", text, flags=re.M)
    assert stripped.count("\n") == text.count("\n") and "[    0.000000]" not in stripped
    log = tmp_path / "no-printk-time.log"
    log.write_text(stripped)
    b = _boot(log, READY)
    st = {s.name: s for s in b.stages}
    assert st["kernel_load"].duration_ns == 391_480_000
    assert st["kernel_load"].evidence.kind == UPPER  # type: ignore[union-attr]
    assert st["kernel_init"].evidence.kind == LOWER  # type: ignore[union-attr]
    assert st["initcalls"].evidence.kind == EXACT  # both ends host-stamped lines  # type: ignore[union-attr]
    out = cli("analyze", "--marker", "ready=APP READY", str(log)).stdout
    assert re.search(r"kernel load / decompress +2\.261 +≤ 391\.5 ms", out), out
    assert re.search(r"kernel init +2\.652 +≥ 1\.163 s", out), out


@needs_wild
def test_a_login_prompt_without_a_time_ends_a_lower_bound() -> None:
    """Corpus 13 (Orange Pi Zero2): `orange-pi-zero2 login:` (L274) has no printk time; it came
    after the last stamped line, so user space lasted at least 2.991836 s (4.628222 - 1.636386)."""
    b = _boot(wild_log("13"))
    us = _stages(b)["userspace"]
    ev = us.evidence  # type: ignore[attr-defined]
    assert ev.kind == LOWER and ev.low_ns == 2_991_836_000 and ev.high_ns is None
    assert ev.end.line_no == 274 and ev.end.estimated
    out = cli("analyze", str(wild_log("13"))).stdout
    assert re.search(r"init and user space +1\.636 +≥ 2\.992 s", out), out


@needs_wild
def test_whole_second_clocks_give_their_tick() -> None:
    """Corpus 11 (`dmesg -T`, whole seconds): kernel init 7 s is 7 s ± 1 s (issue 28, class 12)."""
    b = _boot(wild_log("11"))
    ki = _stages(b)["kernel_init"]
    assert ki.duration_ns == 7_000_000_000 and ki.evidence.tick_ns == 1_000_000_000  # type: ignore[attr-defined]
    out = cli("analyze", str(wild_log("11"))).stdout
    assert re.search(r"kernel init +0\.000 +7\.000 s ± 1\.000 s", out), out


def test_a_kernel_whose_clock_already_runs_starts_at_its_first_line(tmp_path: Path) -> None:
    """Class 1: the first kernel line reads 1.702674 s (the firmware started the timer); kernel
    init is counted from that line, not from printk 0, and a warning says where the time went."""
    log = tmp_path / "late.log"
    log.write_text("[    1.702674] Booting Linux on physical CPU 0x0\n[    1.702700] Linux version 5.10.0 (x@y) #1 SMP\n"
                   "[    3.100000] Run /init as init process\n")
    b = _boot(log)
    ki = _stages(b)["kernel_init"]
    assert ki.start_ns == 1_702_674_000 and ki.duration_ns == 1_397_326_000  # type: ignore[attr-defined]
    assert b.total.start_ns == 1_702_674_000
    assert any("reads 1.702674 s on the printk clock" in w for w in b.warnings), b.warnings


@pytest.mark.parametrize(("num", "first", "first_ns", "end", "end_ns"), [
    # Rockchip BSP 5.10 kernels (extra logs, /work/extra-logs/c/MANIFEST.md): RK3568 SG01H,
    # `[    2.102754] Booting Linux` L291, `Run /sbin/init` L781 at 4.553187
    ("130", 291, 2_102_754_000, 781, 4_553_187_000),
    # Firefly ITX-3588J: `[    1.208310] Booting Linux` L405 (after the previous boot's reboot at
    # 106.55 s), `Run /init` L1359 at 5.914444
    ("131", 405, 1_208_310_000, 1359, 5_914_444_000),
])
def test_real_kernels_whose_clock_already_runs(num: str, first: int, first_ns: int, end: int, end_ns: int) -> None:
    """Class 1 on real logs: kernel init from the kernel's first line, not from printk 0."""
    boots = analyze_paths([str(extra_log(num))], ParseOptions()).boots
    (b,) = [x for x in boots if x.boot.first_line <= first <= x.boot.last_line]
    ki = _stages(b)["kernel_init"]
    assert (ki.start.line_no, ki.end.line_no) == (first, end)  # type: ignore[attr-defined]
    assert (ki.start_ns, ki.duration_ns) == (first_ns, end_ns - first_ns)  # type: ignore[attr-defined]
    assert b.total.start_ns == first_ns
    assert any(f"reads {first_ns / 1e9:.6f} s on the printk clock" in w for w in b.warnings), b.warnings


@pytest.mark.parametrize(("values", "tick"), [
    ([0, 4_000_000, 8_000_000, 12_000_000, 16_000_000, 20_000_000, 24_000_000, 28_000_000, 32_000_000], 4_000_000),
    ([n * 1_000_000_000 for n in range(1, 12)], 1_000_000_000),
    ([1_702_674_000 + 17_000 * n for n in range(20)], 1_000),
])
def test_tick_of(values: list[int], tick: int) -> None:
    assert tick_of(values) == tick


@needs_browser
@needs_wild
def test_html_report_shows_the_evidence_on_hover(tmp_path: Path, browser) -> None:  # noqa: F811
    page = Loaded(browser, report(tmp_path, str(wild_log("13"))))
    rows = page.page.eval_on_selector_all("#t-stages tr[title]", "rs => rs.map(r => [r.cells[0].textContent, "
                                          "r.cells[2].textContent, r.title])")
    by = {label.strip(): (fig, title) for label, fig, title in rows}
    fig, title = by["init and user space"]
    assert fig == "≥ 2.992 s"
    assert title.startswith("lower bound, ±1 µs: from line 262 “Run /sbin/init as init process”") and "line 274" in title
    assert page.page.get_attribute("#headline", "title").startswith("lower bound")
    assert ESTIMATE  # the four kinds are the module's constants


@needs_wild
@pytest.mark.parametrize(("num", "run_init", "finished", "span_s"), [
    # more/37 (Pop!_OS, journalctl short): `kernel: Run /init` L759 and `Startup finished` L3133,
    # 08:20:26 -> 08:20:52; journald's `Journal started` is L1118: every entry before it carries
    # the time journald imported it (systemd says the kernel alone took 6.117 s)
    ("37", 759, 3133, 26),
])
def test_journal_entries_imported_by_journald_are_upper_bounds(num: str, run_init: int, finished: int,
                                                                span_s: int) -> None:
    """Issue 28, N2: a journal on its wall clock stamps what was logged before journald ran with
    the time journald read it; a span from such an entry is at least what it reads."""
    b = _boot(wild_log(num))
    us = _stages(b)["userspace"]
    ev = us.evidence  # type: ignore[attr-defined]
    assert (us.start.line_no, us.end.line_no) == (run_init, finished)  # type: ignore[attr-defined]
    assert ev.kind == LOWER and ev.low_ns == span_s * 1_000_000_000 and ev.tick_ns == 1_000_000_000
    assert ev.start.upper and not ev.end.upper
    assert b.total.evidence is not None and b.total.evidence.kind == LOWER


@needs_wild
def test_journal_boots_each_bound_their_user_space() -> None:
    """more/41 (8 boots in one journal): each boot's user space from its imported `Run /init`."""
    boots = analyze_paths([str(wild_log("41"))], ParseOptions()).boots
    assert len(boots) == 8
    kinds = {_stages(b)["userspace"].evidence.kind for b in boots  # type: ignore[attr-defined]
             if _stages(b)["userspace"].evidence is not None}  # type: ignore[attr-defined]
    assert kinds == {LOWER}


@needs_wild
def test_a_spl_that_loads_a_tpl_keeps_the_chain_in_line_order() -> None:
    """more/38 (Broadcom BCM6755): BootROM, SPL L25, then TPL L324, U-Boot L352: each stage ends
    where the next program starts by line (the chain's usual order, TPL before SPL, is not this
    board's)."""
    b = _boot(wild_log("38"))
    st = _stages(b)
    assert st["firmware"].end.line_no == 25  # type: ignore[attr-defined]
    assert (st["spl"].start.line_no, st["spl"].end.line_no) == (25, 324)  # type: ignore[attr-defined]
    assert (st["tpl"].start.line_no, st["tpl"].end.line_no) == (324, 352)  # type: ignore[attr-defined]
    assert (st["bootloader"].start.line_no, st["bootloader"].end.line_no) == (352, 475)  # type: ignore[attr-defined]
    assert [s.name for s in b.stages][:4] == ["firmware", "spl", "tpl", "bootloader"]  # the order they ran


def test_a_quiet_kernel_after_grabserial_bounds_its_load(tmp_path: Path) -> None:
    """Extra c/140 (tbird20d/grabserial graboutput.log.reference, BeagleBone Black, grabserial -t
    -m): `Starting kernel ...` L57 at 2.974300 s, the decompressor's `Uncompressing Linux... done,
    booting the kernel.` L59, then a quiet kernel whose first line arrives 2.38 s later. Kernel load
    ends where the printk clock's zero is placed, at the latest (no line of its own): an upper
    bound; the decompressor's line gets no duration (what follows it is the kernel's silence)."""
    b = _boot(extra_log("140"))
    kl = _stages(b)["kernel_load"]
    assert kl.evidence.kind == UPPER and kl.start.line_no == 57  # type: ignore[attr-defined]
    unc = [e for e in b.boot.events if e.name == "uncompress kernel"]
    assert [(e.line_no, e.duration_ns) for e in unc] == [(59, None)]
