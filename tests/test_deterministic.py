"""The deterministic mode (issue 27 part 3): QEMU's -icount on qemu-arm64, each boot read on the
guest's own clocks, power-on placed by the guest's reset-based counter (bootlens.targets.guestclock).

The program is checked against its assembly source; the line it writes is read by the markers
parser; real boots show the mode's point: the same figures to the microsecond boot after boot,
where the host's clock wanders by percents.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from bootlens.core.model import Clock, Kind, Milestone
from bootlens.core.options import MarkerSpec, ParseOptions
from bootlens.read.reader import frame_bytes
from bootlens.targets import guestclock
from bootlens.timeline.analyze import analyze_paths
from bootlens.timeline.boots import boots_from_lines, index_keywords
from bootlens.stats.figures import statistics_of
from bootlens.targets.runs import analyze_run

from conftest import cli, needs_qemu
from test_report import browser  # noqa: F401  (the fixture, for the optimize page's test)

READY = ParseOptions((MarkerSpec.parse("ready=APP READY"),))


@pytest.mark.skipif(shutil.which("llvm-mc") is None or shutil.which("llvm-objcopy") is None,
                    reason="llvm-mc / llvm-objcopy not installed")
def test_the_machine_code_is_its_source_assembled(tmp_path: Path) -> None:
    """CODE is SOURCE assembled, byte for byte: the committed bytes cannot drift from the source."""
    (tmp_path / "g.s").write_text(guestclock.SOURCE)
    subprocess.run(["llvm-mc", "-triple=aarch64-linux-gnu", "-filetype=obj", "-o", str(tmp_path / "g.o"),
                    str(tmp_path / "g.s")], check=True)
    subprocess.run(["llvm-objcopy", "-O", "binary", "--only-section=.text", str(tmp_path / "g.o"),
                    str(tmp_path / "g.bin")], check=True)
    assert (tmp_path / "g.bin").read_bytes() == guestclock.CODE


def test_the_executable_is_one_loadable_segment() -> None:
    """An ELF64 AArch64 executable entered at its code, which one R+X PT_LOAD maps whole."""
    e = guestclock.aarch64()
    magic, cls, data, _, _, _ = struct.unpack_from("<4sBBBBB", e)
    assert (magic, cls, data) == (b"\x7fELF", 2, 1)
    etype, machine, _, entry, phoff = struct.unpack_from("<HHIQQ", e, 16)
    assert (etype, machine) == (2, 183) and phoff == 64
    ptype, flags, off, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", e, 64)
    assert (ptype, flags, off) == (1, 5, 0) and filesz == memsz == len(e)
    assert e[entry - vaddr:] == guestclock.CODE
    if shutil.which("file"):
        out = subprocess.run(["file", "-"], input=e, capture_output=True).stdout
        assert b"ELF 64-bit LSB executable, ARM aarch64" in out and b"statically linked" in out


def _boot_of(text: str, opts: ParseOptions = READY):
    lines, stats = frame_bytes("t.log", text.encode(), *index_keywords(opts))
    return boots_from_lines("t.log", lines, stats, opts)[0]


def test_a_reading_places_power_on_on_the_printk_clock() -> None:
    """'bootlens: guest clock N ticks at F Hz' at printk time T: power-on at T - N/F, a milestone
    on the kernel clock; a reading without a printk time or with 0 Hz is refused and counted."""
    text = ("[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x411fd070]\n"
            "[    0.925521] Run /init as init process\n"
            "[    2.685377] bootlens: guest clock 325062632 ticks at 62500000 Hz\n"
            "[    2.685400] APP READY\n")
    boot = _boot_of(text)
    (on,) = [e for e in boot.events if e.kind is Kind.MILESTONE and e.name == Milestone.POWER_ON]
    assert on.start is not None and on.start.clock is Clock.KERNEL and on.line_no == 3
    assert on.start.ns == 2_685_377_000 - 325062632 * 10**9 // 62_500_000 == -2_515_625_112
    assert ("guest_clock", "325062632 ticks at 62500000 Hz") in [(f.key, f.value) for f in boot.facts]
    bad = _boot_of(text.replace("[    2.685377] bootlens", "bootlens").replace("ticks at 62500000", "ticks at 0"))
    assert not [e for e in bad.events if e.name == Milestone.POWER_ON]
    assert any("guest clock" in w for w in bad.warnings), bad.warnings


def test_the_guest_axis_starts_at_power_on(tmp_path: Path) -> None:
    """A log read on the guest's clocks with a reading: t=0 is power-on, the span before the
    kernel's clock one stage, the total from power-on; without the reading, the printk axis."""
    log = tmp_path / "g.log"
    log.write_text("U-Boot 2023.01+dfsg-2+deb12u3 (Jun 22 2026 - 08:38:07 +0000)\n"
                   "Starting kernel ...\n\n"
                   "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x411fd070]\n"
                   "[    0.817000] Run /init as init process\n"
                   "[    1.879000] bootlens: guest clock 251488168 ticks at 62500000 Hz\n"
                   "[    1.879050] APP READY\n")
    b = analyze_paths([str(log)], READY._replace(guest_clock=True)).boots[0]
    assert (b.alignment.axis, b.alignment.origin, b.alignment.power_on_ns) == (Clock.KERNEL, "power_on", 0)
    stages = {s.name: s for s in b.stages}
    assert stages["pre_kernel"].duration_ns == 251488168 * 10**9 // 62_500_000 - 1_879_000_000 == 2_144_810_688
    assert "no time on this clock" in stages["pre_kernel"].label
    assert stages["kernel_init"].start_ns == 2_144_810_688 and b.total.start_ns == 0
    assert b.total.end_ns == 2_144_810_688 + 1_879_050_000 and not b.total.estimated


@needs_qemu
@pytest.mark.slow
def test_deterministic_boots_read_the_same_on_the_guest_clock(tmp_path: Path) -> None:
    """`bootlens run qemu-arm64 --deterministic --repeat 2`: run.json says to read the guest's clocks;
    both boots' power-on -> ready agree to within 1 ms (the host's time of the same boots differs by
    far more), the stages add up to the total, and the autoboot countdown's 2 s is in the span before
    the kernel."""
    out = tmp_path / "d"
    r = cli("run", "qemu-arm64", "--deterministic", "--repeat", "2", "-o", str(out), "--json", timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    meta = json.loads((out / "run.json").read_text())
    assert meta["clock"] == "guest" and meta["qemu"] == "-icount shift=0,sleep=off"
    doc = json.loads(r.stdout)
    totals = [b["total"]["duration_s"] for b in doc["boots"]]
    assert len(totals) == 2 and abs(totals[0] - totals[1]) < 1e-3, totals  # measured: 43 µs std dev over 10
    run = analyze_run(out)
    assert not run.not_ready
    for b in run.analysis.boots:
        st = {s.name: s for s in b.stages if s.duration_ns is not None}
        assert b.alignment.origin == "power_on" and b.alignment.axis is Clock.KERNEL
        assert 2.0e9 < st["pre_kernel"].duration_ns < 4.0e9  # bootdelay=2 runs on the guest's timer
        assert sum(st[n].duration_ns for n in ("pre_kernel", "kernel_init", "userspace")) == b.total.duration_ns
    # the same recordings on the host's clock: QEMU counting instructions is slower, and loose
    host = analyze_paths([str(p) for p in sorted(out.glob("boot-*.rec"))], READY).boots
    assert all(h.total.duration_ns > g.total.duration_ns for h, g in zip(host, run.analysis.boots))
    s = {x.name: x for x in statistics_of(run.analysis.boots)}
    assert s["total (power-on → ready)"].n == 2 and s["pre_kernel"].n == 2  # measured in every boot


def test_only_qemu_arm64_takes_it(tmp_path: Path) -> None:
    """A one-line error, before anything boots, where the guest's clock cannot be read."""
    r = cli("run", "board", "--port", "/dev/null", "--deterministic", "-o", str(tmp_path / "b"))
    assert r.returncode == 2 and "--deterministic is for TARGET qemu-arm64" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@needs_qemu
@pytest.mark.slow
def test_experiment_decides_on_the_guest_clock(tmp_path: Path) -> None:
    """`experiment --deterministic`: bootdelay=0 saves its countdown's 2 s on the guest's clock to
    within 10 ms, significant from 2 boots a side, and the headline says which clock it is."""
    out = tmp_path / "e"
    text = cli("experiment", "qemu-arm64", "--deterministic", "--try", "nodelay=uboot-env:bootdelay=0",
               "--repeat", "2", "-o", str(out), timeout=900)
    assert text.returncode == 0, text.stderr[-2000:]
    head = " ".join(text.stdout.splitlines()[:2])
    assert "(guest's clock)" in head and "significant" in head, text.stdout[:500]
    medians = {}
    for name in ("baseline", "nodelay"):
        assert json.loads((out / name / "run.json").read_text())["clock"] == "guest"
        s = {x.name: x for x in statistics_of(analyze_run(out / name).analysis.boots)}
        medians[name] = s["total (power-on → ready)"].median
    assert abs(medians["baseline"] - medians["nodelay"] - 2e9) < 10e6, medians


@needs_qemu
@pytest.mark.slow
def test_optimize_decides_on_the_guest_clock_and_reports_in_host_time(tmp_path: Path,
                                                                      request: pytest.FixtureRequest) -> None:
    """optimize on the deterministic target, two rules, 2 boots a side: both changes are kept on the
    guest's clock (the countdown's 2 s, the sleep's 1 s, each within 5% of its estimate); the
    before/after is booted again without -icount (host-clock/, run.json without "clock"), and its
    page lists each change tried, its estimate beside its measurement, drawn in Chromium."""
    from test_experiment import NoSleep
    from test_report import HAVE_BROWSER, Loaded

    from bootlens.advise import RuleRegistry
    from bootlens.advise.rules.uboot_autoboot import AutobootDelay
    from bootlens.experiment.optimize import optimize
    from bootlens.render.experiment import clock_of, tried_rows
    from bootlens.render.html import render_compare_html
    from bootlens.targets.qemu import QemuTarget, setup

    reg = RuleRegistry()
    reg.register(AutobootDelay)
    reg.register(NoSleep)
    r = optimize(QemuTarget(setup("qemu-arm64"), deterministic=True), tmp_path / "o", 2, reg)
    rows = {t["rule"]: t for t in tried_rows(r)}
    assert set(rows) == {"uboot.autoboot_delay", "test.needless_sleep"}
    for rule, saved in (("uboot.autoboot_delay", 2.0), ("test.needless_sleep", 1.0)):
        t = rows[rule]
        assert t["kept"] and t["clock"] == "guest" and t["boots"] == 2, t
        assert abs(t["saving_s"] - saved) < 0.05 * saved and abs(t["error_pct"]) < 5, t
    assert r.final_baseline is not None and r.final_outcome is not None
    assert r.final_baseline.folder == tmp_path / "o" / "host-clock" / "baseline"
    assert clock_of(r.final_baseline) == clock_of(r.final_outcome.measured) == "host"
    assert "clock" not in json.loads((r.final_baseline.folder / "run.json").read_text())
    assert (r.final_outcome.saving_ns or 0) > 2.0e9  # both changes (about 3.2 s), in host time
    assert any(n.startswith("decided on the guest's clocks") for n in r.notes)
    assert r.comparison is not None
    page = tmp_path / "before-after.html"
    page.write_bytes(render_compare_html(r.comparison, tried_rows(r)))
    if not HAVE_BROWSER:
        pytest.skip("needs chromium and playwright for the page")
    p = Loaded(request.getfixturevalue("browser"), page, 1280, 900)  # test_report's page, opened offline
    cells = p.page.eval_on_selector_all("#t-tried tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    hint = p.page.text_content("#tried-hint") or ""
    p.page.screenshot(path=str(tmp_path / "before-after.png"), full_page=True)
    errors = p.errors
    p.close()
    assert not errors and len(cells) == 2, (errors, cells)
    by_rule = {c[1]: c for c in cells}
    assert by_rule["uboot.autoboot_delay"][3] == "2.000 s" and by_rule["uboot.autoboot_delay"][7] == "yes"
    assert "guest's clock" in hint
