"""Process events printed by the kernel itself with
``trace_event=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit tp_printk``:
a user-space process trace with no agent on the target.

    sched_process_fork: comm=init pid=1 child_comm=init child_pid=79
    sched_process_exec: filename=/bin/busybox pid=79 old_pid=79
    sched_process_exit: comm=busybox pid=79 prio=120

Each pid becomes one process event from fork to exit (duration None if it had not exited when
the log ended); a pid forked again after its exit is a new process.
"""

from __future__ import annotations

import gc

from ..lines import Lines, native_module
from ..model import Clock, Event, Kind, ParseResult, ProcessDetail, Stamp
from ..numbers import Tally
from . import REGISTRY
from .base import ParseOptions, Parser

# The format is parsed in Rust only (native/src/process.rs: the one implementation, see
# docs/architecture.md step 19), which builds the Event objects from these types.
SELF_EXE = "/proc/self/exe"  # busybox's re-exec of itself: such a process is named after its comm at exit
NATIVE_TYPES = (Event, Stamp, ProcessDetail, Kind.PROCESS, Clock.KERNEL, Clock.HOST, SELF_EXE)
PREFIX = "sched_process_"  # the keyword index entry (lines.INDEX_PREFIXES) the candidate lines come from


@REGISTRY.register
class ProcessParser(Parser):
    """sched_process_fork/exec/exit trace events printed through tp_printk."""

    name = "process"
    description = "process fork/exec/exit from trace_event=sched:sched_process_* tp_printk"

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        hits = 0
        texts = lines.text
        for i in lines.starting(PREFIX):
            if texts[i].startswith(PREFIX):
                hits += 1
                if hits >= 3:
                    return 1.0
        return hits / 3

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        # the scan, the pid tracking and the events: native/src/process.rs. The cycle collector
        # paused meanwhile: nothing built there makes a cycle, and every so many new objects the
        # collector would walk every container alive, the whole model read so far.
        collecting = gc.isenabled()
        gc.disable()
        try:
            events, refused, first_refused, orphans = native_module().process_events(
                lines.text, lines.starting(PREFIX), lines.kernel, lines.host, lines.first, NATIVE_TYPES)
        finally:
            if collecting:
                gc.enable()
        warnings: tuple[str, ...] = ()
        if orphans:
            warnings = (f"{orphans} process events for pids whose fork was not in the log",)
        tally = Tally("sched_process trace")
        for _ in range(refused):
            tally.refuse("pid", first_refused)  # the first call sets the line
        return ParseResult(tuple(events), (), warnings + tally.warnings())
