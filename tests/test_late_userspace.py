"""Issue 28: late user space on real logs the judge found wrong (notes/final-table.md).

- b/96 (STM32MP151, quiet kernel, systemd): the one printk line is L8 @1.010185; the 45 start jobs
  after it have no time of their own, so their durations are not measured (never "0 ns").
- more/55 (Samsung last_kmsg, caller info): init (pid 1 after its exec) logs from L1676 @3.389570
  (`[3:           init:    1] [c3] SELinux: ...`); bit-decayed `swapper-0`, `(swapper/0` (L597,
  L508) are the kernel's init thread, not user space.
- c/130 (RK3568 BSP, ttyFIQ0 lags): user space printed from L596, before the kernel's
  `Run /sbin/init` L781; L782 (`EXT4-fs ... re-mounted`) is a kernel line and is not claimed.

Facts from the READMEs/MANIFESTs, checked with grep -n.
"""

from __future__ import annotations

import json

import pytest
from conftest import cli, extra_log, needs_wild, wild_log

from bootlens.core.model import Clock, Kind, Milestone, UnitDetail
from bootlens.parsers import ParseOptions
from bootlens.render.html_data import report_data
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.timeline.inputs import analyze_inputs


def _boots(path: str) -> tuple[BootAnalysis, ...]:
    return analyze_paths([path]).boots


def _milestone(b: BootAnalysis, name: str) -> tuple[int, int | None] | None:
    e = next((e for e in b.boot.events if e.kind is Kind.MILESTONE and e.name == name), None)
    if e is None:
        return None
    return e.line_no, None if e.start is None else e.start.ns


# --- b/96: durations between lines without a time of their own -----------------------------------

def test_quiet_kernel_units_not_measured() -> None:
    path = str(extra_log("96"))
    (b,) = _boots(path)
    units = [e for e in b.boot.events if e.kind is Kind.UNIT]
    spans = [e for e in units if e.end_line_no is not None]
    assert len(spans) == 45
    for e in spans:
        assert isinstance(e.detail, UnitDetail)
        assert e.duration_ns is None, (e.name, e.duration_ns)
        assert (e.detail.duration_bound, e.detail.duration_error_ns) == ("not measured", None)
        # the start: an estimate from the last printk line (L8 @1.010185), unbounded above
        assert e.start == (Clock.KERNEL, 1_010_185_000, True, None)
    etc = next(e for e in spans if e.name == "Bind mount volatile /etc")
    assert (etc.line_no, etc.end_line_no) == (37, 43)
    # no table ranks them, and the count says so
    assert b.top_units == () and b.counts.units == 0 and b.counts.units_not_measured == 45


def test_quiet_kernel_units_terminal_json_html() -> None:
    path = str(extra_log("96"))
    out = cli("analyze", path).stdout
    assert "0 ns" not in out
    assert "45 systemd units: duration not measured" in " ".join(out.split())
    doc = json.loads(cli("analyze", "--json", path).stdout)
    (jb,) = doc["boots"]
    assert jb["counts"]["units"] == 0 and jb["counts"]["units_not_measured"] == 45
    assert jb["top"]["units"] == []
    etc = next(e for e in jb["events"] + jb["untimed_events"] if e["name"] == "Bind mount volatile /etc")
    assert (etc["duration_s"], etc["duration_bound"], etc["line"], etc["end_line"]) == (None, "not measured", 37, 43)
    data = report_data(analyze_inputs([path], ParseOptions()))
    hb = data["boots"][0]
    assert hb["top"]["units"] == []
    texts = [data["names"][i] for i in hb["ev"]["i"]]
    assert sum("duration not measured" in t for t in texts) == 45


@needs_wild
def test_console_units_between_printk_lines_are_estimates() -> None:
    """A status line between two printk lines: the duration is an interval, never a bare figure."""
    (b,) = _boots(str(wild_log("60")))
    est = [e for e in b.boot.events if e.kind is Kind.UNIT and isinstance(e.detail, UnitDetail)
           and e.detail.duration_bound == "estimate"]
    # "Expecting device /dev/mmcblk0p1..." L331 lies between L330 @4.211752 and L332 @4.231757;
    # "Found device" L443 between L440 @5.684674 and L447 @5.949155: 1.452917 s to 1.737403 s
    dev = next(e for e in est if e.line_no == 331)
    assert (dev.end_line_no, dev.duration_ns) == (443, 1_452_917_000)
    assert isinstance(dev.detail, UnitDetail) and dev.detail.duration_error_ns == 284_486_000
    assert len(est) == 12
    for e in est:
        assert e.duration_ns is not None and e.duration_ns >= 0
        err = e.detail.duration_error_ns if isinstance(e.detail, UnitDetail) else 0
        assert err is None or err >= 0


# --- more/55: a Samsung caller prefix naming pid 1 after its exec -----------------------------------

@needs_wild
def test_samsung_caller_init_is_userspace() -> None:
    b = _boots(str(wild_log("55")))[0]
    assert (b.boot.first_line, b.boot.last_line) == (1, 2570)
    assert _milestone(b, Milestone.USERSPACE_FIRST) == (1676, 3_389_570_000)
    assert not any("before user space started" in r for r in b.partial_reasons)
    lines = b.boot.lines
    # the caller prefix and Spreadtrum's "[c3]" CPU tag are peeled: the message is the text
    assert lines.text[lines.index_of(1676)].startswith("SELinux: 204")
    assert lines.text[lines.index_of(1697)].startswith("init: /init")
    # decayed "swapper-0" (L597) and "(swapper/0" (L508) are the kernel's init thread
    assert lines.index_of(597) not in lines.by_init and lines.index_of(508) not in lines.by_init
    assert lines.no(lines.by_init[0]) == 1676


def test_exec_comm() -> None:
    from bootlens.read.quirks import _exec_comm
    assert [c for c in ("init", "systemd", "sh", "linuxrc", "ueventd") if not _exec_comm(c)] == []
    kernel = ("swapper", "swapper/0", "swapper/3", "sgapper", "swap0er/0", "swapper-0", "(swapper/0", "sWapper", "")
    assert [c for c in kernel if _exec_comm(c)] == []


# --- c/130: user space ahead of the kernel's exec line -------------------------------------------

def test_lagging_kernel_console_no_first_claim() -> None:
    (b,) = _boots(str(extra_log("130")))
    assert _milestone(b, Milestone.KERNEL_START) == (291, 2_102_754_000)
    run = next(e for e in b.boot.events if e.kind is Kind.MILESTONE and e.line_no == 781)
    assert run.start is not None and run.start.ns == 4_553_187_000
    first = _milestone(b, Milestone.USERSPACE_FIRST)
    assert first is None or first[0] <= 596  # never L782, a kernel line
    assert any("user space printed before the kernel's exec line (init-script status at line 666, exec at line 781)"
               in w for w in b.warnings)


@needs_wild
@pytest.mark.parametrize("num,line", [("60", None), ("62", None)])
def test_ordinary_logs_keep_their_first_line(num: str, line: int | None) -> None:
    """The lag rule is quiet on ordinary consoles: no warning, a first user-space line kept."""
    b = _boots(str(wild_log(num)))[0]
    assert not any("before the kernel's exec line" in w for w in b.warnings)
    assert _milestone(b, Milestone.USERSPACE_FIRST) is not None
