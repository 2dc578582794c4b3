"""How systemd-analyze's outputs join a boot: a dump names the units the console gave only a
description or a cut name for; a plot's units become the boot's unit events when its log has
none; a dump's (else a plot's) After= map is what the critical chain walks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.model import Boot, Clock, Event, Kind, Stamp, UnitDetail, unit_text
from . import ALONE

if TYPE_CHECKING:
    from pathlib import Path

    from ...core.lines import Lines

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
    """The plot's units, when the log has none (a kernel-only console); each at its label's line
    where the boot's lines are the plot's own (the plot given alone), else at none (the log's
    lines are not the SVG's)."""
    if sup.plot is None or Kind.UNIT in kinds:
        return [], sup, "systemd-analyze plot"
    own = boot.split_reason == ALONE and shown_output(sup) == "plot"
    return plot_units(sup.plot, own), sup, "systemd-analyze plot"


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
        unit = e.name if e.name in deps.descriptions else deps.resolve(unit_text(e.name, det))
        if unit is not None:
            events[i] = e._replace(detail=det._replace(unit=unit))
            changed = True
    return boot.replace(events=tuple(events)) if changed else boot


def plot_units(plot: Plot, lines: bool = False) -> list[Event]:
    """The plot's units as start jobs on the kernel clock (systemd's CLOCK_MONOTONIC, which the
    printk clock follows), in activation order; a unit still activating has no duration.
    ``lines``: each at its row's line in the SVG (else line 0)."""
    out = []
    for u in sorted(plot.units, key=lambda u: (u.activating_ns, u.unit)):
        done = u.active_ns is not None
        took = u.activation_ns
        if u.time_ns is not None and (took is None or abs(took - u.time_ns) > 1_000_000):
            # the row's own "(1.250s)" is blame's figure; a bar that disagrees by more than its
            # rounding (a Sailfish plot's bluetooth.service drawn activating to the plot's end) is not
            took = u.time_ns
        out.append(Event(Kind.UNIT, u.unit, Stamp(Clock.KERNEL, u.activating_ns), took, u.line_no if lines else 0, None,
                         UnitDetail(u.unit, "", "done" if done else "", "systemd-analyze")))
    return out




def shown_output(sup: Supplement) -> str | None:
    """The output a boot of systemd-analyze outputs alone takes its lines from: ``time``, else the
    plot whose heading gave the milestones, else ``blame``; None when none was given."""
    kinds = dict(sup.sources)
    return next((k for k in ("time", "plot", "blame") if k in kinds and (k != "plot" or sup.startup is not None)),
                None)


def alone_boot(source: str, sup: Supplement, lines: Lines | None = None, index: int = 0) -> Boot:
    """systemd-analyze outputs given without a log, as people paste them: a boot of systemd's own
    figures on its monotonic clock (the printk clock; t=0 the kernel's start). ``time`` (or a
    plot's heading) gives the milestones: firmware and loader as durations on a clock from reset
    (the firmware's, as EFI reports them), the kernel's start, init (the initrd's, else the
    root's), the root's systemd after the initrd, startup finished; power-on firmware + loader
    before the kernel. A plot's units join through :func:`add`; ``blame``'s, which have durations
    but no start, are unit events with no time. Every event's line is the output's own.
    ``lines``: the boot's lines when its outputs are part of a file (a transcript), else the lines
    of the output its milestones come from are read; ``index``: the boot's place in that file."""
    from ...core.lines import Lines
    from ...core.model import Fact, Milestone, UnitDetail

    events: list[Event] = []
    facts: list[Fact] = []
    t = sup.startup
    # the boot's lines are those of the output its milestones come from (time, else the plot whose
    # heading gave them, else blame): the evidence every figure points at
    kinds = dict(sup.sources)
    shown = shown_output(sup)
    own_lines = lines is not None
    if lines is None:
        lines = Lines([], [], [])
    if shown is not None and not own_lines:
        from ...core.errors import InputError
        from ...read.reader import read_path

        try:  # the framing's lines (one implementation of what a line is: the file's 57, not 58)
            texts = list(read_path(kinds[shown])[0].text)
        except InputError:
            texts = []
        lines = Lines(texts, [None] * len(texts), [None] * len(texts))  # systemd's figures, no console times
    if t is not None and t.line_no and (t.kernel_ns is not None or t.userspace_ns is not None):
        no = t.line_no
        k = Clock.KERNEL

        def at(name: str, ns: int, clock: Clock = k) -> None:
            events.append(Event(Kind.MILESTONE, name, Stamp(clock, ns), None, no))

        before = (t.firmware_ns or 0) + (t.loader_ns or 0)
        if t.firmware_ns is not None or t.loader_ns is not None:
            at(Milestone.POWER_ON, -before)
        if t.firmware_ns is not None and t.loader_ns is not None:  # their boundary, on the firmware's clock
            at(Milestone.BOOTLOADER_START, t.firmware_ns, Clock.BOOTLOADER)  # the EFI loader, not U-Boot
            at(Milestone.STARTING_KERNEL, before, Clock.BOOTLOADER)
        kernel = t.kernel_ns or 0
        if t.kernel_ns is not None:  # none in a container: systemd's clock starts with it
            at(Milestone.KERNEL_START, 0)
            at(Milestone.RUN_INIT, kernel)
        root = kernel + (t.initrd_ns or 0)
        if t.initrd_ns is not None or t.kernel_ns is None:
            at(Milestone.SYSTEMD_START, root)
        if t.userspace_ns is not None:
            # each boundary the sum of the printed parts before it, so that every stage is the figure
            # systemd printed (each cut to the ms, they add up to 1-2 ms less than its printed
            # total, which the boot's total keeps: timeline.analyze.analyze_side_boot)
            at(Milestone.STARTUP_FINISHED, root + t.userspace_ns)
        for part in ("firmware", "loader", "kernel", "initrd", "userspace"):
            ns = getattr(t, f"{part}_ns")
            if ns is not None:
                facts.append(Fact(f"systemd_time_{part}_s", f"{ns / 1e9:.3f}", no))
    blame = sup.blame
    if blame is not None and sup.plot is None:
        own = shown == "blame" or own_lines  # a row's line is evidence only where the boot's lines hold it
        events += [Event(Kind.UNIT, r.unit, None, r.ns, r.line_no if own else 0, None,
                         UnitDetail(r.unit, "", "done", "systemd-analyze")) for r in blame.rows]
    if t is None or not events:
        facts.append(Fact("systemd_analyze", ", ".join(k for k in ("time", "blame", "critical-chain", "dump", "plot")
                                                       if k in kinds), 0))
    events.sort(key=lambda e: e.line_no)
    return Boot(source, index, lines, tuple(events), tuple(facts), (), (ALONE,), ALONE)


def transcript_boots(source: str, lines: Lines) -> list[tuple[Boot, Supplement]]:
    """The boots of systemd-analyze outputs pasted in a transcript (:mod:`.transcript`), each with
    its supplement: one per board. Each boot's lines run from the line after the previous boot's
    last output (the board's header, its ``uname -r``) to its own last output, the last to the end."""
    from ..supplements import Supplement
    from .reader import read_blame, read_time
    from .transcript import boards, outputs, text_of

    texts = lines.text
    groups = boards(outputs(texts))
    out: list[tuple[Boot, Supplement]] = []
    start = 0
    for n, group in enumerate(groups):
        end = group[-1].end if n + 1 < len(groups) else len(texts)
        parts: dict[str, object] = {}
        notes: list[str] = []
        for o in group:
            value = read_time(text_of(texts, o)) if o.kind == "time" else read_blame(text_of(texts, o))
            parts[o.kind] = value
            notes += [f"{o.kind} at line {lines.no(o.echo)}: {w}" for w in value.warnings]
            if o.cut and o.kind == "blame":
                notes.append(f"blame at line {lines.no(o.echo)} went through '{o.cut}': its "
                             f"{o.end - o.start} slowest units, not every unit")
        sup = Supplement(tuple((o.kind, source) for o in group), parts, tuple(notes))
        out.append((alone_boot(source, sup, lines.slice(start, end), n), sup))
        start = end
    return out
