"""How systemd-analyze's outputs join a boot: a dump names the units the console gave only a
description or a cut name for; a plot's units become the boot's unit events when its log has
none; a dump's (else a plot's) After= map is what the critical chain walks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.model import Boot, Clock, Event, Kind, Stamp, UnitDetail

if TYPE_CHECKING:
    from pathlib import Path

    from ..supplements import Supplement
    from .reader import Dump, Plot


def expand(kind: str, path: Path) -> tuple[list[tuple[str, Path]], list[str]] | None:
    """A folder of outputs ("collection", as ``target boot --collect`` writes) as its files."""
    if kind != "collection":
        return None
    from ...core.errors import printable
    from . import collection_files

    found = collection_files(path)
    return found, ([] if found else [f"{printable(str(path))}: no systemd-analyze outputs in this folder"])


def read_one(kind: str, path: Path) -> tuple[object, tuple[str, ...]]:
    """One output of ``systemd-analyze KIND``, and its reader's warnings."""
    from ...core.errors import InputError
    from .reader import read_blame, read_critical_chain, read_dump, read_plot, read_time

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None
    reader = {"time": read_time, "blame": read_blame, "critical-chain": read_critical_chain,
              "dump": read_dump, "plot": read_plot}[kind]
    value: object = reader(text)
    return value, tuple(getattr(value, "warnings", ()))


def finish(parts: dict[str, object], options: object) -> dict[str, object]:
    """``time`` from the plot's heading when no ``time`` output was given (the plot's heading is
    systemd-analyze time's first line)."""
    from .reader import Plot

    plot = parts.get("plot")
    if parts.get("time") is None and isinstance(plot, Plot) and plot.startup is not None and plot.startup.line_no:
        parts["time"] = plot.startup
    return parts


def place(boot: Boot, sup: Supplement) -> tuple[Boot, Supplement]:
    """The console's units named by a dump (first: the other formats read the units' names)."""
    if sup.dump is not None and sup.dump.units:
        boot = name_units(boot, sup.dump)
    return boot, sup


def add(boot: Boot, sup: Supplement, kinds: set[Kind]) -> tuple[list[Event], Supplement, str]:
    """The plot's units, when the log has none (a kernel-only console)."""
    if sup.plot is None or Kind.UNIT in kinds:
        return [], sup, "systemd-analyze plot"
    return plot_units(sup.plot), sup, "systemd-analyze plot"


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
