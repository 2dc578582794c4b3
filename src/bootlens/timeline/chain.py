"""The critical chain to ready, across layers: power-on, bootloader, kernel, systemd's units, and
the application's ready marker, each link the one the next had to wait for.

systemd-analyze critical-chain starts at a target and, for each unit, follows the one of its
``After=`` dependencies that became active last (its algorithm, analyze-critical-chain.c,
``list_dependencies_one``). It starts its clock at user space and stops at the default target.
bootlens does the same walk where it knows the dependencies (a ``systemd-analyze dump``), then
goes on below systemd through the boot's stages to power-on, and above the default target to the
unit that printed the ready marker.

Without dependencies the walk is an estimate, and says so: a unit waited for whatever finished
last before it started. Of the units that became active before a unit started (in log order:
systemd prints a job's completion before it starts the jobs that waited for it), the one that
became active last is taken, and the walk goes on from *its* start, so that a long unit is one
link rather than every completion printed while it ran; only start jobs are links of an estimate
(targets and sockets become active by the dozen at one instant and would fill it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .analyze import BootAnalysis
from ..core.kindpos import first, located
from ..core.model import READY, Kind, Milestone, UnitDetail, unit_text
from .stages import MEASURED
from ..sources.systemd_analyze.deps import Deps

ESTIMATE = "estimate"  # no dependencies known: what finished last before it started
AFTER = "after"  # the After= dependency that became active last (systemd-analyze's rule)


@dataclass(frozen=True, slots=True)
class Link:
    """One link of the chain: a unit, the ready marker, systemd's start, or a boot stage.

    ``at_ns`` is when it became active (a unit), was printed (the marker) or ended (a stage), on
    the boot's axis; ``duration_ns`` how long it took (systemd-analyze's "+"), None for an
    instant. ``event`` indexes boot.events (None for a stage); ``how`` says how it was found
    below the link before it: AFTER, ESTIMATE or "stage".
    """

    name: str
    kind: str  # "marker", "unit", "milestone", "stage", "origin"
    at_ns: int | None
    duration_ns: int | None
    line_no: int | None
    event: int | None
    how: str


@dataclass(frozen=True, slots=True)
class Chain:
    """From ready (first link) down to the axis origin (last link)."""

    links: tuple[Link, ...]
    source: str  # what the unit links rest on
    notes: tuple[str, ...] = ()

    @property
    def estimated(self) -> bool:
        """True when a unit link was found without its dependencies."""
        return any(lk.how == ESTIMATE for lk in self.links)

    def units(self) -> list[str]:
        """The unit links' names, from the top down (systemd-analyze's chain, above the kernel)."""
        return [lk.name for lk in self.links if lk.kind == "unit"]


@dataclass(frozen=True, slots=True)
class _Unit:
    index: int  # into boot.events
    name: str
    file: str | None  # the unit's file name, when the log gave it
    start: int  # activating (axis ns)
    active: int  # active (axis ns); == start for an instant
    line: int  # the Starting line (or the only line of an instant)
    end_line: int  # the Started/Reached line
    span: bool  # a start job (Starting ... Started), not an instant


def _units(b: BootAnalysis) -> list[_Unit]:
    out: list[_Unit] = []
    times = b.times or ()
    for i, e in located(b.boot.events, Kind.UNIT):
        t = times[i] if i < len(times) else None
        if t is None:
            continue
        det = e.detail if isinstance(e.detail, UnitDetail) else None
        if det is not None and det.result not in ("done", ""):
            continue  # a failed or skipped job gates nothing
        if e.duration_ns is None and (det is None or not det.result):
            continue  # never finished: it cannot have been waited for
        dur = e.duration_ns or 0
        out.append(_Unit(i, e.name, det.unit if det else None, t, t + dur, e.line_no, e.end_line_no or e.line_no,
                         e.duration_ns is not None))
    return out


def critical_chain(b: BootAnalysis, deps: Deps | Mapping[str, Sequence[str]] | None = None) -> Chain:
    """The chain of one boot; ``deps``: the units' dependencies (``systemd-analyze dump``'s
    After= lines, or a plain unit -> After= mapping), when known."""
    if deps is not None and not isinstance(deps, Deps):
        deps = Deps(deps)
    after = deps.after if deps is not None else None
    events = b.boot.events
    times = b.times or ()
    notes: list[str] = []
    units = _units(b)
    if deps is not None and deps.descriptions:  # names the console cut in the middle
        units = [u if u.file and "…" not in u.file
                 else replace(u, file=deps.resolve(unit_text(u.name, events[u.index].detail)) or u.file)
                 for u in units]
    by_name: dict[str, _Unit] = {}
    for u in units:  # the last start job of a name wins (a unit restarted during boot)
        by_name[u.name] = u
        if u.file:
            by_name[u.file] = u
    links: list[Link] = []
    ready_i = first(events, Kind.MARKER, READY)
    top_t: int | None = None
    top_line = 0
    if ready_i is not None and times[ready_i] is not None:
        top_t = times[ready_i]
        e = events[ready_i]
        # line 0: a logic analyzer's ready GPIO (logic_align), no console line to show
        links.append(Link("ready", "marker", top_t, None, e.line_no or None, ready_i, "stage"))
        top_line = e.line_no
    else:
        # no ready marker: systemd's "Startup finished", else the login prompt, else the unit
        # that became active last
        for name, label in ((Milestone.STARTUP_FINISHED, "Startup finished"), (Milestone.LOGIN_PROMPT, "login prompt")):
            fin = first(events, Kind.MILESTONE, name, times)
            if fin is not None:
                top_t, top_line = times[fin], events[fin].line_no
                links.append(Link(label, "milestone", top_t, None, top_line, fin, "stage"))
                break
        else:
            if units:
                last = max(units, key=lambda u: (u.active, u.end_line))
                top_t, top_line = last.active, last.end_line
    deps_known = bool(after)
    if top_t is not None and units:
        # the unit the top waited for: the last to start before it (the application's unit,
        # which printed the ready line while or right after it started)
        before = [u for u in units if u.line <= top_line and u.start <= top_t]
        # the printer by log order alone: a console status line is timed when it arrived, the
        # ready line's printk stamp when it was printed (earlier)
        cur = _printer(b, ready_i, [u for u in units if u.line <= top_line]) if ready_i is not None else None
        if cur is None and before:
            cur = max(before, key=lambda u: (u.start, u.line))
        seen: set[int] = set()
        how = AFTER if deps_known else ESTIMATE
        while cur is not None and cur.index not in seen:
            seen.add(cur.index)
            links.append(Link(cur.file or cur.name, "unit", cur.active, cur.active - cur.start
                              if events[cur.index].duration_ns is not None else None, cur.line, cur.index, how))
            nxt, how = _previous(cur, units, by_name, after, deps.never_active if deps is not None else frozenset())
            cur = nxt
    # below systemd: its start, then the stages that ended before it, down to the origin
    start_i = first(events, Kind.MILESTONE, Milestone.SYSTEMD_START, times)
    floor = links[-1].at_ns if links and links[-1].at_ns is not None else top_t
    if start_i is not None:
        t = times[start_i]
        links.append(Link("systemd started", "milestone", t, None, events[start_i].line_no, start_i, "stage"))
        floor = t
    below = [s for s in b.stages if s.status == MEASURED and s.end_ns is not None
             and ((s.parent is None and s.name != "userspace") or s.name in ("initramfs", "init_start"))]
    for s in sorted(below, key=lambda s: -(s.end_ns or 0)):
        if floor is None or s.end_ns is None or s.end_ns > floor:
            continue
        links.append(Link(s.label, "stage", s.end_ns, s.duration_ns, s.start.line_no if s.start else None,
                          None, "stage"))
        floor = s.start_ns
    tot = b.total
    links.append(Link(tot.origin, "origin", tot.start_ns, None, None, None, "stage"))
    if not units:
        notes.append("no systemd units in this boot: the chain is the boot's stages")
        source = "stages"
    elif deps_known:
        source = "systemd-analyze dump (After= dependencies)"
    else:
        source = "unit times (an estimate: no dependencies known; pass a systemd-analyze dump)"
    return Chain(tuple(links), source, tuple(notes))


def _printer(b: BootAnalysis, ready_i: int, units: Sequence[_Unit]) -> _Unit | None:
    """The unit that printed the ready line, when the line says (the journal's _SYSTEMD_UNIT, or
    a syslog identifier "app[236]: " naming a unit "app.service"), among those started before it."""
    lines = b.boot.lines
    if not b.boot.events[ready_i].line_no:  # the hardware's ready (a logic analyzer): no line printed it
        return None
    i = lines.index_of(b.boot.events[ready_i].line_no)
    fields = lines.fields.get(i) if lines.fields else None
    names: list[str] = []
    if fields:
        names += [v for k in ("_SYSTEMD_UNIT", "UNIT") if (v := fields.get(k))]
    m = _IDENT.match(lines.text[i])
    if m:
        names.append(m[1] + ".service")
    for n in names:
        found = [u for u in units if n in (u.file, u.name)]
        if found:
            return max(found, key=lambda u: (u.start, u.line))
    return None


_IDENT = re.compile(r"([\w@.-]+)\[\d+\]: ")


def _previous(cur: _Unit, units: Sequence[_Unit], by_name: Mapping[str, _Unit],
              after: Mapping[str, Sequence[str]] | None, never_active: frozenset[str] = frozenset()
              ) -> tuple[_Unit | None, str]:
    """The link below ``cur``, and how it was found."""
    if after:
        deps = after.get(cur.file or cur.name)
        if deps is not None:
            # systemd-analyze: of the After= units that became active, the one that did so last
            # (not after the unit itself became active: a dependency outside this transaction)
            cands = [u for d in deps if d not in never_active and (u := by_name.get(d)) is not None
                     and u.active <= cur.active and u.index != cur.index]
            if cands:
                return max(cands, key=lambda u: (u.active, u.end_line)), AFTER
            return None, AFTER
    # Targets, sockets and paths become active in bursts at one instant: a chain through them
    # would list every one of them without saying what took the time, so the estimate steps
    # from start job to start job.
    cands = [u for u in units if u.end_line < cur.line and u.active <= cur.start and u.index != cur.index
             and u.span]
    if not cands:
        return None, ESTIMATE
    return max(cands, key=lambda u: (u.active, u.end_line)), ESTIMATE
