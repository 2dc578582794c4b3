"""An ftrace buffer given with the log: the KFT table in the terminal (a function_graph trace's
worst functions, overall and under the initcalls that took longest, in the house style of
:mod:`bootlens.render.terminal`: 80 columns, names clipped in the middle, one short duration
form), its ``ftrace`` and ``functions`` objects in ``analyze --json``, and the icicles of the
report page; ``text``, ``json`` and ``html`` are the side renderer's hooks
(:mod:`bootlens.render.side`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.lines import clip
from ...core.units import short
from ..visible import visible

# every boot given with side files imports this module (render.side): the trace's aggregation and
# rich (the terminal's tables) are imported by the functions that use them, for a boot with a trace

if TYPE_CHECKING:
    from rich.console import Console, Group as Stack
    from rich.text import Text

    from ...sources.ftrace.kft import Cell, FuncRow
    from ...sources.ftrace.reader import Trace

    from ...sources.supplements import Supplement
    from ...timeline.analyze import BootAnalysis
    from ...timeline.inputs import Group

_COLS = (("function", "left"), ("calls", "right"), ("total", "right"), ("average", "right"), ("max", "right"),
         ("self", "right"))


def _rows(rows: Sequence[FuncRow], timed: bool, unknown: int) -> list[list[str]]:
    def t(ns: int) -> str:
        return short(ns) if timed else "—"

    return [[r.name, f"{r.calls:,}", t(r.total_ns), t(r.avg_ns), t(r.max_ns),
             "—" if r.self_ns == unknown else t(r.self_ns)] for r in rows]


def kft_tables(trace: Trace, width: int = 80, top: int = 10, initcalls: int = 3, per_initcall: int = 5) -> Stack:
    """The overall table (``top`` rows) and the ``initcalls`` longest initcalls' tables."""
    from rich.console import Group as Stack
    from rich.text import Text

    from ...sources.ftrace.kft import UNKNOWN, Kft, kft
    from ..fit import fit_table

    g = trace.graph
    assert g is not None
    k: Kft = kft(g, top, per_initcall)
    parts: list[Stack | Text] = []
    title = (f"Kernel functions: top {len(k.overall)} by total time (of {k.functions:,}; "
             f"{k.graph_lines:,} function_graph lines)")
    parts.append(fit_table(title, _COLS, _rows(k.overall, k.timed, UNKNOWN), width, flex=(0,)))
    for ic in k.initcalls[:initcalls]:
        parts.append(Text())
        own = ic.own
        if own.name.startswith("do_one_initcall #"):  # an initcall the graph does not show by name
            head = f"Under {own.name} (its initcall not traced): {short(own.total_ns) if k.timed else '—'}"
        elif own.self_ns == UNKNOWN:  # named by the console; the graph shows only its callees
            head = f"Under initcall {own.name} (not traced itself): {short(own.total_ns) if k.timed else '—'}"
        else:
            head = (f"Under initcall {own.name}: {short(own.total_ns) if k.timed else '—'} in {own.calls:,} "
                    f"call{'s' if own.calls != 1 else ''}, {short(own.self_ns) if k.timed else '—'} its own")
        parts.append(fit_table(head, _COLS, _rows(ic.rows, k.timed, UNKNOWN), width, flex=(0,)))
    if len(k.initcalls) > initcalls:
        parts.append(Text(f"({len(k.initcalls) - initcalls} more initcalls in the JSON and the report)"))
    return Stack(*parts)


def _row_dict(r: FuncRow, timed: bool, unknown: int) -> dict[str, Any]:
    def s(ns: int) -> float | None:
        return ns / 1e9 if timed else None

    return {"name": r.name, "calls": r.calls, "total_s": s(r.total_ns), "average_s": s(r.avg_ns),
            "max_s": s(r.max_ns), "self_s": None if r.self_ns == unknown else s(r.self_ns)}


def ftrace_json(sup: Supplement | None, top: int = 500, per_initcall: int = 25) -> dict[str, Any]:
    """The boot's JSON sections of a trace given with it: ``ftrace`` (what the trace was) and,
    for a function_graph trace, ``functions`` (the KFT table; docs/json.md). Empty without one."""
    tr = sup.ftrace if sup is not None else None
    if tr is None:
        return {}
    assert sup is not None
    from ...sources.ftrace.kft import UNKNOWN, kft

    out: dict[str, Any] = {"ftrace": {
        "source": tr.source, "tracer": tr.tracer, "clock": tr.clock, "cpus": tr.cpus, "lines": tr.lines,
        "first_s": None if tr.first_ns is None else tr.first_ns / 1e9,
        "last_s": None if tr.last_ns is None else tr.last_ns / 1e9,
        "events_added": sup.added_trace_events,
        "event_counts": dict(tr.counts)}}
    if tr.graph is not None:
        k = kft(tr.graph, top, per_initcall)
        out["functions"] = {
            "graph_lines": k.graph_lines, "timed": k.timed, "distinct": k.functions,
            "overall": [_row_dict(r, k.timed, UNKNOWN) for r in k.overall],
            "initcalls": [{**_row_dict(t.own, k.timed, UNKNOWN),
                           "functions": [_row_dict(r, k.timed, UNKNOWN) for r in t.rows]}
                          for t in k.initcalls]}
    return out


# ------------------------------------------------------------------------------ the icicle in HTML

ICICLE_WIDTH = 1200
ROW = 18


def _hue(name: str) -> str:
    """A warm flame colour that stays the same for a name across icicles."""
    h = 0
    for c in name.encode():
        h = (h * 31 + c) & 0xFFFF
    return f"hsl({10 + h % 40},{60 + h % 25}%,{58 + (h >> 6) % 14}%)"


def icicle_svg(cells: Sequence[Cell], title: str) -> str:
    """One icicle as inline SVG: the root on top, each call under its caller, widths by total
    time; hovering a box shows its name, total, self time and calls (an SVG <title>)."""
    from html import escape

    if not cells:
        return ""
    root = cells[0].width_ns or 1
    depth = max(c.depth for c in cells) + 1
    h = depth * ROW
    out = [f'<svg class="icicle" viewBox="0 0 {ICICLE_WIDTH} {h}" width="100%" height="{h}" role="img" '
           f'aria-label="{escape(title)}" preserveAspectRatio="none" font-size="11" font-family="sans-serif">']
    for c in cells:
        x = c.x_ns / root * ICICLE_WIDTH
        w = c.width_ns / root * ICICLE_WIDTH
        if w < 0.5:
            continue  # under half a pixel: its time is in its parent's box
        y = c.depth * ROW
        tip = (f"{visible(c.name)} · total {short(c.total_ns)} · self {short(c.self_ns)} · "
               f"{c.calls:,} call{'s' if c.calls != 1 else ''}")
        label = visible(c.name)
        fit = int((w - 6) / 6.2)
        text = "" if fit < 3 else escape(clip(label, fit))
        out.append(f'<g><title>{escape(tip)}</title><rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.5):.1f}" '
                   f'height="{ROW - 1}" fill="{_hue(c.name)}"/>'
                   + (f'<text x="{x + 3:.1f}" y="{y + 13}">{text}</text>' if text else "") + "</g>")
    out.append("</svg>")
    return "".join(out)


def icicles_html(boots: Sequence[tuple[str, Trace]], initcalls: int = 12) -> str:
    """The report's "Kernel functions" section: per boot with a function_graph trace, the whole
    trace's icicle and one under each of its longest initcalls (click to open), worst first."""
    from html import escape

    from ...sources.ftrace.kft import icicle, icicle_roots, kft

    parts: list[str] = []
    for label, tr in boots:
        g = tr.graph
        if g is None:
            continue
        k = kft(g, 1)
        roots = icicle_roots(g)
        parts.append(f'<h3>{escape(label)} <span class="hint">{k.functions:,} functions, {k.graph_lines:,} '
                     f'function_graph lines ({escape(visible(tr.source))}); hover a box for its figures</span></h3>')
        parts.append('<details open><summary>the whole trace</summary>'
                     + icicle_svg(icicle(g), "icicle of the whole trace") + "</details>")
        for t in k.initcalls[:initcalls]:
            node = roots.get(t.own.name)
            if node is None:
                continue
            parts.append(f'<details class="ic"><summary>initcall {escape(visible(t.own.name))} · '
                         f'{short(t.own.total_ns)}</summary>'
                         + icicle_svg(icicle(g, node), f"icicle of {t.own.name}") + "</details>")
    if not parts:
        return ""
    return ('<section id="kft-wrap"><h2>Kernel functions <span class="hint">(function_graph: each box a '
            'function, as wide as its time, under its caller)</span></h2>' + "".join(parts) + "</section>")


# ------------------------------------------------------------------ the side renderer's hooks


def text(b: BootAnalysis, console: Console, top: int) -> None:
    """A function_graph trace given with the log: its KFT table."""
    if b.supplement is not None and b.supplement.ftrace is not None and b.supplement.ftrace.graph is not None:
        console.print()
        console.print(kft_tables(b.supplement.ftrace, console.width, top))


def json(b: BootAnalysis) -> dict[str, Any]:
    return ftrace_json(b.supplement)


def html(groups: Sequence[Group]) -> str:
    """The icicles of the function_graph traces given with the boots, or ""."""
    boots = [(f"{g.name} · boot {i + 1}" if len(g.analysis.boots) > 1 else g.name, b.supplement.ftrace)
             for g in groups for i, b in enumerate(g.analysis.boots)
             if b.supplement is not None and b.supplement.ftrace is not None and b.supplement.ftrace.graph is not None]
    return icicles_html(boots) if boots else ""
