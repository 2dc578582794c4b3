"""``bootlens report``: one self-contained, interactive HTML file.

The page is static: the analysis is embedded as JSON in a ``<script type="application/json">``
block and drawn by one inline script (``report.js``) on a canvas, so a boot with 100,000 events
draws only what is visible. Nothing is fetched: a Content-Security-Policy allows no network
access at all and no script but ours (by hash), and the script only ever sets text
(``textContent``), never markup, so a device printing ``<script>`` shows it as text; bidi
controls and other invisible characters are shown as escapes (:mod:`.visible`). Colours come
from :mod:`.palette` as CSS variables (the SVG boot graph uses the same palette), which the
legend, the stage bar and the canvas read.

Layout of the embedded data (columnar, so the file grows linearly with events; times are
integer microseconds on the boot's axis):

- ``names``: string table; events refer to names by index;
- ``inputs``: ``[{name, folder, boots, total}]``; ``total``, for an input of several boots, is its
  headline: the median total over its boots with min and max (:mod:`.headline`), else null;
- ``boots[i].pos``: the boot's place among its input's boots; ``boots[i].legend``: the
  :mod:`.palette` keys of what its timeline and stage bar draw (the legend shows those);
- ``rows``: ``[{title, kind, paint, lanes: [[first, end], ...]}]``; ``paint`` is the row's colour
  (a :mod:`.palette` key); each lane is a slice of the event columns, sorted by start and free of
  overlaps, so the viewer binary-searches what is visible;
- ``ev``: columns ``s`` (start), ``d`` (duration, -1 for an instant), ``n`` (name index),
  ``l`` (line), ``e`` (end line or 0), ``x`` (a process's exec time from its start, or -1),
  ``i`` (detail text index into ``names``);
- ``marks``: markers and milestones, drawn as lines across the timeline;
- ``log``: the boot's lines (prefixes removed) and each line's axis time;
- ``findings`` (top level, one list per boot, parallel to ``boots``): the advisor's findings,
  each as in ``bootlens advise --json`` (docs/json.md);
- ``merged_findings``: for each input of several boots, ``{group, boots, findings}``: its findings
  merged over its boots as ``bootlens advise`` shows them (``seen``, ``seen_boots``, median
  ``saving``); the page shows these for such an input instead of one boot's.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
from collections.abc import Sequence
from importlib import resources
from typing import Any

import orjson

from .. import __version__
from ..analyze import BootAnalysis
from ..compare import Comparison
from ..inputs import Group
from ..model import READY, Clock, Event, InitcallDetail, Kind, LoadDetail, ProbeDetail, ProcessDetail, UnitDetail
from ..stats import statistics_of
from . import palette
from .headline import boots_total
from .visible import visible, visible_data

_US = 1000


def _us(ns: int | None) -> int | None:
    return None if ns is None else (ns + (_US // 2 if ns >= 0 else -(_US // 2))) // _US


class _Names:
    """A string table: each distinct string stored once."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.items: list[str] = [""]

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


def _detail(e: Event) -> str:
    d = e.detail
    if isinstance(d, InitcallDetail):
        parts = [f"pid {d.pid}" if d.pid is not None else "", d.module or "",
                 f"returned {d.ret}" if d.returned else "never returned"]
        return ", ".join(p for p in parts if p)
    if isinstance(d, ProbeDetail):
        return f"device {d.device}" + (f", driver {d.driver}" if d.driver else "") + f", returned {d.ret}"
    if isinstance(d, ProcessDetail):
        parts = [f"pid {d.pid}", f"parent {d.ppid}" if d.ppid is not None else "",
                 f"exec {d.exe}" if d.exe else "", "kernel thread" if d.kthread else "",
                 f"{d.forks} children" if d.forks else "", "" if d.exited else "still running at the end"]
        return ", ".join(p for p in parts if p)
    if isinstance(d, LoadDetail):
        return f"{d.size_bytes} bytes" + (f" at {d.rate}" if d.rate else "")
    if isinstance(d, UnitDetail):
        parts = [d.unit if d.unit and d.unit != e.name else "", d.description if d.description != e.name else "",
                 f"result {d.result}" if d.result != "done" else "", "" if d.result else "never finished",
                 f"from the {d.source}"]
        return ", ".join(p for p in parts if p)
    return ""


def _row_key(e: Event) -> tuple[int, str, str, str]:
    """(order, title, kind, paint) of the timeline row an event belongs to; ``paint`` is its
    colour's key in :mod:`.palette`."""
    k = e.kind
    if k is Kind.BOOTLOADER:
        return (0, "bootloader", "bootloader", "bootloader")
    if k is Kind.BOOTSTAGE:
        return (0, "bootstage report", "bootstage", "bootstage")
    if k is Kind.INITCALL:
        pid = e.detail.pid if isinstance(e.detail, InitcallDetail) else None
        if pid is None:
            return (1, "initcalls", "initcall", "initcall")
        return (1 if pid == 1 else 2, f"initcalls · pid {pid}", "initcall", "initcall" if pid == 1 else "initcall_async")
    if k is Kind.FIXUP:
        return (3, "PCI fixups", "fixup", "fixup")
    if k is Kind.PROBE:
        return (4, "device probes", "probe", "probe")
    if k is Kind.UNIT:
        bad = isinstance(e.detail, UnitDetail) and e.detail.result not in ("done", "")
        return (5, "systemd units · failed", "unit", "unit_failed") if bad else (5, "systemd units", "unit", "unit")
    if k is Kind.PROCESS:
        if isinstance(e.detail, ProcessDetail) and e.detail.kthread:
            return (7, "kernel threads", "kthread", "kthread")
        return (6, "processes", "process", "process")
    return (8, k.value, k.value, k.value)


def _pack(items: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Greedy lane packing of (start, duration, index): each lane holds non-overlapping spans
    sorted by start, which is what lets the viewer binary-search the visible ones.

    First fit: a span goes into the lowest-numbered lane that is free at its start. Starts come
    in order, so a lane that is free at one start stays free until it is given a span: lanes
    move from a heap of busy ones (by end) to a heap of free ones (by number) once, each time
    they end. O(n log n); scanning every lane for every span took 16 s for 40,000 overlapping
    initcalls (bench/bench_report.py --overlap)."""
    items.sort()
    lanes: list[list[tuple[int, int, int]]] = []
    busy: list[tuple[int, int]] = []  # (end, lane)
    free: list[int] = []  # lanes free at the current start
    for it in items:
        s, d, _ = it
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            j = heapq.heappop(free)
            lanes[j].append(it)
        else:
            j = len(lanes)
            lanes.append([it])
        heapq.heappush(busy, (s + max(d, 0), j))
    return lanes


def boot_data(b: BootAnalysis, names: _Names, top: int = 25) -> dict[str, Any]:
    """One boot as the viewer's columnar data."""
    boot, al = b.boot, b.alignment
    rows: dict[tuple[int, str, str, str], list[tuple[int, int, int]]] = {}
    marks = []
    mark_keys: set[str] = set()
    events = boot.events
    unplaced = 0
    for i, (e, t) in enumerate(zip(events, b.times)):
        if t is None:
            unplaced += 1
            continue
        if e.kind in (Kind.MARKER, Kind.MILESTONE):
            if e.name != "uptime":
                marks.append({"t": _us(t), "n": e.name, "l": e.line_no, "k": e.kind.value})
                mark_keys.add("ready" if e.name == READY and e.kind is Kind.MARKER else e.kind.value)
            continue
        d = e.duration_ns
        rows.setdefault(_row_key(e), []).append((t, -1 if d is None else d, i))
    cols: dict[str, list[int]] = {"s": [], "d": [], "n": [], "l": [], "e": [], "x": [], "i": []}
    s_, d_, n_, l_, e_, x_, i_ = (cols[k] for k in "sdnlexi")
    row_out = []
    index_of: dict[int, int] = {}
    detail_of: dict[tuple[type, Any], int] = {}  # most details repeat ("pid 1, returned 0"): text them once
    for key in sorted(rows):
        lanes_out = []
        # one thread runs its initcalls one after another: a pid's row is one lane even where
        # jiffy-rounded durations ("after 4000 usecs") make a call seem to end after the next begins
        one_thread = key[2] == "initcall" and key[1] != "initcalls"
        for lane in [sorted(rows[key])] if one_thread else _pack(rows[key]):
            first = len(s_)
            for t, d, i in lane:
                e = events[i]
                index_of[i] = len(s_)
                s_.append(_us(t) or 0)
                d_.append(-1 if d < 0 else _us(d) or 0)
                n_.append(names(e.name))
                l_.append(e.line_no)
                e_.append(e.end_line_no or 0)
                det = e.detail
                x_.append(_us(det.exec_ns) or 0 if isinstance(det, ProcessDetail) and det.exec_ns is not None
                          else -1)
                di = detail_of.get(dk := (type(det), det))
                if di is None:
                    di = detail_of[dk] = names(_detail(e))
                i_.append(di)
            lanes_out.append([first, len(s_)])
        row_out.append({"title": key[1], "kind": key[2], "paint": key[3], "lanes": lanes_out})

    # what the legend shows for this boot: the colours and marks its timeline and stage bar draw
    legend = {"stage-" + s.name for s in b.stages
              if s.duration_ns is not None and (s.parent is None or s.start_ns is not None)}
    legend.update(key[3] for key in rows)
    if any(d < 0 for spans in rows.values() for _, d, _ in spans):
        legend.add("instant")
    legend |= mark_keys
    legend.update(s.key for s in palette.STATES)

    pos = {id(e): i for i, e in enumerate(events)}

    def ref(evs: Sequence[Event]) -> list[int]:
        return [index_of[j] for e in evs if (j := pos.get(id(e))) is not None and j in index_of]

    total = b.total
    lines = boot.lines
    h_off, k_off = al.offsets.get(Clock.HOST), al.offsets.get(Clock.KERNEL)
    axis_t = [_us(h + h_off) if h is not None and h_off is not None else
              _us(k + k_off) if k is not None and k_off is not None else None
              for h, k in zip(lines.host, lines.kernel)]
    return {
        "source": boot.source,
        "index": boot.index,
        "axis": al.axis.value,
        "origin": al.origin,
        "total": {
            "from": total.origin, "start": _us(total.start_ns), "end": _us(total.end_ns),
            "dur": _us(total.duration_ns), "end_what": total.end, "end_name": total.end_name, "estimated": total.estimated,
            "error": _us(total.error_ns),
        },
        "stages": [{
            "name": s.name, "label": s.label, "parent": s.parent, "start": _us(s.start_ns),
            "dur": _us(s.duration_ns), "status": s.status, "estimated": s.estimated,
            "start_line": s.start.line_no if s.start else None, "end_line": s.end.line_no if s.end else None,
        } for s in b.stages],
        "partial": list(b.partial_reasons),
        "warnings": list(b.warnings),
        "formats": list(boot.formats),
        "kernel": {k: f.value for k in ("kernel_version", "cmdline") if (f := boot.fact(k)) is not None},
        "counts": {"lines": b.counts.lines, "initcalls": b.counts.initcalls, "probes": b.counts.probes,
                   "processes": b.counts.user_processes, "markers": b.counts.markers, "unplaced": unplaced},
        "rows": row_out,
        "legend": [s.key for s in palette.ALL if s.key in legend],
        "ev": cols,
        "marks": marks,
        "top": {"initcalls": ref(b.top_initcalls), "processes": ref(b.top_processes),
                "probes": ref(b.top_probes), "units": ref(b.top_units)},
        "chain": _chain_data(b, index_of),
        "silences": [{"s": _us(x.start_ns), "d": _us(x.duration_ns), "a": x.line_before, "b": x.line_after}
                     for x in b.silences],
        "log": {"first": lines.first, "text": list(lines.text), "t": axis_t},
        "samples": _samples(b),
    }


def _samples(b: BootAnalysis) -> dict[str, Any] | None:
    """A bootchart's CPU and disk samples on the boot's axis (µs), for the panel under the
    timeline; None when the boot has none."""
    from ..supplements import samples

    m = samples(b)
    if m is None:
        return None
    def r3(xs: tuple[float, ...]) -> list[float]:
        return [round(x, 3) for x in xs]  # fractions: 0.1 % is finer than a pixel

    return {"t": [_us(t) for t in m.t_ns], "user": r3(m.user), "sys": r3(m.sys), "iow": r3(m.io_wait),
            "dt": [_us(t) for t in m.disk_t_ns], "rd": [round(x) for x in m.read_bps],
            "wr": [round(x) for x in m.write_bps], "rd_max": round(max(m.read_bps, default=0)),
            "wr_max": round(max(m.write_bps, default=0))}


def _chain_data(b: BootAnalysis, index_of: dict[int, int]) -> dict[str, Any]:
    """The critical chain to ready (:mod:`bootlens.chain`, an estimate without dependencies):
    links top first; ``ev`` is the link's index in the viewer's event columns, -1 for a stage,
    a marker or a milestone (drawn as lines, not bars)."""
    from ..chain import ESTIMATE, critical_chain

    c = critical_chain(b)
    return {"source": c.source, "estimated": c.estimated, "links": [
        {"name": lk.name, "kind": lk.kind, "at": _us(lk.at_ns), "dur": _us(lk.duration_ns), "line": lk.line_no,
         "ev": index_of.get(lk.event, -1) if lk.event is not None else -1, "estimate": lk.how == ESTIMATE}
        for lk in c.links]}


def _total_over(g: Group) -> dict[str, Any] | None:
    """An input of several boots: its headline, the median total with min and max (µs)."""
    if len(g.analysis.boots) < 2:
        return None
    bt = boots_total(g.analysis.boots)
    s = bt.stat
    return {"from": bt.origin, "end_name": bt.end_name, "boots": bt.boots, "n": s.n if s else 0,
            "median": _us(round(s.median)) if s else None, "min": _us(s.min) if s else None,
            "max": _us(s.max) if s else None}


def report_data(groups: Sequence[Group], top: int = 25) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able object. ``findings[i]`` are the advisor's
    findings for ``boots[i]`` (docs/json.md, "bootlens advise --json", one finding each)."""
    from ..advise.context import context_for_group
    from ..advise.summary import advise_group
    from .advise_json import finding_dict, merged_dict

    names = _Names()
    boots = []
    stats = []
    findings = []
    merged = []
    for gi, g in enumerate(groups):
        advice = advise_group(g, context_for_group(g))
        for pos, (b, ba) in enumerate(zip(g.analysis.boots, advice.boots)):
            d = boot_data(b, names, top)
            d["group"] = gi
            d["pos"] = pos  # its place among the input's boots (``index`` counts within its file)
            boots.append(d)
            findings.append([finding_dict(f) for f in ba.findings])
        if advice.merged:  # several boots: one set of findings for the input, each with its boots
            merged.append({"group": gi, "boots": len(advice.boots),
                           "findings": [merged_dict(m) for m in advice.merged]})
        if len(g.analysis.boots) > 1:
            stats.append({"group": gi, "name": g.name, "boots": len(g.analysis.boots), "rows": [
                {"name": s.name, "n": s.n, "min": _us(s.min), "median": _us(round(s.median)), "max": _us(s.max),
                 "stdev": _us(round(s.stdev)), "spread": s.spread,
                 # the median's order-statistic interval and the probability that it holds it (stats.py)
                 "ci_low": _us(round(s.ci_low)), "ci_high": _us(round(s.ci_high)), "ci_level": s.ci_level}
                for s in statistics_of(g.analysis.boots)]})
    return {
        "generator": f"bootlens {__version__}",
        "inputs": [{"name": g.name, "folder": g.folder, "boots": len(g.analysis.boots), "total": _total_over(g)}
                   for g in groups],
        "names": names.items,
        "boots": boots,
        "stats": stats,
        "findings": findings,
        "merged_findings": merged,
    }


def _embed(obj: Any) -> str:
    """JSON safe inside a <script> element: no '<' can close it or open a comment."""
    raw = orjson.dumps(obj)
    for a, b in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                 ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029")):
        raw = raw.replace(a, b)
    return raw.decode()


def _asset(name: str) -> str:
    return resources.files("bootlens.render").joinpath("assets", name).read_text(encoding="utf-8")


def _swatch_html(sw: palette.Swatch) -> str:
    """A legend swatch drawn with the palette's CSS variables (the canvas reads the same ones)."""
    a = f"var(--pal-{sw.key})"
    b = f"var(--pal-{sw.key}-2)" if len(sw.colours) > 1 else a
    style = {
        "pair": f"background:linear-gradient(90deg,{a} 50%,{b} 50%)",
        "split": f"background:linear-gradient(90deg,{a} 40%,{b} 40%)",
        "line": f"border-left-color:{a}", "dash": f"border-left-color:{a}",
    }.get(sw.shape, f"background:{a}")
    return f'<span class="sw {sw.shape}" style="{style}"></span>'


def _legend_html() -> str:
    """The legend of the timeline, every entry of the palette; the page shows those of the boot
    on view (its ``legend`` keys)."""
    from html import escape

    out = ['<div id="legend" aria-label="legend of the timeline">']
    for title, items in palette.legend_items((s.key for s in palette.ALL), palette.HTML_GROUPS):
        out.append(f'<span class="lg-group" data-group="{escape(title)}"><b>{escape(title)}</b>')
        out.extend(f'<span class="lg" data-key="{s.key}">{_swatch_html(s)}{escape(s.label)}</span>' for s in items)
        out.append("</span>")
    out.append("</div>")
    return "".join(out)


def _page(title: str, body: str, data: Any, js_name: str) -> bytes:
    """A self-contained page: our stylesheet and one script of ours (allowed by its hash), the
    data as inert JSON, and a policy that allows no network access at all. Every string of the
    data is for display, so every one is made :func:`~.visible.visible` here: a U+202E in a log
    line shows as ``\\u202e``, it does not turn the line around."""
    from html import escape

    js = _asset("table.js") + "\n" + _asset(js_name)
    css = palette.css_variables() + "\n" + _asset("report.css")
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    return "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>{escape(visible(title))}</title>\n<style>{css}</style>\n</head><body>\n",
        body,
        f"\n<script type=\"application/json\" id=\"bootlens-data\">{_embed(visible_data(data))}</script>\n",
        f"<script>{js}</script>\n</body></html>\n",
    )).encode()


def render_html(groups: Sequence[Group], top: int = 25) -> bytes:
    """The report page for these inputs."""
    title = "bootlens report"
    if groups:
        title += " · " + ", ".join(g.name for g in groups[:3])
    body = _asset("report.html").replace("<!--legend-->", _legend_html())
    body = body.replace("<!--kft-->", _kft_html(groups))
    return _page(title, body, report_data(groups, top), "report.js")


def _kft_html(groups: Sequence[Group]) -> str:
    """The icicles of the function_graph traces given with the boots (render/kft.py), or ""."""
    boots = [(f"{g.name} · boot {i + 1}" if len(g.analysis.boots) > 1 else g.name, b.supplement.ftrace)
             for g in groups for i, b in enumerate(g.analysis.boots)
             if b.supplement is not None and b.supplement.ftrace is not None and b.supplement.ftrace.graph is not None]
    if not boots:
        return ""
    from .kft import icicles_html

    return icicles_html(boots)


def render_compare_html(c: Comparison) -> bytes:
    """The compare page: per input against the baseline, a waterfall of stage differences and
    the tables of initcall, process and probe differences (data: the compare JSON contract)."""
    from .compare_json import compare_json_obj

    title = "bootlens compare · " + " vs ".join(i.name for i in c.inputs[:4])
    return _page(title, _asset("compare.html"), compare_json_obj(c), "compare.js")
