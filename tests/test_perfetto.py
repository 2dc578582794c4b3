"""``bootlens report --format perfetto``: Chrome Trace Event Format JSON for ui.perfetto.dev.

Every trace is checked by a strict validator written here, independently of the renderer: the
keys each phase may carry and their types, ``dur >= 0``, every process and thread named by an
``M`` event, and slices strictly nested per thread, with the ordering and interval rules of
Perfetto's JSON importer and slice tracker (src/trace_processor/importers/json/ and
importers/common/slice_tracker.cc: events sorted by ts, a longer ``X`` first on a tie, instants
after; intervals closed on the left, open on the right; a slice that starts inside an open one
and ends after it is an overlap).

Figures of tests/data/corpus/qemu-arm64-uboot-initcall.grabserial-t.log (host axis, t=0 is the
first byte): crypto_algapi_init is called at 3.575256 s on line 2025 and returns after 166345
usecs on line 2026; kernel init runs 2.472017 s -> 3.815132 s; "APP READY" is line 2110 at
3.903449 s.
"""

from __future__ import annotations

import glob
import math
import os
import random
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest

from bootlens.timeline.inputs import analyze_inputs
from bootlens.capture.run_folder import write_run_meta
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.render.perfetto import pack_nested, render_perfetto

from conftest import CORPUS, GOLDEN

GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
CONSOLE = CORPUS / "qemu-arm64-uboot.console.log"
TP_PRINTK = CORPUS / "qemu-x86_64-tp_printk.console.log"
READY = "ready=APP READY"
LOGS = sorted(CORPUS.glob("*.log")) + sorted(GOLDEN.glob("*/*.log"))

Json = dict[str, Any]

# ------------------------------------------------------------------------------------------
# The validator

KEYS = {
    "X": {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"},
    "i": {"name", "cat", "ph", "ts", "s", "pid", "tid", "args"},
    "M": {"name", "ph", "ts", "pid", "tid", "args"},
}
META_ARG = {"process_name": "name", "thread_name": "name", "process_labels": "labels",
            "process_sort_index": "sort_index", "thread_sort_index": "sort_index"}
UNLINED = {"stage", "total"}  # a stage boundary may have no line (power-on); every event has one


class Slice(NamedTuple):
    """A slice on a thread track, in integer nanoseconds as Perfetto stores it."""

    ts: int
    dur: int
    instant: bool
    pos: int  # position in traceEvents


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_id(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31


def to_ns(us: float) -> int:
    """Microseconds to nanoseconds as Perfetto's JSON tokenizer does (CoerceToTs)."""
    return int(us) * 1000 if float(us).is_integer() else round(us * 1000)


def overlaps(slices: Sequence[Slice]) -> list[tuple[int, int]]:
    """Pairs (slice, open slice) that overlap without nesting, replaying the slice tracker."""
    order = sorted(slices, key=lambda s: (s.ts, s.instant, -s.dur, s.pos))
    stack: list[Slice] = []
    bad = []
    for s in order:
        while stack:
            top = stack[-1]
            end = top.ts + top.dur
            if end < s.ts or (end == s.ts and not (top.dur == 0 and s.dur == 0)):
                stack.pop()
            else:
                break
        bad += [(s.pos, o.pos) for o in stack if s.ts < o.ts + o.dur < s.ts + s.dur]
        stack.append(s)
    return bad


def validate(doc: Any) -> Counter[str]:
    """Check a whole trace; returns the count of events per phase (and per instant scope)."""
    assert isinstance(doc, dict) and set(doc) == {"traceEvents", "displayTimeUnit", "metadata"}
    assert doc["displayTimeUnit"] == "ms"
    assert isinstance(doc["metadata"], dict)
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    procs: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    tracks: dict[tuple[int, int], list[Slice]] = defaultdict(list)
    process_level: set[int] = set()
    counts: Counter[str] = Counter()
    last_key: tuple[int, bool, int] | None = None
    for i, ev in enumerate(events):
        assert isinstance(ev, dict), ev
        ph = ev.get("ph")
        assert ph in KEYS and set(ev) == KEYS[ph], ev
        counts[ph] += 1
        assert isinstance(ev["name"], str) and ev["name"], ev
        assert is_id(ev["pid"]) and is_id(ev["tid"]), ev
        assert is_num(ev["ts"]), ev
        args = ev["args"]
        assert isinstance(args, dict) and args, ev
        pid, tid = ev["pid"], ev["tid"]
        if ph == "M":
            assert last_key is None, f"metadata after timed events: {ev}"
            assert ev["ts"] == 0
            arg = META_ARG[ev["name"]]
            assert set(args) == {arg}, ev
            if arg == "sort_index":
                assert isinstance(args[arg], int) and not isinstance(args[arg], bool), ev
            else:
                assert isinstance(args[arg], str) and args[arg].strip(), ev
            if ev["name"].startswith("process_"):
                assert tid == pid, ev
                if ev["name"] == "process_name":
                    assert pid not in procs, f"process {pid} named twice"
                    procs[pid] = args[arg]
            elif ev["name"] == "thread_name":
                assert (pid, tid) not in threads, f"thread {pid}/{tid} named twice"
                threads[(pid, tid)] = args[arg]
            continue
        assert isinstance(ev["cat"], str) and ev["cat"], ev
        for k, v in args.items():
            assert isinstance(k, str) and isinstance(v, (str, int, float, bool)), (k, v, ev)
        if ev["cat"] not in UNLINED or "line" in args:
            assert is_id(args.get("line")), f"no source line: {ev}"
        ts = to_ns(ev["ts"])
        if ph == "X":
            assert is_num(ev["dur"]) and ev["dur"] >= 0, ev
            dur = to_ns(ev["dur"])
            tracks[(pid, tid)].append(Slice(ts, dur, False, i))
        else:
            assert ev["s"] in ("t", "p", "g"), ev
            counts["i/" + ev["s"]] += 1
            dur = 0
            if ev["s"] == "t":
                tracks[(pid, tid)].append(Slice(ts, 0, True, i))
            else:
                assert tid == pid, ev
                process_level.add(pid)
        # the file is in the order Perfetto sorts it to: a parent precedes its children
        key = (ts, ph == "i", -dur)
        assert last_key is None or last_key <= key, f"out of order at {i}: {ev}"
        last_key = key
    for pid, tid in tracks:
        assert (pid, tid) in threads, f"thread {pid}/{tid} has no thread_name"
    for pid in {p for p, _ in threads} | process_level:
        assert pid in procs, f"process {pid} has no process_name"
    tids = [t for _, t in threads]
    assert len(set(tids)) == len(tids), "a tid is used in two processes"
    assert not set(tids) & set(procs), "a tid equals a pid"
    for (pid, tid), slices in tracks.items():
        bad = overlaps(slices)
        assert not bad, f"{procs[pid]} / {threads[(pid, tid)]}: overlapping slices " + ", ".join(
            f"{events[a]['name']} x {events[b]['name']}" for a, b in bad[:5])
    return counts


# ------------------------------------------------------------------------------------------
# Helpers


def trace(*inputs: str | Path, markers: Sequence[str] = (READY,)) -> tuple[bytes, Any]:
    """render_perfetto of the inputs, as bytes and the analysed groups."""
    groups = analyze_inputs([str(p) for p in inputs], ParseOptions(tuple(MarkerSpec.parse(m) for m in markers)))
    return render_perfetto(groups), groups


def names(doc: Json) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """Process names by pid and thread names by (pid, tid)."""
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    return procs, threads


def where(doc: Json, ev: Json) -> tuple[str, str]:
    """(process name, thread name) of an event."""
    procs, threads = names(doc)
    return procs[ev["pid"]], threads.get((ev["pid"], ev["tid"]), "")


def find(doc: Json, name: str, ph: str | None = None) -> list[Json]:
    return [e for e in doc["traceEvents"] if e["name"] == name and e["ph"] != "M" and (ph is None or e["ph"] == ph)]


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bootlens.cli", *map(str, args)], capture_output=True, timeout=120)


# ------------------------------------------------------------------------------------------
# Lane packing


def lanes_nest(spans: Sequence[tuple[int, int]], lanes: Sequence[int]) -> bool:
    by_lane: dict[int, list[Slice]] = defaultdict(list)
    for i, ((s, e), lane) in enumerate(zip(spans, lanes)):
        by_lane[lane].append(Slice(s, e - s, False, i))
    return all(not overlaps(v) for v in by_lane.values())


def test_pack_nested_keeps_nesting_and_splits_overlap() -> None:
    # a parent with two children, a sibling touching it, then one that straddles the parent's end
    spans = [(0, 10), (1, 4), (4, 9), (10, 12), (8, 11), (5, 5), (10, 10)]
    lanes = pack_nested(spans)
    assert lanes == [0, 0, 0, 0, 1, 0, 0]
    assert pack_nested([]) == []
    assert pack_nested([(3, 7), (3, 7)]) == [0, 0]  # equal spans nest
    assert pack_nested([(0, 5), (2, 8), (4, 9)]) == [0, 1, 2]  # a staircase needs a lane per step


def test_pack_nested_random_spans_always_nest_per_lane() -> None:
    rng = random.Random(1234)
    for _ in range(300):
        n = rng.randrange(1, 40)
        spans = []
        for _ in range(n):
            s = rng.randrange(0, 100)
            spans.append((s, s + rng.choice([0, 0, 1, 2, 5, 10, 30, rng.randrange(0, 100)])))
        lanes = pack_nested(spans)
        assert len(lanes) == n and sorted(set(lanes)) == list(range(max(lanes) + 1))
        assert lanes_nest(spans, lanes), spans
        assert pack_nested(spans) == lanes


def test_the_validator_catches_a_partial_overlap() -> None:
    assert overlaps([Slice(0, 10, False, 0), Slice(5, 10, False, 1)]) == [(1, 0)]
    assert overlaps([Slice(0, 10, False, 0), Slice(10, 5, False, 1), Slice(2, 8, False, 2)]) == []


# ------------------------------------------------------------------------------------------
# Every log we have


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_log_is_a_valid_nested_trace(log: Path) -> None:
    data, groups = trace(log)
    doc = orjson.loads(data)
    counts = validate(doc)
    boots = [b for g in groups for b in g.analysis.boots]
    placed = sum(t is not None for b in boots for t in b.times)
    skipped = sum(t is None for b in boots for t in b.times)
    # a duration-only stage (bootloader clock, no place on the axis) is not drawn
    stages = sum(1 for b in boots for s in b.stages if s.status == "measured" and s.start_ns is not None)
    totals = sum(1 for b in boots if b.total.duration_ns is not None)
    assert doc["metadata"]["events"] == placed and doc["metadata"]["skipped_untimed"] == skipped
    assert counts["X"] + counts["i"] == placed + stages + totals
    assert len(doc["metadata"]["boots"]) == len(boots)


def test_arm64_corpus_events_and_args() -> None:
    doc = orjson.loads(trace(GRAB)[0])
    (crypto,) = find(doc, "crypto_algapi_init")
    assert crypto["ph"] == "X" and crypto["cat"] == "initcall"
    assert crypto["ts"] == 3575256 and crypto["dur"] == 166345
    assert crypto["args"] == {"line": 2025, "end_line": 2026, "clock": "kernel", "pid": 1, "ret": 0,
                              "returned": True}
    assert where(doc, crypto) == ("kernel", "initcalls · pid 1")
    procs, threads = names(doc)
    assert sorted(procs.values()) == ["boot", "bootloader", "kernel"]  # no process events: no user space
    assert doc["metadata"]["boots"][0]["stages_not_drawn"] == {"firmware": "not measured", "spl": "absent"}
    # kernel init and its sub-stages on one track, nested under the total
    (kinit,) = find(doc, "kernel init")
    (calls,) = find(doc, "initcalls", "X")
    (total,) = [e for e in doc["traceEvents"] if e.get("cat") == "total"]
    assert (kinit["ts"], kinit["dur"]) == (2472017, 1343115)
    assert kinit["tid"] == calls["tid"] == total["tid"] and where(doc, kinit) == ("boot", "stages")
    assert kinit["ts"] <= calls["ts"] and calls["ts"] + calls["dur"] <= kinit["ts"] + kinit["dur"]
    assert total["ts"] == 0 and total["dur"] == 3903449 and total["args"]["line"] == 2110
    (ready,) = find(doc, "ready")
    assert ready["ph"] == "i" and ready["s"] == "p" and ready["ts"] == 3903449 and ready["args"] == {"line": 2110}
    (autoboot,) = find(doc, "autoboot delay (2 s)")
    assert where(doc, autoboot) == ("bootloader", "bootloader steps") and autoboot["args"]["line"] == 14
    (pl011,) = find(doc, "9000000.pl011")
    assert where(doc, pl011) == ("kernel", "device probes")
    assert pl011["args"] == {"line": 566, "clock": "kernel", "device": "9000000.pl011", "ret": 0}
    (run_init,) = find(doc, "run_init")
    assert run_init["ph"] == "i" and run_init["s"] == "t" and where(doc, run_init) == ("boot", "milestones")
    # initcall_debug durations overlap the next call's printk time by a few ms: extra lanes
    assert "initcalls · pid 1 (2)" in threads.values()


def test_processes_fork_to_exit_with_their_details() -> None:
    doc = orjson.loads(trace(TP_PRINTK)[0])
    validate(doc)
    procs = [e for e in doc["traceEvents"] if e.get("cat") == "process"]
    user = [e for e in procs if not e["args"]["kthread"]]
    assert user and all(where(doc, e)[0] == "user space" for e in user)
    assert all(where(doc, e)[0] == "kernel" for e in procs if e["args"]["kthread"])
    for e in procs:
        assert {"line", "pid", "comm", "exited", "forks"} <= set(e["args"])
        assert (e["ph"] == "X") == e["args"]["exited"]  # never exited: an instant, not a made-up end
    assert any(e["args"].get("exe") for e in user)


def test_untimed_events_are_skipped_and_counted() -> None:
    data, groups = trace(CONSOLE)
    doc = orjson.loads(data)
    validate(doc)
    (b,) = groups[0].analysis.boots
    untimed = [e for e, t in zip(b.boot.events, b.times) if t is None]
    assert len(untimed) == 4 and doc["metadata"]["skipped_untimed"] == 4
    assert doc["metadata"]["boots"][0]["skipped_untimed"] == 4
    lines = {e["args"].get("line") for e in doc["traceEvents"] if e["ph"] != "M"}
    assert not lines & {e.line_no for e in untimed}


def test_several_boots_get_their_own_processes(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    for i in (1, 2):
        shutil.copy(GRAB, folder / f"boot-{i}.log")
    write_run_meta(folder, [MarkerSpec.parse(READY)])
    data, _ = trace(GOLDEN / "analyze" / "two-boots.log", folder, markers=())
    doc = orjson.loads(data)
    validate(doc)
    procs, _ = names(doc)
    assert procs[1] == "boot 1 · two-boots.log" and procs[21] == "boot 3 · two-boots.log"
    assert procs[31] == "boot 4 · boot-1.log" and procs[41] == "boot 5 · boot-2.log"
    assert procs[33] == "boot 4 · kernel" and procs[42] == "boot 5 · bootloader"
    meta = doc["metadata"]["boots"]
    assert [m["boot"] for m in meta] == [1, 2, 3, 4, 5]
    assert [m["index"] for m in meta] == [0, 1, 2, 0, 0]
    assert meta[3]["pids"] == {"boot": 31, "bootloader": 32, "kernel": 33}
    # both copies of the same log: the same events at the same times, 10 pids apart
    calls = find(doc, "crypto_algapi_init")
    assert [(e["pid"], e["ts"], e["dur"]) for e in calls] == [(33, 3575256, 166345), (43, 3575256, 166345)]
    # no --marker given: only the run folder's boots have one, from its run.json
    assert [e["pid"] for e in find(doc, "ready")] == [31, 41]


def test_same_input_same_bytes_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    r = run_cli("report", "--format", "perfetto", "--marker", READY, "-o", out, GRAB)
    assert r.returncode == 0, r.stderr.decode()
    assert b"perfetto report of 1 boot" in r.stderr
    r2 = run_cli("report", "--format", "perfetto", "--marker", READY, "-o", "-", GRAB)
    assert r2.returncode == 0 and r2.stdout == out.read_bytes() == trace(GRAB)[0]


def test_hostile_text_is_data(tmp_path: Path) -> None:
    evil = '"><img src=x onerror=alert(1)>\\'
    log = tmp_path / os.fsdecode(b"boot-\xff.log")  # not UTF-8: the name is shown with U+FFFD
    log.write_bytes(
        b"[    0.000000] Booting Linux on physical CPU 0x0\n"
        b"[    0.100000] sched_process_fork: comm=init pid=1 child_comm=x child_pid=7\n"
        + f"[    0.110000] sched_process_exec: filename=/bin/{evil} pid=7 old_pid=7\n".encode()
        + b"[    0.200000] sched_process_exit: comm=x pid=7 prio=120\n"
        b"[    0.300000] Run /init as init process\n"
        + f"[    0.400000] {evil} APP READY\n".encode()
    )
    doc = orjson.loads(trace(log)[0])
    validate(doc)
    (proc,) = [e for e in doc["traceEvents"] if e.get("cat") == "process"]
    assert proc["name"] == evil and proc["args"]["exe"] == f"/bin/{evil}"
    assert doc["metadata"]["boots"][0]["source"].endswith("boot-\ufffd.log")


# ------------------------------------------------------------------------------------------
# A real boot, and Perfetto's own importer


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-system-aarch64") is None
                    or not Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").exists(),
                    reason="qemu-system-arm and u-boot-qemu not installed (make test installs them)")
def test_real_qemu_run_folder_is_a_valid_nested_trace(tmp_path: Path) -> None:
    """Two real arm64 boots with the process trace on: hundreds of processes packed into lanes."""
    folder = tmp_path / "run"
    r = run_cli("run", "qemu-arm64", "--repeat", "2", "-o", folder, "--append",
                "trace_event=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit tp_printk")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    out = tmp_path / "run.json"
    r = run_cli("report", "--format", "perfetto", "-o", out, folder)
    assert r.returncode == 0, r.stderr.decode()
    doc = orjson.loads(out.read_bytes())
    counts = validate(doc)
    procs, _ = names(doc)
    assert {"boot 1 · user space", "boot 2 · user space", "boot 2 · bootloader"} <= set(procs.values())
    assert counts["X"] > 100
    assert len(find(doc, "ready")) == 2


def trace_processor_bin() -> str | None:
    """A trace_processor_shell to load traces with: $BOOTLENS_TRACE_PROCESSOR, one on PATH, or
    the one the perfetto package caches after its first (online) use."""
    for path in (os.environ.get("BOOTLENS_TRACE_PROCESSOR"), shutil.which("trace_processor_shell")):
        if path:
            return path
    cached = sorted(glob.glob(os.path.expanduser("~/.local/share/perfetto/prebuilts/trace_processor_shell*")))
    return next((p for p in cached if not p.endswith(".tmp") and os.access(p, os.X_OK)), None)


def test_perfettos_trace_processor_imports_every_slice(tmp_path: Path) -> None:
    tp_mod = pytest.importorskip("perfetto.trace_processor", reason="the perfetto package is not installed")
    binary = trace_processor_bin()
    if binary is None:
        pytest.skip("no trace_processor_shell (set BOOTLENS_TRACE_PROCESSOR; the perfetto package cannot "
                    "download it without network access)")
    for log in (GRAB, TP_PRINTK):
        data = trace(log)[0]
        path = tmp_path / (log.stem + ".json")
        path.write_bytes(data)
        doc = orjson.loads(data)
        expected = sum(1 for e in doc["traceEvents"] if e["ph"] != "M")
        tp = tp_mod.TraceProcessor(trace=str(path), config=tp_mod.TraceProcessorConfig(bin_path=binary))
        try:
            (row,) = list(tp.query("select count(*) as n from slice"))
            assert row.n == expected
            # json_display_time_unit is only the notice that the key was seen (and ignored)
            problems = [(r.name, r.value) for r in tp.query(
                "select name, value from stats where value > 0 and (severity in ('error', 'data_loss') "
                "or name like 'json%' or name like '%overlapping%') and name != 'json_display_time_unit'")]
            assert problems == []
            if log == GRAB:
                (row,) = list(tp.query("select dur, thread.name as thread from slice join thread_track "
                                       "on slice.track_id = thread_track.id join thread using (utid) "
                                       "where slice.name = 'crypto_algapi_init'"))
                assert (row.dur, row.thread) == (166_345_000, "initcalls · pid 1")
        finally:
            tp.close()
