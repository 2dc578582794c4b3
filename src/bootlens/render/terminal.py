"""The terminal summary of ``bootlens analyze``, drawn with rich tables."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from collections.abc import Sequence
from typing import Any

from ..analyze import Analysis, BootAnalysis
from ..compare import Change, Comparison, Delta, NameDeltas, Significance
from ..lines import clip
from ..model import READY, Clock, Event, InitcallDetail, Kind, ProcessDetail
from ..runs import SPREAD_WARN, Stat
from ..stages import MEASURED
from .visible import visible

_ORIGIN = {"first_byte": "first byte received", "power_on": "power-on", "kernel_start": "kernel clock start"}
_KEY_MILESTONES = ("firmware_banner", "tpl_start", "spl_start", "uboot_start", "starting_kernel", "efi_stub",
                   "kernel_start", "console_enabled", "root_mounted", "initmem_freed", "no_initial_console",
                   "run_init", "userspace_first", "login_prompt", "kernel_panic")


def _esc(s: str) -> str:
    """Text from a log or a user inside rich markup: shown (:func:`visible`), never markup."""
    return escape(visible(s))


def _sec(ns: int | None, width: int = 0) -> str:
    return "—" if ns is None else f"{ns / 1e9:{width}.6f}"


def _dur(ns: int | None) -> str:
    if ns is None:
        return "—"
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.3f} s"
    return f"{ns / 1e6:.3f} ms"


def _range(ns: int | None, estimated: bool, error_ns: int | None) -> str:
    """A duration, or for an estimate the interval it lies in."""
    if not estimated or ns is None:
        return _dur(ns)
    if error_ns is None:
        return f"≥ {_dur(ns)}"
    return f"{_dur(ns)} … {_dur(ns + error_ns)}"


def render_terminal(a: Analysis, console: Console, top: int = 10) -> None:
    """Print every boot's summary."""
    for st in a.inputs:
        for w in st.warnings:
            console.print(f"[yellow]warning:[/] {_esc(st.source)}: {_esc(w)}")
    n = len(a.boots)
    for i, b in enumerate(a.boots):
        if i:
            console.print()
        _boot(b, console, top, f"boot {i + 1} of {n}")


def _boot(b: BootAnalysis, console: Console, top: int, which: str) -> None:
    boot, al = b.boot, b.alignment
    console.rule(f"[bold]{_esc(boot.source)}[/] · {which} · lines {boot.first_line}–{boot.last_line}")
    axis = f"axis: [bold]{al.axis.value}[/] (t=0 = {_ORIGIN.get(al.origin, al.origin)})"
    k = al.anchor(Clock.KERNEL)
    if al.axis is Clock.HOST and k is not None:
        axis += f" · kernel clock 0 at {_sec(k.offset_ns)} s (line {k.line_no}, {k.method})"
    console.print(axis)
    console.print(f"formats: {', '.join(boot.formats) or 'none'}")
    total = b.total
    if total.duration_ns is not None:
        shown = _range(total.duration_ns, total.estimated, total.error_ns)
        note = f", estimated: the {total.end_name} line has no timestamp" if total.estimated else ""
        console.print(f"[bold]{total.origin} → {_esc(total.end_name)}: {shown}[/]  ({_esc(total.end)}{note})")
    else:
        console.print(f"[bold]{total.origin} → ready: not measured[/]  ({_esc(total.end)})")
    if b.partial:
        console.print(f"[yellow]partial boot:[/] {_esc('; '.join(b.partial_reasons))}")

    t = Table(title="Stages", title_justify="left", show_edge=False)
    for col, j in (("stage", "left"), ("start s", "right"), ("duration", "right"), ("share", "right"),
                   ("lines", "right")):
        t.add_column(col, justify=j)  # type: ignore[arg-type]
    tot = total.duration_ns
    for s in b.stages:
        label = ("  " + s.label) if s.parent else s.label
        if s.status == MEASURED:
            share = f"{100 * (s.duration_ns or 0) / tot:.1f}%" if tot and s.parent is None else ""
            first = s.start.line_no if s.start else None
            last = s.end.line_no if s.end else None
            lines = f"{first}–{last}" if first and last else str(last or first or "")
            err = s.end.error_ns if s.end is not None and s.end.estimated else 0
            t.add_row(_esc(label), _sec(s.start_ns), _range(s.duration_ns, s.estimated, err), share, lines)
        else:
            t.add_row(Text(visible(label), style="dim"), _sec(s.start_ns), Text(s.status, style="dim"), "", "")
    console.print(t)

    ms = Table(title="Milestones", title_justify="left", show_edge=False)
    ms.add_column("time s", justify="right")
    ms.add_column("duration", justify="right")
    ms.add_column("line", justify="right")
    ms.add_column("milestone")
    rows = [e for e in boot.events
            if (e.kind is Kind.MILESTONE and e.name in _KEY_MILESTONES) or e.kind in (Kind.MARKER, Kind.BOOTLOADER)]
    for e in rows[:40]:
        tm = al.to_axis(e.start)
        mark = "~" if e.start is not None and e.start.estimated else ""
        text = boot.lines.text[boot.lines.index_of(e.line_no)].strip()
        name = f"marker {e.name}" if e.kind is Kind.MARKER else e.name
        style = "bold green" if e.kind is Kind.MARKER and e.name == READY else ""
        dur = _dur(e.duration_ns) if e.duration_ns is not None else ""
        ms.add_row(mark + _sec(tm), dur, str(e.line_no), Text(visible(f"{name}: {clip(text, 90)}"), style=style))
    if rows:
        console.print(ms)

    if b.top_initcalls:
        console.print(_events_table(f"Top {len(b.top_initcalls)} initcalls (of {b.counts.initcalls})",
                                    b.top_initcalls, b, initcall=True))
    if b.counts.initcalls_unfinished:
        console.print(f"[yellow]{b.counts.initcalls_unfinished} initcalls had not returned when the log ended[/]")
    if b.top_probes:
        console.print(_events_table(f"Top {len(b.top_probes)} device probes (of {b.counts.probes})",
                                    b.top_probes, b))
    if b.top_processes:
        console.print(_events_table(
            f"Top {len(b.top_processes)} user processes (of {b.counts.user_processes}; "
            f"{b.counts.processes - b.counts.user_processes} kernel threads)", b.top_processes, b, process=True))
    if b.silences:
        si = Table(title="Longest silences", title_justify="left", show_edge=False)
        for col in ("start s", "silent for", "lines", "last line before the silence"):
            si.add_column(col, justify="right" if col != "last line before the silence" else "left")
        for gap in b.silences[: min(5, top)]:
            si.add_row(_sec(gap.start_ns), _dur(gap.duration_ns), f"{gap.line_before}–{gap.line_after}",
                       Text(visible(clip(gap.text_before or "(empty line)", 80))))
        console.print(si)
    kv = boot.fact("kernel_version")
    cmd = boot.fact("cmdline") or boot.fact("early_cmdline")
    lpj = boot.fact("lpj")
    if kv:
        console.print(f"kernel: {_esc(kv.value)} (line {kv.line_no})")
    if cmd:
        console.print(f"command line: {_esc(cmd.value)} (line {cmd.line_no})")
    if lpj:
        src = boot.fact("lpj_source")
        how = {"timer": "skipped, from the timer frequency", "preset": "preset with lpj=",
               "calibrated": "calibrated at boot"}.get(src.value if src else "", "")
        console.print(f"lpj: {_esc(lpj.value)} ({how}, line {lpj.line_no})")
    for w in b.warnings:
        console.print(f"[yellow]warning:[/] {_esc(w)}")


def _events_table(title: str, events: tuple[Event, ...], b: BootAnalysis, initcall: bool = False,
                  process: bool = False) -> Table:
    al = b.alignment
    t = Table(title=title, title_justify="left", show_edge=False)
    t.add_column("name")
    if initcall:
        t.add_column("module")
        t.add_column("pid", justify="right")
    if process:
        t.add_column("pid", justify="right")
        t.add_column("exe")
    t.add_column("start s", justify="right")
    t.add_column("duration", justify="right")
    t.add_column("line", justify="right")
    for e in events:
        row: list[str | Text] = [Text(visible(clip(e.name, 50)))]
        det = e.detail
        if initcall:
            assert isinstance(det, InitcallDetail)
            row += [Text(visible(det.module or "")), "" if det.pid is None else str(det.pid)]
        if process:
            assert isinstance(det, ProcessDetail)
            row += [str(det.pid), Text(visible(det.exe or ""))]
        line = str(e.line_no) if e.end_line_no in (None, e.line_no) else f"{e.line_no}–{e.end_line_no}"
        row += [_sec(al.to_axis(e.start)), _dur(e.duration_ns), line]
        t.add_row(*row)
    return t


def render_stats(stats: Sequence[Stat], console: Console, boots: int) -> None:
    """Per-stage and per-marker statistics over repeated boots."""
    t = Table(title=f"Statistics over {boots} boots", title_justify="left", show_edge=False)
    for col in ("quantity", "n", "min", "median", "max", "std dev", "spread"):
        t.add_column(col, justify="left" if col == "quantity" else "right")
    warn = []
    for s in stats:
        spread = f"{100 * s.spread:.1f}%"
        style = "yellow" if s.spread > SPREAD_WARN else ""
        t.add_row(Text(visible(s.name)), str(s.n), _dur(s.min), _dur(round(s.median)), _dur(s.max), _dur(round(s.stdev)),
                  Text(spread, style=style))
        if s.spread > SPREAD_WARN:
            warn.append(s.name.strip())
    console.print(t)
    if warn:
        console.print(f"[yellow]warning:[/] spread above {100 * SPREAD_WARN:.0f}% of the median for: "
                      f"{_esc(', '.join(warn))}; boot more times before trusting a difference")


# ---- bootlens compare -----------------------------------------------------------------------

# No vertical rules, one space of padding and only the first column wraps: a pair's table
# fits 80 columns.
_PAIR_TABLE: dict[str, Any] = {"box": box.SIMPLE_HEAD, "show_edge": False, "pad_edge": False,
                               "padding": (0, 0, 0, 1)}

_VERDICT_STYLE = {"significant": "bold", "not significant": "dim", "unknown": "yellow"}


def _short(ns: float | None, signed: bool = False) -> str:
    """A duration to four significant figures or so: 2.390 s, 348.7 ms, 987 µs."""
    if ns is None:
        return "—"
    sign = ("+" if ns > 0 else "−" if ns < 0 else "±") if signed else ("−" if ns < 0 else "")
    a = abs(ns)
    if a >= 1e9:
        body = f"{a / 1e9:.3f} s"
    elif a >= 1e6:
        body = f"{a / 1e6:.1f} ms"
    elif a >= 1e3:
        body = f"{a / 1e3:.0f} µs"
    else:
        body = f"{a:.0f} ns"
    return sign + body


def _verdict(d: Delta) -> Text:
    """The significance cell: yes / no / unknown (why)."""
    if d.change in (Change.NOT_MEASURED, Change.NOT_COMPARABLE):
        return Text(visible(d.reason), style="dim")
    if d.significance is Significance.SIGNIFICANT:
        slower = (d.delta_ns or 0) > 0
        return Text("yes", style="bold red" if slower else "bold green")
    if d.significance is Significance.NOT_SIGNIFICANT:
        return Text("no", style="dim")
    return Text(visible(f"unknown ({d.reason})"), style="yellow")


def _pct_cell(p: float | None) -> str:
    if p is None:
        return ""
    return (f"{p:+.0f}%" if abs(p) >= 100 else f"{p:+.1f}%").replace("-", "−")


def render_compare(c: Comparison, console: Console) -> None:
    """Every input against the first: per other input, the table of totals, stages and markers,
    then its largest initcall, process and probe differences. One pair per table keeps two
    inputs' columns within 80 characters, however many inputs there are."""
    inputs = c.inputs
    it = Table(title="Inputs", title_justify="left", show_edge=False, show_header=False)
    it.add_column("label", style="bold")
    it.add_column("input", overflow="fold")
    it.add_column("boots")
    for s in inputs:
        what = f"{'run folder' if s.folder else 'log'}, {s.boots} boot{'s' if s.boots != 1 else ''}"
        if s.partial:
            what += f", {s.partial} partial"
        it.add_row(s.label, Text(visible(s.name)), what + (" (baseline)" if s is inputs[0] else ""))
    console.print(it)
    base = inputs[0].label
    for p in c.pairs:
        other = inputs[p.other].label
        console.print()
        _figure_table(c, p.other, console)
        for nd in (p.initcalls, p.processes, p.probes):
            console.print()
            if nd.note is not None:
                console.print(Text(visible(f"{nd.kind.capitalize()}, {other} vs {base}: not compared ({nd.note})"),
                                   style="dim"))
            else:
                _name_table(nd, base, other, console)
    console.print()
    console.print(Text("spread: the larger max − min over the boots of the two inputs; a Δ of the medians "
                       "no larger than the spread is not significant (needs 2 boots or more on each side)",
                       style="dim"))


def _figure_table(c: Comparison, i: int, console: Console) -> None:
    """Totals, stages and markers of input ``i`` against the baseline."""
    base, other = c.inputs[0].label, c.inputs[i].label
    t = Table(title=f"Stages, {other} vs {base}: median over boots", title_justify="left", **_PAIR_TABLE)
    deltas = [f.deltas[i - 1] for f in c.figures]
    spread = _add_columns(t, "quantity", base, other, deltas)
    for d in deltas:
        t.add_row(Text(visible(d.name)), _median(d.baseline), _median(d.other), *_delta_cells(d, spread))
    console.print(t)


def _add_columns(t: Table, first: str, base: str, other: str, deltas: Sequence[Delta]) -> bool:
    """The columns of a pair table; the spread column only when some row has one (True)."""
    t.add_column(first, overflow="fold", min_width=12)
    spread = any(d.threshold_ns is not None for d in deltas)
    for col in (base, other, "Δ", "Δ%") + (("spread",) if spread else ()):
        t.add_column(col, justify="right", no_wrap=True, style="dim" if col == "spread" else "")
    t.add_column("significant", no_wrap=True)
    return spread


def _delta_cells(d: Delta, spread: bool) -> list[str | Text]:
    cells: list[str | Text] = [_short(d.delta_ns, signed=True), _pct_cell(d.delta_pct)]
    if spread:
        cells.append(_short(d.threshold_ns))
    cells.append(_verdict(d))
    return cells


def _median(s: Stat | None, absent: str = "—") -> str | Text:
    return Text(absent, style="dim") if s is None else _short(s.median)


def _counted(d: Delta) -> str:
    """A process name with how many ran per boot (median): "busybox ×2", "busybox ×2 → ×3"."""
    a, b = d.baseline_count, d.other_count
    if a is None and b is None:
        return d.name
    if a == b or b is None:
        return f"{d.name} ×{a:g}"
    return f"{d.name} ×{b:g}" if a is None else f"{d.name} ×{a:g} → ×{b:g}"


def _name_table(nd: NameDeltas, base: str, other: str, console: Console) -> None:
    """The largest per-name differences of one kind, one input against the baseline."""
    title = (f"{nd.kind.capitalize()}, {other} vs {base}: top {len(nd.rows)} of {nd.names} names by |Δ| "
             f"({nd.added} added, {nd.removed} removed, {nd.significant} significant)")
    t = Table(title=title, title_justify="left", **_PAIR_TABLE)
    spread = _add_columns(t, "name", base, other, nd.rows)
    for d in nd.rows:
        t.add_row(Text(visible(clip(_counted(d), 70))), _median(d.baseline, "absent"), _median(d.other, "absent"),
                  *_delta_cells(d, spread))
    console.print(t)
