"""The native sched_process scan (native/src/parse/process.rs, the one implementation of the format)
on the edge cases of a real trace: reused pids, events without their fork, odd comms, cut and
undecodable lines, kernel threads, and the Unicode digits Python's ``\\d`` took."""

from __future__ import annotations

import sys
from pathlib import Path

from bootlens.read.reader import read_path
from bootlens.core.lines import Lines
from bootlens.core.model import Clock, Event, Kind, ProcessDetail, Stamp
from bootlens.parsers import ParseOptions
from bootlens.parsers.process import NATIVE_TYPES, PREFIX, ProcessParser

MS = 1_000_000


def _lines(tmp_path: Path, data: bytes) -> Lines:
    log = tmp_path / "sched.log"
    log.write_bytes(data)
    return read_path(str(log))[0]


def _events(tmp_path: Path, text: str) -> tuple[list[Event], tuple[str, ...]]:
    r = ProcessParser().parse(_lines(tmp_path, text.encode()), ParseOptions(()))
    return list(r.events), r.warnings


def _k(t: float) -> Stamp:
    return Stamp(Clock.KERNEL, round(t * 1000) * MS)


def test_a_pid_reused_after_exit_is_a_new_process(tmp_path: Path) -> None:
    ev, warnings = _events(tmp_path, (
        "[    1.000000] sched_process_fork: comm=init pid=1 child_comm=init child_pid=80\n"
        "[    1.010000] sched_process_exit: comm=true pid=80 prio=120\n"
        "[    1.020000] sched_process_fork: comm=init pid=1 child_comm=init child_pid=80\n"
        "[    1.050000] sched_process_exec: filename=/bin/cat pid=80 old_pid=80\n"))
    assert ev == [
        Event(Kind.PROCESS, "true", _k(1.0), 10 * MS, 1, 2, ProcessDetail(80, 1, "true", None, False, None, True, 0)),
        Event(Kind.PROCESS, "cat", _k(1.02), None, 3, None, ProcessDetail(80, 1, "init", "/bin/cat", False, 30 * MS,
                                                                         False, 0)),
    ]
    assert warnings == ()


def test_exec_and_exit_without_fork(tmp_path: Path) -> None:
    ev, warnings = _events(tmp_path, (
        "[    2.000000] sched_process_exec: filename=/usr/sbin/daemon pid=300 old_pid=300\n"
        "[    2.500000] sched_process_exit: comm=daemon pid=300 prio=120\n"
        "[    3.000000] sched_process_exit: comm=lost pid=301 prio=120\n"))
    assert ev == [
        Event(Kind.PROCESS, "daemon", _k(2.0), 500 * MS, 1, 2,
              ProcessDetail(300, None, "daemon", "/usr/sbin/daemon", False, 0, True, 0)),
        Event(Kind.PROCESS, "lost", _k(3.0), 0, 3, 3, ProcessDetail(301, None, "lost", None, False, None, True, 0)),
    ]
    assert warnings == ("2 process events for pids whose fork was not in the log",)


def test_comms_with_spaces_and_field_names_inside(tmp_path: Path) -> None:
    # the comm ends at the first " pid=<digits>" after which the rest of the line matches
    ev, _ = _events(tmp_path, (
        "[    1.000000] sched_process_fork: comm=my app pid=1 child_comm=x pid=9 child_comm=y child_pid=42\n"
        "[    1.100000] sched_process_exit: comm=a pid=b pid=42 prio=120\n"))
    assert [(e.name, e.detail.pid if e.detail else None) for e in ev] == [("a pid=b", 42)]
    assert ev[0].detail == ProcessDetail(42, 1, "a pid=b", None, False, None, True, 0)


def test_truncated_lines_are_not_events(tmp_path: Path) -> None:
    ev, warnings = _events(tmp_path, (
        "[    1.000000] sched_process_fork: comm=init pid=1 child_comm=sh child_pid=\n"
        "[    1.000000] sched_process_fork: comm=init pid=1 child_comm=sh\n"
        "[    1.000000] sched_process_exec: filename=/bin/sh pid=\n"
        "[    1.000000] sched_process_exit: comm=sh\n"
        "[    1.000000] sched_process_\n"
        "[    1.000000] sched_process_fork: comm=init pid=1 child_comm=sh child_pid=5\n"))
    assert [(e.line_no, e.name) for e in ev] == [(6, "sh")]
    assert warnings == ()


def test_undecodable_bytes_in_a_comm(tmp_path: Path) -> None:
    data = (b"[    1.000000] sched_process_fork: comm=init pid=1 child_comm=b\xffad child_pid=7\n"
            b"[    1.200000] sched_process_exit: comm=b\xfe\xffad pid=7 prio=120\n")
    r = ProcessParser().parse(_lines(tmp_path, data), ParseOptions(()))
    assert [(e.name, e.duration_ns, e.detail) for e in r.events] == [
        ("b\ufffd\ufffdad", 200 * MS, ProcessDetail(7, 1, "b\ufffd\ufffdad", None, False, None, True, 0))]


def test_kernel_threads_until_they_exec(tmp_path: Path) -> None:
    ev, _ = _events(tmp_path, (
        "[    0.100000] sched_process_fork: comm=swapper/0 pid=0 child_comm=swapper/0 child_pid=2\n"
        "[    0.200000] sched_process_fork: comm=kthreadd pid=2 child_comm=kthreadd child_pid=30\n"
        "[    0.300000] sched_process_fork: comm=kworker/0:1 pid=30 child_comm=kworker/0:1 child_pid=31\n"
        "[    0.400000] sched_process_exec: filename=/sbin/modprobe pid=30 old_pid=30\n"
        "[    0.500000] sched_process_fork: comm=modprobe pid=30 child_comm=modprobe child_pid=32\n"))
    assert [(e.detail.pid, e.detail.kthread, e.detail.forks) for e in ev if isinstance(e.detail, ProcessDetail)] == [
        (2, True, 1), (30, False, 2), (31, True, 0), (32, False, 0)]
    assert [e.name for e in ev] == ["swapper/0", "modprobe", "kworker/0:1", "modprobe"]


def test_every_unicode_decimal_digit_is_a_digit_of_the_pid(tmp_path: Path) -> None:
    # Python's \d took any decimal digit: "child_pid=1<digit>" is a pid refused (not ASCII), never
    # pid 1; a numeric character that is not a decimal digit ends the run (pid 1 is read).
    digits = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isdecimal() and not chr(c).isascii()]
    assert len(digits) >= 600
    others = ["\u00b2", "\u00bd", "\u216b", "\u2460", "a", "\u0e5a"]
    text = "".join(f"[    1.000000] sched_process_fork: comm=init pid=1 child_comm=c child_pid=1{d}\n"
                   for d in digits + others)
    ev, warnings = _events(tmp_path, text)
    assert [e.line_no for e in ev] == list(range(len(digits) + 1, len(digits) + len(others) + 1))
    assert warnings == (f"sched_process trace: {len(digits)} numbers out of range were not used "
                        f"({len(digits)} pid; first at line 1)",)


def test_native_call_on_plain_lists() -> None:
    # the lines as a list of str and the times as lists (not the framed columns), as tests build them
    from bootlens._native import native_module

    texts = ["sched_process_fork: comm=init pid=1 child_comm=sh child_pid=5", "other",
             "sched_process_exit: comm=sh pid=5 prio=120"]
    block, refused, first_refused, orphans = native_module().process_block(
        texts, [0, 2], [None, None, None], [10, None, 30], 100, NATIVE_TYPES)
    events = list(block)  # the block's rows, each an Event when asked for
    assert PREFIX == "sched_process_"
    assert events == [Event(Kind.PROCESS, "sh", Stamp(Clock.HOST, 10), 20, 100, 102,
                            ProcessDetail(5, 1, "sh", None, False, None, True, 0))]
    assert (refused, first_refused, orphans) == (0, -1, 0)


def test_pids_at_every_bound_are_used_only_in_range(tmp_path: Path) -> None:
    """Digit runs at and around PID_MAX (and far past it) are used only in range, the rest counted."""
    from bootlens.core.numbers import PID_MAX

    nums = ["0", "007", str(PID_MAX - 1), str(PID_MAX), str(PID_MAX + 1), "0" * 30 + "12", "9" * 19, "9" * 20,
            "9" * 4301, str(2**64), "-1"]
    text = "".join(f"[    1.000000] sched_process_fork: comm=init pid=1 child_comm=c child_pid={v}\n" for v in nums)
    ev, warnings = _events(tmp_path, text)
    assert [e.detail.pid for e in ev if isinstance(e.detail, ProcessDetail)] == [0, 7, PID_MAX - 1, PID_MAX, 12]
    # "-1": the regex's \d+ never takes the sign, so that line is not a fork line at all
    assert warnings == ("sched_process trace: 5 numbers out of range were not used (5 pid; first at line 5)",)


def test_a_long_line_of_repeated_fields_is_read_in_one_pass(tmp_path: Path) -> None:
    """A fork line with thousands of " pid=1 child_comm=" and no child_pid is no event (the regex
    tried every " pid=" in turn); one that ends with a child_pid is the first split the regex made."""
    body = " pid=1 child_comm=x" * 20_000
    ev, warnings = _events(tmp_path, (
        f"[    1.000000] sched_process_fork: comm=a{body}\n"
        f"[    1.100000] sched_process_fork: comm=a{body} child_pid=9\n"))
    assert [(e.line_no, e.detail.pid, e.detail.comm) for e in ev if isinstance(e.detail, ProcessDetail)] == [
        (2, 9, "x" + body[len(" pid=1 child_comm=x"):])]
    assert warnings == ()
