"""The terminal summary of ``bootlens analyze``, drawn with rich tables."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text


from ..analyze import Analysis, BootAnalysis
from ..lines import clip
from ..model import READY, Clock, Event, InitcallDetail, Kind, ProcessDetail
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
