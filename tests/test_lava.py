"""LAVA job logs as inputs, on excerpts of real dispatcher logs (tests/golden/lava/README.md).

Every figure asserted here was derived by hand from the excerpt with grep and the ``dt`` of two
records (``since``), not from bootlens: the framing keeps line numbers, the console (``target``)
lines carry the dispatcher's host time, the dispatcher's own records are counted and skipped,
the stages are spans between two records, and the total is compared with LAVA's own timing
(the ``auto-login-action`` span and the ``login-action`` result) with the difference explained.
The excerpts are named .yaml, as LAVA writes them, so test_golden's ``*/*.log`` glob leaves them
to this file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN

from bootlens.timeline.analyze import analyze_paths
from bootlens.read.reader import read_path
from bootlens.parsers import ParseOptions
from bootlens.render.jsonout import to_json_obj

LAVA = GOLDEN / "lava"
ARMV5 = LAVA / "tuxrun-armv5-versatilepb-buildroot.yaml"
X86_KERNEL = LAVA / "tuxrun-x86_64-debian12-kernel.yaml"
X86_USER = LAVA / "tuxrun-x86_64-debian12-userspace.yaml"
FVP = LAVA / "tuxrun-fvp-aemva-tfa-uboot.yaml"
CASES = (ARMV5, X86_KERNEL, X86_USER, FVP)

# what a person reads on each line: the record's dt and level, nothing of the framing's own regex
_HEAD = re.compile(r'- \{"dt": "([^"]+)", "lvl": "([a-z]+)"')


def records(path: Path) -> list[tuple[datetime, str]]:
    """(dt, lvl) of each line, line N at index N-1."""
    out = []
    for s in path.read_text().splitlines():
        m = _HEAD.match(s)
        assert m is not None, s
        out.append((datetime.fromisoformat(m[1]), m[2]))
    return out


def since(path: Path, a: int, b: int) -> float:
    """Seconds from the dt of line a to the dt of line b (µs exact)."""
    rec = records(path)
    d = rec[b - 1][0] - rec[a - 1][0]
    return d.days * 86400 + d.seconds + d.microseconds / 1e6


def boot(path: Path) -> dict[str, Any]:
    obj = to_json_obj(analyze_paths([str(path)], ParseOptions()))
    (b,) = obj["boots"]
    return b  # type: ignore[no-any-return]


def milestone(b: dict[str, Any], name: str) -> dict[str, Any]:
    (e,) = [e for e in b["events"] if e["kind"] == "milestone" and e["name"] == name]
    return e  # type: ignore[no-any-return]


def stage(b: dict[str, Any], name: str) -> dict[str, Any]:
    (s,) = [s for s in b["stages"] if s["name"] == name]
    return s  # type: ignore[no-any-return]


# prompt lines that the echo of LAVA's input ended (case, line, the record that timed the match)
PROMPTS = {ARMV5: (189, 185), X86_USER: (151, 147)}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_lines_keep_their_numbers_and_the_dispatchers_time(path: Path) -> None:
    lines, stats = read_path(str(path))
    rec = records(path)
    assert stats.framing == "lava" and len(lines) == len(rec)
    first = next(n for n, (_, lvl) in enumerate(rec, 1) if lvl == "target")
    prompt = PROMPTS.get(path)
    for n, (_, lvl) in enumerate(rec, 1):
        i = lines.index_of(n)
        if lvl != "target":
            assert lines.text[i] == "" and lines.host[i] is None and lines.kernel[i] is None, n
        elif prompt is not None and n == prompt[0]:
            assert lines.host[i] == round(since(path, first, prompt[1]) * 1e9), n
        else:
            assert lines.host[i] == round(since(path, first, n) * 1e9), n


# grep -c '"lvl": "<level>"' on each excerpt
COUNTS = {
    ARMV5: "170 target (console) lines read; 38 dispatcher lines are not console output and were skipped "
           "(28 debug, 5 info, 2 input, 3 results)",
    X86_KERNEL: "253 target (console) lines read; 20 dispatcher lines are not console output and were skipped "
                "(15 debug, 4 info, 1 results)",
    X86_USER: "158 target (console) lines read; 20 dispatcher lines are not console output and were skipped "
              "(14 debug, 1 info, 2 input, 2 results, 1 warning)",
    FVP: "129 target (console) lines read; 27 dispatcher lines are not console output and were skipped "
         "(16 debug, 9 feedback, 2 info)",
}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_dispatcher_lines_are_counted(path: Path) -> None:
    _, stats = read_path(str(path))
    assert f"LAVA job log: {COUNTS[path]}" in stats.warnings


def test_armv5_buildroot_total_against_lavas_own_timing() -> None:
    """QEMU versatilepb, kernel 5.15 without printk times: the dispatcher's clock is the only one."""
    lines, _ = read_path(str(ARMV5))
    assert all(k is None for k in lines.kernel)
    i = lines.index_of(12)
    assert lines.host[i] == 0 and lines.text[i].startswith("qemu: module audio-audio-pa not found")
    b = boot(ARMV5)
    assert b["axis"] == "host" and b["origin"] == "first_byte"
    assert milestone(b, "kernel_start")["line"] == 40
    assert milestone(b, "kernel_start")["start_s"] == pytest.approx(since(ARMV5, 12, 40), abs=1e-6)  # 0.276540
    assert milestone(b, "run_init")["line"] == 167
    assert milestone(b, "run_init")["start_s"] == pytest.approx(1.300604, abs=1e-6)
    login = milestone(b, "login_prompt")
    assert login["line"] == 189
    # the prompt is timed when LAVA matched it (line 185), 100.587 ms before its record (line 189)
    assert login["start_s"] == pytest.approx(since(ARMV5, 12, 185), abs=1e-6) == pytest.approx(5.446563, abs=1e-6)
    assert since(ARMV5, 185, 189) == pytest.approx(0.100587, abs=1e-6)
    total = b["total"]["duration_s"]
    assert total == pytest.approx(5.446563, abs=1e-6)
    # LAVA: login-action 70 -> 194, its result says 5.42; auto-login-action 9 -> 196 (6 s rounded)
    assert round(since(ARMV5, 70, 194), 2) == 5.42
    lava = since(ARMV5, 9, 196)
    assert lava == pytest.approx(5.717826, abs=1e-6)
    # LAVA's span starts before QEMU's first byte (9 -> 12) and ends after the shell prompt came (185 -> 196)
    assert total + since(ARMV5, 9, 12) + since(ARMV5, 185, 196) == pytest.approx(lava, abs=2e-6)


def test_x86_seabios_kernel_start_and_kernel_clock() -> None:
    """SeaBIOS -> kernel 6.7 on q35: reset escapes without their ESC, the kernel's first line
    glued to the setup code's, printk times aligned on the dispatcher's clock."""
    lines, stats = read_path(str(X86_KERNEL))
    assert lines.text[lines.index_of(12)] == "SeaBIOS (version 1.14.0-2)"  # was c[?7l[2J[0mSeaBIOS ...
    # "early console in setup cod" + reset + "<5>[    0.000000] Linux version ...": the stamp is
    # found past the glued text, which the line keeps aside (Lines.glued)
    i = lines.index_of(14)
    assert lines.text[i].startswith("Linux version 6.7.0-rc2-next-20231123") and lines.kernel[i] == 0
    assert lines.glued[i] == "early console in setup cod"
    assert "LAVA job log: 5 terminal escapes whose ESC byte LAVA had dropped were removed" in stats.warnings
    b = boot(X86_KERNEL)
    assert milestone(b, "firmware_banner")["line"] == 12
    load = stage(b, "kernel_load")
    assert (load["start_line"], load["end_line"]) == (13, 14)
    assert load["start_s"] == pytest.approx(since(X86_KERNEL, 12, 13), abs=1e-6)  # 0.002859 Booting from ROM
    # kernel clock 0 = the lowest (arrival - printk time): line 182, SELinux: Initializing at 0.187961
    (anchor,) = [a for a in b["alignment"]["anchors"] if a["clock"] == "kernel"]
    assert anchor["line"] == 182
    assert anchor["offset_s"] == pytest.approx(since(X86_KERNEL, 12, 182) - 0.187961, abs=1e-6)  # 0.174014
    assert milestone(b, "kernel_start")["start_s"] == pytest.approx(0.174014, abs=1e-6)
    assert milestone(b, "console_enabled")["line"] == 148


def test_x86_systemd_status_lines_read_without_their_esc() -> None:
    """Debian 12 systemd's coloured status lines: LAVA dropped the ESC bytes, the units still pair."""
    lines, _ = read_path(str(X86_USER))
    assert lines.text[lines.index_of(39)] == "[  OK  ] Created slice system-getty.slice - Slice /system/getty."
    b = boot(X86_USER)
    # grep -c '  Starting ' gives 25, grep -c '  Mounting ' gives 5
    assert b["counts"]["units"] == 30
    units = {u["name"]: u for u in b["top"]["units"]}
    # systemd cut the name ("systemd-udev-trig…" Starting, "systemd-udev-trig…e" Finished): the
    # unit is the cut name, never its description (issue 28, class 7; ".service", ".slice" and
    # ".device" all end in "e", so the type is not guessed)
    coldplug = units["systemd-udev-trig…e"]
    assert (coldplug["line"], coldplug["end_line"]) == (75, 112)
    assert coldplug["duration_s"] == pytest.approx(since(X86_USER, 75, 112), abs=1e-6)  # 0.314902
    logind = units["systemd-logind.service"]
    assert (logind["line"], logind["end_line"]) == (128, 138)
    assert logind["duration_s"] == pytest.approx(0.221269, abs=1e-6)
    login = milestone(b, "login_prompt")
    assert login["line"] == 151
    assert login["start_s"] == pytest.approx(since(X86_USER, 1, 147), abs=1e-6)  # 2.490924
    assert since(X86_USER, 147, 151) == pytest.approx(0.102086, abs=1e-6)


def test_fvp_tfa_uboot_stages_are_spans_between_records() -> None:
    """FVP: TF-A BL1/BL2/BL31, U-Boot 2021.04, kernel 5.18. The console was connected after the
    firmware had run, so TF-A's lines came in one burst (read times, not print times)."""
    b = boot(FVP)
    spl = stage(b, "spl")
    assert (spl["start_line"], spl["end_line"]) == (45, 84)
    assert spl["duration_s"] == pytest.approx(since(FVP, 45, 84), abs=1e-6)  # 0.016785: the burst
    uboot = stage(b, "bootloader")
    assert (uboot["start_line"], uboot["end_line"]) == (84, 129)
    assert uboot["start_s"] == pytest.approx(since(FVP, 21, 84), abs=1e-6)  # 0.019458
    assert uboot["duration_s"] == pytest.approx(2.403545, abs=1e-6) == pytest.approx(since(FVP, 84, 129), abs=1e-6)
    load = stage(b, "kernel_load")
    assert (load["start_line"], load["end_line"]) == (129, 131)
    assert load["duration_s"] == pytest.approx(since(FVP, 129, 131), abs=1e-6)  # 0.160907
    (anchor,) = [a for a in b["alignment"]["anchors"] if a["clock"] == "kernel"]
    assert anchor["line"] == 131 and anchor["offset_s"] == pytest.approx(since(FVP, 21, 131), abs=1e-6)


def test_log_text_in_tables_is_never_markup() -> None:
    """A console line with square brackets ("printk: bootconsole [pl11] enabled", line 135 of the
    FVP excerpt) reaches the terminal tables whole: rich must not read it as markup."""
    r = subprocess.run([sys.executable, "-m", "bootlens", "analyze", str(FVP)],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"})
    assert r.returncode == 0, r.stderr
    assert "printk: bootconsole [pl11] enabled" in r.stdout
