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

Each side format is one folder under ``sources/`` (:mod:`bootlens.sources.base`): this module
knows none of them; it reads what :func:`classify` named through each format's own reading and
keeps the results as the supplement's parts, in the order the formats declare.

Nothing here raises on bad input: what a reader did not understand is in its warnings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core.errors import printable
from ..core.model import Boot, Event
from .base import SideFormat, format_of, hooks
# telling inputs apart lives in kinds.py (light: every log goes through it; start-up)
from .kinds import classify as classify

if TYPE_CHECKING:
    from .bootchart.reader import Bootchart
    from .ftrace.reader import Trace
    from .logic.align import LogicInput
    from .strace.summary import Summary as StraceSummary
    from .systemd_analyze.deps import Deps
    from .systemd_analyze.reader import Blame, CriticalChain, Dump, Plot, StartupTimes


@dataclass(frozen=True, slots=True)
class Supplement:
    """What came with a boot beside its log: each side format's parts, by the kind of input it
    read them from ("time", "blame", "ftrace", ...), and what it added to the boot. The
    properties name the parts of the formats bootlens has; a format added later reads its own
    part with :meth:`part`."""

    sources: tuple[tuple[str, str], ...] = ()  # (what, path): ("blame", "guest/analyze-blame.txt")
    parts: Mapping[str, object] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    added: Mapping[str, int] = field(default_factory=dict)  # format -> events it added (the log had none of the kind)

    def __bool__(self) -> bool:
        return bool(self.sources)

    def part(self, kind: str) -> object | None:
        """The part read from inputs of this kind, or None."""
        return self.parts.get(kind)

    def with_parts(self, warnings: tuple[str, ...] | None = None, **parts: object) -> Supplement:
        """A copy with these parts replaced (and, when given, these warnings)."""
        return replace(self, parts={**self.parts, **parts}, warnings=self.warnings if warnings is None else warnings)

    @property
    def startup(self) -> StartupTimes | None:
        return cast("StartupTimes | None", self.parts.get("time"))

    @property
    def blame(self) -> Blame | None:
        return cast("Blame | None", self.parts.get("blame"))

    @property
    def chains(self) -> tuple[CriticalChain, ...]:  # in the order given (a folder: the default target's first)
        return cast("tuple[CriticalChain, ...]", self.parts.get("critical-chain", ()))

    @property
    def dump(self) -> Dump | None:
        return cast("Dump | None", self.parts.get("dump"))

    @property
    def plot(self) -> Plot | None:
        return cast("Plot | None", self.parts.get("plot"))

    @property
    def bootchart(self) -> Bootchart | None:
        return cast("Bootchart | None", self.parts.get("bootchart"))

    @property
    def kconfig(self) -> tuple[tuple[str, str], ...]:  # a boot-data file's kernel CONFIG, in file order
        return cast("tuple[tuple[str, str], ...]", self.parts.get("kconfig", ()))

    @property
    def ftrace(self) -> Trace | None:  # an ftrace buffer: events, the KFT table, the icicle
        return cast("Trace | None", self.parts.get("ftrace"))

    @property
    def strace(self) -> StraceSummary | None:  # an strace/ltrace of the app's start, placed by extend_boot
        return cast("StraceSummary | None", self.parts.get("strace"))

    @property
    def logic(self) -> LogicInput | None:  # a logic analyzer capture and its --channel roles
        return cast("LogicInput | None", self.parts.get("logic"))

    @property
    def added_units(self) -> int:  # plot units made events (the log had none)
        return self.added.get("systemd_analyze", 0)

    @property
    def added_processes(self) -> int:  # bootchart processes made events
        return self.added.get("bootchart", 0)

    @property
    def added_trace_events(self) -> int:  # trace events made events (the log had none of their kind)
        return self.added.get("ftrace", 0)


# ------------------------------------------------------------------------------------- reading

def read_supplements(items: Sequence[tuple[str, str]], options: Mapping[str, object] | None = None) -> Supplement:
    """Read and merge (what, path) pairs as :func:`classify` named them, each through its
    format's reading (a folder standing for several files is opened). A second file of one kind
    replaces the first, with a warning, unless its format keeps every one (a chain is added).
    ``options``: what the user gave for a format, by its name (``{"logic": LogicSetup}``)."""
    parts: dict[str, object] = {}
    sources: list[tuple[str, str]] = []
    notes: list[str] = []
    flat: list[tuple[str, Path]] = []
    for what, name in items:
        expand = _hook(format_of(what), "expand")
        opened = expand(what, Path(name)) if expand is not None else None
        if opened is None:
            flat.append((what, Path(name)))
        else:
            found, more = opened
            notes.extend(more)
            flat.extend(found)
    together: dict[SideFormat, list[Path]] = {}  # strace -ff writes one file per process: read as one
    for what, p in flat:
        fmt = format_of(what)
        if fmt.together:
            together.setdefault(fmt, []).append(p)
            continue
        src = printable(str(p))
        value, warnings = hooks(fmt).read_one(what, p)
        notes.extend(f"{src}: {w}" for w in warnings)
        sources.append((what, src))
        if what in fmt.accumulates:
            parts[what] = (*cast("tuple[object, ...]", parts.get(what, ())), value)
            continue
        if what in parts:
            notes.append(f"{src}: a second {what} input; it replaces the first")
        parts[what] = value
    for fmt, paths in together.items():
        value, warnings = hooks(fmt).read_together(paths)
        parts[fmt.name] = value
        sources += [(fmt.name, printable(str(p))) for p in paths]
        notes.extend(warnings)
    for fmt in sorted({format_of(k) for k in parts}, key=lambda f: f.attach_order):
        finish = _hook(fmt, "finish")
        if finish is not None:
            parts = finish(parts, (options or {}).get(fmt.name))
    return Supplement(tuple(sources), parts, tuple(notes))


def _hook(fmt: SideFormat, name: str) -> Any:
    """A format's function ``name`` (see :mod:`bootlens.sources.base`), or None."""
    return getattr(hooks(fmt), name, None) if fmt.attaches else None


def merge(a: Supplement, b: Supplement) -> Supplement:
    """b's parts over a's (a boot-data file's own systemd part, then the files given with it);
    the kinds a format keeps every one of, a's then b's."""
    parts = dict(a.parts)
    for k, v in b.parts.items():
        if k in format_of(k).accumulates:
            parts[k] = (*cast("tuple[object, ...]", a.parts.get(k, ())), *cast("tuple[object, ...]", v))
        elif (val := v or a.parts.get(k)) is not None:
            parts[k] = val
    return Supplement(a.sources + b.sources, parts, a.warnings + b.warnings)


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
    """The boot with what its supplement adds: each format places its part on the boot (a
    dump names the units, a logic capture's edges and an strace are aligned with the console),
    then adds the events the log lacks (a plot's units, a bootchart's processes, a trace's
    initcalls), in the formats' attach order. Returns the supplement with the counts added."""
    present = sorted({format_of(k) for k in sup.parts}, key=lambda f: f.attach_order)
    for fmt in present:
        place = _hook(fmt, "place")
        if place is not None:
            boot, sup = place(boot, sup)
    kinds = {e.kind for e in boot.events}
    added: list[Event] = []
    labels: list[str] = []
    counts: dict[str, int] = {}
    for fmt in present:
        add = _hook(fmt, "add")
        if add is None:
            continue
        events, sup, label = add(boot, sup, kinds)
        if events:
            added += events
            labels.append(label)
            counts[fmt.name] = len(events)
    if not added:
        return boot, sup
    # no line of the log holds them (line 0): placed after the log's own events, which are in
    # line order; in time order among themselves
    return (boot.replace(events=boot.events + tuple(added), formats=boot.formats + tuple(labels)),
            replace(sup, added=counts))
