"""A logic analyzer capture placed on a boot: channel roles, alignment with the console, and the
residual error of that alignment.

The capture (:mod:`bootlens.sources.logic.reader`) has its own clock (t=0 at its first sample); the
console has the host's (or only printk's). The two are tied through an event seen in both:
``--align D1:rise=REGEX`` pairs the channel's rising edges, in order, with the console lines
matching REGEX (a GPIO the board toggles where it prints that line), ``--align TX:first`` the
first edge of a UART TX channel with the console's first byte. With several pairs the offset is
their median (robust to one line delayed by a busy UART), and what is left over (max |error|
and RMS) says how far the capture's times on the boot's axis can be trusted.

Then each channel with a role becomes events on the console's clock:

- ``power`` (first rising edge, ``power:fall`` for a falling one): the POWER_ON milestone; the
  boot's axis then counts from it (:func:`bootlens.timeline.align.align`), so the headline reads
  ``power-on (logic analyzer) → ready``; ``reset`` does the same when no power channel is given
  (its release: the first rising edge), else it is a marker;
- ``ready``: its first edge after power-on is the ready marker, the hardware's own end of the
  boot; a console ``--marker ready=`` is kept beside it as ``ready (console)``;
- ``marker:LABEL``: every edge a marker named LABEL.

Every edge event carries :class:`~bootlens.core.model.LogicDetail` and line 0 (no console line).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from statistics import median

from ...core.errors import InputError, UsageError
from ...core.model import NS_PER_MS, READY, Boot, Clock, Event, Kind, LogicDetail, Milestone, Stamp
from .reader import Capture, Channel

ROLES = ("power", "reset", "ready", "marker")
EDGES = ("rise", "fall", "any")
BOUND_NS = 10 * NS_PER_MS  # residual above which the alignment is called poor (docs/logic.md)
MAX_MARKER_EDGES = 10_000  # a marker channel toggling faster is a data line, not a marker


@dataclass(frozen=True, slots=True)
class Role:
    """``--channel NAME=ROLE[:EDGE|:LABEL]``: what one channel of the capture means."""

    channel: str
    role: str  # one of ROLES
    edge: str  # "rise", "fall" or "any"
    label: str  # the marker's name (role marker), else the role

    @classmethod
    def parse(cls, spec: str) -> Role:
        """``D0=power``, ``D0=power:fall``, ``D3=ready``, ``D2=reset``, ``D5=marker:irq``,
        ``D5=marker:irq:rise``; UsageError when it is none of these."""
        name, eq, what = spec.partition("=")
        parts = what.split(":")
        role = parts[0].strip().lower()
        if not eq or not name.strip() or role not in ROLES:
            raise UsageError(f"--channel {spec}: expected NAME=ROLE with ROLE one of {', '.join(ROLES)} "
                             "(e.g. D0=power, D3=ready, D5=marker:LABEL)")
        rest = [p for p in parts[1:] if p]
        edge = next((p for p in rest if p in EDGES), None)
        others = [p for p in rest if p not in EDGES]
        if role == "marker":
            if len(others) > 1:
                raise UsageError(f"--channel {spec}: marker takes one LABEL (NAME=marker:LABEL[:rise|fall])")
            label = others[0] if others else name.strip()
        else:
            if others:
                raise UsageError(f"--channel {spec}: {role} takes rise, fall or any after ':', not {others[0]!r}")
            label = role
        default = "any" if role in ("ready", "marker") else "rise"
        return cls(name.strip(), role, edge or default, label)


@dataclass(frozen=True, slots=True)
class AlignSpec:
    """``--align NAME:EDGE=REGEX`` (edges against matching lines) or ``--align NAME:first``
    (the channel's first edge against the console's first byte)."""

    channel: str
    edge: str  # "rise", "fall", "any" or "first"
    pattern: re.Pattern[str] | None  # None: the console's first byte

    @classmethod
    def parse(cls, spec: str) -> AlignSpec:
        """Parse one --align value; UsageError on a bad edge or regex."""
        head, eq, rx = spec.partition("=")
        name, _, edge = head.partition(":")
        edge = (edge or ("first" if not eq else "rise")).strip().lower()
        if not name.strip() or edge not in (*EDGES, "first") or (edge != "first" and not rx):
            raise UsageError(f"--align {spec}: expected NAME:rise|fall|any=REGEX (edges against the console lines "
                             "REGEX matches) or NAME:first (the first edge against the console's first byte)")
        if edge == "first":
            return cls(name.strip(), edge, None)
        try:
            return cls(name.strip(), edge, re.compile(rx))
        except re.error as e:
            raise UsageError(f"--align {spec}: bad regex: {e}") from None


@dataclass(frozen=True, slots=True)
class LogicSetup:
    """What the command line says about a capture: roles, alignment events, residual bound."""

    roles: tuple[Role, ...] = ()
    aligns: tuple[AlignSpec, ...] = ()
    bound_ns: int = BOUND_NS

    def __bool__(self) -> bool:
        return bool(self.roles or self.aligns)


@dataclass(frozen=True, slots=True)
class Pair:
    """One alignment event: an edge of the capture and the console line it stands for."""

    channel: str
    edge_ns: int  # capture clock
    line_no: int
    line_ns: int  # console clock (host, or printk)
    error_ns: int  # line - (edge + offset): what the fit leaves over


@dataclass(frozen=True, slots=True)
class LogicFit:
    """How the capture's clock maps onto the console's: ``console = capture + offset_ns``."""

    clock: Clock  # the console clock the events are stamped in (HOST, or KERNEL without host times)
    offset_ns: int
    pairs: tuple[Pair, ...]
    max_abs_ns: int
    rms_ns: int
    bound_ns: int
    method: str  # "median of N pairs (D1 rise ~ /REGEX/)"

    @property
    def poor(self) -> bool:
        """The residual is over the bound: the capture's events are only roughly placed."""
        return self.max_abs_ns > self.bound_ns


@dataclass(frozen=True, slots=True)
class LogicInput:
    """A capture, the roles given with it and, once placed on a boot, the fit and what it gave."""

    capture: Capture
    setup: LogicSetup
    fit: LogicFit | None = None
    power_on: Event | None = None
    ready: Event | None = None
    markers: int = 0  # marker events added


def _channel(cap: Capture, name: str, what: str) -> Channel:
    ch = cap.channel(name)
    if ch is None:
        have = ", ".join(c.name for c in cap.channels) or "none"
        raise InputError(cap.source, f"{what}: no channel {name!r} in this capture (channels: {have})")
    return ch


def _edges(ch: Channel, edge: str) -> list[tuple[int, str]]:
    """(time, "rise"|"fall") of one kind of edge, in time order."""
    out = []
    if edge in ("rise", "any", "first"):
        out += [(t, "rise") for t in ch.rising]
    if edge in ("fall", "any", "first"):
        out += [(t, "fall") for t in ch.falling]
    out.sort()
    return out[:1] if edge == "first" else out


def fit(boot: Boot, logic: LogicInput) -> LogicFit:
    """Pair each --align's edges with its console lines, in order, and fit the offset (median).
    InputError naming what is missing when nothing pairs."""
    cap, setup = logic.capture, logic.setup
    lines = boot.lines
    if lines.has_host_time():
        clock, col = Clock.HOST, lines.host
    elif lines.has_kernel_time():
        clock, col = Clock.KERNEL, lines.kernel
    else:
        raise InputError(cap.source, "the console log has no timestamps: nothing to place the capture's "
                         "edges against (capture it with bootlens capture, or printk.time=1)")
    if not setup.aligns:
        raise InputError(cap.source, "no alignment event: give --align CHANNEL:rise=REGEX (a GPIO toggled "
                         "where the console prints REGEX) or --align TX:first (a UART TX channel)")
    pairs: list[tuple[str, int, int, int]] = []
    used: list[str] = []
    for a in setup.aligns:
        ch = _channel(cap, a.channel, f"--align {a.channel}")
        edges = _edges(ch, a.edge)
        if not edges:
            raise InputError(cap.source, f"no alignment event: channel {ch.name} has no "
                             f"{'edge' if a.edge in ('any', 'first') else a.edge + 'ing edge'} in the capture")
        if a.pattern is None:
            if clock is not Clock.HOST:
                raise InputError(cap.source, f"--align {a.channel}:first needs the console's first byte: a "
                                 "capture with host times (this log has printk times only)")
            hits = [next(i for i, h in enumerate(col) if h is not None)]
            what = f"{ch.name} first edge ~ first console byte"
        else:
            search = a.pattern.search
            hits = [i for i, (txt, h) in enumerate(zip(lines.text, col)) if h is not None and search(txt)]
            if not hits:
                raise InputError(cap.source, f"no alignment event: no timed console line matches "
                                 f"/{a.pattern.pattern}/")
            what = f"{ch.name} {a.edge} ~ /{a.pattern.pattern}/"
            if len(hits) != len(edges):
                what += f": {len(edges)} edges, {len(hits)} lines, the first {min(len(hits), len(edges))} paired"
        for (t, _), i in zip(edges, hits):
            h = col[i]
            assert h is not None
            pairs.append((ch.name, t, lines.no(i), h))
        used.append(what)
    diffs = [h - t for _, t, _, h in pairs]
    off = round(median(diffs))
    errs = [d - off for d in diffs]
    rms = round(math.sqrt(sum(e * e for e in errs) / len(errs)))
    method = f"median of {len(pairs)} pair{'s' if len(pairs) != 1 else ''}"
    return LogicFit(clock, off, tuple(Pair(c, t, n, h, e) for (c, t, n, h), e in zip(pairs, errs)),
                    max(abs(e) for e in errs), rms, setup.bound_ns, f"{method}: {'; '.join(used)}")


def place(boot: Boot, logic: LogicInput) -> tuple[Boot, LogicInput, list[str]]:
    """The boot with the capture's role events on the console clock; the input with its fit;
    warnings. InputError when a channel named is missing or nothing aligns."""
    cap, setup = logic.capture, logic.setup
    if not setup.roles:
        raise InputError(cap.source, "a logic analyzer capture without --channel roles: say what a channel "
                         "is (--channel D0=power, --channel D3=ready, --channel D5=marker:LABEL)")
    f = fit(boot, logic)
    warnings: list[str] = []
    if f.poor:
        warnings.append(f"{cap.source}: the alignment with the console leaves {f.max_abs_ns / 1e6:.3f} ms "
                        f"(max |error|, RMS {f.rms_ns / 1e6:.3f} ms) over the {f.bound_ns / 1e6:g} ms bound: "
                        "the capture's events are only that close to the console's")
    warnings += list(cap.warnings)

    def ev(kind: Kind, name: str, t: int, ch: Channel, edge: str, role: str) -> Event:
        return Event(kind, name, Stamp(f.clock, t + f.offset_ns), None, 0, None, LogicDetail(ch.name, edge, role, t))

    added: list[Event] = []
    roles = {r.role: r for r in setup.roles}
    power = roles.get("power") or roles.get("reset")
    power_ev: Event | None = None
    if power is not None:
        ch = _channel(cap, power.channel, f"--channel {power.channel}={power.role}")
        edges = _edges(ch, power.edge)
        if not edges:
            raise InputError(cap.source, f"--channel {power.channel}={power.role}: no "
                             f"{power.edge if power.edge != 'any' else ''}{'ing' if power.edge != 'any' else ''} "
                             f"edge on {ch.name}: the capture started after power-on, or the channel is wrong")
        t, edge = edges[0]
        power_ev = ev(Kind.MILESTONE, Milestone.POWER_ON, t, ch, edge, power.role)
        added.append(power_ev)
    t0 = power_ev.detail.capture_ns if power_ev is not None and isinstance(power_ev.detail, LogicDetail) else None
    ready_ev: Event | None = None
    markers = 0
    for r in setup.roles:
        ch = _channel(cap, r.channel, f"--channel {r.channel}={r.role}")
        edges = _edges(ch, r.edge)
        if r.role == "ready":
            after = [(t, e) for t, e in edges if t0 is None or t > t0]
            if not after:
                warnings.append(f"{cap.source}: --channel {r.channel}=ready: no {r.edge} edge on {ch.name}"
                                + (" after power-on" if t0 is not None else "") + ": ready not measured")
                continue
            ready_ev = ev(Kind.MARKER, READY, after[0][0], ch, after[0][1], "ready")
            added.append(ready_ev)
        elif r.role == "marker" or (r.role == "reset" and r is not power):
            if len(edges) > MAX_MARKER_EDGES:
                warnings.append(f"{cap.source}: {ch.name} has {len(edges)} edges; the first {MAX_MARKER_EDGES} "
                                "are markers")
            label = r.label if r.role == "marker" else "reset"
            for t, e in edges[:MAX_MARKER_EDGES]:
                added.append(ev(Kind.MARKER, label, t, ch, e, r.role))
                markers += 1
    events = boot.events
    if ready_ev is not None and any(e.kind is Kind.MARKER and e.name == READY for e in events):
        # the hardware's ready ends the boot; the console's stays beside it, to compare
        events = tuple(e._replace(name=f"{READY} (console)") if e.kind is Kind.MARKER and e.name == READY else e
                       for e in events)
    added.sort(key=lambda e: e.start.ns if e.start is not None else 0)
    boot = boot.replace(events=events + tuple(added), formats=boot.formats + (cap.format,))
    return boot, replace(logic, fit=f, power_on=power_ev, ready=ready_ev, markers=markers), warnings
