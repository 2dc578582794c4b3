"""A logic analyzer capture given with the log (:mod:`bootlens.sources.logic.align`): its lines in the
terminal summary, its object in ``analyze --json`` (docs/json.md, ``logic_analyzer``), its edges'
text where a console line would be, and the boot's t=0 when its power channel set it (the side
renderer's hooks, :mod:`bootlens.render.side`)."""

from __future__ import annotations


from ...core.model import Clock, Event, LogicDetail, Stamp
from ...core.units import duration

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

    from rich.console import Console

    from ...timeline.analyze import BootAnalysis
    from ...sources.logic.align import LogicInput


def _logic(b: BootAnalysis) -> LogicInput | None:
    sup = b.supplement
    return sup.logic if sup is not None and sup.logic is not None and sup.logic.fit is not None else None


def power_on_from_logic(b: BootAnalysis) -> bool:
    """The boot's t=0 is a logic analyzer's power (or reset) edge."""
    lg = _logic(b)
    return lg is not None and lg.power_on is not None and b.alignment.power_on_ns is not None


def event_text(e: Event) -> str | None:
    """What stands for the console line of a logic analyzer's event: 'logic analyzer D3 rise'."""
    d = e.detail
    if not isinstance(d, LogicDetail):
        return None
    return f"logic analyzer {d.channel} {d.edge} ({d.role}, capture {duration(d.capture_ns, {'s': 6})})"


def _hz(hz: float) -> str:
    for div, unit in ((1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz")):
        if hz >= div:
            return f"{hz / div:g} {unit}"
    return f"{hz:g} Hz"


def _ms(ns: int) -> str:
    return duration(ns, {"ms": 3})


def first_byte_ns(b: BootAnalysis) -> int | None:
    """The console's first byte on the boot's axis (host-stamped consoles only)."""
    host = b.boot.lines.host
    first = next((h for h in host if h is not None), None) if b.alignment.axis is Clock.HOST else None
    return b.alignment.to_axis(Stamp(Clock.HOST, first)) if first is not None else None


def logic_lines(b: BootAnalysis) -> list[str]:
    """The capture, how it was aligned and what it measured, in a few lines."""
    lg = _logic(b)
    if lg is None or lg.fit is None:
        return []
    cap, f, al = lg.capture, lg.fit, b.alignment
    rate = f" at {_hz(cap.samplerate_hz)}" if cap.samplerate_hz else ""
    out = [f"Logic analyzer: {cap.source} ({cap.format}, {len(cap.channels)} channels{rate}, "
           f"{duration(cap.end_ns, {'s': 6})})",
           f"  aligned with the console ({f.clock.value} clock) by {f.method}",
           f"  residual: max |error| {_ms(f.max_abs_ns)}, RMS {_ms(f.rms_ns)} (bound {_ms(f.bound_ns)})"
           + (": POOR, events placed only that closely" if f.poor else "")]
    for e, what in ((lg.power_on, "power-on"), (lg.ready, "ready")):
        if e is not None and isinstance(e.detail, LogicDetail):
            t = al.to_axis(e.start)
            at, cap_at = duration(t, {"s": 6}, none="not placed"), duration(e.detail.capture_ns, {"s": 6})
            out.append(f"  {what}: {e.detail.channel} {e.detail.edge} at {at} (capture {cap_at})")
    fb = first_byte_ns(b)
    if lg.power_on is not None and fb is not None:
        out.append(f"  console's first byte: {duration(fb, {'s': 6})} after power-on (placed by the alignment)")
    if lg.markers:
        out.append(f"  {lg.markers} marker edge{'s' if lg.markers != 1 else ''} (--channel NAME=marker:LABEL)")
    return out


def logic_dict(b: BootAnalysis) -> dict[str, Any] | None:
    """The ``logic_analyzer`` object of a boot in ``analyze --json``; None without a capture."""
    lg = _logic(b)
    if lg is None or lg.fit is None:
        return None
    cap, f, al = lg.capture, lg.fit, b.alignment

    def edge(e: Event | None) -> dict[str, Any] | None:
        if e is None or not isinstance(e.detail, LogicDetail):
            return None
        t = al.to_axis(e.start)
        return {"channel": e.detail.channel, "edge": e.detail.edge, "at_s": None if t is None else t / 1e9,
                "capture_s": e.detail.capture_ns / 1e9}

    fb = first_byte_ns(b)
    return {
        "source": cap.source,
        "format": cap.format,
        "samplerate_hz": cap.samplerate_hz,
        "duration_s": cap.end_ns / 1e9,
        "channels": [{"name": c.name, "initial": c.initial, "rising": len(c.rising), "falling": len(c.falling)}
                     for c in cap.channels],
        "alignment": {
            "clock": f.clock.value,
            "offset_s": f.offset_ns / 1e9,
            "method": f.method,
            "pairs": [{"channel": p.channel, "capture_s": p.edge_ns / 1e9, "line": p.line_no,
                       "error_s": p.error_ns / 1e9} for p in f.pairs],
            "residual_max_s": f.max_abs_ns / 1e9,
            "residual_rms_s": f.rms_ns / 1e9,
            "bound_s": f.bound_ns / 1e9,
            "poor": f.poor,
        },
        "power_on": edge(lg.power_on),
        "ready": edge(lg.ready),
        "first_byte_s": None if fb is None else fb / 1e9,
        "markers": lg.markers,
    }


# ------------------------------------------------------------------ the side renderer's hooks


def origin(b: BootAnalysis) -> str | None:
    return "logic analyzer" if power_on_from_logic(b) else None


def text(b: BootAnalysis, console: Console, top: int) -> None:
    from rich.text import Text

    from ..visible import visible

    for i, line in enumerate(logic_lines(b)):
        if i == 0:
            console.print()
        console.print(Text(visible(line)))


def json(b: BootAnalysis) -> dict[str, Any]:
    lg = logic_dict(b)
    return {} if lg is None else {"logic_analyzer": lg}
