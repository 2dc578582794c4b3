"""``bootlens analyze --json``: the versioned contract in docs/json.md.

Times are seconds on each boot's axis. Fields may be added; renaming or dropping one raises
SCHEMA_VERSION.
"""

from __future__ import annotations

from typing import Any

import orjson

from .. import __version__
from ..align import Alignment
from ..analyze import Analysis, BootAnalysis
from ..lines import clip
from ..model import (
    Event,
    InitcallDetail,
    InputStats,
    LoadDetail,
    ProbeDetail,
    ProcessDetail,
)
from ..stages import Stage

SCHEMA_VERSION = 1


def _s(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e9


def event_dict(e: Event, al: Alignment) -> dict[str, Any]:
    """One event as JSON; ``start_s`` is None when it has no time on the axis."""
    d: dict[str, Any] = {
        "kind": e.kind.value,
        "name": e.name,
        "start_s": _s(al.to_axis(e.start)),
        "duration_s": _s(e.duration_ns),
        "line": e.line_no,
    }
    if e.end_line_no is not None and e.end_line_no != e.line_no:
        d["end_line"] = e.end_line_no
    if e.start is not None:
        if e.start.clock is not al.axis:
            d["clock"] = e.start.clock.value
        if e.start.estimated:
            d["estimated"] = True
            d["error_s"] = _s(e.start.error_ns)
    det = e.detail
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
    return d


def stage_dict(s: Stage, total_ns: int | None) -> dict[str, Any]:
    """One stage as JSON."""
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
    }


def boot_dict(b: BootAnalysis) -> dict[str, Any]:
    """One boot as JSON."""
    al = b.alignment
    boot = b.boot
    events: list[dict[str, Any]] = []
    untimed: list[dict[str, Any]] = []
    for e in boot.events:
        d = event_dict(e, al)
        (events if d["start_s"] is not None else untimed).append(d)
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
            "estimated": b.total.estimated,
            "error_s": _s(b.total.error_ns) if b.total.estimated else 0.0,
        },
        "stages": [stage_dict(s, total_ns) for s in b.stages],
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
            "lpj": int(facts["lpj"]["value"]) if "lpj" in facts else None,
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
        },
        "top": {
            "initcalls": [event_dict(e, al) for e in b.top_initcalls],
            "probes": [event_dict(e, al) for e in b.top_probes],
            "processes": [event_dict(e, al) for e in b.top_processes],
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
    }


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


def to_json_obj(a: Analysis) -> dict[str, Any]:
    """The whole analysis as a JSON-ready dict."""
    by_source = {s.source: list(s.warnings) for s in a.inputs}
    boots = []
    for b in a.boots:
        d = boot_dict(b)
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
    """Serialized JSON (orjson: the 100k-event outputs are several times faster than stdlib)."""
    return orjson.dumps(to_json_obj(a), option=orjson.OPT_INDENT_2) + b"\n"
