"""A logic analyzer capture placed on a real console capture, end to end through the CLI.

The console is the reference target's real boot (grabserial -t, tests/data/corpus). The capture
is written here as the CSV a person would type (a power rail, a GPIO pulsed just before four
console lines, a ready GPIO), then turned into sigrok's own VCD (and CSV) by
``sigrok-cli -i ... -I csv``, so what bootlens reads is sigrok's output. Where each edge lies is
known, so the power-on -> ready figure, the alignment's offset and its residual are checked
against arithmetic done here, independently of bootlens.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from test_logic import needs_sigrok
from test_report import Loaded, browser, needs_browser, report  # noqa: F401 - browser is a fixture

CORPUS = Path(__file__).parent / "data" / "corpus"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
RATE = 10_000  # Hz: a 100 us grid
LEAD = 0.25  # s: the analyzer started this long before grabserial's t=0
POWER_AT = 0.10  # s, capture time of the power rail's rise
ALIGN_RX = "U-Boot 20|Starting kernel|Run /init|APP READY"
JITTER = (0.0003, 0.0001, 0.0005, 0.0002)  # s: the GPIO toggles this long before each line arrives
READY_EARLY = 0.002  # s: the ready GPIO rises this long before APP READY reaches the host


def grab_times(pattern: str) -> list[tuple[int, float]]:
    """(line number, grabserial elapsed seconds) of the lines matching pattern, read from the
    '[elapsed delta] ' prefix directly (not through bootlens)."""
    out = []
    for no, line in enumerate(GRAB.read_text(errors="replace").splitlines(), 1):
        m = re.match(r"\[(\d+\.\d+) \d+\.\d+\] (.*)", line)
        if m and re.search(pattern, m.group(2)):
            out.append((no, float(m.group(1))))
    return out


def sample(t: float) -> int:
    return round(t * RATE)


def write_capture(tmp: Path, jitter: tuple[float, ...] = JITTER, out: str = "vcd") -> tuple[Path, dict[str, Any]]:
    """The capture as sigrok writes it, and what the test knows about it."""
    lines = grab_times(ALIGN_RX)
    assert [n for n, _ in lines] == [3, 23, 2103, 2110]
    ready_host = lines[-1][1]
    end = sample(ready_host + LEAD + 0.2)
    vdd, gpio, ready = [0] * end, [0] * end, [0] * end
    for k in range(sample(POWER_AT), end):
        vdd[k] = 1
    rises = []
    for (_, h), j in zip(lines, jitter):
        k = sample(h + LEAD - j)
        rises.append(k)
        for x in range(k, k + 10):  # a 1 ms pulse
            gpio[x] = 1
    k_ready = sample(ready_host + LEAD - READY_EARLY)
    for x in range(k_ready, end):
        ready[x] = 1
    typed = tmp / "typed.csv"
    with typed.open("w") as f:
        f.write("VDD,GPIO,READY\n")
        f.writelines(f"{a},{b},{c}\n" for a, b, c in zip(vdd, gpio, ready))
    path = tmp / f"capture.{out}"
    r = subprocess.run([needs_sigrok(), "-i", str(typed), "-I", f"csv:samplerate={RATE}:column_formats=*l",
                        "-O", out, "-o", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    diffs = [h - k / RATE for (_, h), k in zip(lines, rises)]
    off = statistics.median(diffs)
    errs = [d - off for d in diffs]
    return path, {"offset": off, "max": max(abs(e) for e in errs),
                  "rms": (sum(e * e for e in errs) / len(errs)) ** 0.5,
                  "total": (k_ready - sample(POWER_AT)) / RATE, "power_host": sample(POWER_AT) / RATE + off,
                  "lines": [n for n, _ in lines]}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bootlens.cli", *args], capture_output=True, text=True,
                          timeout=120)


ROLES = ("--channel", "VDD=power", "--channel", "READY=ready", "--align", f"GPIO:rise={ALIGN_RX}")


def test_power_on_to_ready_from_the_analyzer_aligned_with_a_real_console(tmp_path: Path) -> None:
    vcd, known = write_capture(tmp_path)
    # sigrok's VCD of a file it read starts with its META line, then the usual header
    assert vcd.read_text().startswith(f"META samplerate: {RATE}\n$date") and "$version libsigrok" in vcd.read_text()
    r = cli("analyze", "--json", str(GRAB), str(vcd), *ROLES)
    assert r.returncode == 0, r.stderr
    b = orjson.loads(r.stdout)["boots"][0]
    la = b["logic_analyzer"]
    # the hardware's figure: two edges of one capture, whatever the alignment
    assert b["total"]["from"] == "power-on" and b["total"]["duration_s"] == pytest.approx(known["total"], abs=1e-9)
    assert b["origin"] == "power_on" and b["alignment"]["anchors"][0]["method"] == "power-on (logic analyzer)"
    al = la["alignment"]
    assert [p["line"] for p in al["pairs"]] == known["lines"]
    assert al["offset_s"] == pytest.approx(known["offset"], abs=1e-9)
    assert al["residual_max_s"] == pytest.approx(known["max"], abs=1e-9)
    assert al["residual_rms_s"] == pytest.approx(known["rms"], abs=1e-9)
    assert 0 < al["residual_max_s"] < 0.0005 and not al["poor"]
    # the console's first byte (grabserial's t=0, line 1) lies after power-on by what the alignment says
    assert la["first_byte_s"] == pytest.approx(-known["power_host"], abs=1e-9)
    assert la["power_on"]["channel"] == "VDD" and la["ready"]["channel"] == "READY"
    assert la["format"] == "sigrok vcd" and la["samplerate_hz"] == RATE
    # power-on to U-Boot's first line is the firmware stage
    fw = next(s for s in b["stages"] if s["name"] == "firmware")
    assert fw["duration_s"] == pytest.approx(la["first_byte_s"] + 0.000311, abs=1e-6)  # U-Boot is line 3
    marks = {(e["kind"], e["name"]): e for e in b["events"] if e["line"] == 0}
    assert marks[("milestone", "power_on")]["start_s"] == 0.0
    assert marks[("marker", "ready")]["start_s"] == pytest.approx(known["total"], abs=1e-9)
    assert {k: marks[("marker", "ready")][k] for k in ("channel", "edge", "role")} == \
        {"channel": "READY", "edge": "rise", "role": "ready"}
    # the terminal says where t=0 came from
    t = cli("analyze", str(GRAB), str(vcd), *ROLES)
    assert t.returncode == 0, t.stderr
    head = t.stdout.splitlines()[0]
    assert "power-on (logic analyzer) → ready: " in head and "logic analyzer READY rise" in head
    assert "residual: max |error|" in t.stdout and "console's first byte" in t.stdout
    # the critical chain ends at the hardware's ready, which no console line printed
    c = cli("analyze", "--critical-chain", str(GRAB), str(vcd), *ROLES)
    top = [ln for ln in c.stdout.splitlines() if ln.startswith("ready")]
    assert c.returncode == 0 and top == [f"ready @{known['total']:.3f}s"], c.stdout


def test_sigrok_csv_output_gives_the_same_result_and_console_ready_is_kept_beside(tmp_path: Path) -> None:
    csv, known = write_capture(tmp_path, out="csv")
    r = cli("analyze", "--json", str(GRAB), str(csv), *ROLES, "--marker", "ready=APP READY")
    assert r.returncode == 0, r.stderr
    b = orjson.loads(r.stdout)["boots"][0]
    assert b["logic_analyzer"]["format"] == "sigrok csv"
    assert b["total"]["duration_s"] == pytest.approx(known["total"], abs=1e-9)
    console = [e for e in b["events"] if e["name"] == "ready (console)"]
    assert len(console) == 1 and console[0]["line"] == 2110
    # the console's ready arrives READY_EARLY after the GPIO, give or take the residual
    assert console[0]["start_s"] - b["total"]["end_s"] == pytest.approx(READY_EARLY, abs=0.0006)


def test_a_poor_alignment_is_warned_with_its_residual(tmp_path: Path) -> None:
    vcd, known = write_capture(tmp_path, jitter=(0.0003, 0.0001, 0.030, 0.0002))
    r = cli("analyze", "--json", str(GRAB), str(vcd), *ROLES, "--align-bound", "5")
    assert r.returncode == 0, r.stderr
    al = orjson.loads(r.stdout)["boots"][0]["logic_analyzer"]["alignment"]
    assert al["poor"] and al["residual_max_s"] == pytest.approx(known["max"], abs=1e-9) and known["max"] > 0.005
    b = orjson.loads(r.stdout)["boots"][0]
    assert any("over the 5 ms bound" in w for w in b["warnings"])


def test_uart_tx_first_edge_is_the_first_console_byte(tmp_path: Path) -> None:
    typed = tmp_path / "tx.csv"
    first = grab_times("U-Boot 20")[0][1]  # line 3 is the first with bytes; grabserial's t=0 is the first byte
    k_tx, k_on = sample(0.05 + LEAD), sample(POWER_AT)
    n = k_tx + 50
    with typed.open("w") as f:
        f.write("PWR,TX\n")
        f.writelines(f"{int(k >= k_on)},{0 if k_tx <= k < k_tx + 3 else 1}\n" for k in range(n))
    vcd = tmp_path / "tx.vcd"
    r = subprocess.run([needs_sigrok(), "-i", str(typed), "-I", f"csv:samplerate={RATE}:column_formats=*l", "-O", "vcd",
                        "-o", str(vcd)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = cli("analyze", "--json", str(GRAB), str(vcd), "--channel", "PWR=power", "--align", "TX:first")
    assert r.returncode == 0, r.stderr
    b = orjson.loads(r.stdout)["boots"][0]
    la = b["logic_analyzer"]
    assert la["alignment"]["residual_max_s"] == 0 and len(la["alignment"]["pairs"]) == 1
    # grabserial's first line time is its first byte; TX's start bit is that byte
    assert la["first_byte_s"] == pytest.approx((k_tx - k_on) / RATE, abs=1e-9)
    assert first < 0.001


def test_printk_only_console_places_power_on_before_kernel_zero(tmp_path: Path) -> None:
    """A log with printk times only: the capture is aligned on the kernel clock; power-on
    falls before its 0 and the total counts from it."""
    log = CORPUS / "qemu-arm64-uboot.console.log"
    run_init = [(n, ln) for n, ln in enumerate(log.read_text(errors="replace").splitlines(), 1)
                if "Run /init" in ln]
    assert len(run_init) == 1
    k = float(re.search(r"\[\s*(\d+\.\d+)\]", run_init[0][1]).group(1))  # type: ignore[union-attr]
    typed = tmp_path / "k.csv"
    k_on, k_gpio = sample(0.1), sample(0.1 + 3.0 + k)  # kernel 0 is 3 s after power-on
    with typed.open("w") as f:
        f.write("VDD,GPIO\n")
        f.writelines(f"{int(i >= k_on)},{int(k_gpio <= i < k_gpio + 5)}\n" for i in range(k_gpio + 100))
    vcd = tmp_path / "k.vcd"
    r = subprocess.run([needs_sigrok(), "-i", str(typed), "-I", f"csv:samplerate={RATE}:column_formats=*l", "-O", "vcd",
                        "-o", str(vcd)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = cli("analyze", "--json", str(log), str(vcd), "--channel", "VDD=power", "--align", "GPIO:rise=Run /init")
    assert r.returncode == 0, r.stderr
    b = orjson.loads(r.stdout)["boots"][0]
    assert b["axis"] == "kernel" and b["logic_analyzer"]["alignment"]["clock"] == "kernel"
    assert b["alignment"]["power_on_s"] == pytest.approx(-3.0, abs=0.0001)


@pytest.mark.parametrize("args, says", [
    ((), "no alignment event: give --align"),
    (("--align", "GPIO:rise=no such line"), "no alignment event: no timed console line matches /no such line/"),
    (("--align", "NOPE:rise=APP"), "no channel 'NOPE' in this capture (channels: VDD, GPIO, READY)"),
    (("--align", "READY:fall=APP"), "no alignment event: channel READY has no falling edge"),
])
def test_what_is_missing_is_one_line(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    vcd, _ = write_capture(tmp_path)
    r = cli("analyze", str(GRAB), str(vcd), "--channel", "VDD=power", *args)
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_roles_without_a_capture_and_bad_roles_are_usage_errors() -> None:
    r = cli("analyze", str(GRAB), "--channel", "D0=power")
    assert r.returncode == 2 and "no logic analyzer capture among the inputs" in r.stderr
    r = cli("analyze", str(GRAB), "--channel", "D0=vcc")
    assert r.returncode == 2 and "ROLE one of power, reset, ready, marker" in r.stderr
    r = cli("analyze", str(GRAB), "--align", "D1:sideways=x")
    assert r.returncode == 2 and "--align D1:sideways=x" in r.stderr


@needs_browser
def test_report_timeline_draws_the_analyzer_marks(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    vcd, known = write_capture(tmp_path)
    page = Loaded(browser, report(tmp_path, str(GRAB), str(vcd), *ROLES, "--channel", "GPIO=marker:gpio"))
    try:
        assert page.errors == []
        marks = page.js("bootlens.boot.marks.map(m => [m.n, m.t])")
        names = [n for n, _ in marks]
        assert names.count("gpio") == 8 and "power_on" in names and "ready" in names
        ready_us = next(t for n, t in marks if n == "ready")
        assert ready_us == pytest.approx(known["total"] * 1e6, abs=1)
        assert page.page.inner_text("#headline").startswith("power-on → ready: ")
        page.page.screenshot(path=str(tmp_path / "logic.png"))
    finally:
        page.close()
