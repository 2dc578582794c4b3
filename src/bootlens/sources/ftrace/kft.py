"""The KFT table of a function_graph trace, and how a trace joins a boot.

Tim Bird's Kernel Function Trace (KFT) reported, for every kernel function during boot, its
call count, total, average and local (self) time. A function_graph trace gives the same
figures: :func:`kft` turns the columns of :class:`bootlens.sources.ftrace.reader.Graph` into that
table, overall and per initcall (each call directly under ``do_one_initcall``), worst (most
total time) first; :func:`icicle` cuts the bounded call tree into rectangles for the report.

A trace joins a boot as a supplement (:mod:`bootlens.sources.supplements`): its initcall and process
events are added when the log has none of that kind (:func:`trace_events`), and a trace given
alone is a boot of its own (:func:`trace_boot`).
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING

from ...core.errors import printable
from ...core.model import Boot, Event, Fact, InitcallDetail, Kind
from .reader import PRINTK_CLOCKS, UNNAMED_NOTE, Graph, Trace, unnamed_note

if TYPE_CHECKING:
    pass

UNKNOWN = -1  # a self time the graph cannot give (an initcall it shows only the callees of)
_CMDLINE_CLOCK = re.compile(r"(?:^|\s)trace_clock=(\S+)", re.ASCII)


@dataclass(frozen=True, slots=True)
class FuncRow:
    """One function's line of the KFT table: calls, total, max and local (self) time in ns."""

    name: str
    calls: int
    total_ns: int
    max_ns: int
    self_ns: int

    @property
    def avg_ns(self) -> int:
        """Average time per call."""
        return self.total_ns // self.calls if self.calls else 0


@dataclass(frozen=True, slots=True)
class InitcallTable:
    """The functions called under one initcall, worst first; ``own`` is the initcall's own row."""

    own: FuncRow
    rows: tuple[FuncRow, ...]


@dataclass(frozen=True, slots=True)
class Kft:
    """A trace's KFT table: overall and per initcall (worst first), and how many rows were cut."""

    overall: tuple[FuncRow, ...]
    initcalls: tuple[InitcallTable, ...]
    functions: int  # distinct functions in the trace
    graph_lines: int
    timed: bool  # False: no duration column, counts only


def _worst(rows: list[FuncRow]) -> list[FuncRow]:
    return sorted(rows, key=lambda r: (-r.total_ns, -r.self_ns, -r.calls, r.name))


def kft(g: Graph, top: int | None = None, top_initcall: int | None = None) -> Kft:
    """The table; ``top`` rows overall and ``top_initcall`` per initcall (None: all). Blocks of
    one initcall (run twice, or a module loaded twice) are merged by name."""
    rows = [FuncRow(g.names[i], g.calls[i], g.total_ns[i], g.max_ns[i], g.self_ns[i])
            for i in range(len(g.names)) if g.calls[i]]
    overall = _worst(rows)
    per: dict[str, dict[str, list[int]]] = {}
    own: dict[str, list[int]] = {}
    names, block_names, block_own = g.names, g.block_names, g.block_own
    # one pass over the group columns (up to ~50 rows per do_one_initcall block: 10^5-10^6 rows
    # on a big trace), a block's rows together, merged by name in place: _add's rules, inlined
    rows_of = zip(g.group_of, g.group_fn, g.group_calls, g.group_total_ns, g.group_max_ns, g.group_self_ns)
    for blk, block_rows in groupby(rows_of, key=itemgetter(0)):
        name, own_fn = block_names[blk], block_own[blk]
        found = per.get(name)
        funcs = per[name] = {} if found is None else found
        for _, fn, calls, total, most, own_ns in block_rows:
            if fn == own_fn:
                target, key = own, name
            else:
                target, key = funcs, names[fn]
            r = target.get(key)
            if r is None:
                target[key] = [calls, total, most, own_ns]
            else:
                r[0] += calls
                r[1] += total
                if most > r[2]:
                    r[2] = most
                r[3] = UNKNOWN if UNKNOWN in (r[3], own_ns) else r[3] + own_ns
    for blk, name in enumerate(block_names):
        if block_own[blk] < 0:  # no initcall of its own: its callees' time stands for it, self unknown
            ns = max(g.block_ns[blk], 0)
            _add(own, name, [1, ns, ns, UNKNOWN])
    tables = [InitcallTable(FuncRow(n, *own[n]), _worst_of(per.get(n, {}), top_initcall)) for n in own]
    tables.sort(key=lambda t: (-t.own.total_ns, t.own.name))
    return Kft(tuple(overall[:top]), tuple(tables), len(rows), g.lines, g.timed)


def _worst_of(rows: dict[str, list[int]], top: int | None) -> tuple[FuncRow, ...]:
    """The ``top`` worst of name -> (calls, total, max, self), as :func:`_worst` orders them;
    only those become FuncRows (a merged initcall can hold hundreds of names, the JSON shows 25)."""
    keyed = [(-v[1], -v[3], -v[0], n) for n, v in rows.items()]  # _worst's key, built inline: no call per row
    best = sorted(keyed) if top is None else heapq.nsmallest(top, keyed)
    return tuple(FuncRow(k[3], *rows[k[3]]) for k in best)


def _add(rows: dict[str, list[int]], key: str, fig: list[int]) -> None:
    """Merge one row's figures (calls, total, max, self) into ``rows[key]``."""
    r = rows.get(key)
    if r is None:
        rows[key] = list(fig)
    else:
        r[0] += fig[0]
        r[1] += fig[1]
        r[2] = max(r[2], fig[2])
        r[3] = UNKNOWN if UNKNOWN in (r[3], fig[3]) else r[3] + fig[3]


@dataclass(frozen=True, slots=True)
class Cell:
    """One rectangle of an icicle: depth (0 = the chosen root), start and width in ns of the
    root's total, and the node's figures."""

    depth: int
    x_ns: int
    width_ns: int
    name: str
    calls: int
    total_ns: int
    self_ns: int


def _children(g: Graph) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for n in range(1, len(g.tree_parent)):
        kids.setdefault(g.tree_parent[n], []).append(n)
    return kids


def icicle_roots(g: Graph) -> dict[str, int]:
    """The tree node of each named initcall (a node directly under a ``do_one_initcall`` node
    whose function an initcall block names), biggest first."""
    named = {g.names[f] for f in g.block_own if f >= 0}
    nodes = [n for n in range(1, len(g.tree_parent))
             if g.tree_parent[n] > 0 and g.tree_fn[g.tree_parent[n]] >= 0
             and g.names[g.tree_fn[g.tree_parent[n]]] == "do_one_initcall" and g.names[g.tree_fn[n]] in named]
    nodes.sort(key=lambda n: -g.tree_total_ns[n])
    out: dict[str, int] = {}
    for n in nodes:
        out.setdefault(g.names[g.tree_fn[n]], n)
    return out


def icicle(g: Graph, root: int = 0, max_depth: int = 12) -> list[Cell]:
    """The subtree under ``root`` (0: the whole trace) as icicle cells, children in order of
    size, the biggest leftmost. Empty when the root has no time."""
    if root >= len(g.tree_parent) or g.tree_total_ns[root] <= 0:
        return []
    kids = _children(g)
    out: list[Cell] = []
    stack = [(root, 0, 0)]
    while stack:
        n, depth, x = stack.pop()
        name = "all" if g.tree_fn[n] < 0 else g.names[g.tree_fn[n]]
        out.append(Cell(depth, x, g.tree_total_ns[n], name, g.tree_calls[n], g.tree_total_ns[n], g.tree_self_ns[n]))
        if depth + 1 >= max_depth:
            continue
        cx = x
        for c in sorted(kids.get(n, []), key=lambda c: -g.tree_total_ns[c]):
            stack.append((c, depth + 1, cx))
            cx += g.tree_total_ns[c]
    return out


# ------------------------------------------------------------------------------ joining a boot

def trace_events(trace: Trace, have: set[Kind]) -> list[Event]:
    """The trace's events of the kinds the log has none of, at line 0 (no line of the log holds
    them), in time order."""
    out = [e._replace(line_no=0, end_line_no=None) for e in trace.events if e.kind not in have]
    return sorted(out, key=lambda e: e.start.ns if e.start is not None else 0)


def name_blocks(trace: Trace, boot: Boot) -> tuple[Trace, tuple[str, ...]]:
    """The trace with its do_one_initcall blocks named by the console's initcall_debug, where
    the graph cannot name them (notrace or inlined initcalls) or names them after their one
    callee: the console's ``calling`` line of pid 1 is printed inside the block (by
    trace_initcall_start_cb), so it falls after the block's call and before the next's. Needs
    abstime; a block that one console initcall does not fall in keeps the graph's name. Returns
    the trace and a note saying how many were named."""
    from dataclasses import replace as dc_replace

    g = trace.graph
    if g is None or not any(s >= 0 for s in g.block_start_ns):
        return trace, ()
    calls = sorted((e.start.ns, e.name) for e in boot.events
                   if e.kind is Kind.INITCALL and e.start is not None and not e.start.estimated
                   and isinstance(e.detail, InitcallDetail) and e.detail.pid == 1)
    if not calls:
        return trace, ()
    from bisect import bisect_right

    # each console call goes to the last block that started before it (the next one has not yet);
    # the duration on a return line and the abstime of its call line can disagree by a fraction
    # of a millisecond, so the block's own end is not used as the bound
    order = sorted((s, k) for k, s in enumerate(g.block_start_ns) if s >= 0)
    starts = [s for s, _ in order]
    found: dict[int, list[str]] = {}
    for t, name in calls:
        i = bisect_right(starts, t) - 1
        if i >= 0:
            found.setdefault(order[i][1], []).append(name)
    names, own = list(g.block_names), list(g.block_own)
    renamed = 0
    for k, inside in found.items():
        if len(inside) != 1 or inside[0] == names[k]:
            continue
        names[k] = inside[0]
        own[k] = -1  # its calls are rows under the console's name; its own row is their time
        renamed += 1
    if not renamed:
        return trace, ()
    note = (f"{trace.source}: {renamed} do_one_initcall calls named by the console's initcall_debug (the graph "
            "shows no initcall of their own there: notrace or inlined)")
    # the reader's count of unnamed blocks, before the console named them: what is left of it
    warnings = []
    for w in trace.warnings:
        m = re.search(r"(\d+) of \d+ " + UNNAMED_NOTE, w)
        if m is not None:
            left = int(m[1]) - renamed
            if left > 0:
                warnings.append(w[:m.start()] + unnamed_note(left, len(names)))
        else:
            warnings.append(w)
    return dc_replace(trace, warnings=tuple(warnings),
                      graph=dc_replace(g, block_names=tuple(names), block_own=tuple(own))), (note,)


def clock_notes(trace: Trace, boot: Boot) -> tuple[str, ...]:
    """A warning when the boot's command line sets a trace clock other than printk's."""
    cmd = boot.fact("cmdline")
    m = _CMDLINE_CLOCK.search(cmd.value) if cmd is not None else None
    if m is None or m[1] in PRINTK_CLOCKS or trace.clock is not None:
        return ()  # a clock named in the trace's own header was warned about by its reader
    return (f"{trace.source}: trace_clock={m[1]} on the command line: not the printk clock (local); "
            "the trace's times are placed on the kernel axis as they are",)


def trace_boot(trace: Trace) -> Boot:
    """A trace given without a console log: a boot of its events alone on the kernel clock."""
    from ...core.lines import Lines

    facts = tuple(Fact("tracer", trace.tracer, 0) for _ in (0,) if trace.tracer)
    warnings = ("an ftrace buffer without a console log: its events on the trace clock, no stages "
                "(give the boot's console log with it to place them)",)
    events = tuple(e._replace(line_no=0, end_line_no=None) for e in trace.events)
    return Boot(printable(trace.source), 0, Lines([], [], []), events, facts, warnings, ("ftrace",),
                "start of input")
