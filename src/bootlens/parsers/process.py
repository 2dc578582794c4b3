"""Process events printed by the kernel itself with
``trace_event=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit tp_printk``:
a user-space process trace with no agent on the target.

    sched_process_fork: comm=init pid=1 child_comm=init child_pid=79
    sched_process_exec: filename=/bin/busybox pid=79 old_pid=79
    sched_process_exit: comm=busybox pid=79 prio=120

Each pid becomes one process event from fork to exit (duration None if it had not exited when
the log ended); a pid forked again after its exit is a new process. The events are the rows of a
native block (kind 3 of native/src/events.rs, docs/performance.md step 24b): an Event is built
only when one is asked for.
"""

from __future__ import annotations

from ..core.lines import Lines
from .._native import native_module
from ..core.model import BLOCK_TYPES, Events, ParseResult
from ..core.numbers import Tally
from . import REGISTRY
from .base import Parser
from ..core.options import ParseOptions

# The format is parsed in Rust only (native/src/process.rs: the one implementation, see
# docs/performance.md step 19), whose block builds the Event objects from these types.
SELF_EXE = "/proc/self/exe"  # busybox's re-exec of itself: such a process is named after its comm at exit
NATIVE_TYPES = (*BLOCK_TYPES, SELF_EXE)
PREFIX = "sched_process_"  # the keyword index entry (ProcessParser.prefixes) the candidate lines come from


@REGISTRY.register
class ProcessParser(Parser):
    """sched_process_fork/exec/exit trace events printed through tp_printk."""

    name = "process"
    description = "process fork/exec/exit from trace_event=sched:sched_process_* tp_printk"
    prefixes = (PREFIX,)

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
        # the scan, the pid tracking and the rows: native/src/process.rs, kept as columns
        # (native/src/events.rs)
        block, refused, first_refused, orphans = native_module().process_block(
            lines.text, lines.starting(PREFIX), lines.kernel, lines.host, lines.first, NATIVE_TYPES)
        warnings: tuple[str, ...] = ()
        if orphans:
            warnings = (f"{orphans} process events for pids whose fork was not in the log",)
        tally = Tally("sched_process trace")
        for _ in range(refused):
            tally.refuse("pid", first_refused)  # the first call sets the line
        return ParseResult(Events(block) if len(block) else (), (), warnings + tally.warnings())
