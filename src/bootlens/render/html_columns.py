"""The report's timeline as the page holds it (:mod:`.html_data` embeds it): each event put in
its row (a kind of event, or the initcalls of one thread), each row packed into lanes that never
overlap, and the events written as the columns ``s d n l e x i`` in row and lane order, with their
names and detail texts in the page's string table (:class:`_Names`).

For a boot whose events are a native block, its rows are grouped, packed and written natively
(report.rs report_lanes, report_columns_all) and Python handles the other events only; the
Python functions here are the path of a plain sequence of events, and the reference the native
passes are tested against (tests/test_native.py).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import chain, islice
from typing import Any, Protocol, cast

from .._native import native_module
from ..core.model import ESTIMATE, NOT_MEASURED, READY, Event, InitcallDetail, Kind, LoadDetail, ProbeDetail, ProcessDetail, UnitDetail
from ..core.units import short

_US = 1000


def _us(ns: int | None) -> int | None:
    return None if ns is None else (ns + (_US // 2 if ns >= 0 else -(_US // 2))) // _US


class JsonPiece(Protocol):
    """A big value of the page's data kept natively until the page is written (page.rs
    JsonPiece): its JSON text, orjson's with the page's escapes, written to a file a megabyte at
    a time, or as bytes. The event columns here and the log in :mod:`.html_data` are made as
    pieces; :mod:`.html` puts each in its place in the page."""

    def write_to(self, file: Any) -> None: ...

    def __bytes__(self) -> bytes: ...


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
        parts = [f"pid {d.pid}" if d.pid is not None else "", d.module or "", d.outcome]
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
        if d.duration_bound == NOT_MEASURED:  # both ends on console lines without their own time
            parts.append("duration not measured (its lines have no time of their own)")
        elif d.duration_bound == ESTIMATE:  # one end on such a line
            parts.append("duration an estimate, " + ("at least that" if d.duration_error_ns is None else
                                                     f"up to {short(d.duration_error_ns)} longer"))
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
