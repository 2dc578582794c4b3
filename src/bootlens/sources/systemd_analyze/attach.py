"""How systemd-analyze's outputs join a boot: a dump names the units the console gave only a
description or a cut name for; a plot's units become the boot's unit events when its log has
none; a dump's (else a plot's) After= map is what the critical chain walks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.model import Boot, Clock, Event, Kind, Stamp, UnitDetail

if TYPE_CHECKING:
    from .reader import Dump, Plot


def name_units(boot: Boot, dump: Dump) -> Boot:
    """The boot with its unit events' file names filled in from a dump (names and descriptions)
    where the log gave only a description or a name cut at 80 columns."""
    from .deps import deps_from_dump  # the one resolver of console names (also the chain's)

    deps = deps_from_dump(dump.units)
    events = list(boot.events)
    changed = False
    for i, e in enumerate(events):
        det = e.detail
        if e.kind is not Kind.UNIT or not isinstance(det, UnitDetail) or det.unit:
            continue
        unit = e.name if e.name in deps.descriptions else deps.resolve(e.name)
        if unit is not None:
            events[i] = e._replace(detail=det._replace(unit=unit))
            changed = True
    return boot.replace(events=tuple(events)) if changed else boot


def plot_units(plot: Plot) -> list[Event]:
    """The plot's units as start jobs on the kernel clock (systemd's CLOCK_MONOTONIC, which the
    printk clock follows), in activation order; a unit still activating has no duration."""
    out = []
    for u in sorted(plot.units, key=lambda u: (u.activating_ns, u.unit)):
        done = u.active_ns is not None
        out.append(Event(Kind.UNIT, u.unit, Stamp(Clock.KERNEL, u.activating_ns), u.activation_ns, 0, None,
                         UnitDetail(u.unit, "", "done" if done else "", "systemd-analyze")))
    return out
