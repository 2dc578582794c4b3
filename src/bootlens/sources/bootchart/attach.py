"""How a bootchart joins a boot: its processes become the boot's process events (when the log
has none of its own) on the uptime clock, or, given without a log, a boot of their own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import InputError, printable
from ...core.model import Boot, Clock, Event, Fact, InputStats, Kind, ProcessDetail, Stamp

if TYPE_CHECKING:
    from pathlib import Path

    from ..supplements import Supplement
    from .reader import Bootchart


def read_one(kind: str, path: Path) -> tuple[Bootchart, tuple[str, ...]]:
    """A bootchart archive or folder, and its reader's warnings."""
    from .reader import read_bootchart

    chart = read_bootchart(path)
    return chart, chart.warnings


def add(boot: Boot, sup: Supplement, kinds: set[Kind]) -> tuple[list[Event], Supplement, str]:
    """The bootchart's processes, when the log has no process events of its own."""
    if sup.bootchart is None or Kind.PROCESS in kinds:
        return [], sup, "bootchart"
    return bootchart_processes(sup.bootchart), sup, "bootchart"


def alone(name: str) -> tuple[Boot, Supplement, InputStats]:
    """A bootchart given without a log: a boot of its processes, its samples for the report's
    panel (the processes are the boot's own events here: :func:`add` sees them and adds none)."""
    from ..supplements import Supplement
    from .reader import read_bootchart

    bc = read_bootchart(name)
    if not bc.processes and not bc.cpu:
        raise InputError(name, "no processes or CPU samples in this bootchart: " + "; ".join(bc.warnings))
    sup = Supplement((("bootchart", printable(name)),), {"bootchart": bc}, bc.warnings)
    return bootchart_boot(bc), sup, InputStats(printable(name), 0, 0, "bootchart")


def bootchart_processes(bc: Bootchart) -> list[Event]:
    """Each process from when it started (or was first sampled) to its last sample, on the
    uptime clock; kernel threads (kthreadd and its children) marked as such."""
    end = max((p.last_ns for p in bc.processes), default=0)
    out = []
    for p in bc.processes:
        kthread = p.pid == 2 or p.ppid == 2
        out.append(Event(Kind.PROCESS, p.comm, Stamp(Clock.UPTIME, p.first_ns, True), p.last_ns - p.first_ns, 0,
                         None, ProcessDetail(p.pid, p.ppid, p.comm, None, kthread, None, p.last_ns < end, 0)))
    return out


def bootchart_boot(bc: Bootchart) -> Boot:
    """A bootchart given without a log: a boot of its processes alone, with the header's kernel
    version and command line as facts (line 0: no console line holds them)."""
    from ...core.lines import Lines

    facts = [Fact(k, v, 0) for k, v in (("kernel_version", bc.kernel_version), ("cmdline", bc.cmdline)) if v]
    warnings = ("a bootchart without a console log: its processes and CPU/IO samples on the uptime "
                "clock, no stages (give the boot's log with it to place them)",)
    return Boot(printable(bc.source), 0, Lines([], [], []), tuple(bootchart_processes(bc)), tuple(facts),
                warnings, ("bootchart",), "start of input")
