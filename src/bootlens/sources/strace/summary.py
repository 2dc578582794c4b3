"""What an strace (or ltrace) of an application's start says: the process tree, exec to first
output, per-syscall totals, failed opens (library search storms), dynamic-loader time and
needless execs; and where it lies on a boot's axis (:func:`align`).

Definitions (docs/strace.md says the same for users):

- a process is a pid that is not a thread (a ``clone`` with ``CLONE_THREAD`` makes a thread,
  whose calls count for its process); its parent is the pid whose fork/vfork/clone returned it;
- its program is the last successful ``execve``'s file (argv[0] when the file is
  ``/proc/self/exe``, as busybox re-executes itself);
- first output: the first ``write``/``writev`` of a process to a terminal: fd 0-2 as inherited
  (unless the trace shows them redirected to a file or a pipe), or an fd opened on /dev/console,
  /dev/tty*, /dev/pts/*; with ``-y``/``-yy`` the path strace prints wins;
- dynamic-loader time: from the return of a successful ``execve`` (its time + its ``-T``) to the
  first call the loader does not make (anything but mmap, mprotect, munmap, brk, read, pread64,
  close, fstat-like calls, the opens/stats of its search, and glibc's set-up calls
  set_tid_address, set_robust_list, rseq, prlimit64, arch_prctl), counted only when a ``.so``
  was opened (a static binary has none);
- a library search storm: the failed opens and stats the loader makes before it finds a
  library (not its checks of its own configuration, :data:`LOADER_CONFIG`); its cost is the sum of those calls' ``-T`` times (or, without ``-T``, of the gaps to
  the next call: an upper bound, said so);
- needless execs: a failed ``execve`` walk along ``PATH`` (ENOENT, then the one that works), and
  a shell started to run one command (``sh -c CMD`` that then execs or forks once; -c among the
  shell's options, :func:`shell_command`);
- ltrace's outputs: the text of libc's writing calls (:data:`LIB_OUTPUTS`, :func:`lib_output`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.model import Boot, Clock, Event, Kind, ProcessDetail, Stamp
from ...core.numbers import INT_MAX, to_int
from .args import LIB_OUTPUTS, fd_arg, first_path, lib_output, quoted_strings
from .reader import Call, Trace

if TYPE_CHECKING:
    from .wall import WallClock
    from ..supplements import Supplement

FORKS = frozenset({"clone", "clone3", "fork", "vfork"})
EXECS = frozenset({"execve", "execveat"})
WRITES = frozenset({"write", "writev", "pwrite64", "pwritev"})
OPENS = frozenset({"open", "openat", "openat2", "creat"})
PATH_CALLS = OPENS | frozenset({"stat", "stat64", "lstat", "lstat64", "newfstatat", "fstatat64", "statx",
                                "access", "faccessat", "faccessat2", "readlink", "readlinkat"})
LOADER_CALLS = PATH_CALLS | frozenset({
    "brk", "mmap", "mmap2", "munmap", "mprotect", "read", "pread64", "close", "fstat", "fstat64",
    "set_tid_address", "set_robust_list", "rseq", "prlimit64", "arch_prctl", "uname"})
SHELLS = frozenset({"sh", "ash", "bash", "dash", "hush", "ksh", "zsh", "mksh"})
# bash's long options that take the next word as their value (-o/-O take it too: sh -o errexit)
_SHELL_LONG_ARG = frozenset({"--rcfile", "--init-file"})
# the loader's checks of its own configuration, made once by every dynamically linked process and
# missing on most systems: not a lookup of a library (glibc's ld.so.preload; Debian's ld.so.nohwcap
# before glibc 2.26)
LOADER_CONFIG = frozenset({"/etc/ld.so.preload", "/etc/ld.so.nohwcap"})
TTY = re.compile(r"^/dev/(console|tty\w*|pts/\d+)$")
MAX_OUTPUTS = 50  # output writes kept per process (for the alignment)





@dataclass(frozen=True, slots=True)
class SyscallTotal:
    """One call name in one process: how often, how long in all (``-T``), how many failed."""

    name: str
    count: int
    total_ns: int | None
    errors: int


@dataclass(frozen=True, slots=True)
class LibrarySearch:
    """The loader's walk for one library: the paths it tried in vain, where it found it."""

    library: str
    tried: tuple[str, ...]  # failed opens and stats, in order
    found: str | None  # None: not found within the trace
    cost_ns: int | None  # -T sum of the failed calls (or gaps, see Summary.cost_source)
    line_no: int  # the first failed call


@dataclass(frozen=True, slots=True)
class NeedlessExec:
    """An exec that a direct call would have saved: a PATH walk or a shell for one command."""

    pid: int
    kind: str  # "path-walk" or "shell"
    what: str  # the program looked for, or the shell's command
    failed: int  # failed execve calls (path-walk), 0 for a shell
    cost_ns: int | None
    line_no: int


@dataclass(frozen=True, slots=True)
class Process:
    """One process of the trace, times on the trace's clock."""

    pid: int
    ppid: int | None
    program: str  # basename of what it runs ("(fork)" before any exec)
    exe: str | None
    argv: tuple[str, ...]
    start_ns: int | None  # fork (the parent's call) or first line
    exec_ns: int | None  # the last successful execve's start
    exec_done_ns: int | None  # ... and its return (start + -T)
    end_ns: int | None  # exit or kill
    exit_code: int | None
    killed_by: str | None
    children: tuple[int, ...]
    threads: int
    calls: int
    first_output_ns: int | None
    first_output: str | None
    loader_ns: int | None  # None: static, or not measured
    syscalls: tuple[SyscallTotal, ...]  # longest total first (count when no -T)
    failed_paths: tuple[tuple[str, str, str], ...]  # (call, path, errno), in order
    searches: tuple[LibrarySearch, ...]
    line_no: int
    outputs: tuple[tuple[int, str, int], ...] = ()  # (t, text, line) writes to a terminal
    linkage: str | None = None  # "dynamic" (a .so opened after the exec), "static" (calls after the
    # exec, none of them a .so's open), None (no exec, or no calls after it: -e trace=execve)

    @property
    def exec_to_output_ns(self) -> int | None:
        """From the exec's return to the first output."""
        a = self.exec_done_ns if self.exec_done_ns is not None else self.exec_ns
        return None if a is None or self.first_output_ns is None else self.first_output_ns - a


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the trace lies on a boot: console time = trace time + offset_ns, on ``clock``."""

    clock: Clock
    offset_ns: int
    how: str  # "marker" (a line in both), "wall clock" (strace_wall: no line in both), or "trace" (given
    # without a console: the trace's own clock, its first line at 0)
    marker: str | None  # the text seen in both (None: placed by the wall clock)
    console_line: int | None
    trace_line: int | None
    residuals: tuple[tuple[str, int, int], ...] = ()  # (text, console line, console - predicted)
    started_wall: str | None = None  # the recording's wall-clock t=0, when the console is one
    clock_error_ns: int | None = None  # board clock - host clock: the wall clock's offset - the line's

    @property
    def placed_by(self) -> str:
        """Which method placed the trace: "line", "wall clock" or "trace" (its own clock)."""
        return self.how if self.how in ("wall clock", "trace") else "line"

    def residual(self, text: str) -> int | None:
        """The residual at the first check whose text starts with ``text``."""
        return next((r for t, _, r in self.residuals if t.startswith(text)), None)


@dataclass(frozen=True, slots=True)
class Summary:
    """The figures of one trace, and where it lies on the boot once aligned."""

    source: str
    tool: str
    clock: str
    lines: int
    unparsed: int
    has_durations: bool
    processes: tuple[Process, ...]
    needless: tuple[NeedlessExec, ...]
    first_ns: int | None
    last_ns: int | None
    warnings: tuple[str, ...] = ()
    placement: Placement | None = None
    added_events: int = 0

    @property
    def cost_source(self) -> str:
        """What the costs rest on: "-T" times, or "gaps" to the next call (an upper bound)."""
        return "-T" if self.has_durations else "gaps"

    def process(self, pid: int) -> Process | None:
        """The process with this pid."""
        return next((p for p in self.processes if p.pid == pid), None)

    def roots(self) -> list[Process]:
        """Processes whose parent is not in the trace."""
        pids = {p.pid for p in self.processes}
        return [p for p in self.processes if p.ppid not in pids]

    def totals(self) -> list[SyscallTotal]:
        """Per-call totals over every process, longest first."""
        acc: dict[str, list[int]] = {}
        for p in self.processes:
            for s in p.syscalls:
                a = acc.setdefault(s.name, [0, 0, 0])
                a[0] += s.count
                a[1] += s.total_ns or 0
                a[2] += s.errors
        out = [SyscallTotal(n, c, t if self.has_durations else None, e) for n, (c, t, e) in acc.items()]
        return sorted(out, key=lambda s: (-(s.total_ns or 0), -s.count, s.name))


@dataclass
class _Proc:
    """Mutable state of one process during the pass."""

    pid: int
    ppid: int | None = None
    start: int | None = None
    line: int = 0
    exe: str | None = None
    argv: tuple[str, ...] = ()
    exec_t: int | None = None
    exec_done: int | None = None
    end: int | None = None
    code: int | None = None
    killed: str | None = None
    children: list[int] = field(default_factory=list)
    threads: int = 0
    calls: list[Call] = field(default_factory=list)
    fds: dict[int, str | None] = field(default_factory=lambda: {0: None, 1: None, 2: None})
    outputs: list[tuple[int, str, int]] = field(default_factory=list)
    exec_index: int = 0  # index into calls just after the last successful exec


def _is_terminal(path: str | None) -> bool:
    # None: inherited and never seen redirected (fd 0-2 of a boot script are the console)
    return path is None or bool(TTY.match(path))


def _gap_costs(calls: Sequence[Call]) -> list[int | None]:
    """Each call's time to the next call of the same process (the cost without -T)."""
    out: list[int | None] = []
    for i, c in enumerate(calls):
        nxt = calls[i + 1].t_ns if i + 1 < len(calls) else None
        out.append(None if c.t_ns is None or nxt is None else max(0, nxt - c.t_ns))
    return out


def _loader(p: _Proc, durations: bool) -> tuple[int | None, list[LibrarySearch], str | None]:
    """The loader's time after the last exec, and its library searches (module docstring)."""
    calls = p.calls[p.exec_index:]
    costs = [c.dur_ns for c in calls] if durations else _gap_costs(calls)
    so_seen = False
    stop: int | None = None
    tried: list[str] = []
    cost: int | None = None
    first_line = 0
    searches: list[LibrarySearch] = []
    so_dirs: list[str] = []
    for i, c in enumerate(calls):
        if c.kind != "call":
            continue
        if c.name not in LOADER_CALLS:
            stop = i
            break
        if c.name in PATH_CALLS:
            path = first_path(c.args)
            if path is None:
                continue
            is_lib = ".so" in path.rsplit("/", 1)[-1]
            if path == "" or is_lib or path.startswith("/etc/ld.so") or \
                    any(d == path or d.startswith(path + "/") for d in so_dirs):
                if is_lib and c.name in OPENS:
                    so_seen = True
                    so_dirs.append(path.rsplit("/", 1)[0])
                if c.failed and path and path not in LOADER_CONFIG:
                    if not tried:
                        first_line, cost = c.line_no, None
                    tried.append(path)
                    if costs[i] is not None:  # without -T the last call of a cut trace has no gap
                        cost = (cost or 0) + (costs[i] or 0)
                elif is_lib and c.name in OPENS and not c.failed:
                    if tried:
                        searches.append(LibrarySearch(path.rsplit("/", 1)[-1], tuple(tried), path, cost, first_line))
                    tried, cost = [], None
                continue
            stop = i  # a file of the program's own: its main() is running
            break
    if tried:  # the trace ends inside a search
        lib = next((t.rsplit("/", 1)[-1] for t in reversed(tried) if ".so" in t.rsplit("/", 1)[-1]), tried[-1])
        searches.append(LibrarySearch(lib, tuple(tried), None, cost, first_line))
    if not so_seen:
        # a static binary makes calls of its own after the exec; a trace of exec/exit alone shows none
        own = any(c.kind == "call" and c.name not in EXECS | {"exit", "exit_group"} for c in calls)
        return None, searches, "static" if own else None
    start = p.exec_done if p.exec_done is not None else p.exec_t
    end = calls[stop].t_ns if stop is not None else None
    return (None if start is None or end is None else end - start), searches, "dynamic"


def summarize(trace: Trace) -> Summary:
    """One pass over the calls: processes, their figures, needless execs."""
    procs: dict[int, _Proc] = {}
    tgid: dict[int, int] = {}  # thread -> its process
    order: list[int] = []
    needless: list[NeedlessExec] = []
    walks: dict[int, list[Call]] = {}  # failed execve calls of a pid, pending
    textless: dict[str, int] = {}  # ltrace output calls shown without their text, by name
    durations = trace.has_durations

    def proc(pid: int, t: int | None, line: int) -> _Proc:
        pid = tgid.get(pid, pid)
        p = procs.get(pid)
        if p is None:
            p = procs[pid] = _Proc(pid, start=t, line=line)
            order.append(pid)
        return p

    for c in trace.calls:
        pid = c.pid if c.pid is not None else 0
        p = proc(pid, c.t_ns, c.line_no)
        if c.kind in ("exit", "killed"):
            if pid in tgid and tgid[pid] != pid:
                continue  # a thread ended, not its process
            p.end = c.t_ns
            if c.kind == "exit":
                p.code = c.ret_int
            else:
                p.killed = c.name
            continue
        if c.kind == "exec":  # ltrace: an exec whose file it does not show
            p.exe, p.argv, p.exec_t, p.exec_done, p.exec_index = "(exec)", (), c.t_ns, c.t_ns, len(p.calls)
            p.outputs.clear()
            continue
        if c.kind != "call":
            continue
        p.calls.append(c)
        if c.name in FORKS and not c.failed and (child := c.ret_int) is not None and child > 0:
            if "CLONE_THREAD" in c.args:
                tgid[child] = p.pid
                p.threads += 1
                continue
            kid = procs.get(child)
            if kid is None:
                kid = procs[child] = _Proc(child, start=c.t_ns, line=c.line_no)
                order.append(child)
            elif c.t_ns is not None and (kid.start is None or c.t_ns < kid.start):
                kid.start, kid.line = c.t_ns, c.line_no
            kid.ppid = p.pid
            kid.fds = dict(p.fds)
            p.children.append(child)
        elif c.name in EXECS:
            _exec(p, c, walks, needless, durations)
        elif c.name in OPENS and not c.failed and (fd := c.ret_int) is not None:
            p.fds[fd] = c.ret_path.split("<", 1)[0] if c.ret_path else first_path(c.args)
        elif c.name in ("pipe", "pipe2") and not c.failed:
            for fd_s in re.findall(r"\d+", c.args.split("]")[0]):
                if (fd := to_int(fd_s, INT_MAX)) is not None:  # an fd is a C int
                    p.fds[fd] = "pipe:"
        elif c.name in ("dup2", "dup3", "dup", "fcntl", "fcntl64") and not c.failed and (new := c.ret_int) is not None:
            if c.name.startswith("fcntl") and "F_DUPFD" not in c.args:
                continue
            old, path = fd_arg(c.args.split(",")[0])
            if old is not None:
                p.fds[new] = path if path is not None else p.fds.get(old, "?")
        elif c.name == "close" and not c.failed:
            fd, _ = fd_arg(c.args)
            if fd is not None:
                p.fds.pop(fd, None)
        elif trace.tool == "ltrace" and c.name in LIB_OUTPUTS and c.t_ns is not None:
            text = lib_output(c)
            if text is None:
                textless[c.name] = textless.get(c.name, 0) + 1
            elif text and _is_terminal(p.fds.get(1, "?")) and len(p.outputs) < MAX_OUTPUTS:  # stdout: fd 1
                p.outputs.append((c.t_ns, text, c.line_no))
        elif (c.name in WRITES or trace.tool == "ltrace" and c.name[4:] in WRITES and c.name.startswith("SYS_")) \
                and not c.failed and c.t_ns is not None:  # ltrace -S: "SYS_write(1, ...)"
            fd, path = fd_arg(c.args.split(",")[0])
            if fd is not None and _is_terminal(path if path is not None else p.fds.get(fd, "?")):
                text = "".join(quoted_strings(c.args)) if c.name.startswith("writev") else \
                    next(iter(quoted_strings(c.args)), "")
                if len(p.outputs) < MAX_OUTPUTS:
                    p.outputs.append((c.t_ns, text, c.line_no))
    for pid, pending in walks.items():  # a walk that never found its program
        needless.append(_walk(pid, pending, None, durations))
    warnings = trace.warnings
    if textless:
        calls = ", ".join(f"{n} {name}" for name, n in sorted(textless.items()))
        warnings += (f"ltrace shows {sum(textless.values())} output call(s) without their text ({calls}): they "
                     "cannot place the trace; give ltrace their prototype (-F FILE with a line such as "
                     "'int __printf_chk(int, format);'), or trace with -S (the write calls carry the text)",)
    procs_out = [_finish(procs[pid], durations) for pid in order if pid not in tgid or tgid[pid] == pid]
    needless += _lone_shells(procs_out)
    times = [c.t_ns for c in trace.calls if c.t_ns is not None]
    return Summary(trace.source, trace.tool, trace.clock, trace.lines, trace.unparsed, durations, tuple(procs_out),
                   tuple(needless), min(times, default=None), max(times, default=None), warnings)


def shell_command(argv: Sequence[str]) -> str | None:
    """The command string of a shell run as ``sh [options] -c CMD [name [args...]]``, None when it
    was not run with -c. Options end at the first word that is not one (a script's path: ``bash
    SCRIPT -c ARG`` passes -c to the script, as every pyenv-style shim does) or at ``--``; -c may
    be grouped with others (``sh -ec CMD``); CMD is the first word after the options."""
    c = False
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--", "-"):
            i += 1
            break
        if a.startswith("--"):  # bash's long options (--norc, --login, ...)
            i += 2 if a in _SHELL_LONG_ARG else 1
            continue
        if len(a) < 2 or a[0] not in "-+":
            break
        if a[0] == "-" and "c" in a[1:]:
            c = True
        i += 2 if a[-1] in "oO" else 1  # -o NAME (also last in a group: sh -eo pipefail)
    if not c:
        return None
    return argv[i] if i < len(argv) else ""


def _lone_shells(procs: Sequence[Process]) -> list[NeedlessExec]:
    """A shell run with -c that forked exactly one child and exec'd nothing: its own start and
    end around the child were the waste (exec'ing the command directly saves them)."""
    by_pid = {p.pid: p for p in procs}
    out = []
    for p in procs:
        cmd = shell_command(p.argv) if p.program in SHELLS and len(p.children) == 1 else None
        if cmd is None:
            continue
        kid = by_pid.get(p.children[0])
        a = p.exec_done_ns if p.exec_done_ns is not None else p.exec_ns
        if kid is None or a is None or kid.start_ns is None or kid.end_ns is None or p.end_ns is None:
            continue
        out.append(NeedlessExec(p.pid, "shell", cmd, 0, (kid.start_ns - a) + (p.end_ns - kid.end_ns), p.line_no))
    return out


def _walk(pid: int, failed: list[Call], ok: Call | None, durations: bool) -> NeedlessExec:
    name = (first_path(failed[0].args) or "?").rsplit("/", 1)[-1]
    if durations:
        cost: int | None = sum(c.dur_ns or 0 for c in failed)
    else:
        last = ok.t_ns if ok is not None else None
        first = failed[0].t_ns
        cost = None if first is None or last is None else last - first
    return NeedlessExec(pid, "path-walk", name, len(failed), cost, failed[0].line_no)


def _exec(p: _Proc, c: Call, walks: dict[int, list[Call]], needless: list[NeedlessExec], durations: bool) -> None:
    if c.failed:
        if c.errno in ("ENOENT", "ENOTDIR", "EACCES"):
            walks.setdefault(p.pid, []).append(c)
        return
    pending = walks.pop(p.pid, None)
    if pending:
        needless.append(_walk(p.pid, pending, c, durations))
    strings = quoted_strings(c.args)
    path = strings[0] if strings else None
    argv = tuple(strings[1:])  # the environment is not printed by default (/* 8 vars */)
    # a shell that ran one command and then exec'd it: the shell's own start was the waste
    cmd = shell_command(p.argv) if p.exe is not None and _program(p.exe, p.argv) in SHELLS else None
    if cmd is not None and p.exec_t is not None and c.t_ns is not None:
        needless.append(NeedlessExec(p.pid, "shell", cmd, 0, c.t_ns - p.exec_t, c.line_no))
    p.exe, p.argv = path, argv
    p.exec_t = c.t_ns
    p.exec_done = None if c.t_ns is None else c.t_ns + (c.dur_ns or 0) if durations else c.t_ns
    p.exec_index = len(p.calls)
    p.outputs.clear()  # output is counted from the program's exec


def _program(exe: str | None, argv: Sequence[str]) -> str:
    if exe is None:
        return "(fork)"
    name = exe.rsplit("/", 1)[-1]
    if (exe == "/proc/self/exe" or name == "busybox") and argv:
        return argv[0].rsplit("/", 1)[-1]
    return name


def _finish(p: _Proc, durations: bool) -> Process:
    acc: dict[str, list[int]] = {}
    failed: list[tuple[str, str, str]] = []
    for c in p.calls:
        a = acc.setdefault(c.name, [0, 0, 0])
        a[0] += 1
        a[1] += c.dur_ns or 0
        a[2] += c.failed
        if c.failed and c.name in PATH_CALLS | EXECS:
            failed.append((c.name, first_path(c.args) or "", c.errno or ""))
    totals = sorted((SyscallTotal(n, k, t if durations else None, e) for n, (k, t, e) in acc.items()),
                    key=lambda s: (-(s.total_ns or 0), -s.count, s.name))
    loader, searches, linkage = _loader(p, durations) if p.exec_t is not None else (None, [], None)
    first = p.outputs[0] if p.outputs else None
    return Process(p.pid, p.ppid, _program(p.exe, p.argv), p.exe, p.argv, p.start, p.exec_t, p.exec_done, p.end,
                   p.code, p.killed, tuple(p.children), p.threads, len(p.calls),
                   first[0] if first else None, first[1] if first else None, loader, tuple(totals), tuple(failed),
                   tuple(searches), p.line, tuple(p.outputs), linkage)


# ------------------------------------------------------------------------------------ alignment

def _norm(s: str) -> str:
    return s.replace("\r", "").strip()


def align(summary: Summary, texts: Sequence[str], stamps: Sequence[Stamp | None], first_line: int = 1,
          wall: WallClock | None = None) -> Summary:
    """Place the trace on a console: the first terminal write of the trace whose first line the
    console also shows fixes the offset (console time - trace time); every later such write is
    a check (its residual: console time - predicted). ``texts``/``stamps``: the console's lines
    and their times (line ``first_line`` first). ``wall``: the host-clock offset the wall clock
    gives and the recording's ``started_wall`` (:mod:`bootlens.sources.strace.wall`), the fallback when
    no line matches; with a line too, their difference is the board's clock error. The summary
    unchanged (but for a warning) when neither places it."""
    writes = sorted((t, _norm(text.split("\n", 1)[0]), ln, p.pid) for p in summary.processes
                    for t, text, ln in p.outputs)
    index: dict[str, list[int]] = {}
    for i, s in enumerate(texts):
        if stamps[i] is not None:
            index.setdefault(_norm(s), []).append(i)

    def find(text: str, after: int) -> int | None:
        if not text:
            return None
        if text.endswith("..."):  # cut by strace's -s: a prefix
            pre = text[:-3]
            return next((i for i, s in enumerate(texts) if i > after and stamps[i] is not None
                         and _norm(s).startswith(pre)), None)
        return next((i for i in index.get(text, ()) if i > after), None)

    anchor: tuple[int, int, str, int, Clock] | None = None
    checks: list[tuple[str, int, int]] = []
    last = -1
    for t, text, ln, _pid in writes:
        found = find(text, last)
        st = stamps[found] if found is not None else None
        if found is None or st is None:
            continue
        if anchor is None:
            anchor = (st.ns - t, found, text, ln, st.clock)
        elif st.clock is anchor[4]:
            checks.append((text, found + first_line, st.ns - (t + anchor[0])))
        last = found
    if anchor is None and wall is not None and wall.on_console:
        return replace(summary, placement=Placement(Clock.HOST, wall.offset_ns, "wall clock", None, None, None,
                                                    started_wall=wall.started_wall), warnings=summary.warnings + (
            "the trace's output and the console share no line: the trace is placed by the wall clock, "
            "which takes the board's clock to be right (unchecked)",))
    if anchor is None:
        why = "" if wall is None else "; " + wall.refused(summary.first_ns)
        return replace(summary, warnings=summary.warnings + (
            f"the trace's output and the console share no line: the trace is not placed on the boot{why}",))
    off, at, text, ln, clock = anchor
    # both possible: the line is exact, the wall clock's offset differs from it by the board's clock error
    error = wall.offset_ns - off if wall is not None and clock is Clock.HOST else None
    return replace(summary, placement=Placement(clock, off, "marker", text, at + first_line, ln, tuple(checks),
                                                wall.started_wall if wall is not None else None, error))


def events(summary: Summary) -> list[Event]:
    """The trace's processes as :attr:`Kind.PROCESS` events on the console's clock (needs a
    placement): from fork (or first line) to exit, the exec's offset in the detail."""
    pl = summary.placement
    if pl is None:
        return []
    out = []
    for p in summary.processes:
        if p.start_ns is None:
            continue
        dur = None if p.end_ns is None else p.end_ns - p.start_ns
        exec_off = None if p.exec_ns is None else p.exec_ns - p.start_ns
        out.append(Event(Kind.PROCESS, p.program, Stamp(pl.clock, p.start_ns + pl.offset_ns), dur, 0, None,
                         ProcessDetail(p.pid, p.ppid, p.program, p.exe, False, exec_off, p.end_ns is not None,
                                       len(p.children))))
    return out


def trace_boot(source: str, summary: Summary | None) -> Boot:
    """A trace given without a console log: a boot with no lines, no stages and, until
    :func:`attach` adds its processes on the trace's own clock, no events."""
    from ...core.lines import Lines

    fmt = "ltrace" if summary is not None and summary.tool == "ltrace" else "strace"
    warnings = (f"an {fmt} without a console log: its processes on the trace's clock (0 = its first line), no "
                "stages (give the boot's console log with it to place them)",)
    return Boot(source, 0, Lines([], [], []), (), (), warnings, (fmt,), "start of input")


# ------------------------------------------------------------------------------- the supplement

def read_summary(paths: Sequence[Path]) -> Summary:
    """Read trace files (one, or the per-process files of ``strace -ff -o NAME``) and summarize
    them. A file with no pid column takes its pid from its name's ``.N`` suffix (``-ff``'s
    naming: the content has no pid), else it is one process."""
    from ...core.errors import InputError, printable
    from .reader import pid_from_name, read_traces

    files: list[tuple[str, str, int | None]] = []
    for p in paths:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise InputError(str(p), f"cannot read: {e.strerror or e}") from None
        no_pid_column = not any(_PID_COLUMN.match(ln) for ln in text.splitlines()[:20])
        files.append((printable(str(p)), text, pid_from_name(p.name) if no_pid_column else None))
    return summarize(read_traces(files))


_PID_COLUMN = re.compile(r"^(?:\[pid\s+\d+\]|\d+\s+(?:\d|[<+-]|\w+\())")


def attach(boot: Boot, sup: Supplement) -> tuple[Boot, Supplement]:
    """The boot with the trace's processes as events, once the trace is placed on its console
    (:func:`align`; console lines without a time of their own take the time bounded by the
    kernel lines around them); the supplement with the placed summary."""
    from ...core.lines import estimate_stamp, stamp_at
    from .wall import wall_clock

    summary = sup.strace
    if summary is None:
        return boot, sup
    if not len(boot.lines):  # the trace alone (trace_boot): on its own clock, its first line at 0
        summary = replace(summary, placement=Placement(Clock.HOST, -(summary.first_ns or 0), "trace", None, None,
                                                       None))
        added = events(summary)
        summary = replace(summary, added_events=len(added))
        return boot.replace(events=boot.events + tuple(added)), sup.with_parts(sup.warnings, strace=summary)
    lines = boot.lines
    texts = [ln.text for ln in lines]
    stamps = [stamp_at(lines, i) or estimate_stamp(lines, i) for i in range(len(lines))]
    summary = align(summary, texts, stamps, lines.first if len(lines) else 1, wall_clock(boot, summary))
    added = events(summary)
    summary = replace(summary, added_events=len(added))
    sup = sup.with_parts(sup.warnings + summary.warnings[len(sup.strace.warnings):]
                         if sup.strace is not None else sup.warnings, strace=summary)
    if not added:
        return boot, sup
    fmt = "ltrace" if summary.tool == "ltrace" else "strace"
    return boot.replace(events=boot.events + tuple(added), formats=boot.formats + (fmt,)), sup
