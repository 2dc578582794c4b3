"""The real corpus logs: every figure is checked against something anyone can recompute from
the raw file with grep (counted here with a regex over the raw lines, not with bootlens code)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CORPUS

from bootlens.timeline.analyze import Analysis, analyze_paths
from bootlens.core.model import Kind, Milestone
from bootlens.parsers import MarkerSpec, ParseOptions

LOGS = sorted(CORPUS.glob("*.log"))
READY = ParseOptions((MarkerSpec.parse("ready=APP READY"),))
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"


def grep_c(path: Path, pattern: str) -> int:
    rx = re.compile(pattern)
    with path.open("rb") as f:
        return sum(1 for raw in f if rx.search(raw.decode("utf-8", "replace")))


def run(path: Path) -> Analysis:
    return analyze_paths([str(path)], READY, top=10)


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_counts_match_grep(path: Path) -> None:
    a = run(path)
    assert len(a.boots) == 1
    b = a.boots[0]
    assert b.counts.initcalls == grep_c(path, r"initcall .* returned")
    # "calling  " right after the printk prefix; "pci DEV: calling  quirk" lines are PCI fixups
    assert b.counts.initcalls + b.counts.initcalls_unfinished == grep_c(path, r"\] calling  ")
    fixups = [e for e in b.boot.events if e.kind is Kind.FIXUP]
    assert len(fixups) == grep_c(path, r": calling  \S+ @") == grep_c(path, r": \S+ took \d+ usecs")
    assert b.counts.probes == grep_c(path, r"probe of \S+ returned")
    assert b.counts.processes == grep_c(path, r"sched_process_fork: ")
    assert not b.partial, b.partial_reasons
    ready = [e for e in b.boot.events if e.kind is Kind.MARKER and e.name == "ready"]
    # numbered as grep -n does: by \n only (the x86 logs hold a lone CR in iPXE's line)
    assert [e.line_no for e in ready] == [i for i, s in enumerate(path.read_bytes().split(b"\n"), 1)
                                          if b"APP READY" in s]


def test_x86_calling_lines_are_initcalls_and_pci_quirks() -> None:
    path = CORPUS / "qemu-x86_64-initcall.console.log"
    b = run(path).boots[0]
    assert b.counts.initcalls == 670
    # 685 "calling" lines = 670 initcalls + 15 PCI quirks, each of which reported "took"
    assert grep_c(path, r"calling  ") == 685
    assert b.counts.initcalls_unfinished == 0
    assert sum(1 for e in b.boot.events if e.kind is Kind.FIXUP) == 15


def _host_kernel_pairs(path: Path) -> list[tuple[float, float, int]]:
    rx = re.compile(r"^\[(\d+\.\d+) \d+\.\d+\] \[\s*(\d+\.\d+)\]")
    out = []
    for no, s in enumerate(path.read_text(errors="replace").split("\n"), 1):
        m = rx.match(s)
        if m:
            out.append((float(m[1]), float(m[2]), no))
    return out


def _host_time_of(path: Path, needle: str) -> tuple[float, int]:
    for no, s in enumerate(path.read_text(errors="replace").split("\n"), 1):
        if needle in s:
            return float(s[1:].split()[0]), no
    raise AssertionError(needle)


def test_grabserial_log_on_one_host_axis() -> None:
    """The issue's "done when": U-Boot with its autoboot delay, Starting kernel, the kernel load
    gap, kernel init up to Run /init and the ready marker, on one host axis."""
    b = run(GRAB).boots[0]
    al = b.alignment
    assert al.axis.value == "host" and al.origin == "first_byte"
    # kernel clock 0 on the host axis = min(host - printk) over the lines carrying both
    pairs = _host_kernel_pairs(GRAB)
    lo = min(pairs, key=lambda p: p[0] - p[1])
    k = al.anchor(al.axis.__class__("kernel"))
    assert k is not None and k.line_no == lo[2]
    assert k.offset_ns == pytest.approx((lo[0] - lo[1]) * 1e9, abs=1)

    stages = {s.name: s for s in b.stages}
    uboot_t, uboot_no = _host_time_of(GRAB, "U-Boot 2023")
    start_t, start_no = _host_time_of(GRAB, "Starting kernel")
    ready_t, ready_no = _host_time_of(GRAB, "APP READY")
    run_init = next(p for p in pairs if "Run /init" in GRAB.read_text().split("\n")[p[2] - 1])
    assert stages["bootloader"].start_ns == round(uboot_t * 1e9)
    assert stages["bootloader"].duration_ns == round((start_t - uboot_t) * 1e9)
    assert stages["kernel_load"].duration_ns == round((lo[0] - lo[1] - start_t) * 1e9)
    assert stages["kernel_init"].duration_ns == round(run_init[1] * 1e9)
    assert stages["userspace"].duration_ns == round((ready_t - (lo[0] - lo[1]) - run_init[1]) * 1e9)
    assert b.total.duration_ns == round(ready_t * 1e9) and b.total.end.endswith(str(ready_no))
    for name in ("bootloader", "kernel_load", "kernel_init", "userspace"):
        assert stages[name].status == "measured"
    assert stages["firmware"].status == "not measured"  # grabserial's t0 is the first byte

    autoboot = next(e for e in b.boot.events if e.kind is Kind.BOOTLOADER and e.name.startswith("autoboot"))
    assert 2.0e9 < (autoboot.duration_ns or 0) < 2.2e9  # U-Boot's default bootdelay=2
    assert b.silences[0].line_before == autoboot.line_no
    assert b.boot.fact("bootdelay").value == "2"  # type: ignore[union-attr]


def test_grabserial_top_initcall_is_the_largest_usecs_figure() -> None:
    text = GRAB.read_text()
    figures = [(int(m[2]), m[1]) for m in re.finditer(r"initcall (\w+)\+\S+ returned -?\d+ after (\d+) usecs", text)]
    b = run(GRAB).boots[0]
    best = max(figures)
    assert b.top_initcalls[0].name == best[1]
    assert b.top_initcalls[0].duration_ns == best[0] * 1000
    assert [e.duration_ns for e in b.top_initcalls] == sorted((e.duration_ns for e in b.top_initcalls), reverse=True)


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_kernel_facts(path: Path) -> None:
    b = run(path).boots[0]
    text = path.read_text(errors="replace")
    cmd = re.search(r"Kernel command line: (.*?)\r?$", text, re.M)
    lpj = re.search(r"\(lpj=(\d+)\)", text)
    assert cmd and lpj
    assert b.boot.fact("cmdline").value == cmd[1].strip()  # type: ignore[union-attr]
    assert b.boot.fact("lpj").value == lpj[1]  # type: ignore[union-attr]
    assert b.boot.fact("lpj_source").value == "timer"  # type: ignore[union-attr]
    assert any(e.name == Milestone.RUN_INIT for e in b.boot.events)


def test_process_tree_from_tp_printk() -> None:
    path = CORPUS / "qemu-x86_64-tp_printk.console.log"
    b = run(path).boots[0]
    execs = grep_c(path, r"sched_process_exec: ")
    procs = [e for e in b.boot.events if e.kind is Kind.PROCESS]
    assert sum(1 for e in procs if e.detail.exe is not None) == execs  # type: ignore[union-attr]
    user = [e for e in procs if not e.detail.kthread]  # type: ignore[union-attr]
    # init (pid 1) and the busybox children it forked; everything else descends from kthreadd
    assert sorted(e.detail.pid for e in user) == [1, 79, 80, 81, 82]  # type: ignore[union-attr]
    init = next(e for e in user if e.detail.pid == 1)  # type: ignore[union-attr]
    assert init.detail.exe == "/init" and init.detail.forks == 4  # type: ignore[union-attr]
    assert b.top_processes[0].detail.pid == 79  # type: ignore[union-attr]


def test_printk_only_ready_is_bounded_by_neighbours() -> None:
    path = CORPUS / "qemu-x86_64-tp_printk.console.log"
    b = run(path).boots[0]
    ready = next(e for e in b.boot.events if e.name == "ready")
    assert ready.start is not None and ready.start.estimated
    # line 471 "uptime: 1.66", line 469 [1.677858], line 470 [1.682854], line 474 [1.687897]
    assert ready.start.ns == 1_682_854_000
    assert ready.start.error_ns == 1_686_505_000 - 1_682_854_000
    assert b.total.estimated


def test_concatenated_captures_are_split_into_boots(tmp_path: Path) -> None:
    both = tmp_path / "two.log"
    both.write_bytes(GRAB.read_bytes() + b"\n" + (CORPUS / "qemu-arm64-uboot.console.log").read_bytes())
    a = run(both)
    assert len(a.boots) == 2
    assert a.boots[1].boot.split_reason == "new U-Boot banner"
    assert a.boots[0].alignment.axis.value == "host"
    assert a.boots[1].alignment.axis.value == "kernel"
    assert a.boots[0].counts.initcalls == 918
