"""How a bootchart joins a boot: its processes become the boot's process events (when the log
has none of its own) on the uptime clock, or, given without a log, a boot of their own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import printable
from ...core.model import Boot, Clock, Event, Fact, Kind, ProcessDetail, Stamp

if TYPE_CHECKING:
    from .reader import Bootchart


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
