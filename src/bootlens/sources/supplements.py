"""Inputs that are not boot logs but add to one: ``systemd-analyze`` outputs, bootchart archives
and what a boot-data file says beside its kernel log.

``bootlens analyze LOG blame.txt time.txt plot.svg ...`` reads each file given, and
:func:`classify` tells a log from a supplement by its content (never by its name). The
supplements of one command are merged into one :class:`Supplement`, attached to the boot of the
other inputs (:func:`bootlens.timeline.inputs.analyze_inputs` refuses when those hold several boots: a
systemd-analyze output describes one boot, and bootlens cannot tell which).

What each adds, and where it shows:

- ``time``: systemd's own stage figures, set beside bootlens's (:func:`time_rows`);
- ``blame``: a per-unit check of bootlens's unit durations (:func:`blame_check`), because a
  figure a user cannot trace to a second source is a figure they do not trust;
- ``dump``: the After= map the critical chain walks (:func:`deps_of`);
- ``plot``: when the log has no units (a kernel-only console), the plot's units become
  :attr:`Kind.UNIT` events on the kernel clock (plot x is time since kernel start);
- ``critical-chain``: kept as systemd's chain, shown beside bootlens's;
- a bootchart archive: its processes become :attr:`Kind.PROCESS` events on the UPTIME clock
  (when the log has no process events of its own) and its CPU/disk samples a panel of the report.

Nothing here raises on bad input: what a reader did not understand is in its warnings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import InputError, printable
from ..core.model import Boot, Event, Kind
# telling inputs apart lives in kinds.py (light: every log goes through it; start-up)
from .kinds import SYSTEMD_ANALYZE as SYSTEMD_ANALYZE
from .kinds import classify as classify
from .kinds import collection_files as collection_files

if TYPE_CHECKING:
    from .systemd_analyze.deps import Deps
    from .bootchart.reader import Bootchart
    from .ftrace.reader import Trace
    from .systemd_analyze.reader import Blame, CriticalChain, Dump, Plot, StartupTimes
    from .logic.align import LogicInput, LogicSetup
    from .strace.summary import Summary as StraceSummary


@dataclass(frozen=True, slots=True)
class Supplement:
    """What came with a boot beside its log; each part None (or empty) when not given."""

    sources: tuple[tuple[str, str], ...] = ()  # (what, path): ("blame", "guest/analyze-blame.txt")
    startup: StartupTimes | None = None
    blame: Blame | None = None
    chains: tuple[CriticalChain, ...] = ()  # in the order given (a folder: the default target's first)
    dump: Dump | None = None
    plot: Plot | None = None
    bootchart: Bootchart | None = None
    kconfig: tuple[tuple[str, str], ...] = ()  # a boot-data file's kernel CONFIG, in file order
    warnings: tuple[str, ...] = ()
    added_units: int = 0  # plot units made events (the log had none)
    added_processes: int = 0  # bootchart processes made events
    ftrace: Trace | None = None  # an ftrace buffer (parsers.ftrace): events, the KFT table, the icicle
    added_trace_events: int = 0  # trace events made events (the log had none of their kind)
    strace: StraceSummary | None = None  # an strace/ltrace of the app's start (strace_summary), placed by extend_boot
    logic: LogicInput | None = None  # a logic analyzer capture and its --channel roles (logic_align)

    def __bool__(self) -> bool:
        return bool(self.sources)


# ------------------------------------------------------------------------------------- reading

def read_supplements(items: Sequence[tuple[str, str]], logic: LogicSetup | None = None) -> Supplement:
    """Read and merge (what, path) pairs as :func:`classify` named them ("collection" folders
    are opened). A second file of one kind replaces the first, with a warning; a chain is added."""
    from .bootchart.reader import Bootchart, read_bootchart
    from .ftrace.reader import Trace, read_trace
    from .logic.reader import read_logic
    from .systemd_analyze.reader import (
        Blame, CriticalChain, Dump, Plot, StartupTimes, read_blame, read_critical_chain, read_dump, read_plot,
        read_time)

    parts: dict[str, object] = {}
    chains: list[CriticalChain] = []
    sources: list[tuple[str, str]] = []
    notes: list[str] = []
    flat: list[tuple[str, Path]] = []
    for what, name in items:
        if what == "collection":
            found = collection_files(Path(name))
            if not found:
                notes.append(f"{printable(name)}: no systemd-analyze outputs in this folder")
            flat.extend(found)
        else:
            flat.append((what, Path(name)))
    straces = [p for what, p in flat if what == "strace"]  # strace -ff writes one file per process
    flat = [(what, p) for what, p in flat if what != "strace"]
    for what, p in flat:
        src = printable(str(p))
        value: object
        if what == "bootchart":
            chart = read_bootchart(p)
            value = chart
            notes.extend(f"{src}: {w}" for w in chart.warnings)
        elif what == "logic":
            value = read_logic(p)  # its warnings join the boot's when it is placed (logic_align)
        elif what == "ftrace":
            trace = read_trace(str(p))
            value = trace
            notes.extend(f"{src}: {w}" for w in trace.warnings)
        else:
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                raise InputError(str(p), f"cannot read: {e.strerror or e}") from None
            reader = {"time": read_time, "blame": read_blame, "critical-chain": read_critical_chain,
                      "dump": read_dump, "plot": read_plot}[what]
            value = reader(text)
            notes.extend(f"{src}: {w}" for w in getattr(value, "warnings", ()))
        sources.append((what, src))
        if what == "critical-chain":
            assert isinstance(value, CriticalChain)
            chains.append(value)
            continue
        if what in parts:
            notes.append(f"{src}: a second {what} input; it replaces the first")
        parts[what] = value
    startup = parts.get("time")
    plot = parts.get("plot")
    if startup is None and isinstance(plot, Plot) and plot.startup is not None and plot.startup.line_no:
        startup = plot.startup  # the plot's heading is systemd-analyze time's first line
    strace = None
    if straces:
        from .strace.summary import read_summary

        strace = read_summary(straces)
        sources += [("strace", printable(str(p))) for p in straces]
        notes.extend(strace.warnings)
    return Supplement(
        tuple(sources),
        startup if isinstance(startup, StartupTimes) else None,
        b if isinstance(b := parts.get("blame"), Blame) else None,
        tuple(chains),
        d if isinstance(d := parts.get("dump"), Dump) else None,
        plot if isinstance(plot, Plot) else None,
        c if isinstance(c := parts.get("bootchart"), Bootchart) else None,
        ftrace=t if isinstance(t := parts.get("ftrace"), Trace) else None,
        warnings=tuple(notes), strace=strace, logic=_logic_input(parts.get("logic"), logic))


def _logic_input(cap: object, setup: LogicSetup | None) -> LogicInput | None:
    from .logic.align import LogicInput, LogicSetup
    from .logic.reader import Capture

    return LogicInput(cap, setup or LogicSetup()) if isinstance(cap, Capture) else None


def merge(a: Supplement, b: Supplement) -> Supplement:
    """b's parts over a's (a boot-data file's own systemd part, then the files given with it)."""
    return Supplement(
        a.sources + b.sources, b.startup or a.startup, b.blame or a.blame, a.chains + b.chains, b.dump or a.dump,
        b.plot or a.plot, b.bootchart or a.bootchart, b.kconfig or a.kconfig, a.warnings + b.warnings, ftrace=b.ftrace or a.ftrace,
        strace=b.strace or a.strace, logic=b.logic or a.logic)


def deps_of(sup: Supplement | None) -> Deps | None:
    """The After= map for the critical chain: a dump's, else a plot's tooltips (systemd >= 255)."""
    from .systemd_analyze.deps import Deps, deps_from_dump

    if sup is None:
        return None
    if sup.dump is not None and sup.dump.units:
        return deps_from_dump(sup.dump.units)
    if sup.plot is not None and any(u.dependencies for u in sup.plot.units):
        return Deps({u.unit: list(u.depends("After")) for u in sup.plot.units})
    return None


# ------------------------------------------------------------------------------ adding events

def extend_boot(boot: Boot, sup: Supplement) -> tuple[Boot, Supplement]:
    """The boot with the supplement's events: the plot's units when the log has none, the
    bootchart's processes when the log has no process events. Returns the counts added too."""
    if sup.dump is not None and sup.dump.units:
        from .systemd_analyze.attach import name_units

        boot = name_units(boot, sup.dump)
    if sup.logic is not None:  # a logic analyzer's edges, aligned with the console (logic_align)
        from .logic.align import place

        boot, logic, notes = place(boot, sup.logic)
        sup = replace(sup, logic=logic, warnings=sup.warnings + tuple(notes))
    if sup.strace is not None:  # placed on the console through a line both show, then its processes
        from .strace.summary import attach

        boot, sup = attach(boot, sup)
    kinds = {e.kind for e in boot.events}
    added: list[Event] = []
    units = procs = 0
    if sup.plot is not None and Kind.UNIT not in kinds:
        from .systemd_analyze.attach import plot_units

        plot_events = plot_units(sup.plot)
        added += plot_events
        units = len(plot_events)
    if sup.bootchart is not None and Kind.PROCESS not in kinds:
        from .bootchart.attach import bootchart_processes

        proc_events = bootchart_processes(sup.bootchart)
        added += proc_events
        procs = len(proc_events)
    traced = 0
    if sup.ftrace is not None:  # the trace's initcalls/processes when the log has none of the kind
        from .ftrace.kft import clock_notes, name_blocks, trace_events

        trace_added = trace_events(sup.ftrace, kinds)
        added += trace_added
        traced = len(trace_added)
        named, naming = name_blocks(sup.ftrace, boot)  # the console's initcall_debug names untraced initcalls
        warnings = sup.warnings
        if naming:  # the reader's count of unnamed blocks, less those the console named
            from .ftrace.reader import UNNAMED_NOTE

            warnings = tuple(w for w in warnings if UNNAMED_NOTE not in w) + tuple(
                f"{named.source}: {w}" for w in named.warnings if UNNAMED_NOTE in w)
        sup = replace(sup, ftrace=named, warnings=warnings + clock_notes(sup.ftrace, boot) + naming)
    if not added:
        return boot, sup
    formats = boot.formats + tuple(f for f, n in (("systemd-analyze plot", units), ("bootchart", procs),
                                                  ("ftrace", traced)) if n)
    # no line of the log holds them (line 0): placed after the log's own events, which are in
    # line order; in time order among themselves
    return (boot.replace(events=boot.events + tuple(added), formats=formats),
            replace(sup, added_units=units, added_processes=procs, added_trace_events=traced))
