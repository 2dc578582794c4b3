"""trace-cmd's text and .dat files, made by real tools: a golden excerpt of `trace-cmd report`
of a .dat recorded on the reference target (fast), and the whole path (slow; CI runs it):
qemu-arm64 boots with Debian's arm64 trace-cmd in the initramfs (tests/tracecmd_target.py), the
.dat comes out base64-encoded after APP READY, and `bootlens analyze console.log trace.dat`
(which reads it through the host's `trace-cmd report`) is checked against that report's text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import needs_qemu

from bootlens.sources.ftrace.reader import read_trace

sys.path.insert(0, str(Path(__file__).parent))
import tracecmd_target as TT  # noqa: E402

GOLDEN = Path(__file__).parent / "golden" / "ftrace" / "tracecmd-qemu-arm64-report.txt"
# a report line: comm-pid [cpu] ts: event:  (comm may hold spaces and dashes)
_LINE = re.compile(r"^\s*.+-\d+\s+\[(\d+)\]\s+(\d+\.\d+): (\w+):")


def _figures(report: str) -> tuple[Counter[str], float, float]:
    """Event lines by name and the first and last time, read from report text by regex alone."""
    hits = [m for m in map(_LINE.match, report.splitlines()) if m is not None]
    return Counter(m[3] for m in hits), float(hits[0][2]), float(hits[-1][2])


def _graph_of(counts: Counter[str]) -> int:
    return counts.pop("funcgraph_entry", 0) + counts.pop("funcgraph_exit", 0)


def test_tracecmd_report_golden() -> None:
    """The excerpt (README: lines 1 and 180-390 of the report): trace-cmd's padded event names,
    `#`-marked durations (>= 1 ms), unmarked ones under 10 us, `cpus=1`, per-task call stacks."""
    t = read_trace(str(GOLDEN))
    assert t.cpus == 1 and t.lines == 212
    assert not [w for w in t.warnings if "not understood" in w or "still open" in w], t.warnings
    counts, first, last = _figures(GOLDEN.read_text())
    assert (first, last) == (8.207285, 8.277496)
    assert (t.first_ns, t.last_ns) == (8_207_285_000, 8_277_496_000)
    assert _graph_of(counts) == 31
    assert dict(t.counts) == dict(counts)
    assert counts["sched_switch"] == 25 and counts["sched_stat_runtime"] == 42
    g = t.graph
    assert g is not None and g.lines == 31 and g.timed
    row = {n: (g.calls[i], g.total_ns[i], g.self_ns[i]) for i, n in enumerate(g.names)}
    # by hand: do_sys_openat2 `! 426.464 us` (line 20) + `# 2398.976 us` (line 161)
    assert row["do_sys_openat2"][:2] == (2, 2_825_440)
    # path_openat: a leaf (245.904) and a call closed by `# 2182.864 us` (line 155) with only events inside
    assert row["path_openat"] == (2, 2_428_768, 2_428_768)
    assert row["do_filp_open"] == (2, 262_560 + 2_227_344, 262_560 + 2_227_344 - 2_428_768)
    assert row["fd_install"][:2] == (2, 5_680 + 8_304)  # `5.680 us   |` (line 16): not an abstime
    # cat's fork (line 31) and exit (line 207): a process event through process.py
    (cat,) = [e for e in t.events if e.name == "cat"]
    assert cat.start.ns == 8_213_362_000 and cat.duration_ns == 62_996_000


def _need(tool: str) -> str:
    exe = shutil.which(tool)
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} missing under CI (make test installs it)")
        pytest.skip(f"{tool} not installed")
    return exe


@pytest.mark.slow
@needs_qemu
def test_tracecmd_dat_of_the_app_start_on_qemu_arm64(tmp_path: Path) -> None:
    t0 = time.monotonic()
    tracecmd = _need("trace-cmd")
    console, dat = TT.split_console(TT.boot_recorded(str(tmp_path / "boot.rec")))
    assert dat.startswith(b"\x17\x08Dtracing") and len(dat) > 10_000
    (tmp_path / "console.log").write_text(console)
    (tmp_path / "trace.dat").write_bytes(dat)
    assert "APP READY" in console and TT.BEGIN not in console

    # the host's own reading of the .dat, and figures from its text by regex
    report = subprocess.run([tracecmd, "report", "-i", str(tmp_path / "trace.dat")], capture_output=True,
                            text=True, check=True, timeout=60).stdout
    assert report.startswith("cpus=1\n")
    counts, first, last = _figures(report)
    graph_lines = _graph_of(counts)
    opens = len(re.findall(rf"\|\s+{TT.GRAPH_FUNCTION}\(\)(?: \{{|;)$", report, re.M))
    assert graph_lines > 20 and opens >= 2  # the app's shell and cat open at least one file each
    assert counts["sched_process_exec"] >= 2 and counts["irq_handler_entry"] > 0

    cli = [sys.executable, "-m", "bootlens", "analyze", "--marker", "ready=APP READY",
           "console.log", "trace.dat"]
    text = subprocess.run(cli, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "not understood" not in text.stderr and "Kernel functions" in text.stdout
    assert re.search(rf"^{TT.GRAPH_FUNCTION}\s+{opens}\s", text.stdout, re.M), text.stdout
    (b,) = json.loads(subprocess.run([*cli[:4], "--json", *cli[4:]], capture_output=True, text=True,
                                     check=True, timeout=120, cwd=tmp_path).stdout)["boots"]
    f = b["ftrace"]
    assert f["source"] == "trace.dat" and f["cpus"] == 1 and f["lines"] == len(report.splitlines())
    assert f["event_counts"] == dict(counts)
    assert (round(f["first_s"] * 1e6), round(f["last_s"] * 1e6)) == (round(first * 1e6), round(last * 1e6))
    fn = b["functions"]
    assert fn["graph_lines"] == graph_lines and fn["timed"]
    (row,) = [r for r in fn["overall"] if r["name"] == TT.GRAPH_FUNCTION]
    assert row["calls"] == opens
    # the sched_process events became the app's processes, placed on the console's axis
    procs = {e["comm"]: e for e in b["events"] if e["kind"] == "process"}
    assert f["events_added"] == len(procs) >= 2 and procs["app"]["exe"] == "/usr/bin/app"
    assert procs["cat"]["ppid"] == procs["app"]["pid"]
    assert time.monotonic() - t0 < 120


def test_tracecmd_report_empty_cpu_line(tmp_path: Path) -> None:
    """`CPU 1 is empty`: what trace-cmd report prints for a CPU that recorded nothing (the format
    string "CPU %d is empty" of Debian's trace-cmd 3.1.6, `strings /usr/bin/trace-cmd`; the
    reference target has one CPU, so the line is put into the real excerpt here): a header, not a
    line left not understood."""
    lines = GOLDEN.read_text().splitlines(keepends=True)
    path = tmp_path / "report.txt"
    path.write_text("cpus=2\nCPU 1 is empty\n" + "".join(lines[1:]))
    t, ref = read_trace(str(path)), read_trace(str(GOLDEN))
    assert t.cpus == 2 and t.warnings == ref.warnings and t.counts == ref.counts
