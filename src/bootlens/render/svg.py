"""``bootlens report --format svg``: a static boot graph of the whole boot, power-on to ready.

What the kernel's ``scripts/bootgraph.pl`` draws for initcalls, for every stage. Choices:

- **Width and font.** 1600 px wide, one monospace font for every text. Monospace fonts
  (DejaVu Sans Mono, Liberation Mono, Menlo, Consolas) advance 0.60 em per character, so a
  label's width is known before it is drawn (estimated at ``CHAR_EM`` = 0.62 em, on the safe
  side) and labels are placed so that no two overlap. The time axis is linear in every panel
  (ticks 1-2-5 apart, in s, or in ms for a span under a second).
- **Two panels per boot.** An overview of the whole boot on a linear axis keeps the true
  weight of each stage (a 2 s autoboot delay should look as big as it is). When more than
  ``ZOOM_SHARE`` of the boot passes before the kernel clock starts, a second panel zooms on
  kernel init and user space, where the initcalls, probes and processes are drawn; a shaded
  wedge links the zoomed range to it. Otherwise one panel holds everything. The boots of one
  input share the scale of each panel, so repeated boots can be compared by eye.
- **Bars and labels.** Every event with a time on the axis is a bar (``class="bar KIND"``)
  carrying a ``<title>`` tooltip: name, start, duration, lines. Initcalls get one row per pid
  (bootgraph's lanes); overlapping events are packed into extra lanes. A label goes inside its
  bar when it fits; otherwise into label rows above or below the lanes, longest events first,
  each in the row nearest to its bar where it overlaps no other label and its leader line
  crosses none. The ``MUST_LABEL`` longest events of a row always get a label (rows are added
  for them, and their leader may pass under another label); the rest are left to their
  tooltips when the rows are full. Kernel threads that never exit (dozens, all alike) are
  counted in a note, not drawn.
- **Markers and milestones** are vertical lines, labelled in a band above each panel the same
  way; the markers (ready first) and the kernel's main milestones are always labelled. In the
  overview, milestones inside the zoomed range are left to the zoomed panel's labels.
- **Several boots**: stacked vertically, at most ``MAX_BOOTS`` per input, with a note for the
  rest (the HTML report shows them all).

Every text from the log is escaped; the document is self-contained (no fonts, images or
scripts) and deterministic: the same analysis gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import __version__
from ..timeline.analyze import BootAnalysis
from ..timeline.inputs import Group
from ..core.lines import clip
from ..core.model import NS_PER_MS, READY, Event, InitcallDetail, Kind, LoadDetail, Milestone, ProbeDetail, ProcessDetail, \
    UnitDetail
from ..timeline.stages import ABSENT, MEASURED, NOT_MEASURED, Stage
from ..core.units import duration
from . import palette
from .evidence import evidence_text, figure
from .headline import boots_total

if TYPE_CHECKING:
    from .many import ManyBoots
from .svglayout import (
    ASCENT_EM,
    CHAR_EM,
    DESCENT_EM,
    LabelRows,
    Scale,
    SvgDoc,
    esc,
    fit,
    fmt_at,
    fmt_duration,
    num,
    text_width,
    ticks,
)

__all__ = ["ASCENT_EM", "CHAR_EM", "DESCENT_EM", "WIDTH", "render_svg", "text_width"]

WIDTH = 1600
GUTTER = 196  # the left column, for row titles
MARGIN = 12
LABEL = 10.0  # font size of event and mark labels
ROW = 12.0  # height of one label row
LANE = 12.0  # height of one lane of bars
STAGE_LANE = 16.0
AXIS_BAND = 20.0  # below a panel's rows: the tick labels
ZOOM_SHARE = 0.2  # zoom on the kernel when this share of the boot passes before its clock starts
MAX_BOOTS = 10
MUST_LABEL = 10
UNLABELLED = 9
MAX_LANES = 16  # lanes per row; beyond, bars overlap in the last lane
LABEL_CHARS = 48  # event names are clipped to this many characters in labels

# the colours: render/palette.py, shared with the HTML report
C = palette.colour
INITCALL, INITCALL_ASYNC = palette.BY_KEY["initcall"].colours, palette.BY_KEY["initcall_async"].colours
FORK, EXEC = palette.BY_KEY["process"].colours  # a process before and after its exec
UNIT = palette.BY_KEY["unit"].colours
MILESTONE_LABELS = {
    "firmware_banner": "firmware", "spl_start": "SPL", "uboot_start": "U-Boot", "autoboot": "autoboot",
    "starting_kernel": "Starting kernel", "efi_stub": "EFI stub", "kernel_start": "Linux",
    "calibrate_delay": "calibrate delay", "console_enabled": "console", "clocksource_switch": "clocksource",
    "initrd_freed": "initrd freed", "root_mounted": "root mounted", "initmem_freed": "initmem freed",
    "run_init": "Run /init", "kernel_panic": "PANIC",
}
KEY_MILESTONES = frozenset({"starting_kernel", "kernel_start", "run_init", "kernel_panic"})
ORIGINS = {"power_on": "power-on", "first_byte": "first byte received", "kernel_start": "kernel clock start",
           "userspace_start": "user space start"}


@dataclass(frozen=True, slots=True)
class _Bar:
    """One bar to draw: axis times, look, label and tooltip."""

    start: int
    end: int  # for an open bar, the end of the boot's view
    fill: str
    cls: str
    label: str
    tip: str
    short: str = ""  # a shorter label, tried inside the bar when ``label`` does not fit
    split: int | None = None  # a process's exec time: the part after it is drawn darker
    split_fill: str = ""
    open: bool = False  # never finished in the log

    @property
    def weight(self) -> int:
        """Importance for labelling: the duration (an open bar's is unknown)."""
        return -1 if self.open else self.end - self.start


@dataclass(slots=True)
class _RowSpec:
    """A row of the graph: its title, bars and how much room its labels may take."""

    title: str
    bars: list[_Bar] = field(default_factory=list)
    lane: float = LANE
    max_label_rows: int = 3  # in each of the two bands, above and below the lanes
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Mark:
    """A marker or milestone: a vertical line with a label."""

    t: int
    label: str
    tip: str
    marker: bool
    rank: int  # labelling order: 0 the ready marker, 1 other markers, 2 key milestones, 3 the rest,
    # UNLABELLED: a line only (in the overview, for what the zoomed panel labels)

    @property
    def must(self) -> bool:
        """Always labelled, even if it takes another row."""
        return self.rank <= 2


# -- building rows from a boot -----------------------------------------------------------------

def _line(b: BootAnalysis, no: int | None) -> str:
    lines = b.boot.lines
    if no is None or not 0 <= no - lines.first < len(lines):
        return ""
    return clip(lines.text[no - lines.first].strip(), 200)


def _lines(e: Event) -> str:
    end = e.end_line_no
    return f"lines {e.line_no}–{end}" if end is not None and end != e.line_no else f"line {e.line_no}"


def _event_bar(e: Event, t: int, fill: str, cls: str, detail: str, view_end: int) -> _Bar:
    """The bar of one event starting at axis time ``t``; one that never ends stops at ``view_end``."""
    dur = e.duration_ns
    name = clip(e.name, LABEL_CHARS)
    if dur is None:
        timing, label = f"start {fmt_at(t)}, never finished in the log", f"{name} (never returned)"
        return _Bar(t, max(view_end, t), fill, f"bar {cls} open", label, _tip(e, timing, detail), open=True)
    timing, label = f"start {fmt_at(t)}, duration {fmt_duration(dur)}", f"{name} {fmt_duration(dur)}"
    return _Bar(t, t + dur, fill, f"bar {cls}", label, _tip(e, timing, detail))


def _tip(e: Event, timing: str, detail: str) -> str:
    return "\n".join(p for p in (f"{e.kind.value}: {e.name}", timing, _lines(e), detail) if p)


def _event_rows(b: BootAnalysis, view_end: int
                ) -> tuple[list[_RowSpec], list[_RowSpec], list[_Mark], dict[str, int]]:
    """(bootloader rows, kernel and user-space rows, marks, counts of what was left out); bars
    of events that never end stop at ``view_end``."""
    boot_rows = {"bootloader": _RowSpec("bootloader steps"), "bootstage": _RowSpec("bootstage report")}
    calls: dict[int | None, _RowSpec] = {}
    probes, fixups = _RowSpec("device probes"), _RowSpec("PCI fixups")
    procs, kthreads = _RowSpec("processes"), _RowSpec("kernel threads")
    marks: list[_Mark] = []
    units = _RowSpec("systemd units", max_label_rows=5)
    left = {"untimed": 0, "kthreads": 0, "targets": 0}
    for e, t in zip(b.boot.events, b.times or (None,) * len(b.boot.events)):
        if t is None:
            left["untimed"] += 1
            continue
        k, d = e.kind, e.detail
        if k is Kind.INITCALL:
            pid = d.pid if isinstance(d, InitcallDetail) else None
            row = calls.get(pid)
            if row is None:
                row = calls[pid] = _RowSpec("initcalls" + ("" if pid is None else f" · pid {pid}"), max_label_rows=5)
            info = ""
            if isinstance(d, InitcallDetail):
                info = ", ".join(p for p in (f"pid {d.pid}" if d.pid is not None else "", d.module or "",
                                             d.outcome) if p)
            # neighbours alternate between two shades; initcalls off the main thread in another hue
            fill = (INITCALL if pid in (None, 1) else INITCALL_ASYNC)[len(row.bars) % 2]
            row.bars.append(_event_bar(e, t, fill, "initcall", info, view_end))
        elif k in (Kind.PROBE, Kind.FIXUP):
            info = ""
            if isinstance(d, ProbeDetail):
                info = f"device {d.device}" + (f", driver {d.driver}" if d.driver else "") + f", returned {d.ret}"
            row = probes if k is Kind.PROBE else fixups
            row.bars.append(_event_bar(e, t, C(k.value), k.value, info, view_end))
        elif k in (Kind.BOOTLOADER, Kind.BOOTSTAGE):
            info = ""
            if isinstance(d, LoadDetail):
                info = f"{d.size_bytes} bytes" + (f" at {d.rate}" if d.rate else "")
            boot_rows[k.value].bars.append(_event_bar(e, t, C(k.value), k.value, info, view_end))
        elif k is Kind.PROCESS and isinstance(d, ProcessDetail):
            if d.kthread and e.duration_ns is None:
                left["kthreads"] += 1  # a kernel thread that lives on: dozens of them, all alike
                continue
            info = "\n".join(p for p in (
                f"pid {d.pid}" + (f", parent {d.ppid}" if d.ppid is not None else "")
                + (f", {d.forks} children" if d.forks else ""),
                f"exec {d.exe} after {fmt_duration(d.exec_ns)}" if d.exe and d.exec_ns is not None else "",
                "" if d.exited else "still running at the end of the log") if p)
            if d.kthread:
                kthreads.bars.append(_event_bar(e, t, C("kthread"), "kthread", info, view_end))
                continue
            bar = _event_bar(e, t, FORK, "process", info, view_end)
            # the name, and the comm when it differs (busybox applets re-exec /proc/self/exe)
            alias = d.comm if d.comm != e.name and not d.comm.startswith("swapper") else ""
            name = clip(e.name + (f" ({alias})" if alias else ""), LABEL_CHARS)
            dur = e.duration_ns
            label = f"{name} [{d.pid}] " + (fmt_duration(dur) if dur is not None else "(running)")
            split = t + d.exec_ns if d.exec_ns is not None else None
            procs.bars.append(_Bar(bar.start, bar.end, bar.fill, bar.cls.replace(" open", ""), label, bar.tip,
                                   f"{name} [{d.pid}]", split, EXEC, bar.open))
        elif k is Kind.UNIT and isinstance(d, UnitDetail):
            if e.duration_ns is None and d.result:
                left["targets"] += 1  # a target reached, a socket listening: an instant, dozens of them
                continue
            bad = d.result not in ("done", "")
            info = ", ".join(p for p in (d.unit if d.unit != e.name else "", d.description if d.description != e.name
                                         else "", f"result {d.result}" if d.result else "", f"from the {d.source}") if p)
            fill = C("unit_failed") if bad else UNIT[len(units.bars) % 2]
            units.bars.append(_event_bar(e, t, fill, "unit", info, view_end))
        elif k in (Kind.MARKER, Kind.MILESTONE):
            marker = k is Kind.MARKER
            name = clip(e.name, LABEL_CHARS) if marker else MILESTONE_LABELS.get(e.name, e.name)
            if e.name == Milestone.BOOTLOADER_START and not marker:  # the program's own name: "barebox"
                name = b.boot.bootloader_at(e.line_no) or "bootloader"
            text = _line(b, e.line_no)
            tip = (f"{'marker' if marker else 'milestone'} {e.name}\n{fmt_at(t)}\nline {e.line_no}"
                   + (f": {text}" if text else ""))
            rank = (0 if e.name == READY else 1) if marker else (2 if e.name in KEY_MILESTONES else 3)
            marks.append(_Mark(t, f"{name} {duration(t, {'s': 3})}", tip, marker, rank))
    kernel = [calls[p] for p in sorted(calls, key=lambda p: (p is None, p != 1, p or 0))]
    kernel += [probes, fixups, procs, units, kthreads]
    return ([r for r in boot_rows.values() if r.bars], [r for r in kernel if r.bars], marks, left)


def _stage_row(stages: Sequence[Stage], sub: bool, t0: int, t1: int) -> _RowSpec | None:
    """The stage bar (top-level stages) or the kernel-init sub-stages, within [t0, t1]."""
    parents = {s.parent for s in stages if s.parent is not None and s.status == MEASURED}
    title = ("kernel init" if parents <= {"kernel_init"} else "user space" if parents == {"userspace"}
             else "parts of stages") if sub else "stages"
    row = _RowSpec(title, lane=LANE if sub else STAGE_LANE, max_label_rows=3)
    for s in stages:
        if (s.parent is not None) != sub or s.status != MEASURED or s.start_ns is None or s.duration_ns is None:
            continue
        end = s.start_ns + s.duration_ns
        if end <= t0 or s.start_ns >= t1:
            continue
        dur = figure(s.duration_ns, s.evidence) if s.evidence is not None else fmt_duration(s.duration_ns)
        lines = ""
        if s.start is not None and s.end is not None and s.start.line_no and s.end.line_no:
            lines = f"\nlines {s.start.line_no}–{s.end.line_no}"
        tip = (f"{s.label}\nstart {fmt_at(s.start_ns)}, duration {dur}" + (" (estimated)" if s.estimated else "")
               + lines + (f"\n{evidence_text(s.evidence)}" if s.evidence is not None else ""))
        row.bars.append(_Bar(s.start_ns, end, palette.stage_colour(s.name), f"stage {s.name}",
                             f"{s.label} {dur}", tip, f"{s.name} {dur}"))
    return row if row.bars else None


# -- panels ------------------------------------------------------------------------------------

def _pack(bars: list[_Bar], slack: int) -> list[tuple[int, _Bar, bool]]:
    """(lane, bar, alone) for each bar: greedy lanes; ``alone`` is False for a bar that had to
    share a lane with one it overlaps (past MAX_LANES), which then gets no inside label.

    Bars may overlap by ``slack`` (a pixel's worth of time) in one lane: printk and host times
    jitter by microseconds, and a lane per such overlap would split the initcalls of one
    thread, all run one after the other, over several lanes.
    """
    out: list[tuple[int, _Bar, bool]] = []
    ends: list[int] = []
    for bar in sorted(bars, key=lambda b: (b.start, -b.end)):
        # (min in C first: with every lane taken, as under 40,000 overlapping initcalls, the
        # loop below would try all of them for every bar)
        for j, e in enumerate(ends) if ends and min(ends) - slack <= bar.start else ():
            if e - slack <= bar.start:
                ends[j] = max(e, bar.end)
                out.append((j, bar, True))
                break
        else:
            if len(ends) < MAX_LANES:
                ends.append(bar.end)
                out.append((len(ends) - 1, bar, True))
            else:
                ends[-1] = max(ends[-1], bar.end)
                out.append((len(ends) - 1, bar, False))
    return out


def _panel(doc: SvgDoc, y: float, sc: Scale, rows: Sequence[_RowSpec], marks: Sequence[_Mark], title: str) -> float:
    """Draw one panel from ``y``: the marks' labels, the rows, the axis. Returns the y below it."""
    lo, hi = sc.x0, sc.x0 + sc.width
    # marks: labels in rows above the plot, row 0 nearest to it
    placed_marks: list[tuple[_Mark, float, tuple[int, float] | None]] = []
    inside = [m for m in marks if sc.t0 <= m.t <= sc.t1]
    asks = []  # (mark, leader x, label width, left edges), in labelling order
    for m in sorted(inside, key=lambda m: (m.rank, m.t)):
        c = sc.x(m.t)
        w = text_width(m.label, LABEL)
        asks.append((m, c, w, [x for x in (c + 3, c - 3 - w) if lo <= x and x + w <= hi]))
    # markers and key milestones are always labelled, however many there are: the rows are told
    # all the labels first, so that they can index a thousand rows as well as three
    mrows = LabelRows(lo, hi, 3, plan=[(xs, w, c, True) for m, c, w, xs in asks if m.rank != UNLABELLED and xs])
    for m, c, w, xs in asks:
        if m.rank == UNLABELLED:
            placed_marks.append((m, c, None))
            continue
        spot = mrows.find(xs, w, c, m.must, lead_in_row=True) if xs else None
        if spot is not None:
            mrows.take(spot, w, c, lead_in_row=True)
        placed_marks.append((m, c, spot))
    band = max(mrows.used, 1) * ROW + 4
    doc.text(MARGIN, y + ROW - 2, fit(title, 11, GUTTER - MARGIN - 8), 11, weight="bold")
    top = y + band
    cy = top
    for row in rows:
        cy = _row(doc, cy + 3, sc, row) + 3
        doc.line(MARGIN, cy, hi, cy, "#eeeeee", 1)
    bottom = cy
    # grid and axis
    times, unit, uname, dec = ticks(sc)
    for t in times:
        x = sc.x(t)
        doc.line(x, top, x, bottom + 4, "#e6e6e6", 1)
        s = f"{t / unit:.{dec}f} {uname}"
        w = text_width(s, 10)
        if x - w / 2 >= lo - GUTTER / 2 and x + w / 2 <= WIDTH - 2:
            doc.text(x, bottom + 15, s, 10, anchor="middle", cls="dim")
    doc.line(lo, bottom, hi, bottom, "#bdbdbd", 1)
    for m, c, spot in placed_marks:
        colour = C("ready" if m.rank == 0 else "marker" if m.marker else "milestone")
        ly = top - 2 if spot is None else top - (spot[0] + 1) * ROW
        doc.line(c, ly, c, bottom, colour, 1.2 if m.marker else 1, "" if m.marker else "4 3",
                 f"mark {'marker' if m.marker else 'milestone'}", m.tip)
        if spot is not None:
            doc.text(spot[1], ly + ROW - 3, m.label, LABEL, cls="halo")
    return bottom + AXIS_BAND


def _row(doc: SvgDoc, y: float, sc: Scale, row: _RowSpec) -> float:
    """Draw one row from ``y``: label rows above, the lanes of bars, label rows below; returns
    the y of its bottom. Labels go longest bar first into whichever band has room nearer to the
    lanes, so that twice as many leaders find a free path."""
    lo, hi = sc.x0, sc.x0 + sc.width
    lanes = _pack(row.bars, sc.span // max(int(sc.width), 1))
    n_lanes = max((ln for ln, _, _ in lanes), default=0) + 1
    bands = (LabelRows(lo, hi, row.max_label_rows), LabelRows(lo, hi, row.max_label_rows))  # below, above
    order = sorted(range(len(lanes)), key=lambda i: (-lanes[i][1].weight, lanes[i][1].start))
    must = set(order[:MUST_LABEL])
    xs_of = [(sc.x(bar.start), sc.x(bar.end)) for _, bar, _ in lanes]
    size_in = LABEL if row.lane >= LANE else LABEL - 1
    outside: list[tuple[str, float, int, int, float]] = []  # text, x, band, row, leader x
    inside: list[tuple[str, float, int, str]] = []  # text, x, lane, fill
    for i in order:
        ln, bar, alone = lanes[i]
        x0, x1 = xs_of[i]
        fitting = [s for s in (bar.label, bar.short) if s and text_width(s, size_in) + 6 <= x1 - x0]
        if fitting and alone:
            inside.append((fitting[0], x0 + 3, ln, bar.fill))
            continue
        w = text_width(bar.label, LABEL)
        # the leader must end on the label: from the bar's middle, or for a bar wider than its
        # label (one that shares its lane), from the middle of a label starting with the bar
        xs, c = ((x0,), x0 + w / 2) if x1 - x0 > w else ((x0, x1 - w), (x0 + x1) / 2)
        spots = [(spot[0], 0, spot[1])] if (spot := bands[0].find(xs, w, c, i in must)) is not None else []
        if not spots or spots[0][0]:  # (the first row below the lanes is as near as it gets)
            if (spot := bands[1].find(xs, w, c, i in must)) is not None:
                spots.append((spot[0], 1, spot[1]))
        if spots:
            r, k, x = min(spots)
            bands[k].take((r, x), w, c)
            outside.append((bar.label, x, k, r, c))
    lanes_top = y + bands[1].used * ROW
    lanes_bottom = lanes_top + n_lanes * row.lane
    for (ln, bar, _), (x0, x1) in zip(lanes, xs_of):
        by, bh = lanes_top + ln * row.lane + 1, row.lane - 2
        if bar.split is not None and bar.split < bar.end:
            sx = sc.x(bar.split)
            doc.mid.append(f'<g><title>{esc(bar.tip)}</title><rect x="{num(x0)}" y="{num(by)}" '
                           f'width="{num(max(x1 - x0, 1))}" height="{num(bh)}" fill="{bar.fill}" class="{bar.cls}"/>'
                           f'<rect x="{num(sx)}" y="{num(by)}" width="{num(max(x1 - sx, 1))}" height="{num(bh)}" '
                           f'fill="{bar.split_fill}"/></g>')
        else:
            doc.rect(x0, by, max(x1 - x0, 1), bh, bar.fill, bar.cls, bar.tip)
    for s, x, ln, fill in inside:
        doc.text(x, lanes_top + ln * row.lane + row.lane / 2 + size_in * 0.35, s, size_in, cls=_ink(fill))
    for s, x, k, r, c in outside:
        if k == 0:
            ty = lanes_bottom + r * ROW
            doc.line(c, lanes_bottom - 1, c, ty + 2, "#8a8a8a", 0.7, layer="mid")
        else:
            ty = lanes_top - (r + 1) * ROW
            doc.line(c, lanes_top + 1, c, ty + ROW - 1, "#8a8a8a", 0.7, layer="mid")
        doc.text(x, ty + ROW - 2.5, s, LABEL, cls="halo")
    bottom = lanes_bottom + bands[0].used * ROW
    gy = lanes_top + row.lane / 2 + 4
    doc.text(MARGIN, gy, fit(row.title, 11, GUTTER - MARGIN - 8), 11)
    note = row.note or _row_note(row, len(inside) + len(outside))
    if note and bottom - gy >= ROW + 2:
        doc.text(MARGIN, gy + ROW + 1, fit(note, 9, GUTTER - MARGIN - 8), 9, cls="dim")
    return bottom


def _ink(fill: str) -> str:
    """The class of a text drawn on ``fill``: white on dark colours."""
    return "in" if palette.ink(fill) == palette.SURFACE else ""


def _row_note(row: _RowSpec, labelled: int) -> str:
    n = len(row.bars)
    if row.bars[0].cls.startswith("stage") or n < 2:
        return ""
    return f"{n} bars, {labelled} labelled"


# -- boots and the document --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _View:
    """What one boot shows: its range, and the start of the zoomed panel if there is one."""

    start: int
    end: int
    zoom: int | None


_KERNEL_KINDS = frozenset({Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Kind.PROCESS})


def _view(b: BootAnalysis) -> _View:
    """The range a boot's panels show; a zoomed panel when the kernel starts late and there are
    kernel events to see in it."""
    ts = [t for t in b.times if t is not None]
    ends = [t + e.duration_ns for e, t in zip(b.boot.events, b.times) if t is not None and e.duration_ns]
    ends += [s.end_ns for s in b.stages if s.end_ns is not None]
    starts = [s.start_ns for s in b.stages if s.start_ns is not None]
    start = min([b.total.start_ns, *ts, *starts])
    end = max([start + NS_PER_MS, *ts, *ends] + ([b.total.end_ns] if b.total.end_ns is not None else []))
    k0 = next((s.start_ns for s in b.stages if s.name == "kernel_init" and s.start_ns is not None), None)
    detail = any(t is not None and e.kind in _KERNEL_KINDS for e, t in zip(b.boot.events, b.times))
    late = k0 is not None and k0 < end and k0 - start >= ZOOM_SHARE * (end - start)
    zoom = k0 if late and detail else None
    return _View(start, end, zoom)


def _span(ns: int) -> int:
    """A panel's span: the boot's, plus 2 % of room at the right."""
    return max(ns + ns // 50, NS_PER_MS)


def _boot_header(doc: SvgDoc, y: float, b: BootAnalysis, pos: int, n: int, why: str = "") -> float:
    boot, tot = b.boot, b.total
    w = WIDTH - 2 * MARGIN
    doc.text(MARGIN, y + 14, fit(f"{boot.source} · boot {pos:,} of {n:,}" + (f" ({why})" if why else ""), 13, w), 13,
             weight="bold")
    if tot.duration_ns is not None:
        est = " (estimated)" if tot.estimated else ""
        head = f"{tot.origin} → {tot.end_name}: {fmt_duration(tot.duration_ns)}{est} · {tot.end}"
    else:
        head = f"{tot.origin} → ready: not measured · {tot.end}"
    doc.text(MARGIN, y + 30, fit(head, 11, w), 11)
    missing = [f"{s.label}: {s.status}" for s in b.stages if s.status in (NOT_MEASURED,) and s.parent is None]
    # duration-only stages (read on a bootloader's own clock) cannot be drawn on the axis
    missing += [f"{s.label}: {fmt_duration(s.duration_ns)}, start not known (not drawn)" for s in b.stages
                if s.status == MEASURED and s.start_ns is None and s.duration_ns is not None]
    absent = [s.label for s in b.stages if s.status == ABSENT]
    parts = [f"t = 0: {ORIGINS.get(b.alignment.origin, b.alignment.origin)} ({b.alignment.axis.value} axis)"]
    if missing:
        parts.append("; ".join(missing))
    if absent:
        parts.append("absent: " + ", ".join(absent))
    doc.text(MARGIN, y + 45, fit(" · ".join(parts), 10, w), 10, cls="dim")
    return y + 52


def _draw_boot(doc: SvgDoc, y: float, b: BootAnalysis, view: _View, pos: int, n: int, spans: tuple[int, int],
               why: str = "") -> float:
    """Draw one boot from ``y`` (header, then one or two panels); returns the y below it."""
    y = _boot_header(doc, y, b, pos, n, why)
    boot_rows, kernel_rows, marks, left = _event_rows(b, view.end)
    notes = []
    if left["untimed"]:
        notes.append(f"{left['untimed']} events without a time on this axis are not drawn")
    if left["kthreads"]:
        notes.append(f"{left['kthreads']} kernel threads that never exit are not drawn")
    if left["targets"]:
        notes.append(f"{left['targets']} systemd units without a start job (targets reached, sockets) are not drawn")
    notes.append("hover a bar or a line for its name, times and log lines")
    doc.text(MARGIN, y + 6, fit(" · ".join(notes), 10, WIDTH - 2 * MARGIN), 10, cls="dim")
    y += 14
    lo, width = float(GUTTER), float(WIDTH - GUTTER - MARGIN)
    full = Scale(view.start, spans[0], lo, width)
    stage_rows = [r for r in (_stage_row(b.stages, False, full.t0, full.t1),
                              _stage_row(b.stages, True, full.t0, full.t1)) if r is not None]
    if view.zoom is None or not kernel_rows:
        return _panel(doc, y, full, stage_rows + boot_rows + kernel_rows, marks, "whole boot")
    zs = Scale(view.zoom, spans[1], lo, width)
    over = [m if m.marker or m.t < zs.t0 else replace(m, rank=UNLABELLED) for m in marks]
    bottom = _panel(doc, y, full, stage_rows + boot_rows, over, "whole boot")
    x0, x1 = full.x(zs.t0), full.x(min(zs.t1, view.end))
    ztop, axis = bottom + 8, bottom - AXIS_BAND
    doc.rect(x0, y, x1 - x0, axis - y, "#e8eef7", layer="back")
    doc.back.append(f'<polygon points="{num(x0)},{num(axis)} {num(x1)},{num(axis)} '
                    f'{num(zs.x0 + zs.width)},{num(ztop)} {num(zs.x0)},{num(ztop)}" fill="#e8eef7"/>')
    zrows = [r for r in (_stage_row(b.stages, False, zs.t0, zs.t1), _stage_row(b.stages, True, zs.t0, zs.t1))
             if r is not None]
    gain = spans[0] / spans[1]
    return _panel(doc, ztop, zs, zrows + kernel_rows, marks, f"kernel+user ×{gain:.1f}")


def _present(b: BootAnalysis) -> set[str]:
    """The palette keys of what a boot's panels draw (for the legend): as :func:`_event_rows`
    and :func:`_stage_row` choose them."""
    keys = {"stage-" + s.name for s in b.stages
            if s.status == MEASURED and s.start_ns is not None and s.duration_ns is not None}
    for e, t in zip(b.boot.events, b.times or (None,) * len(b.boot.events)):
        if t is None:
            continue
        k, d = e.kind, e.detail
        if k is Kind.MARKER:
            keys.add("ready" if e.name == READY else "marker")
            continue
        if k is Kind.MILESTONE:
            keys.add("milestone")
            continue
        if k is Kind.INITCALL:
            pid = d.pid if isinstance(d, InitcallDetail) else None
            keys.add("initcall" if pid in (None, 1) else "initcall_async")
        elif k is Kind.PROCESS:
            if not isinstance(d, ProcessDetail) or (d.kthread and e.duration_ns is None):
                continue  # not drawn
            keys.add("kthread" if d.kthread else "process")
        elif k is Kind.UNIT and isinstance(d, UnitDetail):
            if e.duration_ns is None and d.result:
                continue  # not drawn
            keys.add("unit" if d.result in ("done", "") else "unit_failed")
        else:
            keys.add(k.value)
        if e.duration_ns is None:
            keys.add("open")
    return keys


def _legend(doc: SvgDoc, y: float, present: set[str]) -> float:
    """The colours and line styles of what the graph draws (:mod:`.palette`, as in the HTML
    report's legend), in rows across the page; returns the y below."""
    x = float(MARGIN)
    for title, items in palette.legend_items(present, palette.SVG_GROUPS):
        for sw in (None, *items):
            name = title + ":" if sw is None else sw.label
            w = (0 if sw is None else 16) + text_width(name, 10) + 14
            if x + w > WIDTH - MARGIN:
                x, y = float(MARGIN), y + 15
            if sw is None:
                doc.text(x, y + 9, name, 10, weight="bold")
                x += w
                continue
            a, b = sw.colours[0], sw.colours[-1]
            if sw.shape in ("line", "dash"):
                doc.line(x + 5, y, x + 5, y + 10, a, 1.5, "3 2" if sw.shape == "dash" else "", layer="front")
            elif sw.shape in ("pair", "split"):
                cut = 6.0 if sw.shape == "pair" else 5.0
                doc.rect(x, y, cut, 10, a, layer="front")
                doc.rect(x + cut, y, 12 - cut, 10, b, layer="front")
            else:
                doc.rect(x, y, 12, 10, a, "open" if sw.shape == "open" else "", layer="front")
            doc.text(x + 16, y + 9, name, 10)
            x += w
    return y + 20


def render_svg(groups: Sequence[Group], many: Mapping[int, ManyBoots] | None = None) -> bytes:
    """The boot graph of every boot of every input, as one SVG document. ``many``: by group
    index, the inputs of many boots (:mod:`.many`), whose groups hold the boots kept: those are
    drawn, under the headline over every boot."""
    many = many or {}
    doc = SvgDoc()
    boots = sum(len(g.analysis.boots) for g in groups)
    title = "bootlens boot graph · " + ", ".join(g.name for g in groups)
    if boots == 1:
        tot = next(g.analysis.boots[0].total for g in groups if g.analysis.boots)
        if tot.duration_ns is not None:
            title += f" · {tot.origin} → {tot.end_name} {fmt_duration(tot.duration_ns)}"
    doc.text(MARGIN, 22, fit(title, 15, WIDTH - 2 * MARGIN - 160), 15, weight="bold")
    doc.text(WIDTH - MARGIN, 22, f"bootlens {__version__}", 10, anchor="end", cls="dim")
    present: set[str] = set()
    for g in groups:
        for b in g.analysis.boots[:MAX_BOOTS]:
            present |= _present(b)
    y = _legend(doc, 34, present)
    if not boots:
        doc.text(MARGIN, y + 16, "no boots found in the input", 12)
        return doc.render(WIDTH, y + 30)
    for gi, g in enumerate(groups):
        m = many.get(gi)
        if m is not None or len(g.analysis.boots) > 1:  # a run folder: the median of its boots first, then each boot
            head = (m.total if m is not None else boots_total(g.analysis.boots)).text(fmt_duration)
            doc.text(MARGIN, y + 14, fit(head if len(groups) == 1 else f"{g.name}: {head}", 14,
                                         WIDTH - 2 * MARGIN), 14, weight="bold")
            y += 22
        shown = g.analysis.boots[:MAX_BOOTS]
        views = [_view(b) for b in shown]
        full = _span(max(v.end - v.start for v in views))
        zooms = [v.end - v.zoom for v in views if v.zoom is not None]
        spans = (full, _span(max(zooms)) if zooms else full)
        for i, (b, v) in enumerate(zip(shown, views)):
            doc.line(MARGIN, y + 2, WIDTH - MARGIN, y + 2, "#9e9e9e", 1)
            if m is not None:
                y = _draw_boot(doc, y + 6, b, v, m.positions[i] + 1, m.boots, spans, m.why[i])
            else:
                y = _draw_boot(doc, y + 6, b, v, i + 1, len(g.analysis.boots), spans)
        rest = len(g.analysis.boots) - len(shown)
        if m is not None:
            doc.text(MARGIN, y + 10, fit(f"{g.name}: {m.boots - len(shown):,} more boots not drawn (the first, slowest "
                                         "and last are; the headline is over every boot)", 11, WIDTH - 2 * MARGIN), 11)
            y += 20
        elif rest:
            doc.text(MARGIN, y + 10, fit(f"{g.name}: {rest} more boots not drawn (the HTML report shows all)",
                                          11, WIDTH - 2 * MARGIN), 11)
            y += 20
    return doc.render(WIDTH, y + 8)
