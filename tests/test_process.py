"""The sched_process tp_printk parser (parsers/process.py): one event per pid from fork to exit,
on a hand-written log that has every case the parser tells apart."""

from __future__ import annotations

from pathlib import Path

from bootlens.read.reader import read_path
from bootlens.core.model import Clock, Kind, ProcessDetail, Stamp
from bootlens.parsers import ParseOptions
from bootlens.parsers.process import ProcessParser

LOG = (
    "[    0.100000] sched_process_fork: comm=swapper/0 pid=0 child_comm=swapper/0 child_pid=2\n"
    "[    0.110000] sched_process_fork: comm=kthreadd pid=2 child_comm=kthreadd child_pid=40\n"
    "[    0.120000] sched_process_exec: filename=/sbin/modprobe pid=40 old_pid=40\n"
    "[    0.200000] sched_process_fork: comm=init pid=1 child_comm=init child_pid=79\n"
    "[    0.210000] sched_process_exec: filename=/bin/busybox pid=79 old_pid=79\n"
    "[    0.300000] sched_process_exit: comm=busybox pid=79 prio=120\n"
    # a pid forked again after its exit is a new process; one forked again without an exit too
    "[    0.400000] sched_process_fork: comm=init pid=1 child_comm=init child_pid=79\n"
    "[    0.500000] sched_process_fork: comm=init pid=1 child_comm=init child_pid=79\n"
    "[    0.510000] sched_process_exec: filename=/proc/self/exe pid=79 old_pid=79\n"
    "[    0.600000] sched_process_exit: comm=sleep pid=79 prio=120\n"
    # exec and exit of pids whose fork is not in the log
    "[    0.700000] sched_process_exec: filename=/usr/bin/app pid=500 old_pid=500\n"
    "[    0.800000] sched_process_exit: comm=ghost pid=501 prio=120\n"
    # the largest pid a kernel hands out, then pids out of range (too large, another script's digits)
    "[    0.900000] sched_process_fork: comm=init pid=1 child_comm=big child_pid=4194304\n"
    "[    0.910000] sched_process_fork: comm=init pid=1 child_comm=bigger child_pid=4194305\n"
    "[    0.920000] sched_process_fork: comm=init pid=1 child_comm=wide child_pid=\u0661\u0662\n"
    "[    0.930000] sched_process_exit: comm=x pid=99999999999999999999999 prio=120\n"
    # not a line this parser reads
    "[    0.950000] sched_process_wait: comm=init pid=1 prio=120\n"
    "[    0.960000] sched_process_forked: comm=init pid=1 child_comm=init child_pid=7\n"
)


def _parse(tmp_path: Path, text: str = LOG) -> tuple[list[tuple[str, int, int | None, int | None, int | None]],
                                                       list[ProcessDetail], tuple[str, ...]]:
    log = tmp_path / "sched.log"
    log.write_text(text, encoding="utf-8")
    lines = read_path(str(log))[0]
    r = ProcessParser().parse(lines, ParseOptions(()))
    assert all(e.kind is Kind.PROCESS for e in r.events)
    rows = [(e.name, e.line_no, e.duration_ns, e.end_line_no, e.start.ns if e.start else None) for e in r.events]
    dets = [e.detail for e in r.events]
    assert all(isinstance(d, ProcessDetail) for d in dets)
    return rows, dets, r.warnings  # type: ignore[return-value]


def test_each_case_of_the_trace(tmp_path: Path) -> None:
    rows, dets, warnings = _parse(tmp_path)
    ms = 1_000_000
    assert rows == [
        ("swapper/0", 1, None, None, 100 * ms),  # kthreadd, never exits
        ("modprobe", 2, None, None, 110 * ms),  # a kworker that execs is user space
        ("busybox", 4, 100 * ms, 6, 200 * ms),
        ("init", 7, None, None, 400 * ms),  # forked again without an exit: ended, no duration
        ("sleep", 8, 100 * ms, 10, 500 * ms),  # /proc/self/exe: named after its comm at exit
        ("app", 11, None, None, 700 * ms),
        ("ghost", 12, 0, 12, 800 * ms),
        ("big", 13, None, None, 900 * ms),
    ]
    assert [(d.pid, d.ppid, d.kthread, d.exited, d.forks, d.exec_ns) for d in dets] == [
        (2, 0, True, False, 1, None),
        (40, 2, False, False, 0, 10 * ms),
        (79, 1, False, True, 0, 10 * ms),
        (79, 1, False, False, 0, None),
        (79, 1, False, True, 0, 10 * ms),
        (500, None, False, False, 0, 0),
        (501, None, False, True, 0, None),
        (4194304, 1, False, False, 0, None),
    ]
    assert warnings == ("2 process events for pids whose fork was not in the log",
                        "sched_process trace: 3 numbers out of range were not used (3 pid; first at line 14)")


def test_times_from_the_host_clock_when_the_line_has_no_printk_time(tmp_path: Path) -> None:
    text = ("[12:00:00.000000] sched_process_fork: comm=init pid=1 child_comm=sh child_pid=5\n"
            "[12:00:00.250000] sched_process_exit: comm=sh pid=5 prio=120\n")
    log = tmp_path / "host.log"
    log.write_text(text, encoding="utf-8")
    r = ProcessParser().parse(read_path(str(log))[0], ParseOptions(()))
    assert [(e.name, e.start, e.duration_ns) for e in r.events] == [("sh", Stamp(Clock.HOST, 0), 250_000_000)]
