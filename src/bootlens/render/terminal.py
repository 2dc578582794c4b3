"""The terminal summary of ``bootlens analyze``, built for 80 columns and for pipes.

Each boot opens with its headline (what took how long, from where to where), then the stage
table with the total as its last row, then the top initcalls, probes and processes, then the
milestones and silences, and last how it was measured (axis, clocks, formats: the jargon).
Tables are sized to the console: a column with nothing in it is left out, long names lose their
middle (``of_platform_…_populate_init``) rather than wrap, and the headline and the stage and
total rows are one line each at 80 columns. Warnings are not part of it: :func:`warning_lines`
gives them for standard error, each once per input, counted over its boots.

:func:`summary_lines` is ``analyze --summary``: one systemd-analyze-style line per boot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console, Group as Stack
from rich.markup import escape
from rich.text import Text

from ..timeline.analyze import Analysis, BootAnalysis
from ..core.model import EXACT, READY, Clock, Event, InitcallDetail, Kind, Milestone, ProbeDetail, ProcessDetail, UnitDetail
from ..timeline.stages import MEASURED, Total
from . import side
from ..core.lines import clip
from ..core.units import duration, short, short_range
from .evidence import figure, mark
from .fit import fit_table, mid_clip
from .visible import visible

if TYPE_CHECKING:
    from ..timeline.chain import Chain
    from ..timeline.inputs import Group, GroupStream
    from ..timeline.tally import BootTally
    from .fit import Cell

_ORIGIN = {"first_byte": "first byte received", "power_on": "power-on", "kernel_start": "kernel clock start",
           "userspace_start": "user space start (systemd's; its figures have no kernel part)"}
_KEY_MILESTONES = ("firmware_banner", "tpl_start", "vpl_start", "spl_start", "uboot_start", "bootloader_start",
                   "starting_kernel", "efi_stub", "kernel_start", "console_enabled", "root_mounted", "initmem_freed",
                   "no_initial_console",
                   "run_init", "userspace_first", "systemd_start", "startup_finished", "login_prompt",
                   "kernel_panic", "power_on")


def _esc(s: str) -> str:
    """Text from a log or a user inside rich markup: shown (:func:`visible`), never markup."""
    return escape(visible(s))


def _sec(ns: int | None) -> str:
    """A time in seconds to the microsecond, its unit said by the text around it."""
    return duration(ns, {"s": 6}, sep=None)


def _at(ns: int | None, estimated: bool = False) -> str:
    """A time on the boot's axis, in seconds to the millisecond; '~' where the line had no time."""
    return "—" if ns is None else ("~" if estimated else "") + duration(ns, {"s": 3}, sep=None)


def _range(ns: int | None, estimated: bool, error_ns: int | None) -> str:
    """A duration, or for an estimate the interval it lies in."""
    if not estimated or ns is None:
        return short(ns)
    if error_ns is None:
        return f"≥ {short(ns)}"
    return short_range(ns, ns + error_ns)


# --- the headline ------------------------------------------------------------------------------


def _end_event(b: BootAnalysis) -> Event | None:
    """The line that ended the boot: the ready marker, else the login prompt."""
    kind, name = (Kind.MARKER, READY) if b.total.end_name == READY else (Kind.MILESTONE, Milestone.LOGIN_PROMPT)
    return next((e for e in b.boot.events if e.kind is kind and e.name == name), None)


def _total_figure(t: Total) -> str:
    if t.duration_ns is None:
        return "not measured"
    fig = figure(t.duration_ns, t.evidence) if t.evidence is not None else _range(t.duration_ns, t.estimated,
                                                                                  t.error_ns)
    return f"{fig} (estimated)" if t.estimated else fig


def headline(b: BootAnalysis, which: str, width: int = 80) -> Text:
    """'Boot 1 · power-on → ready: 8.850 s · line 255: APP READY', fitted to ``width``: the
    figure is never cut, the line it ends at is shortened or left out."""
    t = b.total
    end = t.end_name if t.duration_ns is not None else READY
    head = Text(f"{which} · ", style="bold")
    who = side.origin(b)  # a side file set t=0 (a logic analyzer's power edge)
    origin = f"{t.origin} ({who})" if who is not None else t.origin
    head.append(f"{origin} → {visible(end)}: {_total_figure(t)}", style="bold")
    if t.duration_ns is not None:
        e = _end_event(b)
        tail = "" if e is None else (side.event_text(e) or
                                     f"line {e.line_no}: {b.boot.lines.text[b.boot.lines.index_of(e.line_no)].strip()}")
    else:
        tail = t.end
    tail = visible(tail)
    room = width - head.cell_len - 3
    if len(tail) > room and tail.endswith(")") and " (" in tail:
        tail = tail[: tail.rindex(" (")]  # "no ready marker (use --marker ...)": the hint is on stderr
    if tail and room >= 12:
        head.append(" · " + clip(tail, room))
    return head


def _where(b: BootAnalysis, width: int) -> Text:
    boot = b.boot
    tail = f" · lines {boot.first_line}–{boot.last_line}"
    return Text(mid_clip(visible(boot.source), max(20, width - len(tail))) + tail, style="dim")


def _lines(first: int | None, last: int | None) -> str:
    if first and last and first != last:
        return f"{first}–{last}"
    return str(last or first or "")


def _stages(b: BootAnalysis, width: int) -> Stack:
    total = b.total
    tot = total.duration_ns
    rows: list[list[Cell]] = []
    styles: list[str] = []
    for s in b.stages:
        label = visible(("  " + s.label) if s.parent else s.label)
        lines = _lines(s.start.line_no if s.start else None, s.end.line_no if s.end else None)
        if s.status == MEASURED:
            share = f"{100 * (s.duration_ns or 0) / tot:.1f}%" if tot and s.parent is None else ""
            start_est = s.start is not None and s.start.estimated
            rows.append([label, _at(s.start_ns, start_est), figure(s.duration_ns, s.evidence), share, lines])
            styles.append("")
        else:
            rows.append([label, _at(s.start_ns), s.status, "", ""])
            styles.append("dim")
    e = _end_event(b)
    rows.append([f"total ({total.origin} → {total.end_name if tot is not None else READY})", _at(total.start_ns),
                 _total_figure(total).replace(" (estimated)", ""), "100.0%" if tot else "",
                 _lines(b.boot.first_line, e.line_no) if e and tot is not None else ""])
    styles.append("bold")
    cols = (("stage", "left"), ("start s", "right"), ("duration", "right"), ("share", "right"),
            ("lines", "right"))
    return fit_table("Stages", cols, rows, width, flex=(0,), row_styles=styles)


def _events(title: str, events: Sequence[Event], b: BootAnalysis, width: int) -> Stack:
    """Initcalls, probes or processes: name, what else is known of them, start, duration, lines."""
    al = b.alignment
    rows: list[list[Cell]] = []
    for e in events:
        det = e.detail
        extra: list[Cell]
        if isinstance(det, InitcallDetail):
            extra = [visible(det.module or ""), "" if det.pid is None else str(det.pid), ""]
        elif isinstance(det, ProcessDetail):
            extra = ["", str(det.pid), visible(det.exe or "")]
        elif isinstance(det, ProbeDetail):
            extra = [visible(det.driver or ""), "", ""]
        elif isinstance(det, UnitDetail):  # a job that did not end "done" says how it ended
            extra = [det.result if det.result != "done" else "", "", ""]
        else:
            extra = ["", "", ""]
        est = e.start is not None and e.start.estimated
        dur = short(e.duration_ns)
        if isinstance(det, UnitDetail) and det.duration_bound != EXACT:  # on console lines without their own time
            dur = det.duration_bound if e.duration_ns is None else _range(e.duration_ns, True, det.duration_error_ns)
        rows.append([visible(e.name), *extra, _at(al.to_axis(e.start), est), dur,
                     _lines(e.line_no, e.end_line_no)])
    kind = events[0].kind if events else Kind.INITCALL
    second = {Kind.INITCALL: "module", Kind.PROBE: "driver", Kind.UNIT: "result"}.get(kind, "")
    # a pid every row shares (1: initcalls on the init thread) says nothing row by row
    if kind is Kind.INITCALL and len({r[2] for r in rows}) == 1:
        for r in rows:
            r[2] = ""
    cols = (("name", "left"), (second, "left"), ("pid", "right"), ("exe", "left"), ("start s", "right"),
            ("duration", "right"), ("lines", "right"))
    return fit_table(title, cols, rows, width, flex=(3, 0, 1))


def _milestones(b: BootAnalysis, width: int) -> Stack | None:
    boot, al = b.boot, b.alignment
    events = [e for e in boot.events
              if (e.kind is Kind.MILESTONE and e.name in _KEY_MILESTONES) or e.kind in (Kind.MARKER, Kind.BOOTLOADER)]
    if not events:
        return None
    if events[-1].line_no == 0:  # a logic analyzer's edges (line 0, appended): in time order with the rest
        def when(e: Event) -> tuple[bool, int]:
            t = al.to_axis(e.start)
            return t is None, t or 0

        events.sort(key=when)
    rows: list[list[Cell]] = []
    for e in events[:40]:
        est = e.start is not None and e.start.estimated
        # an event a side file added (line 0: a logic analyzer's edge) has no console line
        text = side.event_text(e) or boot.lines.text[boot.lines.index_of(e.line_no)].strip()
        name = f"marker {e.name}" if e.kind is Kind.MARKER else e.name
        if e.name == Milestone.BOOTLOADER_START and e.kind is Kind.MILESTONE:  # "barebox start", not uboot_start
            name = f"{boot.bootloader_at(e.line_no) or 'bootloader'} start"
        style = "bold green" if e.kind is Kind.MARKER and e.name == READY else ""
        dur = short(e.duration_ns) if e.duration_ns is not None else ""
        rows.append([_at(al.to_axis(e.start), est), dur, str(e.line_no) if e.line_no else "",
                     Text(visible(f"{name}: {text}"), style=style)])
    cols = (("time s", "right"), ("duration", "right"), ("line", "right"), ("milestone: the line", "left"))
    return fit_table("Milestones", cols, rows, width, tail=3)


def _silences(b: BootAnalysis, n: int, width: int) -> Stack | None:
    if not b.silences:
        return None
    rows: list[list[Cell]] = [[_at(g.start_ns), short(g.duration_ns), f"{g.line_before}–{g.line_after}",
                               visible(g.text_before or "(empty line)")] for g in b.silences[:n]]
    cols = (("start s", "right"), ("silent for", "right"), ("lines", "right"),
            ("last line before the silence", "left"))
    return fit_table("Longest silences", cols, rows, width, tail=3)


# --- a boot, an input, several inputs -----------------------------------------------------------


def render_boot(b: BootAnalysis, console: Console, top: int, which: str) -> None:
    """One boot: headline, stages, what took longest, milestones, silences, how it was measured."""
    width = console.width
    boot, al = b.boot, b.alignment
    console.print(headline(b, which, width), no_wrap=True, overflow="ellipsis")
    console.print(_where(b, width), no_wrap=True, overflow="ellipsis")
    if b.partial:
        console.print(Text("partial boot: ", style="yellow") + Text(visible("; ".join(b.partial_reasons))))
    console.print()
    console.print(_stages(b, width))
    side.print_text(b, console, top)  # what side files given with the log add (render/side/)
    counts = b.counts
    if b.top_initcalls:
        console.print()
        console.print(_events(f"Top {len(b.top_initcalls)} initcalls (of {counts.initcalls})", b.top_initcalls, b,
                              width))
    if counts.initcalls_unfinished:
        console.print(Text(f"{counts.initcalls_unfinished} initcalls had not returned when the log ended",
                           style="yellow"))
    if b.top_probes:
        console.print()
        console.print(_events(f"Top {len(b.top_probes)} device probes (of {counts.probes})", b.top_probes, b, width))
    if b.top_processes:
        console.print()
        console.print(_events(f"Top {len(b.top_processes)} user processes (of {counts.user_processes}; "
                              f"{counts.processes - counts.user_processes} kernel threads)", b.top_processes, b,
                              width))
    if b.top_units:
        console.print()
        console.print(_events(f"Top {len(b.top_units)} systemd units (of {counts.units}; activating → active)",
                              b.top_units, b, width))
    if counts.units_not_measured:
        console.print(Text(f"{counts.units_not_measured} systemd units: duration not measured (their status lines "
                           "have no time of their own)", style="dim"))
    for table in (_milestones(b, width), _silences(b, min(5, top), width)):
        if table is not None:
            console.print()
            console.print(table)
    console.print()
    axis = f"axis: {al.axis.value}, t=0 = {_ORIGIN.get(al.origin, al.origin)}"
    k = al.anchor(Clock.KERNEL)
    if k is not None and (al.axis is Clock.HOST or k.line_no is not None):  # host, or the guest's counter
        axis += f"; kernel clock 0 at {_sec(k.offset_ns)} s (line {k.line_no}, {k.method})"
    console.print(Text(visible(axis)))
    console.print(Text(visible(f"formats: {', '.join(boot.formats) or 'none'}")))
    kv = boot.fact("kernel_version")
    cmd = boot.fact("cmdline") or boot.fact("early_cmdline")
    lpj = boot.fact("lpj")
    if kv:
        console.print(Text(visible(f"kernel: {kv.value} (line {kv.line_no})")))
    if cmd:
        console.print(Text(visible(f"command line: {cmd.value} (line {cmd.line_no})")))
    if lpj:
        src = boot.fact("lpj_source")
        how = {"timer": "skipped, from the timer frequency", "preset": "preset with lpj=",
               "calibrated": "calibrated at boot"}.get(src.value if src else "", "")
        console.print(Text(visible(f"lpj: {lpj.value} ({how}, line {lpj.line_no})")))


def render_terminal(a: Analysis, console: Console, top: int = 10, err: Console | None = None) -> None:
    """Print every boot, then the warnings to ``err`` (standard error unless given), each once:
    after the boots, so that in a terminal the headline comes first and the warnings stay on
    the last screen."""
    _boots(a, console, top)
    _warn(warning_lines(a), err)


def _boots(a: Analysis, console: Console, top: int) -> None:
    n = len(a.boots)
    for i, b in enumerate(a.boots):
        if i:
            console.print()
            console.rule(style="dim")
        render_boot(b, console, top, f"Boot {i + 1}" + (f" of {n}" if n > 1 else ""))


def render_groups(groups: Sequence[Group], console: Console, top: int = 10, err: Console | None = None) -> None:
    """``bootlens analyze INPUT...``: every input's boots (a run folder opens with the median
    total over its boots), then the warnings, as :func:`render_terminal`."""
    for gi, g in enumerate(groups):
        if gi:
            console.print()
            console.rule(style="dim")
        if g.folder:
            console.print(folder_headline(g), no_wrap=True, overflow="ellipsis")
            console.print(Text(visible(g.name), style="dim"), no_wrap=True, overflow="ellipsis")
            console.rule(style="dim")
        _boots(g.analysis, console, top)
    _warn([w for g in groups for w in warning_lines(g.analysis, g.name if g.folder else None)], err)


def render_streams(streams: Sequence[GroupStream], console: Console, top: int = 10, err: Console | None = None,
                   all_boots: bool = False) -> None:
    """:func:`render_groups` over inputs whose boots stream (:func:`~bootlens.timeline.inputs.stream_inputs`):
    an input of up to :data:`~bootlens.timeline.tally.MANY_BOOTS` boots as render_groups prints it,
    one of more as a summary (:func:`render_many`), or with ``all_boots`` every boot as it comes
    ("Boot N"), then the summary. Never more than one boot's analysis held but the summary's few."""
    from itertools import chain, islice

    from ..timeline.analyze import Analysis
    from ..timeline.inputs import Group
    from ..timeline.tally import MANY_BOOTS, BootTally

    warnings: list[str] = []
    for gi, g in enumerate(streams):
        if gi:
            console.print()
            console.rule(style="dim")
        head = list(islice(g.boots, MANY_BOOTS + 1))
        if g.folder or len(head) <= MANY_BOOTS:
            whole = g.group if g.group is not None else Group(g.name, Analysis(g.inputs, tuple(head)), g.folder)
            if g.folder:
                console.print(folder_headline(whole), no_wrap=True, overflow="ellipsis")
                console.print(Text(visible(whole.name), style="dim"), no_wrap=True, overflow="ellipsis")
                console.rule(style="dim")
            _boots(whole.analysis, console, top)
            warnings += warning_lines(whole.analysis, whole.name if whole.folder else None)
            continue
        tally = BootTally()
        for b in chain(head, g.boots):
            tally.add(b)
            if all_boots:
                if tally.n > 1:
                    console.print()
                    console.rule(style="dim")
                render_boot(b, console, top, f"Boot {tally.n}")
        del head
        if all_boots:
            console.print()
            console.rule(style="dim")
        render_many(g.name, tally, console, all_boots)
        warnings += [visible(f"bootlens: warning: {st.source}: {w}") for st in g.inputs for w in st.warnings]
        warnings += tally_warning_lines(tally)
    _warn(warnings, err)


def render_many(name: str, tally: BootTally, console: Console, all_boots: bool = False) -> None:
    """The summary of an input of many boots: how many, how many measured their total and its
    median with min and max, then one row each for the first, the slowest and the last few."""
    width = console.width
    n = tally.n
    head = Text(f"{n:,} boots · ", style="bold")
    pair = tally.total_pair()
    med = tally.median_total()
    if pair is None or med is None:
        head.append("total: not measured in any boot", style="bold")
    else:
        k, lo, mid, hi = med
        head.append(f"{pair[0]} → {visible(pair[1])}: median {short(mid)} ({short_range(lo, hi)})", style="bold")
    console.print(head, no_wrap=True, overflow="ellipsis")
    where = f" · lines {tally.first_line}–{tally.last_line}"
    console.print(Text(mid_clip(visible(name), max(20, width - len(where))) + where, style="dim"),
                  no_wrap=True, overflow="ellipsis")
    if med is not None and med[0] < n:
        console.print(Text(f"the median is over the {med[0]:,} of {n:,} boots that measured it", style="yellow"))
    console.print()
    rows: list[list[Cell]] = []
    for p in tally.picked():
        b = p.boot
        t = b.total
        fig = _total_figure(t).replace(" (estimated)", "")
        rows.append([str(p.n), _lines(b.boot.first_line, b.boot.last_line) or str(b.boot.first_line), fig, p.why,
                     visible(b.boot.split_reason)])
    cols = (("boot", "right"), ("lines", "right"), ("total", "right"), ("shown as", "left"), ("starts at", "left"))
    console.print(fit_table(f"{len(rows)} of {n:,} boots: the first, slowest and last {tally.keep}", cols, rows, width,
                            tail=4))
    if not all_boots:
        console.print()
        console.print(Text("each boot in full: --all-boots; one line each: --summary", style="dim"))


def tally_warning_lines(tally: BootTally) -> list[str]:
    """:func:`warning_lines` of a summary's boots: each warning once per source, counted."""
    out = []
    for src, w, k, of in tally.warning_counts():
        count = f"{k} of {of} boots: " if of > 1 else ""
        out.append(visible(f"bootlens: warning: {src}: {count}{w}"))
    if tally.other_warnings:
        out.append(f"bootlens: warning: {tally.other_warnings:,} more warnings of other texts, not shown")
    return out


def folder_headline(g: Group) -> Text:
    """'Run folder, 3 boots · power-on → ready: median 7.701 s (7.377–8.079 s)'."""
    boots = g.analysis.boots
    n = len(boots)
    done = [b.total for b in boots if b.total.duration_ns is not None and b.total.end_name == READY]
    head = Text(f"Run folder, {n} boot{'s' if n != 1 else ''} · ", style="bold")
    if not done:
        return head + Text("power-on → ready: not measured (no boot reached its ready marker)", style="bold")
    from statistics import median  # here: statistics imports decimal, fractions, random (start-up)

    d = [t.duration_ns or 0 for t in done]
    origins = sorted({t.origin for t in done})
    fig = f"median {short(median(d))} ({short_range(min(d), max(d))})" if len(d) > 1 else short(d[0])
    head.append(f"{'/'.join(origins)} → ready: {fig}", style="bold")
    if len(done) < n:
        head.append(f" · {len(done)} of {n} boots reached ready", style="yellow")
    return head


def warning_lines(a: Analysis, folder: str | None = None) -> list[str]:
    """The analysis warnings for standard error: each input's own, then each boot warning once
    per input with how many of its boots gave it ("3 of 3 boots: no ready marker ..."). For a run
    folder (``folder``: its name) a warning every boot of it gave is said once, of the folder
    ("runs/x: 20 of 20 boots: ..."), as advise says it: a damaged run.json, no ready marker."""
    out = [visible(f"bootlens: warning: {st.source}: {w}") for st in a.inputs for w in st.warnings]
    per: dict[str, dict[str, int]] = {}
    boots: dict[str, int] = {}
    every: dict[str, int] = {}
    for b in a.boots:
        src = b.boot.source
        boots[src] = boots.get(src, 0) + 1
        counts = per.setdefault(src, {})
        for w in dict.fromkeys(b.warnings):
            counts[w] = counts.get(w, 0) + 1
            every[w] = every.get(w, 0) + 1
    n = len(a.boots)
    shared = [w for w, k in every.items() if k == n] if folder is not None and len(per) > 1 else []
    out.extend(visible(f"bootlens: warning: {folder}: {n} of {n} boots: {w}") for w in shared)
    for src, counts in per.items():
        for w, k in counts.items():
            if w in shared:
                continue
            count = f"{k} of {boots[src]} boots: " if boots[src] > 1 else ""
            out.append(visible(f"bootlens: warning: {src}: {count}{w}"))
    return out


def _warn(lines: Sequence[str], err: Console | None) -> None:
    if not lines:
        return
    con = err or Console(stderr=True, highlight=False)
    for w in lines:  # wrapped to a terminal's width; one line each into a file or a pipe, for grep
        con.print(Text(w, style="yellow"), soft_wrap=not con.is_terminal)


# --- analyze --summary ----------------------------------------------------------------------------


def _s(ns: int) -> str:
    """systemd-analyze's form: 1.234s."""
    return duration(ns, {"s": 3}, sep="")


def summary_line(b: BootAnalysis) -> str:
    """One boot in one line, as systemd-analyze prints it (docs/analyze.md): ``Startup finished
    in 2.498s (bootloader) + 2.555s (kernel_init) + 3.143s (userspace) = 8.850s (power-on →
    ready)``: the measured top-level stages by their JSON names, then the total ('~' before an
    estimated figure); ``Startup not finished: <why>; measured <stages>`` without a total."""
    parts = [f"{mark(s.evidence)}{_s(s.duration_ns)} ({s.name})" for s in b.stages
             if s.parent is None and s.status == MEASURED and s.duration_ns is not None]
    t = b.total
    if t.duration_ns is None:
        return visible(f"Startup not finished: {t.end}" + (f"; measured {' + '.join(parts)}" if parts else ""))
    total = f"{mark(t.evidence) or ('~' if t.estimated else '')}{_s(t.duration_ns)} ({t.origin} → {t.end_name})"
    return visible(f"Startup finished in {' + '.join(parts)} = {total}" if parts else f"Startup finished in {total}")


def summary_lines(boots: Sequence[BootAnalysis]) -> list[str]:
    """``analyze --summary``: one line per boot; where there are several, each ends with
    `` · SOURCE boot N`` (N counts the boots of that input from 1)."""
    many = len(boots) > 1
    return [summary_line(b) + (visible(f" · {b.boot.source} boot {b.boot.index + 1}") if many else "")
            for b in boots]
