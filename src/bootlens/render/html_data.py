"""What the report page (:mod:`.html`) embeds: everything it shows, as one JSON-able object
(:func:`report_data`), made a boot at a time (:func:`boot_data`); the timeline's rows and event
columns are :mod:`.html_columns`'s.

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

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate, chain, islice, pairwise
from operator import le
from typing import TYPE_CHECKING, Any, cast

from .. import __version__
from .._native import native_module
from ..core.model import Clock, Event, Events, Kind
from ..stats.figures import Stat, statistics_of
from ..timeline.analyze import BootAnalysis
from ..timeline.inputs import Group
from . import palette
from .evidence import evidence_text, figure
from .headline import boots_total
from .html_columns import (_BLOCK_ROWS, _KTHREADS, _US, JsonPiece, _block_columns, _columns, _initcall_row,
                           _lanes, _Names, _one_thread, _place_walk, _row_of, _us)

if TYPE_CHECKING:
    from ..timeline.chain import Chain
    from .many import ManyBoots


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
            "error": _us(total.error_ns), "fig": figure(total.duration_ns, total.evidence),
            "evidence": evidence_text(total.evidence, lines),
        },
        "stages": [{
            "name": s.name, "label": s.label, "parent": s.parent, "start": _us(s.start_ns),
            "dur": _us(s.duration_ns), "status": s.status, "estimated": s.estimated,
            "start_line": s.start.line_no if s.start else None, "end_line": s.end.line_no if s.end else None,
            # the figure as the terminal marks it (≤, ≥, a range, ± a coarse tick) and what it rests on
            "fig": figure(s.duration_ns, s.evidence) if s.evidence else None,
            "evidence": evidence_text(s.evidence, lines) or None,
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


def _total_over(g: Group, many: ManyBoots | None = None) -> dict[str, Any] | None:
    """An input of several boots: its headline, the median total with min and max (µs)."""
    if many is None and len(g.analysis.boots) < 2:
        return None
    bt = many.total if many is not None else boots_total(g.analysis.boots)
    s = bt.stat
    return {"from": bt.origin, "end_name": bt.end_name, "boots": bt.boots, "n": s.n if s else 0,
            "median": _us(round(s.median)) if s else None, "min": _us(s.min) if s else None,
            "max": _us(s.max) if s else None}


def _stat_rows(stats: Iterable[Stat]) -> list[dict[str, Any]]:
    return [{"name": s.name, "n": s.n, "min": _us(s.min), "median": _us(round(s.median)), "max": _us(s.max),
             "stdev": _us(round(s.stdev)), "spread": s.spread,
             # the median's order-statistic interval and the probability that it holds it (stats.py)
             "ci_low": _us(round(s.ci_low)), "ci_high": _us(round(s.ci_high)), "ci_level": s.ci_level}
            for s in stats]


def _many_rows(m: ManyBoots, kept: Sequence[BootAnalysis], at: int) -> list[dict[str, Any]]:
    """The boots of an input of many boots that the page holds: ``boot`` is each one's index in
    the page's ``boots``."""
    rows = []
    for j, (b, why) in enumerate(zip(kept, m.why)):
        t = b.total
        status = f"{t.end_name} reached" if t.duration_ns is not None else "not measured"
        if b.partial:
            status += ", partial"
        rows.append({"n": m.positions[j] + 1, "first_line": b.boot.first_line, "last_line": b.boot.last_line,
                     "total": _us(t.duration_ns) if t.duration_ns is not None else None, "status": status,
                     "why": why, "boot": at + j})
    return rows


def report_data(groups: Sequence[Group], top: int = 25, raw: bool = False,
                many: Mapping[int, ManyBoots] | None = None, boot: int | None = None) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able object. ``findings[i]`` are the advisor's
    findings for ``boots[i]`` (docs/json.md, "bootlens advise --json", one finding each).
    ``raw``: a native block's event columns, the log's lines and times as page pieces
    (:func:`boot_data`). ``many``: by group index, the inputs of many boots (:mod:`.many`): their
    groups hold the boots kept whole; ``many`` lists them with their line ranges and totals, and
    ``open`` is the boot the page opens on. ``boot``: open on the first input's boot of that
    number (1-based) when it has one (``open``, also for a few boots)."""
    from ..advise.context import context_for_group
    from ..advise.summary import advise_group
    from .advise_json import finding_dict, merged_dict

    many = many or {}
    names = _Names()
    boots: list[dict[str, Any]] = []
    stats = []
    findings = []
    merged = []
    many_out = []
    opened: int | None = None
    for gi, g in enumerate(groups):
        m = many.get(gi)
        if m is not None:
            at = len(boots)
            for j, b in enumerate(g.analysis.boots):
                d = boot_data(b, names, top, raw)
                d["group"] = gi
                d["pos"] = m.positions[j]
                boots.append(d)
                findings.append([finding_dict(f) for f in m.findings[j]])
            if m.merged:
                merged.append({"group": gi, "boots": m.boots, "findings": [merged_dict(x) for x in m.merged]})
            stats.append({"group": gi, "name": g.name, "boots": m.boots, "rows": _stat_rows(m.stats)})
            many_out.append({"group": gi, "boots": m.boots, "measured": m.measured,
                             "rows": _many_rows(m, g.analysis.boots, at)})
            if opened is None:
                opened = at + m.opened
            continue
        if opened is None and boot is not None and boot <= len(g.analysis.boots):
            opened = len(boots) + boot - 1
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
            stats.append({"group": gi, "name": g.name, "boots": len(g.analysis.boots),
                          "rows": _stat_rows(statistics_of(g.analysis.boots))})
    out: dict[str, Any] = {
        "generator": f"bootlens {__version__}",
        "inputs": [{"name": g.name, "folder": g.folder,
                    "boots": many[gi].boots if gi in many else len(g.analysis.boots),
                    "total": _total_over(g, many.get(gi))}
                   for gi, g in enumerate(groups)],
        "names": _page_strings(names.items, raw),
        "boots": boots,
        "stats": stats,
        "findings": findings,
        "merged_findings": merged,
    }
    if many_out:  # only with an input of many boots: the page of a few boots is as it was
        out["many"] = many_out
    if opened is not None and (many_out or opened):
        out["open"] = opened
    return out
