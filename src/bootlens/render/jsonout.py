"""``bootlens analyze --json``: the versioned contract in docs/json.md.

Times are seconds on each boot's axis. Fields may be added; renaming or dropping one raises
SCHEMA_VERSION.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence

from .. import __version__
from ..timeline.align import Alignment
from ..core.jsonbytes import dumps, use_orjson
from ..timeline.analyze import Analysis, BootAnalysis, paused_gc
from ..core.lines import Lines, clip
from .._native import native_module
from ..core.numbers import LPJ_MAX, to_int

from ..core.model import (
    ESTIMATE,
    EXACT,
    UPPER,
    Clock,
    Kind,
    Event,
    Events,
    InitcallDetail,
    InputStats,
    LoadDetail,
    LogicDetail,
    ProbeDetail,
    ProcessDetail,
    UnitDetail,
)
from ..timeline.stages import Evidence, Point, Stage

SCHEMA_VERSION = 1
# from this many events, orjson writes the document (its ~20 ms import pays off; same bytes)
ORJSON_FROM = 2000

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:  # only a type here: chain.py is for --critical-chain, not worth importing at start-up
    from typing import Any, BinaryIO

    from ..timeline.chain import Chain


def _s(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e9


def event_dict(e: Event, al: Alignment, t: int | None | bool = False) -> dict[str, Any]:
    """One event as JSON; ``start_s`` is None when it has no time on the axis.

    ``t`` is the event's axis time when the caller already has it (see Alignment.times).
    """
    if t is False:
        t = al.to_axis(e.start)
    dur = e.duration_ns
    d: dict[str, Any] = {
        "kind": e.kind,
        "name": e.name,
        "start_s": None if t is None else t / 1e9,
        "duration_s": None if dur is None else dur / 1e9,
        "line": e.line_no,
    }
    if e.end_line_no is not None and e.end_line_no != e.line_no:
        d["end_line"] = e.end_line_no
    st = e.start
    if st is not None:
        if st.clock is not al.axis:
            d["clock"] = st.clock
        if st.estimated:
            d["estimated"] = True
            d["error_s"] = _s(st.error_ns)
    det = e.detail
    if det is None:
        return d
    if isinstance(det, InitcallDetail):
        d["pid"] = det.pid
        d["module"] = det.module
        d["ret"] = det.ret
        d["returned"] = det.returned
    elif isinstance(det, ProbeDetail):
        d["device"] = det.device
        d["driver"] = det.driver
        d["ret"] = det.ret
    elif isinstance(det, ProcessDetail):
        d.update(pid=det.pid, ppid=det.ppid, comm=det.comm, exe=det.exe, kthread=det.kthread,
                 exec_s=_s(det.exec_ns), exited=det.exited, forks=det.forks)
    elif isinstance(det, LoadDetail):
        d["size_bytes"] = det.size_bytes
        d["rate"] = det.rate
    elif isinstance(det, UnitDetail):
        d.update(unit=det.unit, description=det.description, result=det.result or None, source=det.source)
        if det.duration_bound != EXACT:  # an end on a console line without its own time
            d["duration_bound"] = det.duration_bound
            if det.duration_bound == ESTIMATE:
                d["duration_error_s"] = _s(det.duration_error_ns)
    elif isinstance(det, LogicDetail):
        d.update(channel=det.channel, edge=det.edge, role=det.role, capture_s=_s(det.capture_ns))
    return d


def _point_dict(p: Point | None, lines: Lines | None) -> dict[str, Any] | None:
    """A boundary's evidence: its line (and the line's text), the clock it was read on, and
    whether that time is exact, an upper bound or an estimate."""
    if p is None:
        return None
    bound = ESTIMATE if p.estimated else (UPPER if p.upper else EXACT)
    d: dict[str, Any] = {"what": p.what, "line": p.line_no,
                         "clock": p.clock.value if p.clock is not None else "derived", "bound": bound}
    if p.estimated:
        d["error_s"] = _s(p.error_ns)
    if lines is not None and p.line_no:
        i = lines.index_of(p.line_no)
        if 0 <= i < len(lines):
            d["text"] = lines.text[i].strip()[:160]
    return d


def evidence_dict(ev: Evidence | None, lines: Lines | None = None) -> dict[str, Any] | None:
    """How sure a measured duration is (docs/json.md, "evidence"), or None when not measured."""
    if ev is None:
        return None
    return {"kind": ev.kind, "low_s": _s(ev.low_ns), "high_s": _s(ev.high_ns), "resolution_s": _s(ev.tick_ns),
            "clocks": list(ev.clocks), "start": _point_dict(ev.start, lines), "end": _point_dict(ev.end, lines)}


def _seen_dict(s: Stage, lines: Lines | None) -> dict[str, Any] | None:
    """A stage not measured: the boundary (or two) that was seen, with its evidence; the figure's
    fields null. None when no boundary was seen at all."""
    if s.start is None and s.end is None:
        return None
    return {"kind": None, "low_s": None, "high_s": None, "resolution_s": None,
            "clocks": [p.clock.value if p.clock is not None else "derived" for p in (s.start, s.end) if p is not None],
            "start": _point_dict(s.start, lines), "end": _point_dict(s.end, lines)}


def stage_dict(s: Stage, total_ns: int | None, lines: Lines | None = None) -> dict[str, Any]:
    """One stage as JSON (``lines``: the boot's, to quote the lines its boundaries rest on)."""
    share = None
    if s.duration_ns is not None and total_ns and s.parent is None:
        share = round(s.duration_ns / total_ns, 4)
    return {
        "name": s.name,
        "label": s.label,
        "parent": s.parent,
        "start_s": _s(s.start_ns),
        "duration_s": _s(s.duration_ns),
        "status": s.status,
        "estimated": s.estimated,
        "share": share,
        "start_line": s.start.line_no if s.start else None,
        "end_line": s.end.line_no if s.end else None,
        "evidence": evidence_dict(s.evidence, lines) if s.evidence is not None else _seen_dict(s, lines),
    }


def boot_dict(b: BootAnalysis, with_events: bool = True) -> dict[str, Any]:
    """One boot as JSON (``with_events=False``: the events arrays left empty, for streaming)."""
    al = b.alignment
    boot = b.boot
    events: list[dict[str, Any]] = []
    untimed: list[dict[str, Any]] = []
    times = b.times or tuple(al.times(boot.events))
    evs = boot.events
    if not with_events and isinstance(evs, Events) and evs.block is not None:
        # only the untimed ones: found over the time column, not by building every event
        untimed = [event_dict(evs[i], al, None) for i in evs.block.untimed(times)]
    else:
        for e, t in zip(evs, times):
            if t is None:
                untimed.append(event_dict(e, al, t))
            elif with_events:
                events.append(event_dict(e, al, t))
    total_ns = b.total.duration_ns
    facts: dict[str, Any] = {}
    for f in boot.facts:
        facts.setdefault(f.key, {"value": f.value, "line": f.line_no})
    return {
        "source": boot.source,
        "index": boot.index,
        "first_line": boot.first_line,
        "last_line": boot.last_line,
        "split_reason": boot.split_reason,
        "axis": al.axis.value,
        "origin": al.origin,
        "formats": list(boot.formats),
        "partial": b.partial,
        "partial_reasons": list(b.partial_reasons),
        "total": {
            "from": b.total.origin,
            "start_s": _s(b.total.start_ns),
            "end_s": _s(b.total.end_ns),
            "duration_s": _s(total_ns),
            "end": b.total.end,
            "end_name": b.total.end_name,
            "estimated": b.total.estimated,
            "error_s": _s(b.total.error_ns) if b.total.estimated else 0.0,
            "evidence": evidence_dict(b.total.evidence, boot.lines),
        },
        "stages": [stage_dict(s, total_ns, boot.lines) for s in b.stages],
        "alignment": {
            "power_on_s": _s(al.power_on_ns),
            "console_latency_median_s": _s(al.latency_median_ns),
            "anchors": [
                {"clock": a.clock.value, "offset_s": _s(a.offset_ns), "line": a.line_no, "method": a.method}
                for a in al.anchors
            ],
        },
        "kernel": {
            "version": facts.get("kernel_version", {}).get("value"),
            "cmdline": facts.get("cmdline", facts.get("early_cmdline", {})).get("value"),
            "lpj": to_int(facts["lpj"]["value"], LPJ_MAX) if "lpj" in facts else None,
            "lpj_source": facts.get("lpj_source", {}).get("value"),
        },
        "facts": facts,
        "counts": {
            "lines": b.counts.lines,
            "timed_lines": b.counts.timed_lines,
            "initcalls": b.counts.initcalls,
            "initcalls_unfinished": b.counts.initcalls_unfinished,
            "probes": b.counts.probes,
            "processes": b.counts.processes,
            "user_processes": b.counts.user_processes,
            "markers": b.counts.markers,
            "units": b.counts.units,
            # start jobs whose two lines have no time of their own (a quiet kernel's console): only when any
            **({"units_not_measured": b.counts.units_not_measured} if b.counts.units_not_measured else {}),
        },
        "top": {
            "initcalls": [event_dict(e, al) for e in b.top_initcalls],
            "probes": [event_dict(e, al) for e in b.top_probes],
            "processes": [event_dict(e, al) for e in b.top_processes],
            "units": [event_dict(e, al) for e in b.top_units],
        },
        "silences": [
            {"start_s": _s(s.start_ns), "duration_s": _s(s.duration_ns), "line_before": s.line_before,
             "line_after": s.line_after, "text_before": clip(s.text_before, 200),
             "text_after": clip(s.text_after, 200)}
            for s in b.silences
        ],
        "events": events,
        "untimed_events": untimed,
        "warnings": list(b.warnings),
        **(_side_keys(b) if b.supplement is not None else {}),  # what side files add (render/side/)
    }


def _side_keys(b: BootAnalysis) -> dict[str, Any]:
    from .side import json_keys  # a boot with side files only (start-up of a plain log's --json)

    return json_keys(b)


def input_dict(st: InputStats) -> dict[str, Any]:
    """What was read from one input and how clean it was."""
    return {
        "source": st.source,
        "bytes": st.bytes,
        "lines": st.lines,
        "framing": st.framing,
        "invalid_utf8": st.invalid_utf8,
        "nul_bytes": st.nul_bytes,
        "control_chars": st.control_chars,
        "long_lines": st.long_lines,
        "garbled_lines": st.garbled_lines,
        "no_final_newline": st.no_final_newline,
        "warnings": list(st.warnings),
    }


def to_json_obj(a: Analysis, with_events: bool = True) -> dict[str, Any]:
    """The whole analysis as a JSON-ready dict."""
    by_source = {s.source: list(s.warnings) for s in a.inputs}
    boots = []
    for b in a.boots:
        d = boot_dict(b, with_events)
        # A reader of boots[] alone must still learn that the input itself was damaged.
        d["warnings"] = by_source.get(b.boot.source, []) + d["warnings"]
        boots.append(d)
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": f"bootlens {__version__}",
        "inputs": [input_dict(s) for s in a.inputs],
        "boots": boots,
    }


def render_json(a: Analysis) -> bytes:
    """The whole document as bytes (see :func:`write_json` for large outputs)."""
    buf = io.BytesIO()
    write_json(a, buf)
    return buf.getvalue()


def write_json(a: Analysis, out: BinaryIO, chunk: int = 8192) -> None:
    """Write the JSON document (:func:`write_json_stream` over the analysis's boots)."""
    write_json_stream(a.inputs, a.boots, out, chunk)


def write_json_stream(inputs: Sequence[InputStats], boots: Iterable[BootAnalysis], out: BinaryIO,
                      chunk: int = 8192) -> None:
    """Write the JSON document, each boot as it comes from ``boots`` and its events one per line.

    The document around the boots and each boot around its events are built as dicts and
    serialised as orjson does (by jsonbytes: orjson itself once ORJSON_FROM events were seen, its
    import not paid below), each boot indented as in the whole document; the events (hundreds of
    thousands on a big log) are serialised a chunk at a time. So no boot's dicts live longer than
    its writing, nor its events' dicts all at once: a log of a million boots is written in the
    memory of one (issue 29), in the bytes the document written whole would have.
    """
    token = os.urandom(16).hex()  # a uuid4's randomness without importing uuid (platform, start-up)
    by_source = {s.source: list(s.warnings) for s in inputs}
    boots_at = f"@@boots-{token}@@"
    events_at = f"@@events-{token}@@"
    events_mark = f'"{events_at}"'.encode()
    with paused_gc():
        head = dumps({"schema_version": SCHEMA_VERSION, "generator": f"bootlens {__version__}",
                      "inputs": [input_dict(s) for s in inputs], "boots": [boots_at]}, indent=True)
    at = head.index(f'"{boots_at}"'.encode())
    out.write(head[:at])  # ... "boots": [ and the first boot's indent
    seen = 0
    for i, b in enumerate(boots):
        with paused_gc():
            d = boot_dict(b, with_events=False)
            # A reader of boots[] alone must still learn that the input itself was damaged.
            d["warnings"] = by_source.get(b.boot.source, []) + d["warnings"]
            d["events"] = events_at
            seen += len(b.boot.events)
            if seen > ORJSON_FROM:
                use_orjson()  # the same bytes, faster than the standard library for many events
            # a boot is an item of the top-level object's "boots": four spaces deeper than alone
            text = dumps(d, indent=True).replace(b"\n", b"\n    ")
            del d
            if i:
                out.write(b",\n    ")
            e = text.index(events_mark)
            out.write(text[:e])
            _write_events(b, out, chunk)
            out.write(text[e + len(events_mark):])
    out.write(head[at + len(boots_at) + 2:])
    out.write(b"\n")


def _write_events(b: BootAnalysis, out: BinaryIO, chunk: int) -> None:
    al = b.alignment
    events = b.boot.events
    times = b.times or tuple(al.times(events))
    if isinstance(events, Events) and events.block is not None and al.axis in (Clock.KERNEL, Clock.HOST):
        _write_block_events(events, times, al, out, chunk)
        return
    placed = [(e, t) for e, t in zip(events, times) if t is not None]
    if not placed:
        out.write(b"[]")
        return
    native = native_module()
    out.write(b"[\n")
    for start in range(0, len(placed), chunk):
        part = placed[start : start + chunk]
        # timed initcalls and processes serialised natively; everything else (None) by event_dict
        fast = native.dump_initcalls([e for e, _ in part], [t for _, t in part], Kind.INITCALL, al.axis)
        text = b",\n".join([f if f is not None else dumps(event_dict(e, al, t)) for f, (e, t) in zip(fast, part)])
        if start:
            out.write(b",\n")
        out.write(text)
    out.write(b"\n]")


def _write_block_events(events: Events, times: Sequence[int | None], al: Alignment, out: BinaryIO,
                        chunk: int) -> None:
    """_write_events over an Events with a native block: the timed initcall rows on the axis
    clock are written from the columns (native/src/events.rs json_chunk, with json.rs's writer,
    the same bytes dump_initcalls gives), and so are the process events on the axis clock (the
    other events, json.rs write_process: orjson's bytes); every other event by event_dict. No
    Event is built for the rows written natively."""
    block = events.block
    at_kernel = al.axis is Clock.KERNEL
    start, first = 0, True
    while True:
        pieces, start = block.json_chunk(times, start, chunk, at_kernel)
        if not pieces:
            break
        text = b",\n".join([p if isinstance(p, bytes) else dumps(event_dict(events[p], al, times[p]))
                             for p in pieces])
        out.write(b"[\n" if first else b",\n")
        out.write(text)
        first = False
    out.write(b"[]" if first else b"\n]")
