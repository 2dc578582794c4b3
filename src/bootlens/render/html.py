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
from bisect import bisect_left, bisect_right
import gc
import hashlib
import heapq
from itertools import accumulate, chain, islice, pairwise
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import le
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from .. import __version__
from ..timeline.analyze import BootAnalysis
from ..stats.compare import Comparison
from ..timeline.inputs import Group
from .._native import native_module
from ..core.model import READY, Clock, Event, Events, InitcallDetail, Kind, LoadDetail, ProbeDetail, ProcessDetail, UnitDetail
from ..stats.figures import statistics_of
from . import palette
from .headline import boots_total
from .visible import visible, visible_data

if TYPE_CHECKING:
    from ..timeline.chain import Chain

_US = 1000


def _us(ns: int | None) -> int | None:
    return None if ns is None else (ns + (_US // 2 if ns >= 0 else -(_US // 2))) // _US


class _Names:
    """A string table: each distinct string stored once, in ``items``. Natively (report.rs
    report_columns_all) strings are only appended to ``items``: ``index`` catches up when asked
    (a report of one boot never asks: at 1M events, 600,000 strings never put in a dict)."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {"": 0}
        self.items: list[str] = [""]

    @property
    def index(self) -> dict[str, int]:
        """Each string's place in ``items``."""
        index, items = self._index, self.items
        if len(index) != len(items):
            index.update(zip(islice(items, len(index), None), range(len(index), len(items))))
        return index

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i

    def extend(self, strs: Iterable[str]) -> None:
        """Each of ``strs`` added in order, as a call each would (a million events: no call each)."""
        index, items = self.index, self.items
        new = list(dict.fromkeys(x for x in strs if x not in index))
        index.update(zip(new, range(len(items), len(items) + len(new))))
        items.extend(new)


def _detail_texts(dets: list[Any], names: list[str]) -> list[str]:
    """:func:`_detail` of each of ``dets`` (``names``: their events' names). Probes have a
    detail each (a device): their texts are made by one comprehension, not a call each (the
    processes' natively, by :func:`_texts_exec`)."""
    out: list[str | None] = [None] * len(dets)
    probes = [j for j, d in enumerate(dets) if type(d) is ProbeDetail]
    for j, t in zip(probes, [f"device {d.device}" + (f", driver {d.driver}" if d.driver else "") + f", returned {d.ret}"
                             for d in map(dets.__getitem__, probes)]):
        out[j] = t
    return [_detail(d, name) if t is None else t for t, d, name in zip(out, dets, names)]


def _detail(d: Any, name: str) -> str:
    """The tooltip text of an event's detail ``d`` (``name``: the event's name)."""
    if isinstance(d, InitcallDetail):
        parts = [f"pid {d.pid}" if d.pid is not None else "", d.module or "",
                 f"returned {d.ret}" if d.returned else "never returned"]
        return ", ".join(p for p in parts if p)
    if isinstance(d, ProbeDetail):
        return f"device {d.device}" + (f", driver {d.driver}" if d.driver else "") + f", returned {d.ret}"
    if isinstance(d, ProcessDetail):  # the words of a process's text: report.rs process_text
        return cast(str, native_module().report_process_texts([ProcessDetail(*d)], ProcessDetail)[0][0])
    if isinstance(d, LoadDetail):
        return f"{d.size_bytes} bytes" + (f" at {d.rate}" if d.rate else "")
    if isinstance(d, UnitDetail):
        parts = [d.unit if d.unit and d.unit != name else "", d.description if d.description != name else "",
                 f"result {d.result}" if d.result != "done" else "", "" if d.result else "never finished",
                 f"from the {d.source}"]
        return ", ".join(p for p in parts if p)
    return ""


_FIXED_ROWS: dict[Kind, tuple[int, str, str, str]] = {
    Kind.BOOTLOADER: (0, "bootloader", "bootloader", "bootloader"),
    Kind.BOOTSTAGE: (0, "bootstage report", "bootstage", "bootstage"),
    Kind.FIXUP: (3, "PCI fixups", "fixup", "fixup"),
    Kind.PROBE: (4, "device probes", "probe", "probe"),
}
_INITCALLS = (1, "initcalls", "initcall", "initcall")
_UNITS, _UNITS_FAILED = (5, "systemd units", "unit", "unit"), (5, "systemd units · failed", "unit", "unit_failed")
_PROCESSES, _KTHREADS = (6, "processes", "process", "process"), (7, "kernel threads", "kthread", "kthread")


def _row_of(k: Kind, det: Any) -> tuple[int, str, str, str]:
    """(order, title, kind, paint) of the timeline row of an event of kind ``k`` with detail
    ``det``; ``paint`` is its colour's key in :mod:`.palette`."""
    if k is Kind.INITCALL:
        return _initcall_row(det.pid if isinstance(det, InitcallDetail) else None)
    if k is Kind.UNIT:
        return _UNITS_FAILED if isinstance(det, UnitDetail) and det.result not in ("done", "") else _UNITS
    if k is Kind.PROCESS:
        return _KTHREADS if isinstance(det, ProcessDetail) and det.kthread else _PROCESSES
    return _FIXED_ROWS.get(k) or (8, k.value, k.value, k.value)


def _initcall_row(pid: int | None) -> tuple[int, str, str, str]:
    """The timeline row of the initcalls run by ``pid`` (None: not said)."""
    if pid is None:
        return _INITCALLS
    return (1 if pid == 1 else 2, f"initcalls · pid {pid}", "initcall", "initcall" if pid == 1 else "initcall_async")


_BLOCK_ROWS = (Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Kind.PROCESS)  # EventBlock.row_groups' kind codes (4: kthreads)


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
    push, pop = heapq.heappush, heapq.heappop  # a million spans: no attribute lookups per span
    for it in items:
        s, d, _ = it
        while busy and busy[0][0] <= s:
            push(free, pop(busy)[1])
        if free:
            j = pop(free)
            lanes[j].append(it)
        else:
            j = len(lanes)
            lanes.append([it])
        push(busy, (s + d if d > 0 else s, j))
    return lanes


def _lanes(key: tuple[int, str, str, str], idx: list[int], at: Sequence[int], dd: list[int]) -> list[list[int]]:
    """The lanes of one row, each the indices of its events (``idx``, with their times ``at`` and
    durations ``dd``) in the order drawn."""
    items = list(zip(map(at.__getitem__, idx), map(dd.__getitem__, idx), idx))
    return [[i for _, _, i in lane] for lane in ([sorted(items)] if _one_thread(key) else _pack(items))]


def _one_thread(key: tuple[int, str, str, str]) -> bool:
    """Whether a row is one thread's initcalls, drawn as one lane: one thread runs its initcalls
    one after another, even where jiffy-rounded durations ("after 4000 usecs") make a call seem
    to end after the next begins."""
    return key[2] == "initcall" and key[1] != "initcalls"


def _place_walk(walk: Iterable[tuple[int, Event]], times: Sequence[int | None],
                rows: dict[tuple[int, str, str, str], list[int]]
                ) -> tuple[list[dict[str, Any]], set[str], int, set[tuple[int, str, str, str]]]:
    """The events of ``walk`` (index, event) put in their timeline ``rows``, or the marks when
    they are markers and milestones: (marks, their legend keys, the events without an axis time,
    the rows given an event)."""
    marks = []
    mark_keys: set[str] = set()
    keys: set[tuple[int, str, str, str]] = set()
    unplaced = 0
    fixed = _FIXED_ROWS
    pid_rows: dict[int | None, tuple[int, str, str, str]] = {}
    initcall, process, marker, milestone = Kind.INITCALL, Kind.PROCESS, Kind.MARKER, Kind.MILESTONE
    for i, e in walk:
        t = times[i]
        if t is None:
            unplaced += 1
            continue
        k = e.kind
        key = fixed.get(k)
        if key is None:
            det = e.detail
            if k is initcall:  # the row is the pid's: one title string per pid, not per call
                pid = det.pid if isinstance(det, InitcallDetail) else None
                key = pid_rows.get(pid)
                if key is None:
                    key = pid_rows[pid] = _row_of(k, det)
            elif k is process:
                key = _KTHREADS if isinstance(det, ProcessDetail) and det.kthread else _PROCESSES
            elif k is marker or k is milestone:
                if e.name != "uptime":
                    marks.append({"t": _us(t), "n": e.name, "l": e.line_no, "k": k.value})
                    mark_keys.add("ready" if e.name == READY and k is marker else k.value)
                continue
            else:
                key = _row_of(k, det)
        spans = rows.get(key)
        if spans is None:
            rows[key] = spans = []
        spans.append(i)
        keys.add(key)
    return marks, mark_keys, unplaced, keys


def boot_data(b: BootAnalysis, names: _Names, top: int = 25, raw: bool = False) -> dict[str, Any]:
    """One boot as the viewer's columnar data (``raw``: the event columns of a native block, the
    log's lines and their times as page pieces, :class:`JsonPiece`, whose JSON text is written
    natively when the page is, for the page only; else lists).

    Built column by column: for a boot whose events are a native block, the block's rows are
    grouped, packed into lanes and written as columns natively (native/src/events/report.rs),
    no Event built for a row, and Python sees the other events only; else ``zip(*events)``
    transposes the events in C and the columns are made with ``map`` and comprehensions over an
    order of event indices (one Python call per field of every event cost 12 us an event)."""
    from ..timeline.chain import critical_chain

    boot, al = b.boot, b.alignment
    events = boot.events
    times = b.times
    n = min(len(events), len(times))
    block = events.block if isinstance(events, Events) and n else None
    rows: dict[tuple[int, str, str, str], list[int]] = {}
    block_keys: set[tuple[int, str, str, str]] = set()  # the rows holding block rows
    unplaced = 0
    if block is not None:
        # the block's rows grouped by timeline row natively; the walk below sees the other events
        # only. A row's order of indices does not matter: its lanes sort them by start.
        groups, unplaced = block.row_groups(times)
        for code, pid, at_ in groups:
            k = _BLOCK_ROWS[min(code, 3)]
            key = _initcall_row(pid) if k is Kind.INITCALL else _KTHREADS if code == 4 else _row_of(k, None)
            rows.setdefault(key, []).extend(at_)
            block_keys.add(key)
        others = block.others()
        opos = block.other_positions()
        walk: Iterable[tuple[int, Event]] = ((i, e) for i, e in zip(opos, others) if i < n)
    else:
        walk = zip(range(n), events)
    marks, mark_keys, unplaced_others, other_keys = _place_walk(walk, times, rows)
    unplaced += unplaced_others
    order: list[int] = []  # event indices in the order of the columns: row by row, lane by lane
    row_out = []
    if block is not None:
        report_lanes = native_module().report_lanes

        ok = dict(zip(opos, range(len(opos))))  # an other event's position -> its index in others
        other_order: list[int] = []  # the other events in column order
        for key in sorted(rows):
            flat, lens = report_lanes(block, rows[key], times, _one_thread(key))
            ends = list(accumulate(lens, initial=len(order)))
            row_out.append({"title": key[1], "kind": key[2], "paint": key[3], "lanes": [list(p) for p in pairwise(ends)]})
            if key in other_keys:
                other_order += flat if key not in block_keys else [i for i in flat if i in ok]
            order += flat
        cols, negative = _block_columns(block, order, times, [ok[i] for i in other_order], others, names, raw)
    else:
        kinds, enames, _, durs, line_nos, end_nos, dets = zip(*islice(events, n)) if n else ((),) * 7
        dd = [-1 if d is None else d for d in durs]  # duration, -1 for an instant
        at = cast("Sequence[int]", times)  # read below only at placed events' indices, where none is None
        for key in sorted(rows):
            lanes_out = []
            for lane in _lanes(key, rows[key], at, dd):
                lanes_out.append([len(order), len(order) + len(lane)])
                order += lane
            row_out.append({"title": key[1], "kind": key[2], "paint": key[3], "lanes": lanes_out})
        cols = _columns(order, at, dd, enames, line_nos, end_nos, dets, names)
        negative = min(cols["d"], default=0) < 0

    # what the legend shows for this boot: the colours and marks its timeline and stage bar draw
    legend = {"stage-" + s.name for s in b.stages
              if s.duration_ns is not None and (s.parent is None or s.start_ns is not None)}
    legend.update(key[3] for key in rows)
    if negative:  # a duration of -1: an instant (or a negative duration)
        legend.add("instant")
    legend |= mark_keys
    legend.update(s.key for s in palette.STATES)

    tops = {"initcalls": b.top_initcalls, "processes": b.top_processes, "probes": b.top_probes,
            "units": b.top_units}
    pos = _positions(events, n, [e for evs in tops.values() for e in evs], block)
    chain_ = critical_chain(b)
    # event index -> its place in the columns (-1: not drawn as a bar), for the events referred to
    wanted = sorted(set(pos.values()) | {lk.event for lk in chain_.links if lk.event is not None and 0 <= lk.event < n})
    column_of = dict(zip(wanted, _places(order, wanted, block is not None)))

    def ref(evs: Sequence[Event]) -> list[int]:
        return [column_of[j] for j in map(pos.get, evs) if j is not None and column_of[j] >= 0]

    total = b.total
    lines = boot.lines
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
        "top": {k: ref(evs) for k, evs in tops.items()},
        "chain": _chain_data(chain_, column_of),
        "silences": [{"s": _us(x.start_ns), "d": _us(x.duration_ns), "a": x.line_before, "b": x.line_after}
                     for x in b.silences],
        "log": {"first": lines.first, "text": _page_strings(lines.text, raw),
                "t": _line_times(lines.host, lines.kernel, al.offsets.get(Clock.HOST), al.offsets.get(Clock.KERNEL), raw)},
        "samples": _samples(b),
    }


def _page_strings(text: Sequence[str], raw: bool) -> list[str] | JsonPiece:
    """The log's lines (or the string table's strings) for the page: with ``raw``, when no line
    has anything for :func:`~.visible.visible` to escape (ASCII, no control character but a tab
    or a newline), a piece that writes their JSON array natively when the page is written
    (page.rs text_piece), no str made a line, none checked by visible_data; else a list."""
    if raw:
        got = native_module().text_piece(text)
        if got is not None:
            return cast(JsonPiece, got)
    return list(text)


def _columns(order: list[int], times: Sequence[int], dd: list[int], enames: Sequence[str],
             line_nos: Sequence[int], end_nos: Sequence[int | None], dets: Sequence[Any], names: _Names
             ) -> dict[str, list[int]]:
    """The event columns ``s d n l e x i`` of the events at ``order`` (every one placed); the
    Python reference of :func:`_block_columns`.

    The string table gets each event's name and then its detail text, in column order, as one
    ``names()`` call per event did."""
    dets_o = [dets[i] for i in order]
    names_o = [enames[i] for i in order]
    texts_o, x = _texts_exec(dets_o, names_o)
    names.extend(dict.fromkeys(chain.from_iterable(zip(names_o, texts_o))))
    index = names.index
    ts = list(map(times.__getitem__, order))
    return {
        "s": ([(t + 500) // _US for t in ts] if min(ts, default=0) >= 0 else  # no time before the origin
              [(t + 500) // _US if t >= 0 else (t - 500) // _US for t in ts]),
        "d": [-1 if d < 0 else (d + 500) // _US for d in map(dd.__getitem__, order)],
        "n": list(map(index.__getitem__, names_o)),
        "l": list(map(line_nos.__getitem__, order)),
        "e": [x or 0 for x in map(end_nos.__getitem__, order)],
        "x": x,
        "i": list(map(index.__getitem__, texts_o)),
    }


def _texts_exec(dets_o: list[Any], names_o: list[str]) -> tuple[list[str], list[int]]:
    """The detail text and the exec time column (a process's exec time from its start in us,
    else -1) of events with details ``dets_o`` and names ``names_o``, in column order. A
    process's (nearly every one distinct: its pid) are made natively, a text each (report.rs
    report_process_texts); the other details' once per distinct detail (most repeat: "pid 1,
    returned 0"), from the first event that has it (a unit's text leaves out its event's name)."""
    texts, x, rest = native_module().report_process_texts(dets_o, ProcessDetail)
    if rest:
        texts_r, x_r = _texts_exec_py([dets_o[j] for j in rest], [names_o[j] for j in rest])
        deque(map(texts.__setitem__, rest, texts_r), maxlen=0)
        deque(map(x.__setitem__, rest, x_r), maxlen=0)
    return texts, x


def _texts_exec_py(dets_o: list[Any], names_o: list[str]) -> tuple[list[str], list[int]]:
    """:func:`_texts_exec` of details that are not exactly ProcessDetail, in Python."""
    # a detail is its own key when no two of the detail types present can be equal tuples (their
    # widths differ): no (type, detail) pair per event, 70 MB for a million events
    types = set(map(type, dets_o)) - {type(None)}
    widths = {len(getattr(t, "_fields", ())) for t in types}
    keys: list[Any] = (dets_o if len(widths) == len(types) and all(issubclass(t, tuple) for t in types)
                       else list(zip(map(type, dets_o), dets_o)))
    # each distinct detail's first position: walked backwards, the first one is written last
    first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))
    text = _detail_texts([dets_o[j] for j in first.values()], [names_o[j] for j in first.values()])
    texts_o = list(map(dict(zip(first, text)).__getitem__, keys))
    # a process's exec time from its start, or -1: per distinct detail, then looked up per event
    exec_us = dict(zip(first, [-1 if not isinstance(d, ProcessDetail) or d.exec_ns is None else _us(d.exec_ns) or 0
                               for d in map(dets_o.__getitem__, first.values())]))
    return texts_o, list(map(exec_us.__getitem__, keys))


def _block_columns(block: Any, order: list[int], times: Sequence[int | None], other_order: list[int],
                   others: list[Event], names: _Names, raw: bool = False
                   ) -> tuple[dict[str, list[int]] | JsonPiece, bool]:
    """:func:`_columns` of a boot whose events are a native block, and whether a duration is
    negative: the block's rows written natively (report.rs report_columns_all), the other events'
    texts made here in their column order (``other_order``: indices into ``others``). ``raw``:
    the columns as a page piece that writes the JSON text orjson would write for them (at 1M
    events the seven columns were 7M Python ints to make, check for escapes, serialise and
    free; then 41 MB of JSON copied into the page)."""
    report_columns_all = native_module().report_columns_all

    texts_o, x_o = _texts_exec([others[k].detail for k in other_order], [others[k].name for k in other_order])
    texts: list[str] = [""] * len(others)
    x = [-1] * len(others)
    deque(map(texts.__setitem__, other_order, texts_o), maxlen=0)
    deque(map(x.__setitem__, other_order, x_o), maxlen=0)
    cols = report_columns_all(block, order, times, [e.name for e in others], texts, x, names.items,
                              lambda d: _detail(d, ""), raw)
    if raw:
        piece, negative = cols
        return cast(JsonPiece, piece), negative
    out = dict(zip("sdnlexi", cols))
    return out, min(out["d"], default=0) < 0


def _places(order: list[int], wanted: list[int], native: bool) -> list[int]:
    """The place in ``order`` of each of ``wanted`` (event indices), -1 when not there."""
    if native:
        report_places = native_module().report_places

        return cast("list[int]", report_places(order, wanted))
    at = dict.fromkeys(wanted, -1)
    for c, p in enumerate(order):
        if p in at:
            at[p] = c
    return [at[w] for w in wanted]


def _positions(events: Sequence[Event], n: int, wanted: list[Event], block: Any = None) -> dict[Event, int]:
    """The index in ``events`` (the first ``n``) of each of ``wanted`` (the same event: the same
    object, else an equal one, on its line). By value, not ``id()``: a lazy sequence of events may
    hand out a new object for the same event each time."""
    want: dict[int, list[Event]] = {}
    for e in wanted:
        want.setdefault(e.line_no, []).append(e)
    out: dict[Event, int] = {}
    if not want:
        return out
    if block is not None:  # the events on the wanted lines found natively, no Event built a row
        report_on_lines = native_module().report_on_lines

        at: Iterable[int] = (i for i in report_on_lines(block, sorted(want)) if i < n)
    else:
        line_nos = [e.line_no for e in islice(events, n)]
        if all(map(le, line_nos, islice(line_nos, 1, None))):
            # events in line order (always, from a log): each wanted line's events are one run of
            # positions, found by bisection
            at = chain.from_iterable(
                range(bisect_left(line_nos, ln), bisect_right(line_nos, ln)) for ln in sorted(want))
        else:
            at = [i for i, ln in enumerate(line_nos) if ln in want]
    for i in at:
        e = events[i]
        for w in want[e.line_no]:
            if w is e or (w == e and w not in out):
                out[w] = i
    return out


def _line_times(host: Sequence[int | None], kernel: Sequence[int | None], h_off: int | None, k_off: int | None,
                raw: bool = False) -> list[int | None] | JsonPiece:
    """:func:`_axis_times` natively (report.rs report_line_times): a million lines' times without
    a Python step each; with ``raw``, as a page piece (no int made a line)."""
    report_line_times = native_module().report_line_times

    return cast("list[int | None] | JsonPiece", report_line_times(host, kernel, h_off, k_off, raw))


def _axis_times(host: Sequence[int | None], kernel: Sequence[int | None], h_off: int | None, k_off: int | None
                ) -> list[int | None]:
    """Each line's time on the boot's axis in us (its host time if the axis places host times,
    else its kernel time), or None: the Python reference of :func:`_line_times`."""
    def us(ns: int) -> int:
        return (ns + 500) // _US if ns >= 0 else (ns - 500) // _US

    if len(host) != len(kernel):  # never for lines read by bootlens.read.reader: zip's length, as ever
        host, kernel = host[:len(kernel)], kernel[:len(host)]
    if h_off is None and k_off is None:
        return [None] * len(host)
    if h_off is None:
        assert k_off is not None
        return [None if k is None else (v + 500) // _US if (v := k + k_off) >= 0 else (v - 500) // _US
                for k in kernel]
    if k_off is None:
        return [None if h is None else (v + 500) // _US if (v := h + h_off) >= 0 else (v - 500) // _US
                for h in host]
    return [us(h + h_off) if h is not None else us(k + k_off) if k is not None else None
            for h, k in zip(host, kernel)]


def _samples(b: BootAnalysis) -> dict[str, Any] | None:
    """A bootchart's CPU and disk samples on the boot's axis (µs), for the panel under the
    timeline; None when the boot has none."""
    from ..timeline.agreement import samples

    m = samples(b)
    if m is None:
        return None
    def r3(xs: tuple[float, ...]) -> list[float]:
        return [round(x, 3) for x in xs]  # fractions: 0.1 % is finer than a pixel

    return {"t": [_us(t) for t in m.t_ns], "user": r3(m.user), "sys": r3(m.sys), "iow": r3(m.io_wait),
            "dt": [_us(t) for t in m.disk_t_ns], "rd": [round(x) for x in m.read_bps],
            "wr": [round(x) for x in m.write_bps], "rd_max": round(max(m.read_bps, default=0)),
            "wr_max": round(max(m.write_bps, default=0))}


def _chain_data(c: Chain, column_of: dict[int, int]) -> dict[str, Any]:
    """The critical chain to ready (:mod:`bootlens.timeline.chain`, an estimate without dependencies):
    links top first; ``ev`` is the link's index in the viewer's event columns (``column_of``, by
    event index), -1 for a stage, a marker or a milestone (drawn as lines, not bars)."""
    from ..timeline.chain import ESTIMATE

    return {"source": c.source, "estimated": c.estimated, "links": [
        {"name": lk.name, "kind": lk.kind, "at": _us(lk.at_ns), "dur": _us(lk.duration_ns), "line": lk.line_no,
         "ev": column_of.get(lk.event, -1) if lk.event is not None else -1,
         "estimate": lk.how == ESTIMATE}
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


def report_data(groups: Sequence[Group], top: int = 25, raw: bool = False) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able object. ``findings[i]`` are the advisor's
    findings for ``boots[i]`` (docs/json.md, "bootlens advise --json", one finding each).
    ``raw``: a native block's event columns, the log's lines and times as page pieces
    (:func:`boot_data`)."""
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
            d = boot_data(b, names, top, raw)
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
        "names": _page_strings(names.items, raw),
        "boots": boots,
        "stats": stats,
        "findings": findings,
        "merged_findings": merged,
    }


class JsonPiece(Protocol):
    """A big value of the page's data kept natively until the page is written (page.rs
    JsonPiece): its JSON text, orjson's with the page's escapes, written to a file a megabyte at
    a time, or as bytes."""

    def write_to(self, file: Any) -> None: ...

    def __bytes__(self) -> bytes: ...


Piece = bytes | JsonPiece  # a piece of a page: its bytes, or a value that writes itself


def _embed_pieces(obj: Any) -> list[Piece]:
    """JSON safe inside a <script> element (no '<' can close it or open a comment), in pieces:
    what orjson writes for ``obj`` around its :class:`JsonPiece` values, escaped here
    (page.rs page_escape), and those values, which write their own text with the same escapes.
    At a million events the pieces are most of the page's 186 MB: it is written piece by piece
    (:func:`bootlens.cli.exits.write_output`), never copied whole to serialise, escape or join."""
    held: list[JsonPiece] = []

    def hold(o: Any) -> orjson.Fragment:
        if not hasattr(o, "write_to"):
            raise TypeError(f"Type is not JSON serializable: {type(o).__name__}")
        held.append(o)
        return orjson.Fragment(b"\0")  # orjson writes no NUL byte of its own: a NUL in a string is \u0000

    raw = orjson.dumps(obj, default=hold)
    escape = native_module().page_escape
    parts = raw.split(b"\0") if held else [raw]
    out: list[Piece] = [escape(parts[0])]
    for p, text in zip(held, parts[1:]):
        out += [p, escape(text)]
    return out


def _embed(obj: Any) -> bytes:
    """:func:`_embed_pieces` as one bytes object."""
    return _joined(_embed_pieces(obj))


def _joined(pieces: Sequence[Piece]) -> bytes:
    """A page's pieces as one bytes object."""
    return b"".join(p if isinstance(p, bytes) else bytes(p) for p in pieces)


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


def _page(title: str, body: str, data: Any, js_name: str) -> list[Piece]:
    """A self-contained page, in pieces (:func:`_embed_pieces`): our stylesheet and one script of
    ours (allowed by its hash), the data as inert JSON, and a policy that allows no network
    access at all. Every string of the data is for display, so every one is made
    :func:`~.visible.visible` here (a piece's strings are those it leaves as they are): a U+202E
    in a log line shows as ``\\u202e``, it does not turn the line around."""
    from html import escape

    js = _asset("table.js") + "\n" + _asset(js_name)
    css = palette.css_variables() + "\n" + _asset("report.css")
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    head = "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>{escape(visible(title))}</title>\n<style>{css}</style>\n</head><body>\n",
        body,
        "\n<script type=\"application/json\" id=\"bootlens-data\">",
    ))
    tail = f"</script>\n<script>{js}</script>\n</body></html>\n"
    return [head.encode(), *_embed_pieces(visible_data(data)), tail.encode()]


def render_html(groups: Sequence[Group], top: int = 25) -> bytes:
    """The report page for these inputs."""
    return _joined(render_html_pieces(groups, top))


def render_html_pieces(groups: Sequence[Group], top: int = 25) -> list[Piece]:
    """The report page for these inputs in pieces, for :func:`bootlens.cli.exits.write_output`
    to write one after another (at a million events no 186 MB page is joined)."""
    title = "bootlens report"
    if groups:
        title += " · " + ", ".join(g.name for g in groups[:3])
    body = _asset("report.html").replace("<!--legend-->", _legend_html())
    body = body.replace("<!--kft-->", _kft_html(groups))
    with no_cycle_collection():
        return _page(title, body, report_data(groups, top, raw=True), "report.js")


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while the page is built. Building it allocates
    millions of short-lived containers (the columns' tuples, the advisor's lists), and every
    so many allocations the collector walks every live container: the boot's model too, a
    million events and their details. That walk was a third of ``report``'s time for
    100,000 events and grows with the model. What the page builds is freed by reference
    counting, without cycles; any cycle left is collected once the collector runs again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
    return _joined(_page(title, _asset("compare.html"), compare_json_obj(c), "compare.js"))
