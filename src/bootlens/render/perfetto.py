"""``bootlens report --format perfetto``: the boots as a Chrome Trace Event Format trace.

The output is the format's "JSON Object Format", ``{"traceEvents": [...], "displayTimeUnit":
"ms", "metadata": {...}}``, which ui.perfetto.dev and chrome://tracing open. docs/perfetto.md
describes the layout; in short, each boot gets its own processes:

- "boot": the stages (with kernel init's sub-stages nested in it) and the total on one track,
  the milestones as instants on another, the markers as process-wide instants;
- "bootloader", "kernel" (a thread per initcall pid, probes, PCI fixups, kernel threads) and
  "user space" (processes, fork to exit), each present when the boot has such events;

an ``X`` complete event for every span, an ``i`` instant for every point (and for a span whose
end was never seen), ``M`` events naming and ordering every process and thread. ``ts`` and
``dur`` are microseconds from the boot's axis origin, so several boots line up at 0.

Perfetto draws a thread's slices as a stack: on one thread two slices must be nested or
disjoint, never partly overlapping. :func:`pack_nested` spreads each track's spans over as
many threads ("lanes") as it takes to keep that true.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from .. import __version__
from ..timeline.align import Alignment
from ..timeline.analyze import BootAnalysis
from ..timeline.inputs import Group
from ..core.model import READY, Event, InitcallDetail, Kind, LoadDetail, ProbeDetail, ProcessDetail, UnitDetail
from ..timeline.stages import MEASURED

if TYPE_CHECKING:
    from .many import ManyBoots

DOMAINS = ("boot", "bootloader", "kernel", "user space")  # in display order
BOOT, BOOTLOADER, KERNEL, USER = range(len(DOMAINS))
PID_STRIDE = 10  # boot n (1-based) owns pids PID_STRIDE * (n - 1) + 1 .. + len(DOMAINS)


class _Item(NamedTuple):
    """One thing to draw: a span (``dur_ns`` set) or an instant, before it has a thread."""

    start_ns: int
    dur_ns: int | None
    name: str
    cat: str
    args: dict[str, Any]


class _Track(NamedTuple):
    """A titled track of one domain, before lane packing; tracks sort in display order."""

    domain: int
    order: tuple[int, int]
    title: str


class _Thread(NamedTuple):
    """One lane of a track: a thread of the trace, its items nested or disjoint."""

    domain: int
    title: str
    items: list[_Item]


class _Layout(NamedTuple):
    """One boot laid out on threads."""

    threads: list[_Thread]  # in display order
    markers: list[_Item]  # process-wide instants on the boot process
    placed: int  # events of the boot drawn
    skipped: int  # events with no time on the axis, not drawn


def pack_nested(spans: Sequence[tuple[int, int]]) -> list[int]:
    """Assign each ``(start, end)`` span a lane so that on every lane any two spans are nested
    or disjoint; returns the lane of each span, lanes numbered from 0 in order of first use.

    Greedy: spans are taken by start, longer first on a tie, and each goes to the first lane
    whose innermost still-open span contains it (or that has none open). Intervals are closed
    on the left and open on the right, as in Perfetto: a span starting where another ends
    follows it rather than nesting in it. A span that nests nowhere opens a new lane.
    """
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -spans[i][1], i))
    open_ends: list[list[int]] = []  # per lane, the ends of its open spans, innermost last
    lanes = [0] * len(spans)
    for i in order:
        start, end = spans[i]
        for lane, stack in enumerate(open_ends):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                lanes[i] = lane
                break
        else:
            lanes[i] = len(open_ends)
            open_ends.append([end])
    return lanes


def _us(ns: int) -> int | float:
    """Nanoseconds as microseconds; a float only when needed. Perfetto rounds ``us * 1000``
    back to the nearest nanosecond, so the value round-trips exactly."""
    return ns // 1000 if ns % 1000 == 0 else ns / 1000


def _track(e: Event) -> _Track:
    """The track an event is drawn on (markers excepted: they are process-wide instants)."""
    k, d = e.kind, e.detail
    if k is Kind.BOOTLOADER:
        return _Track(BOOTLOADER, (0, 0), "bootloader steps")
    if k is Kind.BOOTSTAGE:
        return _Track(BOOTLOADER, (1, 0), "bootstage report")
    if k is Kind.INITCALL:
        pid = d.pid if isinstance(d, InitcallDetail) else None
        if pid is None:
            return _Track(KERNEL, (0, 1), "initcalls")
        # pid 1 runs the initcalls in order; any other pid is an async one
        return _Track(KERNEL, (0, 0) if pid == 1 else (1, pid), f"initcalls · pid {pid}")
    if k is Kind.FIXUP:
        return _Track(KERNEL, (2, 0), "PCI fixups")
    if k is Kind.PROBE:
        return _Track(KERNEL, (3, 0), "device probes")
    if k is Kind.PROCESS:
        if isinstance(d, ProcessDetail) and d.kthread:
            return _Track(KERNEL, (4, 0), "kernel threads")
        return _Track(USER, (0, 0), "processes")
    if k is Kind.UNIT:
        return _Track(USER, (1, 0), "systemd units")
    if k is Kind.MILESTONE:
        return _Track(BOOT, (1, 0), "milestones")
    return _Track(BOOT, (2, 0), str(k.value))


def _put(args: dict[str, Any], **fields: Any) -> None:
    """Add the fields that are known (Perfetto drops null args anyway)."""
    args.update((k, v) for k, v in fields.items() if v is not None)


def _event_args(e: Event, al: Alignment) -> dict[str, Any]:
    """The args of one event: where it is in the log, how its time was got, what it is."""
    a: dict[str, Any] = {"line": e.line_no}
    if e.end_line_no is not None and e.end_line_no != e.line_no:
        a["end_line"] = e.end_line_no
    st = e.start
    if st is not None:
        if st.clock is not al.axis:
            a["clock"] = st.clock.value
        if st.estimated:
            a["estimated"] = True
            a["error_us"] = "unbounded" if st.error_ns is None else _us(st.error_ns)
    d = e.detail
    if isinstance(d, InitcallDetail):
        _put(a, pid=d.pid, module=d.module, ret=d.ret, returned=d.returned)
    elif isinstance(d, ProbeDetail):
        if e.kind is Kind.FIXUP:  # a quirk has a device but no driver nor return value
            _put(a, device=d.device)
        else:
            _put(a, device=d.device, driver=d.driver, ret=d.ret)
    elif isinstance(d, ProcessDetail):
        _put(a, pid=d.pid, ppid=d.ppid, comm=d.comm, exe=d.exe, kthread=d.kthread,
             exec_us=None if d.exec_ns is None else _us(d.exec_ns), exited=d.exited, forks=d.forks)
    elif isinstance(d, LoadDetail):
        _put(a, size_bytes=d.size_bytes, rate=d.rate)
    elif isinstance(d, UnitDetail):
        _put(a, unit=d.unit, description=d.description or None, result=d.result or None, source=d.source)
    return a


def _stage_items(b: BootAnalysis) -> list[_Item]:
    """The total and every measured stage, as spans."""
    items: list[_Item] = []
    tot = b.total
    if tot.end_ns is not None and tot.end_ns >= tot.start_ns:
        ready = next((e.line_no for e in b.boot.events if e.kind is Kind.MARKER and e.name == READY), None)
        args: dict[str, Any] = {} if ready is None else {"line": ready}
        args.update({"from": tot.origin, "end": tot.end})
        if tot.estimated:
            args["estimated"] = True
            args["error_us"] = "unbounded" if tot.error_ns is None else _us(tot.error_ns)
        items.append(_Item(tot.start_ns, tot.end_ns - tot.start_ns, f"total ({tot.origin} → {tot.end_name})", "total",
                           args))
    for s in b.stages:
        if s.status != MEASURED or s.start_ns is None or s.duration_ns is None:
            continue
        start_line = s.start.line_no if s.start else None
        end_line = s.end.line_no if s.end else None
        args = {}
        _put(args, line=start_line if start_line is not None else end_line, stage=s.name, parent=s.parent,
             start_line=start_line, end_line=end_line, estimated=True if s.estimated else None)
        items.append(_Item(s.start_ns, s.duration_ns, s.label, "stage", args))
    return items


def _layout(b: BootAnalysis) -> _Layout:
    """Sort a boot's events onto tracks and pack each track into nesting lanes."""
    al = b.alignment
    times = b.times or tuple(al.times(b.boot.events))
    tracks: dict[_Track, list[_Item]] = {}
    markers: list[_Item] = []
    skipped = 0
    for e, t in zip(b.boot.events, times):
        if t is None:
            skipped += 1
            continue
        dur = e.duration_ns if e.duration_ns is None or e.duration_ns >= 0 else None
        item = _Item(t, dur, e.name, e.kind.value, _event_args(e, al))
        if e.kind is Kind.MARKER and dur is None:
            markers.append(item)
        else:
            tracks.setdefault(_track(e), []).append(item)
    stages = _stage_items(b)
    if stages:
        tracks[_Track(BOOT, (0, 0), "stages")] = stages
    threads: list[_Thread] = []
    for tr in sorted(tracks):
        items = tracks[tr]
        lanes = pack_nested([(it.start_ns, it.start_ns + (it.dur_ns or 0)) for it in items])
        per_lane: list[list[_Item]] = [[] for _ in range(max(lanes) + 1)]
        for it, lane in zip(items, lanes):
            per_lane[lane].append(it)
        for j, lane_items in enumerate(per_lane):
            threads.append(_Thread(tr.domain, tr.title if j == 0 else f"{tr.title} ({j + 1})", lane_items))
    placed = len(b.boot.events) - skipped
    return _Layout(threads, markers, placed, skipped)


def _text(s: str) -> str:
    """A file name fit for JSON: bytes that were not UTF-8 (surrogate escapes) as U+FFFD."""
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _meta(what: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    """An ``M`` metadata event (process_name, thread_sort_index, ...)."""
    return {"name": what, "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": args}


def _draw(it: _Item, pid: int, tid: int, scope: str) -> dict[str, Any]:
    """One item as a trace event: ``X`` for a span, ``i`` with ``scope`` for an instant."""
    ev: dict[str, Any] = {"name": it.name, "cat": it.cat, "ts": _us(it.start_ns), "pid": pid, "tid": tid}
    if it.dur_ns is None:
        ev["ph"] = "i"
        ev["s"] = scope
    else:
        ev["ph"] = "X"
        ev["dur"] = _us(it.dur_ns)
    ev["args"] = it.args
    return ev


def _process_name(domain: int, n: int | None, source: str | None) -> str:
    """"kernel" for a lone boot; "boot n · kernel" among several, and "boot n · FILE" for the
    boot process when the file tells boots apart (a run folder, several inputs)."""
    if n is None:
        return DOMAINS[domain]
    if domain != BOOT:
        return f"boot {n} · {DOMAINS[domain]}"
    return f"boot {n}" if source is None else f"boot {n} · {PurePath(source).name or source}"


def render_perfetto(groups: Sequence[Group], many: Mapping[int, ManyBoots] | None = None) -> bytes:
    """The boots of every group as one trace, JSON bytes; same input, same bytes. ``many``: by
    group index, the inputs of many boots (:mod:`.many`): their groups hold the boots kept, which
    are the trace's, each named by its place in the input; ``metadata.many`` says how many
    boots each such input has and which are drawn.

    Boot n (1-based, in input order) gets pids ``PID_STRIDE * (n - 1) + 1 + domain``; with
    several boots the processes are named "boot n · kernel" and so on, and every boot starts
    at its own axis origin, so the boots sit one above the other for comparison. Thread ids
    are numbered above every pid, so none is mistaken for a process's main thread.
    """
    many = many or {}
    boots = [(g, b) for g in groups for b in g.analysis.boots]
    # the number each boot is named by: its place among the trace's boots, or in its input of many
    label = [many[gi].positions[j] + 1 if gi in many else 0 for gi, g in enumerate(groups)
             for j in range(len(g.analysis.boots))]
    layouts = [_layout(b) for _, b in boots]
    multi = len(boots) > 1
    several_inputs = len(groups) > 1
    next_tid = PID_STRIDE * len(boots) + 1
    meta: list[dict[str, Any]] = []
    timed: list[tuple[tuple[int, int, int, int, int, int], dict[str, Any]]] = []
    boots_meta: list[dict[str, Any]] = []
    for n, ((g, b), lay) in enumerate(zip(boots, layouts), start=1):
        base = PID_STRIDE * (n - 1) + 1
        boot = b.boot
        source = _text(boot.source)
        domains = sorted({BOOT} | {th.domain for th in lay.threads})
        pids: dict[str, int] = {}
        for d in domains:
            pid = base + d
            pids[DOMAINS[d]] = pid
            pname = _process_name(d, (label[n - 1] or n) if multi else None,
                                  source if several_inputs or g.folder else None)
            meta.append(_meta("process_name", pid, pid, name=pname))
            meta.append(_meta("process_sort_index", pid, pid, sort_index=pid))
            if d == BOOT:
                meta.append(_meta("process_labels", pid, pid,
                                  labels=f"{source} · boot {boot.index + 1} · {b.alignment.axis.value} axis"))
        sort_in_process = dict.fromkeys(domains, 0)
        for th in lay.threads:
            pid, tid = base + th.domain, next_tid
            next_tid += 1
            meta.append(_meta("thread_name", pid, tid, name=th.title))
            meta.append(_meta("thread_sort_index", pid, tid, sort_index=sort_in_process[th.domain]))
            sort_in_process[th.domain] += 1
            for it in th.items:
                ev = _draw(it, pid, tid, "t")
                timed.append(((it.start_ns, it.dur_ns is None, -(it.dur_ns or 0), pid, tid, len(timed)), ev))
        for it in lay.markers:
            ev = _draw(it, base + BOOT, base + BOOT, "p")
            timed.append(((it.start_ns, True, 0, base + BOOT, base + BOOT, len(timed)), ev))
        boots_meta.append({
            "boot": n, "source": source, "index": boot.index, "first_line": boot.first_line,
            "last_line": boot.last_line, "axis": b.alignment.axis.value, "origin": b.alignment.origin,
            "pids": pids, "events": lay.placed, "skipped_untimed": lay.skipped,
            "stages_not_drawn": {s.name: (s.status if s.status != MEASURED else
                                          f"measured, {_us(s.duration_ns or 0)} us, start not known on this axis")
                                 for s in b.stages if s.status != MEASURED or s.start_ns is None},
        })
    # By time, longer first on a tie, as Perfetto sorts them: a parent precedes its children
    # also for viewers that take the events in file order.
    timed.sort(key=lambda kv: kv[0])
    doc: dict[str, Any] = {
        "traceEvents": meta + [ev for _, ev in timed],
        "displayTimeUnit": "ms",
        "metadata": {
            "generator": f"bootlens {__version__}",
            "time": "ts and dur in microseconds from each boot's axis origin",
            "boots_count": len(boots),
            "events": sum(lay.placed for lay in layouts),
            "skipped_untimed": sum(lay.skipped for lay in layouts),
            "boots": boots_meta,
        },
    }
    if many:  # inputs of many boots: the boots in each, and which the trace holds (1-based)
        doc["metadata"]["many"] = [{"input": _text(groups[gi].name), "boots": m.boots,
                                    "drawn": [p + 1 for p in m.positions], "why": list(m.why)}
                                   for gi, m in sorted(many.items())]
    return orjson.dumps(doc) + b"\n"
