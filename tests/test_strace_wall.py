"""An strace placed on a recorded boot by the wall clock (bootlens.sources.strace.wall): the real
qemu-arm64 trace (tests/golden/strace, README there) and its console, made into a recording
whose header's started_wall is chosen against the trace's -tt times.

The fixed points, by hand from the golden files: the console's line 254 ``uptime: 6.51 0.99``
arrived at host 10.882697 s; the trace wrote it at 03:43:34.471507 (its line 207). A recording
whose t=0 was at 03:43:23.588810 UTC therefore has the guest's clock right (the line and the
wall clock agree); one whose t=0 says 03:43:21.088810 has a board clock 2.5 s ahead of the host's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bootlens.timeline.inputs import analyze_inputs
from bootlens.core.model import Clock
from bootlens.capture.recording import Header, RecordingWriter
from bootlens.render.side.strace import strace_dict, strace_lines
from bootlens.sources.strace.summary import Summary
from bootlens.sources.strace.wall import DAY_NS, wall_ns, wall_offset

G = Path(__file__).parent / "golden" / "strace"
NS = 1_000_000_000
RIGHT = "2026-11-23T03:43:23.588810+00:00"  # t=0 when the guest's clock is right
AHEAD = "2026-11-23T03:43:21.088810+00:00"  # the host's t=0 2.5 s earlier: the board is 2.5 s ahead
LINE_OFFSET = 10_882_697_000 - (3 * 3600 + 43 * 60 + 34) * NS - 471_507_000  # console - trace at line 254
_GS = re.compile(r"^\[(\d+)\.(\d{6}) [\d.]+\] ?(.*)$")


def _recording(path: Path, started_wall: str, drop: tuple[str, ...] = ()) -> Path:
    """The golden console as a recording: one chunk per line at its grabserial -t time (made
    anew: a recording is never overwritten)."""
    path.unlink(missing_ok=True)
    w = RecordingWriter(str(path), Header("qemu-system-aarch64", None, "start", started_wall, 0))
    t = 0
    for line in (G / "qemu-arm64-console.txt").read_text().splitlines():
        m = _GS.match(line)
        assert m is not None, line
        t = int(m.group(1)) * NS + int(m.group(2)) * 1000
        if not (drop and m.group(3).startswith(drop)):
            w.chunk(t, m.group(3).encode() + b"\r\n")
    w.end(t + NS, "quit pattern")
    w.close()
    return path


def _strace(tmp_path: Path, started_wall: str, trace: Path = G / "qemu-arm64-app.strace",
            drop: tuple[str, ...] = ()) -> Summary:
    rec = _recording(tmp_path / "boot.rec", started_wall, drop)
    (group,) = analyze_inputs([str(rec), str(trace)])
    (b,) = group.analysis.boots
    assert b.supplement is not None and b.supplement.strace is not None
    return b.supplement.strace


def test_wall_ns_and_midnight() -> None:
    assert wall_ns("1970-01-02T00:00:01.000001+00:00") == DAY_NS + NS + 1000
    assert wall_ns("1970-01-01T01:00:00+01:00") == 0 and wall_ns("1970-01-01T00:00:00") == 0  # no zone: UTC
    assert wall_ns("") is None and wall_ns("yesterday") is None
    start = wall_ns("2026-11-23T23:59:58+00:00")
    assert start is not None
    # a -tt trace at 00:00:03 (3 s of day) after a recording that began 2 s before midnight: the next day
    assert wall_offset("wall", 3 * NS, 4 * NS, start, (0, 10 * NS)) == DAY_NS - start % DAY_NS == 2 * NS  # 00:00:03 is host 5 s
    # ... and one at 23:59:59 the same day
    assert wall_offset("wall", DAY_NS - NS, DAY_NS - NS, start, (0, 10 * NS)) == -(start % DAY_NS)
    assert wall_offset("epoch", 5, 6, start, (0, 1)) == -start
    assert wall_offset("relative", 5, 6, start, (0, 1)) is None and wall_offset("none", None, None, start, (0, 1)) is None


def test_line_wins_and_clock_agrees(tmp_path: Path) -> None:
    s = _strace(tmp_path, RIGHT)
    pl = s.placement
    assert pl is not None and pl.placed_by == "line" and pl.marker == "uptime: 6.51 0.99" and pl.console_line == 254
    assert pl.offset_ns == LINE_OFFSET and pl.started_wall == RIGHT
    assert pl.clock_error_ns == 0
    assert s.added_events == 4


def test_board_clock_off_by_2_5_s(tmp_path: Path) -> None:
    s = _strace(tmp_path, AHEAD)
    pl = s.placement
    assert pl is not None and pl.placed_by == "line" and pl.offset_ns == LINE_OFFSET  # the line still wins
    assert pl.clock_error_ns == 2_500_000_000
    d = strace_dict(s, {})
    assert d["placement"]["placed_by"] == "line" and d["placement"]["clock_difference_s"] == 2.5
    text = strace_lines(s, {})
    assert "  board clock - host clock: +2.500 s (by the wall clock 2.500 s later)" in text
    assert "  placed by the line 'uptime: 6.51 0.99': console line 254 = trace line 207" in text


def test_no_line_in_both_placed_by_wall_clock(tmp_path: Path) -> None:
    # the console without the app's two lines: nothing of the trace's output is on it
    s = _strace(tmp_path, RIGHT, drop=("uptime:", "APP READY"))
    pl = s.placement
    assert pl is not None and pl.placed_by == "wall clock" and pl.marker is None and pl.console_line is None
    assert pl.offset_ns == LINE_OFFSET and pl.clock_error_ns is None and pl.started_wall == RIGHT
    assert s.added_events == 4
    assert any("placed by the wall clock" in w for w in s.warnings)
    d = strace_dict(s, {})["placement"]
    assert (d["placed_by"], d["how"], d["marker"], d["started_wall"]) == ("wall clock", "wall clock", None, RIGHT)
    text = strace_lines(s, {})
    assert "  placed by the wall clock: recording started " + RIGHT in text
    # on the host axis (no offsets given: host t=0): the trace's first line 03:43:34.038710 is 10.449900 s
    assert "  trace starts at 10.450 s on the boot's axis" in strace_lines(s, {Clock.HOST: 0})


def test_trace_without_console_lines_on_the_cli(tmp_path: Path) -> None:
    # the trace's app lines changed so that the (whole) console does not show them
    trace = tmp_path / "app.strace"
    trace.write_text((G / "qemu-arm64-app.strace").read_text()
                     .replace('"uptime: 6.51 0.99\\n"', '"up: 1\\n"').replace('"APP READY\\n"', '"ok\\n"'))
    # a board 0.25 s ahead
    rec = _recording(tmp_path / "boot.rec", "2026-11-23T03:43:23.338810+00:00")
    r = subprocess.run([sys.executable, "-m", "bootlens", "analyze", "--json", str(rec), str(trace)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    boot = json.loads(r.stdout)["boots"][0]
    pl = boot["strace"]["placement"]
    assert pl["placed_by"] == "wall clock" and pl["clock_difference_s"] is None
    # unchecked: the board's 0.25 s error moves every process 0.25 s later than the line would
    assert pl["offset_s"] == pytest.approx((LINE_OFFSET + 250_000_000) / NS, abs=1e-9)
    app = next(e for e in boot["events"] if e["kind"] == "process" and e["name"] == "app")
    ready = next(e for e in boot["events"] if e["kind"] == "marker" and e["line"] == 254)
    # by the line the app was forked 143.917 ms before the uptime line (test_strace); 0.25 s later here
    assert ready["start_s"] - app["start_s"] == pytest.approx(0.143917 - 0.25, abs=1e-6)
    text = subprocess.run([sys.executable, "-m", "bootlens", "analyze", str(rec), str(trace)],
                          capture_output=True, text=True, timeout=120).stdout
    assert "placed by the wall clock: recording started 2026-11-23T03:43:23.338810+00:00" in text


def test_board_clock_far_off_is_not_used(tmp_path: Path) -> None:
    # the host's t=0 two hours after the board's: the trace would land 2 h before the console
    s = _strace(tmp_path, "2026-11-23T05:43:23.588810+00:00", drop=("uptime:", "APP READY"))
    assert s.placement is None and s.added_events == 0
    (w,) = [w for w in s.warnings if "share no line" in w]
    assert "by the wall clock it would start at -7189.550 s" in w and "not the host's" in w
    # with the line, the same clock is reported as its error
    s = _strace(tmp_path, "2026-11-23T05:43:23.588810+00:00")
    assert s.placement is not None and s.placement.clock_error_ns == -7200 * NS


def test_a_plain_log_has_no_wall_clock() -> None:
    (group,) = analyze_inputs([str(G / "qemu-arm64-console.txt"), str(G / "qemu-arm64-app.strace")])
    s = group.analysis.boots[0].supplement.strace  # type: ignore[union-attr]
    assert s is not None and s.placement is not None and s.placement.started_wall is None
    assert s.placement.clock_error_ns is None and s.placement.placed_by == "line"


def test_epoch_times_need_no_date(tmp_path: Path) -> None:
    # the golden trace with its -tt times of day rewritten as -ttt seconds since 1970 on 2026-11-23
    day = wall_ns("2026-11-23T00:00:00+00:00")
    assert day is not None

    def epoch(m: re.Match[str]) -> str:
        h, mi, sec, us = (int(g) for g in m.groups())
        ns = day + ((h * 60 + mi) * 60 + sec) * NS + us * 1000
        return f"{ns // NS}.{ns % NS // 1000:06d}"

    text = re.sub(r"(?m)(?<=^\d{3}   )(\d\d):(\d\d):(\d\d)\.(\d{6})", epoch, (G / "qemu-arm64-app.strace").read_text())
    assert "1795405414.038710 execve(" in text and " 03:43:" not in text  # 03:43:34.038710 on that day
    trace = tmp_path / "app.strace"
    trace.write_text(text)
    s = _strace(tmp_path, AHEAD, trace=trace)
    assert s.clock == "epoch" and s.placement is not None and s.placement.placed_by == "line"
    assert s.placement.clock_error_ns == 2_500_000_000
    s = _strace(tmp_path, RIGHT, trace=trace, drop=("uptime:", "APP READY"))
    assert s.placement is not None and s.placement.placed_by == "wall clock"
    assert s.placement.offset_ns == LINE_OFFSET - day  # the trace's times are epoch ns here
