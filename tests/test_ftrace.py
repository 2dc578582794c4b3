"""ftrace buffers: function_graph (native scan) and event lines, the KFT table, a trace joining a
boot. Inputs are the public excerpts of tests/golden/ftrace (provenance and the grep facts these
figures were checked against are in its README.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bootlens.sources.ftrace.kft import icicle, icicle_roots, kft
from bootlens.core.model import InitcallDetail, Kind, ProcessDetail
from bootlens.sources.ftrace.reader import read_trace, sniff_ftrace
from bootlens.sources.supplements import classify

GOLD = Path(__file__).parent / "golden" / "ftrace"
CONSOLE = Path(__file__).parent / "data" / "corpus" / "qemu-arm64-uboot.console.log"
US = 1_000

def rows(path: Path) -> dict[str, tuple[int, int, int, int]]:
    g = read_trace(str(path)).graph
    assert g is not None
    return {r.name: (r.calls, r.total_ns, r.max_ns, r.self_ns) for r in kft(g).overall}


def test_depth3_kft_by_hand() -> None:
    """funcgraph -m 3 do_nanosleep: 13 lines, every figure computed by hand from the durations."""
    t = rows(GOLD / "perftools-depth3.txt")
    assert t == {
        "do_nanosleep": (1, 1_000_154_000, 1_000_154_000, 2_382),  # 1000154 - 1.919 - 1000149 - 0.699 us
        "schedule": (1, 1_000_149_000, 1_000_149_000, 6_994),  # 1000149 - 1000131 - 11.006 us
        "__schedule": (1, 1_000_131_000, 1_000_131_000, 1_000_131_000),
        "xen_evtchn_do_upcall": (1, 11_006, 11_006, 11_006),
        "hrtimer_start_range_ns": (1, 1_919, 1_919, 804),
        "__hrtimer_start_range_ns": (1, 1_115, 1_115, 1_115),
        "hrtimer_cancel": (1, 699, 699, 487),
        "hrtimer_try_to_cancel": (1, 212, 212, 212),
    }
    g = read_trace(str(GOLD / "perftools-depth3.txt")).graph
    assert g is not None
    assert [r.name for r in kft(g).overall][:3] == ["do_nanosleep", "schedule", "__schedule"]  # worst first
    assert kft(g).overall[0].avg_ns == 1_000_154_000


def test_do_sys_open() -> None:
    tr = read_trace(str(GOLD / "perftools-do_sys_open.txt"))
    assert tr.graph is not None and tr.graph.lines == 22 and tr.graph.timed
    t = rows(GOLD / "perftools-do_sys_open.txt")
    assert len(t) == 15  # 7 opened + 8 leaf functions, each called once
    assert t["do_sys_open"] == (1, 10_777, 10_777, 10_777 - (768 + 827 + 4617 + 883 + 58 + 525 + 512))
    assert t["__fsnotify_parent"] == (1, 883, 883, 883 - 83 - 63)
    assert not tr.warnings


def test_plain_context_switch() -> None:
    """The plain section: a context-switch banner between two tasks' graphs on CPU 0."""
    tr = read_trace(str(GOLD / "perftools-plain.txt"))
    g = tr.graph
    assert g is not None
    t = rows(GOLD / "perftools-plain.txt")
    # grep: 2 leaf calls of _raw_spin_lock_irqsave, 0.198 + 0.217 us
    assert t["_raw_spin_lock_irqsave"][:3] == (2, 415, 217)
    assert t["lock_hrtimer_base.isra.24"][:2] == (2, 908 + 831)
    # platfor-3210's do_nanosleep, schedule, __schedule never return in the excerpt, nor does vmstat's
    assert any("still open when the trace ended" in w for w in tr.warnings)
    assert "do_nanosleep" not in t
    # the tail comment names the function whose start is not in this task's stack
    assert "load_TLS_descriptor" in t


def test_abstime_tail_orphans() -> None:
    """-Htp: abstime column, a trace that starts 7 calls deep, 6 tails `} /* name */`."""
    tr = read_trace(str(GOLD / "perftools-abstime-tail.txt"))
    assert tr.tracer == "function_graph"
    assert tr.first_ns == 7238523_638008_000 and tr.last_ns == 7238523_638085_000
    assert any(w.startswith("6 function returns whose call was not in the buffer") for w in tr.warnings)
    t = rows(GOLD / "perftools-abstime-tail.txt")
    assert t["vfs_read"][:2] == (1, 19_354_058_000)  # "19354058 us": no decimals
    assert t["tty_read"][:2] == (1, 19_354_052_000)
    assert t["_raw_spin_lock_irqsave"][:3] == (6, 743, 220)  # grep + awk: 6 calls, 0.743 us, max 0.220
    assert t["__schedule"][1] == 19_354_026_000


def test_no_duration_column() -> None:
    tr = read_trace(str(GOLD / "perftools-noduration.txt"))
    g = tr.graph
    assert g is not None and not g.timed and g.lines == 19
    k = kft(g)
    assert k.functions == 13 and all(r.calls == 1 and r.total_ns == 0 for r in k.overall)
    assert any("without durations" in w for w in tr.warnings)


def test_events_pmgraph() -> None:
    tr = read_trace(str(GOLD / "pmgraph-standby-events.txt"))
    assert (tr.tracer, tr.cpus, tr.graph) == ("nop", 8, None)
    assert dict(tr.counts)["device_pm_callback_start"] == 20  # grep -c
    assert dict(tr.counts)["tracing_mark_write"] == 1
    assert tr.first_ns == 77_795_478_000 and tr.last_ns == 77_919_170_000
    assert not tr.warnings  # 744/744: nothing lost


def test_lost_events_irq() -> None:
    tr = read_trace(str(GOLD / "wikibook-irq-lost.txt"))
    assert any(w.startswith("2888 events lost") for w in tr.warnings)  # 61038 - 58150
    assert dict(tr.counts)["irq_handler_entry"] == 1
    assert dict(tr.counts)["stack trace lines"] == 19


def test_sched_processes() -> None:
    tr = read_trace(str(GOLD / "wikibook-exit-process.txt"))
    procs = [e for e in tr.events if e.kind is Kind.PROCESS]
    assert [e.name for e in procs] == ["whoami", "cat", "get_ftrace.sh"]
    w = procs[0]
    assert isinstance(w.detail, ProcessDetail)
    assert (w.detail.pid, w.detail.ppid, w.detail.exe) == (30082, 2181, "/usr/bin/whoami")
    assert w.duration_ns == 7_577_000 and w.detail.exec_ns == 2_721_000  # 9537.653983 - .646406, .649127
    assert (w.line_no, w.end_line_no) == (19, 36)  # the trace file's lines
    assert dict(tr.counts)["function"] == 10
    assert any(w.startswith("1 lines not understood") for w in tr.warnings)  # the book's "..." line


def test_initcall_events() -> None:
    tr = read_trace(str(GOLD / "rostedt-initcall.txt"))
    ic = [e for e in tr.events if e.kind is Kind.INITCALL]
    assert [(e.name, e.duration_ns) for e in ic] == [("fuse_len_args", 7 * US), ("wmidev_evaluate_method", 5136 * US)]
    d0, d1 = ic[0].detail, ic[1].detail
    assert isinstance(d0, InitcallDetail) and isinstance(d1, InitcallDetail)
    assert (d0.module, d0.pid, d0.ret) == ("fuse", 1, 0) and (d1.module, d1.pid, d1.ret) == ("wmi", 643, 0)
    assert ic[0].start is not None and ic[0].start.ns == 22_555_418_000


def test_sniff() -> None:
    for f in GOLD.glob("*.txt"):
        assert classify(str(f)) == (None if "console" in f.name else "ftrace"), f
    assert classify(str(CONSOLE)) is None
    assert not sniff_ftrace("[    0.000000] Booting Linux on physical CPU 0x0\n" * 20)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bootlens", *args], capture_output=True, text=True, timeout=120)


def test_trace_joins_console() -> None:
    """A console without initcall_debug gets the trace's initcall events (kernel clock = printk)."""
    r = _cli("analyze", "--json", str(CONSOLE), str(GOLD / "rostedt-initcall.txt"))
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["boots"][0]
    names = [e["name"] for e in b["events"] if e["kind"] == "initcall"]
    assert names == ["fuse_len_args", "wmidev_evaluate_method"]
    assert b["ftrace"]["events_added"] == 2 and b["ftrace"]["event_counts"]["initcall_start"] == 2
    assert "functions" not in b


def test_cli_trace_alone_kft() -> None:
    r = _cli("analyze", str(GOLD / "perftools-depth3.txt"))
    assert r.returncode == 0, r.stderr
    assert "Kernel functions: top 8 by total time (of 8; 13 function_graph lines)" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    r = _cli("analyze", "--json", str(GOLD / "perftools-depth3.txt"))
    f = json.loads(r.stdout)["boots"][0]["functions"]
    assert f["overall"][0] == {"name": "do_nanosleep", "calls": 1, "total_s": 1.000154, "average_s": 1.000154,
                               "max_s": 1.000154, "self_s": 2.382e-06}


def test_icicle_bounded() -> None:
    g = read_trace(str(GOLD / "perftools-depth3.txt")).graph
    assert g is not None
    cells = icicle(g)
    assert cells[0].name == "all" and cells[0].width_ns == 1_000_154_000
    # nodes under 0.05 % of the root's time fold into their parent: hrtimer_start_range_ns (1.919 us)
    # and hrtimer_cancel (0.699 us) of 1 s are do_nanosleep's own time in the icicle
    assert [(c.depth, c.name) for c in cells] == [(0, "all"), (1, "do_nanosleep"), (2, "schedule"),
                                                  (3, "__schedule")]
    nano = cells[1]
    assert nano.self_ns == 1_000_154_000 - 1_000_149_000
    sched = cells[2]
    assert sched.x_ns == 0 and sched.self_ns == 1_000_149_000 - 1_000_131_000  # xen_evtchn_do_upcall folded
    assert icicle_roots(g) == {}  # no do_one_initcall in this trace


def test_reference_target_blocks() -> None:
    """The first 6 do_one_initcall calls of a real boot trace of qemu-arm64 (pm-graph's options):
    three inlined initcalls show only their callees (mutex_lock/unlock, register_module_notifier),
    three are named; do_one_initcall's helpers and the interrupt entry are not initcalls."""
    tr = read_trace(str(GOLD / "qemu-arm64-pm-head.txt"))
    g = tr.graph
    assert g is not None and g.lines == 210
    assert g.block_names == ("do_one_initcall #1", "do_one_initcall #2", "do_one_initcall #3", "cpu_pm_init",
                             "cgroup_bpf_wq_init", "memory_failure_init")
    # an initcall's work: its direct calls less do_one_initcall's helpers (by hand: 30.128 + 7.040 us;
    # 25.136 + 4.224; 22.832 + 4.608 + 150.800), or the named initcall's own duration
    assert g.block_ns == (37_168, 29_360, 178_240, 145_456, 1_044_192, 112_272)
    ic = [(e.name, e.start.ns if e.start else None, e.duration_ns, e.line_no) for e in tr.events]
    assert ic == [("cpu_pm_init", 993_726_000, 145_456, 122), ("cgroup_bpf_wq_init", 994_187_000, 1_044_192, 151),
                  ("memory_failure_init", 995_956_000, 112_272, 201)]
    k = kft(g)
    assert k.initcalls[0].own.name == "cgroup_bpf_wq_init"  # worst first: 1.044 ms
    first = next(t for t in k.initcalls if t.own.name == "do_one_initcall #1")
    assert {r.name for r in first.rows} >= {"mutex_lock"}
    assert not {r.name for r in first.rows} & {"irq_enter_rcu", "do_interrupt_handler", "irq_exit_rcu",
                                                 "trace_initcall_start_cb", "initcall_blacklisted"}
    assert any(w.startswith("3 of 6 do_one_initcall calls show no initcall") for w in tr.warnings)


def test_report_icicle_in_browser(tmp_path: Path) -> None:
    """The report's icicles in headless Chromium: drawn, hover titles with the figures, no
    horizontal scroll at 1,280 px."""
    from test_report import CHROMIUM, HAVE_BROWSER

    if not HAVE_BROWSER:
        if os.environ.get("CI"):
            raise RuntimeError("CI: chromium and playwright are required")
        pytest.skip("needs chromium and playwright")
    from playwright.sync_api import sync_playwright

    out = tmp_path / "r.html"
    r = _cli("report", "-o", str(out), str(CONSOLE), str(GOLD / "qemu-arm64-pm-head.txt"))
    assert r.returncode == 0, r.stderr
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        pg = b.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(out.as_uri())
        titles = pg.eval_on_selector_all("#kft-wrap svg.icicle title", "ts => ts.map(t => t.textContent)")
        summaries = pg.eval_on_selector_all("#kft-wrap summary", "ss => ss.map(s => s.textContent)")
        width = pg.evaluate("document.documentElement.scrollWidth")
        box = pg.eval_on_selector("#kft-wrap svg.icicle rect", "r => r.getBoundingClientRect().width")
        b.close()
    assert not errors and width <= 1280 and box > 1000  # the root spans the section
    assert summaries[:2] == ["the whole trace", "initcall cgroup_bpf_wq_init · 1.0 ms"]
    assert "cpu_pm_init · total 145 µs · self 42 µs · 1 call" in titles  # 145.456 - 103.424 us


def test_dat_through_trace_cmd(tmp_path: Path) -> None:
    """A .dat file goes through Debian's trace-cmd report; one it cannot read is a one-line error
    (trace-cmd 3.1 exits 0 with no output for it), never a traceback or an empty boot."""
    import shutil

    if shutil.which("trace-cmd") is None:
        if os.environ.get("CI"):
            raise RuntimeError("CI: trace-cmd is required (Makefile APT_PACKAGES)")
        pytest.skip("needs trace-cmd")
    bad = tmp_path / "cut.dat"
    bad.write_bytes(b"\x17\x08Dtracing6\x00\x00\x00" + b"\x00" * 64)  # the magic, then nothing readable
    assert classify(str(bad)) == "ftrace"
    r = _cli("analyze", str(bad))
    assert r.returncode == 2 and "trace-cmd report could not read this .dat file" in r.stderr
    assert "Traceback" not in r.stderr


def test_console_names_untraced_initcalls() -> None:
    """With the same boot's console (initcall_debug), the 3 do_one_initcall calls whose initcall
    the graph does not show take the console's names (their `calling` lines fall in them); the
    console keeps its own initcall events. On the whole real trace all 848 blocks then carry the
    console's names in order (31 renamed)."""
    r = _cli("analyze", "--json", str(GOLD / "qemu-arm64-pm-console-head.txt"), str(GOLD / "qemu-arm64-pm-head.txt"))
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["boots"][0]
    rows = {t["name"]: (t["total_s"], t["self_s"]) for t in b["functions"]["initcalls"]}
    # self: 1044.192 - 983.856 us (alloc_workqueue); 145.456 - 103.424; an inlined initcall's self is unknown
    assert rows == {"cgroup_bpf_wq_init": (0.001044192, 6.0336e-05), "init_kprobe_trace_early": (0.00017824, None),
                    "cpu_pm_init": (0.000145456, 0.000042032), "memory_failure_init": (0.000112272, 0.000112272),
                    "trace_events_eprobe_init_early": (0.000037168, None),
                    "trace_events_synth_init_early": (0.00002936, None)}
    assert b["ftrace"]["events_added"] == 0  # the console has its initcalls
    assert any("3 do_one_initcall calls named by the console" in w for w in b["warnings"])
    # the reader's "N of M ... show no initcall of their own" is gone once the console named them all
    assert not any("show no initcall of their own" in w for w in b["warnings"]), b["warnings"]
    alone = json.loads(_cli("analyze", "--json", str(GOLD / "qemu-arm64-pm-head.txt")).stdout)["boots"][0]
    assert any("show no initcall of their own" in w for w in alone["warnings"]), alone["warnings"]


def test_mangled_traces_never_raise(tmp_path: Path) -> None:
    """Golden traces with bytes changed, cut, repeated and huge numbers spliced in: read, with
    warnings, never an exception (a panic in the native scan would surface as one)."""
    import random

    srcs = [p.read_bytes() for p in sorted(GOLD.glob("*.txt"))]
    rng = random.Random(14)
    p = tmp_path / "t.txt"
    for _ in range(150):
        b = bytearray(rng.choice(srcs))
        for _ in range(rng.randint(1, 40)):
            i = rng.randrange(len(b))
            op = rng.random()
            if op < 0.4:
                b[i] = rng.choice(b"0123456789|{}();/*-=> .\n\r\x00\xff#[]+!$@")
            elif op < 0.6:
                del b[i:i + rng.randint(1, 30)]
            elif op < 0.8:
                b[i:i] = rng.choice([b"99999999999999999999", b"} /* ", b"() {", b" | ", b"\n", b"=>", b"4294967296)"])
            else:
                j = rng.randrange(len(b))
                b[i:i] = b[j:j + 80]
        p.write_bytes(bytes(b))
        assert read_trace(str(p)).lines >= 1


def test_chunk_edges(tmp_path: Path) -> None:
    """The scan cuts lines out of 1 MiB chunks: a file without its final newline and a line
    longer than a chunk read the same as the plain file."""
    text = (GOLD / "perftools-depth3.txt").read_bytes()
    want = rows(GOLD / "perftools-depth3.txt")
    p = tmp_path / "t.txt"
    p.write_bytes(text.rstrip(b"\n"))
    assert rows(p) == want
    p.write_bytes(b" 1) " + b"x" * (3 << 20) + b"\n" + text)  # one 3 MiB line first
    tr = read_trace(str(p))
    assert rows(p) == want and tr.lines == 14
    assert any(w.startswith("1 function_graph lines not understood (the first at line 1)") for w in tr.warnings)


def test_graph_initcalls_returned_without_a_value(tmp_path: Path) -> None:
    """A function_graph trace shows that an initcall returned, not what it returned: the report
    says "returned", never "returned None" (issue 28); initcall_debug's value stays."""
    tr = read_trace(str(GOLD / "qemu-arm64-pm-head.txt"))
    assert [e.detail for e in tr.events] == [InitcallDetail(None, None, None, True)] * 3
    assert tr.events[0].detail.outcome == "returned"
    assert InitcallDetail(1, None, -19, True).outcome == "returned -19"
    assert InitcallDetail(1, None, None, False).outcome == "never returned"
    for fmt in ("html", "svg"):
        out = tmp_path / f"r.{fmt}"
        r = _cli("report", "--format", fmt, "-o", str(out), str(GOLD / "qemu-arm64-pm-head.txt"))
        assert r.returncode == 0, r.stderr
        page = out.read_text()
        assert "returned None" not in page and "cgroup_bpf_wq_init" in page
