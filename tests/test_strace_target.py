"""A real strace of the reference target's app start: qemu-arm64 boots with Debian's arm64
strace in the initramfs (tests/strace_target.py), the trace comes out on the console after
APP READY, and bootlens reads console + trace together (slow; CI runs it)."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest
from conftest import READY_OPTS, needs_qemu

from bootlens.sources.strace.summary import LOADER_CONFIG
from bootlens.timeline.inputs import analyze_inputs

sys.path.insert(0, str(Path(__file__).parent))
import strace_target as ST  # noqa: E402


@pytest.mark.slow
@needs_qemu
def test_strace_of_the_app_start_on_qemu_arm64(tmp_path: Path) -> None:
    t0 = time.monotonic()
    text = ST.boot_traced(str(tmp_path / "boot.rec"))
    console, trace = ST.split_console(text)
    (tmp_path / "console.log").write_text(console)
    (tmp_path / "app.strace").write_text(trace)
    assert "APP READY" in console and ST.BEGIN not in console

    (group,) = analyze_inputs([str(tmp_path / "console.log"), str(tmp_path / "app.strace")], READY_OPTS)
    (b,) = group.analysis.boots
    assert b.supplement is not None and b.supplement.strace is not None
    s = b.supplement.strace
    assert s.unparsed == 0 and s.clock == "wall" and s.has_durations

    # the tree: the init script -> strace -V and the app (through sh -c) -> cat
    by_name = {p.program: p for p in s.processes}
    rc, app, cat, tool = by_name["rc.app"], by_name["app"], by_name["cat"], by_name["strace"]
    assert rc.ppid is None and set(rc.children) == {tool.pid, app.pid}
    assert app.ppid == rc.pid and app.children == (cat.pid,) and cat.argv == ("cat", "/proc/uptime")
    assert all(p.exit_code == 0 for p in s.processes)

    # placed by the app's first line, and APP READY lands within a few ms of where the console has it
    pl = s.placement
    assert pl is not None and pl.marker.startswith("uptime: ")
    res = pl.residual("APP READY")
    assert res is not None and abs(res) < 20_000_000, res
    ready = [e for e, t in zip(b.boot.events, b.times) if e.kind.value == "process" and t is not None]
    assert len(ready) == len(s.processes)

    # figures against the text itself: the loader's failed lookups and their -T sum
    # (the loader's own configuration, /etc/ld.so.preload, is no library lookup: issue 28, class 10)
    lines = [ln for ln in trace.splitlines() if ln.startswith(f"{tool.pid} ") and "ENOENT" in ln
             and not any(f'"{c}"' in ln for c in LOADER_CONFIG)]
    (search,) = tool.searches
    assert len(search.tried) == len(lines) >= 10  # LD_LIBRARY_PATH's two missing dirs, their hwcap subdirs
    total = sum(round(float(re.search(r"<([\d.]+)>$", ln).group(1)) * 1e9) for ln in lines)  # type: ignore[union-attr]
    assert search.cost_ns == total
    assert search.found is not None and search.found.endswith("/libc.so.6")
    assert tool.loader_ns is not None and tool.loader_ns > search.cost_ns
    assert app.first_output is not None and app.first_output.startswith("uptime: ")
    assert [n.kind for n in s.needless] == ["shell"] and s.needless[0].what == "/usr/bin/app"
    assert time.monotonic() - t0 < 120
