"""Analysis of aligned boots: stage table, worst offenders, silences, kernel facts.

:func:`analyze_paths` is the one call behind ``bootlens analyze``.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from .align import Alignment, align
from .boots import boots_from_lines
from .lines import read_path
from .model import READY, Boot, Clock, Event, InputStats, Kind, Milestone
from .parsers import ParseOptions, Registry
from .stages import Stage, Total, compute_stages


@dataclass(frozen=True, slots=True)
class Silence:
    """A stretch of the boot in which the console printed nothing."""

    start_ns: int
    duration_ns: int
    line_before: int
    line_after: int
    text_before: str
    text_after: str


@dataclass(frozen=True, slots=True)
class Counts:
    """How much of each kind of thing a boot holds."""

    lines: int
    timed_lines: int
    initcalls: int  # returned
    initcalls_unfinished: int
    probes: int
    processes: int
    user_processes: int
    markers: int


@dataclass(frozen=True, slots=True)
class BootAnalysis:
    """Everything bootlens knows about one boot, on one axis."""

    boot: Boot
    alignment: Alignment
    stages: tuple[Stage, ...]
    total: Total
    top_initcalls: tuple[Event, ...]
    top_probes: tuple[Event, ...]
    top_processes: tuple[Event, ...]
    silences: tuple[Silence, ...]
    counts: Counts
    partial_reasons: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def partial(self) -> bool:
        """True when pieces of the boot are missing from the log."""
        return bool(self.partial_reasons)


@dataclass(frozen=True, slots=True)
class Analysis:
    """The result of analysing one or more inputs."""

    inputs: tuple[InputStats, ...]
    boots: tuple[BootAnalysis, ...]


def _top(events: Sequence[Event], n: int) -> tuple[Event, ...]:
    timed = [e for e in events if e.duration_ns is not None]
    return tuple(heapq.nlargest(n, timed, key=lambda e: (e.duration_ns or 0, -e.line_no)))


def silences(boot: Boot, al: Alignment, n: int) -> tuple[Silence, ...]:
    """The n longest gaps between consecutive console lines, by the time each line arrived
    (host axis) or was printed (kernel axis)."""
    use_host = al.axis is Clock.HOST
    prev = None
    prev_t = 0
    gaps: list[tuple[int, int, int]] = []  # (gap, index before, index after)
    push = heapq.heappush
    replace = heapq.heapreplace
    for i, t in enumerate(boot.lines.host if use_host else boot.lines.kernel):
        if t is None:
            continue
        if prev is not None:
            g = t - prev_t
            if len(gaps) < n:
                push(gaps, (g, prev, i))
            elif g > gaps[0][0]:
                replace(gaps, (g, prev, i))
        prev, prev_t = i, t
    off = al.offsets.get(Clock.HOST if use_host else Clock.KERNEL, 0)
    out = []
    for g, a, b in sorted(gaps, reverse=True):
        la, lb = boot.lines[a], boot.lines[b]
        t0 = la.host_ns if use_host else la.kernel_ns
        assert t0 is not None
        out.append(Silence(t0 + off, g, la.no, lb.no, la.text.strip(), lb.text.strip()))
    return tuple(out)


def analyze_boot(boot: Boot, top: int = 10, host_origin: str = "first_byte") -> BootAnalysis:
    """Align one boot and compute its stages, top offenders and silences."""
    al = align(boot, host_origin)
    stages, total = compute_stages(boot, al)
    initcalls = [e for e in boot.events if e.kind is Kind.INITCALL]
    probes = [e for e in boot.events if e.kind is Kind.PROBE]
    procs = [e for e in boot.events if e.kind is Kind.PROCESS]
    user = [e for e in procs if e.detail is not None and not getattr(e.detail, "kthread", False)]
    markers = [e for e in boot.events if e.kind is Kind.MARKER]
    timed = sum(1 for h, k in zip(boot.lines.host, boot.lines.kernel) if h is not None or k is not None)
    counts = Counts(
        lines=len(boot.lines),
        timed_lines=timed,
        initcalls=sum(1 for e in initcalls if e.duration_ns is not None),
        initcalls_unfinished=sum(1 for e in initcalls if e.duration_ns is None),
        probes=len(probes),
        processes=len(procs),
        user_processes=len(user),
        markers=len(markers),
    )
    names = {e.name for e in boot.events if e.kind is Kind.MILESTONE}
    partial: list[str] = []
    if Milestone.KERNEL_START not in names and not boot.lines.has_kernel_time():
        partial.append("no kernel output")
    elif Milestone.KERNEL_START not in names:
        partial.append("kernel start (Linux version) not in the log")
    if Milestone.RUN_INIT not in names and Milestone.KERNEL_PANIC not in names:
        partial.append("log ends before user space started (no 'Run /init')")
    if Milestone.KERNEL_PANIC in names:
        partial.append("kernel panic")
    warnings = list(boot.warnings) + list(al.notes)
    if timed == 0:
        warnings.append("no timestamps in this boot: durations only (enable printk.time=1 or capture "
                        "with host timestamps)")
    if not any(e.name == READY for e in markers):
        warnings.append("no ready marker: pass --marker ready=REGEX to measure up to the application")
    untimed = sum(1 for e in boot.events if al.to_axis(e.start) is None)
    if untimed:
        warnings.append(f"{untimed} events have no time on the {al.axis.value} axis "
                        "(seen, listed in tables, not placed)")
    return BootAnalysis(
        boot=boot,
        alignment=al,
        stages=stages,
        total=total,
        top_initcalls=_top(initcalls, top),
        top_probes=_top(probes, top),
        top_processes=_top(user, top),
        silences=silences(boot, al, min(top, 10)),
        counts=counts,
        partial_reasons=tuple(partial),
        warnings=tuple(warnings),
    )


def analyze_paths(
    paths: Sequence[str],
    options: ParseOptions | None = None,
    top: int = 10,
    registry: Registry | None = None,
) -> Analysis:
    """Read, split, parse, align and analyse every input. Raises InputError on unusable input."""
    opts = options or ParseOptions()
    stats_all: list[InputStats] = []
    results: list[BootAnalysis] = []
    for path in paths:
        lines, stats = read_path(path)
        boots = boots_from_lines(stats.source, lines, stats, opts, registry)
        stats_all.append(stats)
        for boot in boots:
            results.append(analyze_boot(boot, top, "first_byte"))
    return Analysis(tuple(stats_all), tuple(results))
