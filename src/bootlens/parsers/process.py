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
import re
from dataclasses import dataclass

from ..lines import Lines
from ..numbers import PID_MAX, Tally
from ..model import Clock, Event, Kind, ParseResult, ProcessDetail, Stamp
from . import REGISTRY
from .base import ParseOptions, Parser

_FORK = re.compile(r"sched_process_fork: comm=(.*?) pid=(\d+) child_comm=(.*?) child_pid=(\d+)")
_EXEC = re.compile(r"sched_process_exec: filename=(.*?) pid=(\d+)(?: old_pid=(\d+))?")
_EXIT = re.compile(r"sched_process_exit: comm=(.*?) pid=(\d+)")

KTHREADD = 2
SELF_EXE = "/proc/self/exe"


@dataclass(slots=True)
class _Proc:
    """Mutable while the log is read; turned into an immutable Event at the end."""

    pid: int
    ppid: int | None
    comm: str
    start: Stamp | None
    line_no: int
    exe: str | None = None
    exec_at: Stamp | None = None
    end: Stamp | None = None
    end_line: int | None = None
    forks: int = 0
    kthread: bool = False

    def event(self) -> Event:
        dur = None
        if self.end is not None and self.start is not None and self.end.clock == self.start.clock:
            dur = max(0, self.end.ns - self.start.ns)
        exec_ns = None
        if self.exec_at is not None and self.start is not None and self.exec_at.clock == self.start.clock:
            exec_ns = max(0, self.exec_at.ns - self.start.ns)
        kthread = self.kthread and self.exe is None
        name = self.exe.rsplit("/", 1)[-1] if self.exe else self.comm
        if self.exe == SELF_EXE and self.end is not None:
            # busybox's shell runs an applet by re-executing itself through /proc/self/exe and
            # names the process after the applet: the comm at exit ("sleep", "mdev") says what ran.
            name = self.comm
        return Event(
            Kind.PROCESS, name, self.start, dur, self.line_no, self.end_line,
            ProcessDetail(self.pid, self.ppid, self.comm, self.exe, kthread, exec_ns, self.end is not None,
                          self.forks),
        )


@REGISTRY.register
class ProcessParser(Parser):
    """sched_process_fork/exec/exit trace events printed through tp_printk."""

    name = "process"
    description = "process fork/exec/exit from trace_event=sched:sched_process_* tp_printk"

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        hits = 0
        texts = lines.text
        for i in lines.starting("sched_process_"):
            if texts[i].startswith("sched_process_"):
                hits += 1
                if hits >= 3:
                    return 1.0
        return hits / 3

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        # The cycle collector paused: nothing built here makes a cycle, and every so many new
        # objects the collector would walk every container alive, the whole model read so far
        # (a million-event log: 6.0 -> 3.6 s CPU for this parser's 200,000 processes).
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._parse(lines)
        finally:
            if collecting:
                gc.enable()

    def _parse(self, lines: Lines) -> ParseResult:
        # One pass over the lines the native index found, one compiled regex per line shape,
        # the pids read inline: a helper call per field (stamp, line number, each pid) made this
        # parser 70 us an event (bench/bench_report.py, 20,000 processes of a 100,000-event log).
        live: dict[int, _Proc] = {}
        done: list[_Proc] = []
        orphans = 0
        tally = Tally("sched_process trace")
        texts, kern, host, first = lines.text, lines.kernel, lines.host, lines.first
        fork, exec_, exit_ = _FORK.match, _EXEC.match, _EXIT.match
        kernel, host_clock = Clock.KERNEL, Clock.HOST

        def pid_of(text: str, no: int) -> int | None:
            # :func:`~bootlens.numbers.to_int`'s bounds: \d+ matched, so an ASCII run shorter than
            # PID_MAX's is read here; anything else (long, or another script's digits) by the tally
            if len(text) < 7 and text.isascii():
                return int(text)
            return tally.take(text, PID_MAX, field="pid", line_no=no)

        for i in lines.starting("sched_process_"):
            t = texts[i]
            kind = t[14:19]
            if kind == "fork:":
                m = fork(t)
            elif kind == "exec:":
                m = exec_(t)
            elif kind == "exit:":
                m = exit_(t)
            else:
                continue
            if m is None:
                continue
            no = first + i
            if (k := kern[i]) is not None:
                st: Stamp | None = Stamp(kernel, k)
            else:
                st = None if (h := host[i]) is None else Stamp(host_clock, h)
            if kind == "fork:":
                # a short ASCII pid read inline (pid_of's fast case): a call per pid cost ~1 us
                ppid = int(x) if len(x := m[2]) < 7 and x.isascii() else pid_of(x, no)
                cpid = int(x) if len(x := m[4]) < 7 and x.isascii() else pid_of(x, no)
                if ppid is None or cpid is None:
                    continue
                parent = live.get(ppid)
                if parent is not None:
                    parent.forks += 1
                old = live.pop(cpid, None)
                if old is not None:  # pid reused without an exit line
                    done.append(old)
                # Children of kthreadd and of kernel threads are kernel threads until they exec
                # (a kworker that execs /sbin/modprobe is user space).
                kt = cpid == KTHREADD or ppid == KTHREADD or (parent is not None and parent.kthread
                                                              and parent.exe is None)
                live[cpid] = _Proc(cpid, ppid, m[3], st, no, kthread=kt)
            elif kind == "exec:":
                if (pid := int(x) if len(x := m[2]) < 7 and x.isascii() else pid_of(x, no)) is None:
                    continue
                p = live.get(pid)
                if p is None:
                    orphans += 1
                    p = live[pid] = _Proc(pid, None, m[1].rsplit("/", 1)[-1], st, no)
                p.exe = m[1]
                p.exec_at = st
            else:
                if (pid := int(x) if len(x := m[2]) < 7 and x.isascii() else pid_of(x, no)) is None:
                    continue
                p = live.pop(pid, None)
                if p is None:
                    orphans += 1
                    p = _Proc(pid, None, m[1], st, no)
                p.comm = m[1]
                p.end = st
                p.end_line = no
                done.append(p)
        procs = done + list(live.values())
        procs.sort(key=lambda p: p.line_no)
        warnings: tuple[str, ...] = ()
        if orphans:
            warnings = (f"{orphans} process events for pids whose fork was not in the log",)
        return ParseResult(tuple(p.event() for p in procs), (), warnings + tally.warnings())
