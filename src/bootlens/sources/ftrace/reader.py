"""ftrace trace buffers as text: ``/sys/kernel/tracing/trace``, ``trace_pipe``, ``trace-cmd report``
(and ``trace-cmd`` ``.dat`` files, through Debian's ``trace-cmd report`` when it is installed).

Two kinds of line share the format, and each is read in one place:

- **function_graph lines** (``[abstime |] cpu) [comm-pid |] [duration |]  func() {``), millions
  of them in a boot trace: scanned and aggregated by the native module (``native/src/ftrace.rs``,
  one pass in 1 MiB chunks, no Python object per line) into columns: per function calls, total,
  max and self time; the same per initcall (each call directly under ``do_one_initcall``); a
  bounded call tree for the icicle view. There is no second parser to keep in step.
- **event lines** (``comm-pid [cpu] flags ts: event: fields``), few: read here, from the lines the
  native scan hands back. ``initcall:initcall_start/finish`` become :attr:`Kind.INITCALL` events
  (the shape the initcall_debug parser makes), ``sched:sched_process_*`` go through the one
  process parser (:class:`bootlens.parsers.process.ProcessParser`), the others are counted.

Times are the trace clock's, in ns; with ``trace_clock=local`` (the default), ``global`` or
``perf`` that is the printk clock (both read ``local_clock``), so events land on
:attr:`Clock.KERNEL`. Nothing here raises on bad input except :class:`InputError` for an
unreadable file.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import InputError, printable
from ...core.lines import Lines
from ..._native import native_module
from ...core.model import Clock, Event, InitcallDetail, Kind, Stamp
from ...core.numbers import CPUS_MAX, PID_MAX, to_int

# the sniff and the line patterns it needs live apart: sniffing a log must not import this reader
from . import _DAT_MAGIC, _EVENT, _NAME, _TRACER
from . import sniff_ftrace as sniff_ftrace

_ENTRIES = re.compile(r"#\s*entries-in-buffer/entries-written:\s*(\d+)/(\d+)\s+#P:(\d+)", re.ASCII)
_CLOCK = re.compile(r"\btrace_clock=(\w[\w-]*)", re.ASCII)
_LOST = re.compile(r"CPU:\s*(\d+) \[LOST (\d+) EVENTS\]", re.ASCII)
EVENTS_MAX = 2**48  # events a buffer counts (an unsigned long): past it, a damaged header's digits
_CPUS = re.compile(r"cpus=(\d+)\s*$", re.ASCII)
# trace-cmd report, for a CPU whose buffer recorded nothing (libtracecmd's init_cpu: "CPU %d is empty")
_EMPTY_CPU = re.compile(r"CPU (\d+) is empty\s*$", re.ASCII)

# Rows kept per initcall (its worst functions): the tables show 5, the JSON 25; the native scan
# sorts and cuts the rest, so the answer does not grow with initcalls x functions.
PER_INITCALL = 50

# The trace clocks that read local_clock(), printk's clock: their times are printk times.
PRINTK_CLOCKS = ("local", "global", "perf")


@dataclass(frozen=True, slots=True)
class Graph:
    """A function_graph trace's aggregates, as columns (index = function id into ``names``).

    ``blocks``: one per ``do_one_initcall`` call, named after the initcall it ran (its one direct
    child that is not one of do_one_initcall's own helpers); a notrace or inlined initcall leaves
    its callees there instead and the block is named ``do_one_initcall #N``. The group columns:
    per block (``group_of``) the function ids, calls, total, max and self times of the calls in
    it, the initcall's own row and its worst functions (the native scan keeps
    :data:`PER_INITCALL`). ``tree``: the
    bounded call tree (node 0 the root, ``parent`` -1), nodes under 0.05 % of the root's time and
    past depth 24 folded into their ancestors, so its size does not grow with the trace.

    Self times (``self_ns``, ``group_self_ns``) are sums over calls of each call's duration less
    its callees' durations, a call's clamped at 0 when its callees sum to more (an interrupt entry
    printed at the caller's indent, the tracer's rounding): computed in the native scan
    (``native/src/parse/ftrace/graph.rs``, ``Stat::add``); ``tree_self_ns`` is a node's total less
    its children's, clamped at 0 (``native/src/parse/ftrace/mod.rs``). docs/ftrace.md says so.
    """

    names: tuple[str, ...]
    calls: tuple[int, ...]
    total_ns: tuple[int, ...]
    max_ns: tuple[int, ...]
    self_ns: tuple[int, ...]
    block_names: tuple[str, ...]
    block_ns: tuple[int, ...]  # the initcall's work: do_one_initcall's calls less its own helpers'
    block_own: tuple[int, ...]  # the initcall's function id, -1 for a block without one
    block_start_ns: tuple[int, ...]  # do_one_initcall's call and duration (abstime; -1 unknown)
    block_dur_ns: tuple[int, ...]
    group_of: tuple[int, ...]  # per row of the group columns: the block
    group_fn: tuple[int, ...]
    group_calls: tuple[int, ...]
    group_total_ns: tuple[int, ...]
    group_max_ns: tuple[int, ...]
    group_self_ns: tuple[int, ...]
    tree_parent: tuple[int, ...]
    tree_fn: tuple[int, ...]  # -1 for the root
    tree_calls: tuple[int, ...]
    tree_total_ns: tuple[int, ...]
    tree_self_ns: tuple[int, ...]
    lines: int  # graph lines read
    timed: bool  # the trace has a duration column (funcgraph-duration)


@dataclass(frozen=True, slots=True)
class Trace:
    """What one trace file holds."""

    source: str
    tracer: str | None  # "# tracer: function_graph"; None when the header was not in the input
    clock: str | None  # trace_clock named in the header (pm-graph's kparams stamp), else None
    cpus: int | None
    lines: int
    events: tuple[Event, ...]  # initcall and process events, times on the trace clock (Clock.KERNEL)
    counts: tuple[tuple[str, int], ...]  # event name -> lines, most first ("function" for function tracer hits)
    graph: Graph | None
    first_ns: int | None  # first and last time the trace carries
    last_ns: int | None
    warnings: tuple[str, ...]


UNNAMED_NOTE = "do_one_initcall calls show no initcall of their own"


def unnamed_note(unnamed: int, blocks: int) -> str:
    """The warning for do_one_initcall blocks the graph cannot name (kft.name_blocks rewrites it
    when the console's initcall_debug names some of them)."""
    return (f"{unnamed} of {blocks} {UNNAMED_NOTE} (notrace or inlined: its callees sit under do_one_initcall): "
            "listed as 'do_one_initcall #N'")


def _report(path: str) -> str:
    """A .dat file as trace-cmd report's text, in a temporary file (the caller removes it)."""
    import shutil  # here, not at the top: a .dat is rare and every input is sniffed here (start-up)
    import subprocess
    import tempfile

    exe = shutil.which("trace-cmd")
    if exe is None:
        raise InputError(path, "a trace-cmd .dat file: install trace-cmd (Debian package trace-cmd) to read it, "
                         "or give the text of `trace-cmd report`")
    fd, out = tempfile.mkstemp(prefix="bootlens-", suffix=".txt")
    try:
        with os.fdopen(fd, "wb") as f:
            r = subprocess.run([exe, "report", "-i", path], stdout=f, stderr=subprocess.PIPE, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        os.unlink(out)
        raise InputError(path, f"trace-cmd report failed: {e}") from None
    msg = r.stderr.decode("utf-8", "replace").strip().splitlines()
    if r.returncode != 0 or os.path.getsize(out) == 0:
        # trace-cmd 3.1 exits 0 and prints nothing for a file it cannot read
        os.unlink(out)
        why = msg[-1] if msg else f"exit status {r.returncode}" if r.returncode else "no output"
        raise InputError(path, f"trace-cmd report could not read this .dat file ({why})")
    return out


def read_trace(path: str) -> Trace:
    """Read a trace file (text, or .dat through trace-cmd report)."""
    try:
        with open(path, "rb") as f:
            head = f.read(16).decode("latin-1")
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    if head.startswith(_DAT_MAGIC):
        text = _report(path)
        try:
            return _read_text(text, printable(path))
        finally:
            os.unlink(text)
    return _read_text(path, printable(path))


def _read_text(path: str, source: str) -> Trace:
    graph: Graph | None = None
    warnings: list[str] = []
    try:  # the file is read natively (native/src/ftrace.rs): function_graph's one implementation
        d = native_module().ftrace_graph(path, per_group=PER_INITCALL)
    except OSError as e:
        raise InputError(path, f"cannot read: {e}") from None
    other: list[tuple[int, str]] = d["other"]
    nlines: int = d["lines"]
    if d["graph"]:
        graph = _graph(d)
        warnings += _graph_warnings(d)
    if d["other_dropped"]:
        warnings.append(f"{d['other_dropped']} event lines past the first {len(other)} not read")
    first = d["first_ns"] if d["first_ns"] >= 0 else None
    last = d["last_ns"] if d["last_ns"] >= 0 else None
    t = _events(other, source)
    if graph is not None and not any(e.kind is Kind.INITCALL for e in t.events):
        t.events = tuple(sorted(t.events + _graph_initcalls(d, graph), key=lambda e: e.line_no))
    firsts = [x for x in (first, t.first) if x is not None]
    lasts = [x for x in (last, t.last) if x is not None]
    return Trace(source, t.tracer, t.clock, t.cpus, nlines, t.events, t.counts, graph,
                 min(firsts) if firsts else None, max(lasts) if lasts else None, tuple(t.warnings + warnings))


def _graph(d: dict[str, Any]) -> Graph:
    """The native scan's columns as a Graph."""
    f, (g_of, g_fn), gs = d["functions"], d["group_keys"], d["group_stats"]
    (t_parent, t_fn), ts = d["tree_keys"], d["tree_stats"]
    names = d["names"]
    bnames, bns, bown, bstart, bdur = [], [], [], [], []
    for k, (child, multi, start, dur, _cpu, _line, _cs, _cd, _cl, work) in enumerate(d["blocks"]):
        named = child >= 0 and not multi
        bnames.append(names[child] if named else f"do_one_initcall #{k + 1}")
        bns.append(work)
        bown.append(child if named else -1)
        bstart.append(start)
        bdur.append(dur)
    return Graph(tuple(names), tuple(f[0]), tuple(f[1]), tuple(f[2]), tuple(f[3]),
                 tuple(bnames), tuple(bns), tuple(bown), tuple(bstart), tuple(bdur),
                 tuple(g_of), tuple(g_fn), tuple(gs[0]), tuple(gs[1]), tuple(gs[2]), tuple(gs[3]),
                 tuple(t_parent), tuple(t_fn), tuple(ts[0]), tuple(ts[1]), tuple(ts[3]),
                 int(d["graph"]), bool(d["durations"]))


def _graph_initcalls(d: dict[str, Any], g: Graph) -> tuple[Event, ...]:
    """The initcalls the graph names (one per do_one_initcall block) as initcall events, when the
    trace has abstime (funcgraph-abstime) to place them: the shape the initcall_debug parser
    makes, the initcall's own call timed (not do_one_initcall's helpers around it)."""
    out = []
    for k, (_c, _m, _s, _d, _cpu, _line, start, dur, line, _w) in enumerate(d["blocks"]):
        if g.block_own[k] >= 0 and start >= 0:
            out.append(Event(Kind.INITCALL, g.block_names[k], Stamp(Clock.KERNEL, start), dur if dur >= 0 else None,
                             line, None, InitcallDetail(None, None, None, dur >= 0)))
    return tuple(out)


def _graph_warnings(d: dict[str, Any]) -> list[str]:
    out = []
    if d["bad"]:
        out.append(f"{d['bad']} function_graph lines not understood (the first at line {d['bad_first']})")
    if d["orphans"]:
        out.append(f"{d['orphans']} function returns whose call was not in the buffer (overwritten or before "
                   "the trace started): named from their tail comment, children not attributed")
    if d["open"]:
        out.append(f"{d['open']} calls still open when the trace ended: not counted")
    unnamed = sum(1 for b in d["blocks"] if b[0] < 0 or b[1])
    if unnamed:
        out.append(unnamed_note(unnamed, len(d["blocks"])))
    if not d["durations"]:
        out.append("a function_graph trace without durations (funcgraph-duration off): calls counted, no times")
    return out


@dataclass(slots=True)
class _Events:
    """What the event and header lines said; filled by :func:`_events`."""

    tracer: str | None = None
    clock: str | None = None
    cpus: int | None = None
    first: int | None = None
    last: int | None = None
    events: tuple[Event, ...] = ()
    counts: tuple[tuple[str, int], ...] = ()
    warnings: list[str] = field(default_factory=list)


def _events(other: list[tuple[int, str]], source: str) -> _Events:
    """Headers and event lines: initcall and process events, counts of the rest."""
    from ...core.options import ParseOptions
    from ...parsers.process import ProcessParser

    out = _Events()
    counts: Counter[str] = Counter()
    bad = stack = lost = 0
    bad_first = 0
    written = kept = None
    sched_text: list[str] = []
    sched_ns: list[int | None] = []
    sched_no: list[int] = []
    starts: dict[tuple[str, int], tuple[int, int, int]] = {}  # (func, pid) -> (ns, line, pid)
    initcalls: list[Event] = []
    # initcall:initcall_start/finish: "func=fuse_init+0x0/0x30 [fuse] ret=0", the symbol as %pS
    # prints it: (name, module, ret) read by the native core's one grammar of kernel symbols
    # (native/src/parse/symbol.rs), the one initcall_debug's lines are read by
    func = native_module().initcall_func
    for no, line in other:
        s = line.strip()
        if s.startswith("#"):
            if (m := _TRACER.match(s)) is not None:
                out.tracer = m[1]
            elif (m := _ENTRIES.match(s)) is not None:
                kept, written = to_int(m[1], EVENTS_MAX), to_int(m[2], EVENTS_MAX)
                out.cpus = to_int(m[3], CPUS_MAX)
            if (c := _CLOCK.search(s)) is not None:
                out.clock = c[1]
            continue
        if s.startswith("=>"):
            stack += 1  # a stack trace's frames (options/stacktrace, func_stack_trace)
            continue
        if (m := _LOST.match(s)) is not None:
            lost = min(lost + (to_int(m[2], EVENTS_MAX) or 0), EVENTS_MAX)
            continue
        if (m := _CPUS.match(s)) is not None and out.cpus is None:
            out.cpus = to_int(m[1], CPUS_MAX)  # trace-cmd report's first line
            continue
        if _EMPTY_CPU.match(s) is not None:
            continue
        m = _EVENT.match(line)
        if m is None:
            bad += 1
            bad_first = bad_first or no
            continue
        ns = to_int(m[5] + (m[6] + "000000000")[:9], 1 << 62)
        if ns is None:
            bad += 1
            continue
        out.first = ns if out.first is None else min(out.first, ns)
        out.last = ns if out.last is None else max(out.last, ns)
        msg = m[7]
        ev = _NAME.match(msg)
        if ev is None or " <-" in msg:
            counts["function" if " <-" in msg else "stack trace" if msg.startswith("<stack") else "other"] += 1
            continue
        # trace-cmd report pads the event name to a column (`sched_process_exec:   filename=...`)
        name, fields = ev[1], ev[2].lstrip()
        counts[name] += 1
        pid = to_int(m[2], PID_MAX) or 0
        if name == "initcall_start" and (f := func(fields)) is not None:
            starts[(f[0], pid)] = (ns, no, pid)
        elif name == "initcall_finish" and (f := func(fields)) is not None:
            st = starts.pop((f[0], pid), None)
            ret = to_int(f[2], 1 << 31, -(1 << 31)) if f[2] else None
            if st is None:
                initcalls.append(Event(Kind.INITCALL, f[0], Stamp(Clock.KERNEL, ns), None, no, no,
                                       InitcallDetail(pid, f[1], ret, True)))
            else:
                initcalls.append(Event(Kind.INITCALL, f[0], Stamp(Clock.KERNEL, st[0]), ns - st[0], st[1], no,
                                       InitcallDetail(pid, f[1], ret, True)))
        elif name.startswith("sched_process_"):
            sched_text.append(f"{name}: {fields}")  # the kernel's own spacing, which process.py reads
            sched_ns.append(ns)
            sched_no.append(no)
    for (fn, pid), (ns, no, _) in starts.items():
        initcalls.append(Event(Kind.INITCALL, fn, Stamp(Clock.KERNEL, ns), None, no, None,
                               InitcallDetail(pid, None, None, False)))
    procs: list[Event] = []
    if sched_text:
        # the one reader of sched_process_* lines, on a Lines of those lines alone; line numbers mapped back
        res = ProcessParser().parse(Lines(sched_text, sched_ns, [None] * len(sched_text)), ParseOptions())
        procs = [e._replace(line_no=sched_no[e.line_no - 1],
                            end_line_no=sched_no[e.end_line_no - 1] if e.end_line_no else None) for e in res.events]
        out.warnings.extend(res.warnings)
    out.events = tuple(sorted(initcalls + procs, key=lambda e: e.line_no))
    out.counts = tuple(counts.most_common())
    if written is not None and kept is not None and written > kept:
        out.warnings.append(f"{written - kept} events lost: the buffer kept {kept} of {written} written "
                            "(overwritten; a bigger trace_buf_size or trace_options=nooverwrite keeps them)")
    if lost:
        out.warnings.append(f"{lost} events lost (LOST EVENTS lines)")
    if bad:
        out.warnings.append(f"{bad} lines not understood as trace lines (the first at line {bad_first})")
    if stack:
        out.counts += (("stack trace lines", stack),)
    if out.clock is not None and out.clock not in PRINTK_CLOCKS:
        out.warnings.append(f"trace_clock={out.clock}: not the printk clock (local); its times are placed on "
                            "the kernel axis as they are")
    return out
