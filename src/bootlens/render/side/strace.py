"""The strace section of ``bootlens analyze``: the terminal lines (80 columns) and the JSON
object of an strace/ltrace summary (:mod:`bootlens.sources.strace.summary`). Pure functions of the
summary and the boot's alignment; ``text`` and ``json`` are the side renderer's hooks
(:mod:`bootlens.render.side`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core.lines import clip
from ...core.model import Clock
from ...core.units import duration

if TYPE_CHECKING:  # every boot given with side files imports this module (render.side): only types here
    from ...sources.strace.summary import Process, Summary
    from rich.console import Console

    from ...timeline.analyze import BootAnalysis

TOP_CALLS = 5
# the trace's time column (parsers.strace.Trace.clock), said apart from the wall-clock placement
_CLOCKS = {"wall": "-tt time of day", "epoch": "-ttt epoch time", "relative": "-r relative time", "none": "no times"}
# the loader's per-directory hardware subdirectories (tls/, aarch64/, glibc-hwcaps/x86-64-v3/):
# the directory a user set is what they can fix
_HWCAP = re.compile(r"(/glibc-hwcaps/[^/]+|/tls(/[^/]+)?|/(aarch64|x86_64|i686|i586|haswell|xeon_phi|avx512_1|"
                    r"armv\w+|arm64|sse2|neon|vfp\w*|x86-64-v\d))$")


def _ms(ns: int | None) -> str:
    return duration(ns, {"s": 3, "ms": 1}, none="-")


def _s(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e9, 9)


def _command(p: Process) -> str:
    args = " ".join(p.argv[1:]) if p.argv else ""
    return f"{p.program} {args}".strip()


def _tree(summary: Summary) -> list[tuple[int, Process]]:
    """Processes depth-first from the roots, with their depth."""
    by_pid = {p.pid: p for p in summary.processes}
    out: list[tuple[int, Process]] = []
    seen: set[int] = set()

    def walk(p: Process, depth: int) -> None:
        if p.pid in seen:
            return
        seen.add(p.pid)
        out.append((depth, p))
        for c in p.children:
            if c in by_pid:
                walk(by_pid[c], depth + 1)

    for r in summary.roots():
        walk(r, 0)
    return out


def axis_start(summary: Summary, offsets: Mapping[Clock, int]) -> int | None:
    """The trace's first line on the boot's axis, when placed and its clock is on the axis."""
    pl = summary.placement
    if pl is None or summary.first_ns is None or pl.clock not in offsets:
        return None
    return summary.first_ns + pl.offset_ns + offsets[pl.clock]


def strace_lines(summary: Summary, offsets: Mapping[Clock, int], width: int = 80, rows: int = 15) -> list[str]:
    """The section's lines: what was read, where it lies, the process tree with exec -> first
    output and loader time, library searches, needless execs, the costliest calls."""
    cost = "-T" if summary.has_durations else "time to the next call, an upper bound"
    out = [f"{summary.tool} of the application's start: {len(summary.processes)} processes, {summary.lines} lines"
           f" ({_CLOCKS.get(summary.clock, summary.clock)}{', -T' if summary.has_durations else ''}"
           f"{f', {summary.unparsed} not understood' if summary.unparsed else ''})"]
    pl = summary.placement
    t0 = axis_start(summary, offsets)
    if pl is None:
        out.append("  not placed on the boot: no output line of the trace is on the console")
    elif pl.how == "trace":  # given without a console log (summary.trace_boot)
        out.append("  given without a console log: times from the trace's first line")
        writes = [(w[0], w[1], w[2], p) for p in summary.processes for w in p.outputs[:1]]
        if writes and summary.first_ns is not None:
            at, said, ln, by = min(writes, key=lambda w: w[0])
            out.append(clip(f"  first terminal write at +{duration(at - summary.first_ns, {'s': 3})}: "
                            f"{clip(said.split(chr(10), 1)[0], 24)!r} ({by.pid} {by.program}, line {ln})", width))
    elif pl.marker is None:
        out.append(clip(f"  placed by the wall clock: recording started {pl.started_wall}", width))
        out.append("  (no line in both: the board's clock is taken to be right, unchecked)")
    else:
        out.append(clip(f"  placed by the line {clip(pl.marker, 24)!r}: console line {pl.console_line} = "
                        f"trace line {pl.trace_line}", width))
        for t, ln, r in pl.residuals[:3]:
            out.append(clip(f"  residual at {t!r} (console line {ln}): {_ms(r)}", width))
        if pl.clock_error_ns is not None:
            e = pl.clock_error_ns
            out.append(clip(f"  board clock - host clock: {'+' if e >= 0 else ''}{_ms(e)} (by the wall clock "
                            f"{_ms(abs(e))} {'later' if e >= 0 else 'earlier'})", width))
    if t0 is not None and (pl is None or pl.how != "trace"):
        out.append(f"  trace starts at {duration(t0, {'s': 3})} on the boot's axis")
    head = f"  {'pid program':<34}{'start':>8}{'life':>10}{'exec→out':>10}{'loader':>10}{'exit':>6}"
    out.append(head[:width])
    first = summary.first_ns or 0
    tree = _tree(summary)
    for depth, p in tree[:rows]:
        name = clip(("  " * depth) + ("└ " if depth else "") + f"{p.pid} {_command(p)}", 34)
        start = "-" if p.start_ns is None else "+" + duration(p.start_ns - first, {"s": 3}, sep=None)
        life = None if p.start_ns is None or p.end_ns is None else p.end_ns - p.start_ns
        ex = "kill" if p.killed_by else ("-" if p.exit_code is None else str(p.exit_code))
        loader = _ms(p.loader_ns) if p.loader_ns is not None else p.linkage or "-"
        out.append(f"  {name:<34}{start:>8}{_ms(life):>10}{_ms(p.exec_to_output_ns):>10}{loader:>10}{ex:>6}"[:width])
    if len(tree) > rows:
        out.append(f"  … {len(tree) - rows} more processes (analyze --json lists them all)")
    for p in summary.processes:
        for s in p.searches:
            dirs = list(dict.fromkeys(_HWCAP.sub("", t.rsplit("/", 1)[0]) for t in s.tried  # in search order
                                      if ".so" in t.rsplit("/", 1)[-1] and not t.startswith("/etc/ld.so")))
            more = f" and {len(dirs) - 3} more" if len(dirs) > 3 else ""
            where = f"found in {s.found.rsplit('/', 1)[0]}" if s.found else "not found in the trace"
            out.append(clip(f"  library search ({p.pid} {p.program}): {s.library} after {len(s.tried)} failed "
                            f"lookups, {_ms(s.cost_ns)} ({cost})", width))
            vain = [d for d in dirs[:3] if s.found is None or not s.found.startswith(d + "/")]
            out.append(clip(f"    tried {', '.join(vain)}{more}; {where}", width))
    for n in summary.needless:
        what = (f"{n.failed} failed execve of {n.what} along PATH" if n.kind == "path-walk"
                else f"a shell to run one command: sh -c {n.what}")
        out.append(clip(f"  needless exec: {n.pid}: {what} ({_ms(n.cost_ns)})", width))
    calls = summary.totals()[:TOP_CALLS]
    if calls:
        label = "costliest calls (-T total)" if summary.has_durations else "commonest calls"
        out.append(f"  {label}:")
        for c in calls:
            took = f"{_ms(c.total_ns)} in " if c.total_ns is not None else ""
            out.append(clip(f"    {c.name:<16} {took}{c.count} calls{f', {c.errors} failed' if c.errors else ''}",
                            width))
    if summary.added_events:
        out.append(f"  {summary.added_events} processes added to the boot's events")
    return out


def strace_dict(summary: Summary, offsets: Mapping[Clock, int]) -> dict[str, Any]:
    """The ``strace`` object of a boot in ``analyze --json`` (docs/json.md)."""
    first = summary.first_ns or 0
    pl = summary.placement

    def rel(ns: int | None) -> float | None:
        return None if ns is None else _s(ns - first)

    return {
        "source": summary.source, "tool": summary.tool, "clock": summary.clock, "lines": summary.lines,
        "unparsed": summary.unparsed, "durations": summary.has_durations,
        "cost_source": summary.cost_source,
        "start_s": _s(axis_start(summary, offsets)),
        "placement": None if pl is None else {
            "how": pl.how, "placed_by": pl.placed_by, "marker": pl.marker, "console_line": pl.console_line,
            "trace_line": pl.trace_line, "clock": pl.clock.value, "offset_s": _s(pl.offset_ns),
            "started_wall": pl.started_wall, "clock_difference_s": _s(pl.clock_error_ns),
            "residuals": [{"text": t, "console_line": ln, "residual_s": _s(r)} for t, ln, r in pl.residuals]},
        "processes": [{
            "pid": p.pid, "ppid": p.ppid, "program": p.program, "exe": p.exe, "argv": list(p.argv),
            "start_s": rel(p.start_ns), "exec_s": rel(p.exec_ns), "end_s": rel(p.end_ns),
            "exit_code": p.exit_code, "killed_by": p.killed_by, "children": list(p.children), "threads": p.threads,
            "calls": p.calls, "exec_to_output_s": _s(p.exec_to_output_ns), "first_output": p.first_output,
            "loader_s": _s(p.loader_ns), "linkage": p.linkage,
            "syscalls": [{"name": s.name, "count": s.count, "total_s": _s(s.total_ns), "errors": s.errors}
                         for s in p.syscalls],
            "failed_paths": [{"call": c, "path": path, "errno": e} for c, path, e in p.failed_paths],
            "searches": [{"library": s.library, "found": s.found, "tried": list(s.tried), "cost_s": _s(s.cost_ns),
                          "line": s.line_no} for s in p.searches],
            "line": p.line_no,
        } for p in summary.processes],
        "needless_execs": [{"pid": n.pid, "kind": n.kind, "what": n.what, "failed": n.failed,
                            "cost_s": _s(n.cost_ns), "line": n.line_no} for n in summary.needless],
        "processes_added": summary.added_events,
    }


def text(b: BootAnalysis, console: Console, top: int) -> None:
    if b.supplement is None or b.supplement.strace is None:
        return
    from rich.text import Text

    from ..visible import visible

    console.print()
    for line in strace_lines(b.supplement.strace, b.alignment.offsets, console.width):
        console.print(Text(visible(line)), no_wrap=True, overflow="ellipsis")


def json(b: BootAnalysis) -> dict[str, Any]:
    if b.supplement is None or b.supplement.strace is None:
        return {}
    return {"strace": strace_dict(b.supplement.strace, b.alignment.offsets)}
