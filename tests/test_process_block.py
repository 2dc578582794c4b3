"""Process events as rows of the native block (kind 3, docs/performance.md step 24b): every
reader gives for a boot whose process events are block rows what it gives for the same boot with
its events as a plain tuple (the pure-Python path, as other parsers' processes take it), on every
real log with process events."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import CORPUS, GOLDEN, SHARED_CORPUS as SHARED

from bootlens.timeline.analyze import BootAnalysis, analyze_boot, analyze_paths
from bootlens.timeline.inputs import Group
from bootlens.core.model import Clock, Event, Events, Kind, ProcessDetail, Stamp

ADVISE = CORPUS.parent / "advise"


def _logs() -> list[Path]:
    """The logs with sched_process trace lines: the corpus (shared and the tests'), golden, advise."""
    cands = [*sorted(SHARED.glob("*.log")), *sorted(SHARED.glob("wild/*.log")), *sorted(CORPUS.glob("*.log")),
             *sorted(GOLDEN.rglob("*.log")), *sorted(ADVISE.glob("*.log"))]
    return [p for p in cands if b"sched_process_" in p.read_bytes()]


LOGS = _logs()


def _plain(b: BootAnalysis, extra: tuple[Event, ...] = ()) -> tuple[BootAnalysis, BootAnalysis]:
    """(the boot analysed with its block, the same boot's events as a plain tuple analysed), with
    ``extra`` events added to both (as a supplement's are)."""
    boot = b.boot
    if extra:
        boot = boot.replace(events=boot.events + extra)
    plain = boot.replace(events=tuple(boot.events))
    return analyze_boot(boot), analyze_boot(plain)


def _same_analysis(a: BootAnalysis, p: BootAnalysis) -> None:
    assert isinstance(a.boot.events, Events) and a.boot.events.block is not None
    assert not isinstance(p.boot.events, Events)
    assert list(a.times) == list(p.times)
    for f in ("stages", "total", "top_initcalls", "top_probes", "top_processes", "counts", "warnings"):
        assert getattr(a, f) == getattr(p, f), f


def _json(a: BootAnalysis) -> bytes:
    from bootlens.timeline.analyze import Analysis
    from bootlens.render.jsonout import write_json

    out = io.BytesIO()
    write_json(Analysis((), (a,)), out)
    return out.getvalue()


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_process_rows_read_as_the_plain_events(log: Path) -> None:
    """The process events are block rows (each a ProcessDetail's event when built); the analysis,
    its JSON, the report's data, the process tree and the advice are those of the plain tuple."""
    from bootlens.advise.context import context_for_group
    from bootlens.advise.summary import advise_group
    from bootlens.advise.userspace import ProcTree
    from bootlens.render.html_data import report_data

    an = analyze_paths([str(log)])
    for b in an.boots:
        ev = b.boot.events
        if not isinstance(ev, Events) or ev.block is None or not ev.count(Kind.PROCESS):
            continue
        assert not ev.others_of(Kind.PROCESS)  # every process event is a row
        assert all(type(e.detail) is ProcessDetail for e in ev.of_kind(Kind.PROCESS))
        a, p = _plain(b)
        _same_analysis(a, p)
        assert _json(a) == _json(p)
        ta, tp = ProcTree(a), ProcTree(p)
        assert ta.procs == tp.procs
        assert [[c.index for c in ta.children(x)] for x in ta.procs] == [[c.index for c in tp.children(x)]
                                                                        for x in tp.procs]
        assert [None if (q := ta.parent(x)) is None else q.index for x in ta.procs] == \
               [None if (q := tp.parent(x)) is None else q.index for x in tp.procs]
        ga = Group(str(log), an._replace(boots=(a,)), False)
        gp = Group(str(log), an._replace(boots=(p,)), False)
        assert json.dumps(report_data([ga], 25)) == json.dumps(report_data([gp], 25))
        ctx = context_for_group(ga)
        fa, fp = advise_group(ga, ctx), advise_group(gp, ctx)
        assert [x.findings for x in fa.boots] == [x.findings for x in fp.boots]
        assert fa.merged == fp.merged and fa.warnings == fp.warnings


def test_block_rows_and_python_process_events_together() -> None:
    """Process events of another source (a bootchart's, strace's) added to a boot whose trace's
    are rows: the readers see both, as they see the same events as a plain tuple."""
    from bootlens.advise.userspace import ProcTree
    from bootlens.render.html_data import report_data

    log = next(p for p in LOGS if p.name == "qemu-x86_64-tp_printk.console.log")
    an = analyze_paths([str(log)])
    b = an.boots[0]
    rows = b.boot.events.of_kind(Kind.PROCESS)
    first = rows[len(rows) // 2]
    assert first.start is not None
    extra = (
        Event(Kind.PROCESS, "late", Stamp(first.start.clock, first.start.ns + 5), 7_000_000, 0, None,
              ProcessDetail(4242, 1, "late", "/usr/bin/late", False, 1000, True, 0)),
        Event(Kind.PROCESS, "kth", Stamp(Clock.KERNEL, first.start.ns + 9), None, 0, None,
              ProcessDetail(4243, 2, "kth", None, True, None, False, 0)),
        Event(Kind.PROCESS, "bare", None, None, 0, None, None),
    )
    a, p = _plain(b, extra)
    assert a.boot.events.others_of(Kind.PROCESS)
    _same_analysis(a, p)
    assert a.counts.processes == len(rows) + 3
    assert _json(a) == _json(p)
    assert ProcTree(a).procs == ProcTree(p).procs
    ga = Group(str(log), an._replace(boots=(a,)), False)
    gp = Group(str(log), an._replace(boots=(p,)), False)
    assert json.dumps(report_data([ga], 25)) == json.dumps(report_data([gp], 25))


def test_logs_with_process_events_are_found() -> None:
    assert len(LOGS) >= 5 and any(p.name == "qemu-x86_64-tp_printk.console.log" for p in LOGS)
