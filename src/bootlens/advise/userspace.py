"""What the user-space rules share: the process tree on the boot's axis, the application, the
init scripts as bootlens knows them (:attr:`Context.rootfs_files`), and small shell-text edits.

Processes come from the kernel's own ``sched_process_fork/exec/exit`` trace events
(:mod:`bootlens.parsers.process`): a process's span is fork -> exit, in the printk clock, placed
on the boot's axis like every other event. A shell script shows up as the process whose exec'd
filename is the script (``/etc/init.d/S40settle``); busybox applets show up under the applet's
name (the comm at exit), whether they were forked without exec (NOFORK/NOEXEC applets) or
re-executed through ``/proc/self/exe``.
"""

from __future__ import annotations

import re
import struct
from abc import abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast
from itertools import compress
from operator import lt

from ..timeline.analyze import BootAnalysis
from .._native import native_module
from ..core.model import READY, Event, Events, Kind, Milestone, ProcessDetail
from ..core.numbers import CPUS_MAX, to_int
from ..parsers.process import SELF_EXE
from .base import Context, Evidence, Finding, Rule
from .memo import per_boot
from .rules._kernel import events as kind_events
from .evidence import evidence, line_text

TRACE_APPEND = ("trace_event=sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit "
                "tp_printk")
NOT_MEASURED = (f"not measured: this log has no process events; boot with `{TRACE_APPEND}` on the kernel "
                "command line to measure it")
SCRIPT_MODE = 0o100755
FILE_MODE = 0o100644


@dataclass(frozen=True, slots=True)
class Proc:
    """One user-space process, with its span on the boot's axis."""

    event: Event
    detail: ProcessDetail
    start_ns: int  # fork, on the axis
    end_ns: int | None  # exit, on the axis; None when it had not exited when the log ended
    index: int = field(default=-1, compare=False, repr=False)  # its place in its ProcTree (fork order)

    @property
    def name(self) -> str:
        """What ran: the applet or program name (the parser's event name)."""
        return self.event.name

    @property
    def pid(self) -> int:
        """The process id."""
        return self.detail.pid

    @property
    def exe(self) -> str | None:
        """The exec'd filename, None for a process that never exec'd (a subshell, an applet)."""
        return self.detail.exe

    @property
    def duration_ns(self) -> int | None:
        """Fork -> exit."""
        return None if self.end_ns is None else self.end_ns - self.start_ns

    @property
    def line_no(self) -> int:
        """The fork line (or the first line the process appeared on)."""
        return self.event.line_no

    @property
    def end_line_no(self) -> int | None:
        """The exit line."""
        return self.event.end_line_no

    @property
    def script_path(self) -> str | None:
        """The program this process runs, when it exec'd one of its own (a script or a binary,
        not busybox re-executing itself for an applet)."""
        return script_path(self.detail.exe)


def script_path(exe: str | None) -> str | None:
    """:attr:`Proc.script_path` of a process that exec'd ``exe``."""
    if exe is None or exe == SELF_EXE or exe.rsplit("/", 1)[-1] == "busybox":
        return None
    return exe


_Extra = tuple[list[int], list[int], list[int | None], list[int], list[int | None], list[int], list[int | None],
               list[str], list[str | None]]


def _other_procs(evs: Events, times: Sequence[int | None]) -> _Extra:
    """The boot's user-space process events that have an axis time and are not rows of its
    native block (all of them without one: a bootchart's, strace's, a plain tuple's), in log
    order, column by column as events/procs.rs process_tree takes them (which reads the block's
    rows itself): (positions, start, end, pid, ppid, line, end_line, name, exe); end is start +
    duration when the process exited."""
    rows = []
    for i, e in evs.others_of(Kind.PROCESS):
        det, t = e.detail, times[i]
        if not isinstance(det, ProcessDetail) or det.kthread or t is None:
            continue
        end = None if e.duration_ns is None or not det.exited else t + e.duration_ns
        rows.append((i, t, end, det.pid, det.ppid, e.line_no, e.end_line_no, e.name, det.exe))
    return cast(_Extra, tuple(map(list, zip(*rows))) if rows else ([], [], [], [], [], [], [], [], []))


class ProcTree:
    """The user-space processes of one boot that can be placed on its axis, in fork order.

    Kept as columns, put in fork order and linked natively (events/procs.rs process_tree); a
    :class:`Proc` is made for a process when a reader asks for it (one object a process, so
    ``is`` holds), and the queries (:meth:`named`, :meth:`scripts`, :meth:`alive_at`,
    :meth:`with_exe`, :meth:`parents_of`) read the columns: a 1M-event boot has 200,000
    processes, of which the rules look at a few."""

    def __init__(self, ba: BootAnalysis) -> None:
        evs = Events.of(ba.boot.events)
        times = ba.times if len(ba.times) == len(evs) else (None,) * len(evs)
        self._pos: list[int]  # each process's position in the boot's events
        self._start: list[int]
        self._end: list[int | None]
        self._line: list[int]
        self._end_line: list[int | None]
        self._name: list[str]
        self._exe: list[str | None]
        self._parent: list[int]  # -1: none
        self._child_start: list[int]
        self._kids: list[int]
        (self._pos, self._start, self._end, self._line, self._end_line, self._name, self._exe, self._parent,
         self._child_start, self._kids) = native_module().process_tree(evs.block, times, _other_procs(evs, times))
        self._events = evs
        self._made: list[Proc | None] = [None] * len(self._pos)
        self._all: tuple[Proc, ...] | None = None

    def __len__(self) -> int:
        return len(self._pos)

    def _at(self, k: int) -> Proc:
        """The k-th process in fork order, made once."""
        p = self._made[k]
        if p is None:
            e = self._events[self._pos[k]]
            assert isinstance(e.detail, ProcessDetail)
            p = self._made[k] = Proc(e, e.detail, self._start[k], self._end[k], k)
        return p

    def _all_of(self, ks: Iterable[int]) -> list[Proc]:
        return [self._at(k) for k in ks]

    @property
    def procs(self) -> tuple[Proc, ...]:
        """Every process, in fork order (each made: the queries below read the columns)."""
        if self._all is None:
            self._all = tuple(self._all_of(range(len(self._pos))))
        return self._all

    def named(self, names: Collection[str]) -> list[Proc]:
        """The processes whose name (what ran) is one of ``names``, in fork order."""
        return self._all_of(compress(range(len(self._name)), map(names.__contains__, self._name)))

    def with_exe(self, paths: Collection[str | None]) -> list[Proc]:
        """The processes whose exec'd file is one of ``paths``, in fork order."""
        return self._all_of(compress(range(len(self._exe)), map(paths.__contains__, self._exe)))

    def scripts(self) -> list[Proc]:
        """The processes running a program of their own (:attr:`Proc.script_path`), in fork order."""
        own = {e for e in set(self._exe) if script_path(e) is not None}
        return self.with_exe(own)

    def alive_at(self, line_no: int) -> list[Proc]:
        """The processes forked before line ``line_no`` that had not exited by it, in fork order."""
        before = compress(range(len(self._line)), map(lt, self._line, [line_no] * len(self._line)))
        ends = self._end_line
        return [self._at(k) for k in before if (x := ends[k]) is None or x > line_no]

    def parents_of(self, procs: Iterable[Proc]) -> list[Proc]:
        """The processes that forked some of ``procs``, each once, in fork order."""
        return self._all_of(sorted({q for p in procs if (q := self._parent[p.index]) >= 0}))

    def parent(self, p: Proc) -> Proc | None:
        """The process that forked p (the latest one with p's ppid that started before it)."""
        q = self._parent[p.index]
        return None if q < 0 else self._at(q)

    def children(self, p: Proc) -> list[Proc]:
        """The processes p forked, in fork order."""
        k = p.index
        return self._all_of(self._kids[self._child_start[k]:self._child_start[k + 1]])

    def script_of(self, p: Proc) -> Proc | None:
        """The nearest ancestor running a program of its own (the script that forked p, through
        any subshells in between)."""
        q = self.parent(p)
        while q is not None and q.script_path is None:
            q = self.parent(q)
        return q

    def waited_for(self, child: Proc) -> bool:
        """True when the parent did nothing else while ``child`` ran: it forked no other process
        meanwhile and was still alive when the child exited (a foreground command)."""
        parent = self.parent(child)
        if parent is None or child.end_ns is None:
            return False
        if parent.end_ns is not None and parent.end_ns < child.end_ns:
            return False
        return not any(c is not child and child.start_ns < c.start_ns < child.end_ns for c in self.children(parent))

    def ancestors(self, p: Proc) -> list[Proc]:
        """p's parent, its parent's parent, ... up to the first process of the log."""
        out: list[Proc] = []
        q = self.parent(p)
        while q is not None and all(a is not q for a in out):
            out.append(q)
            q = self.parent(q)
        return out

    def alongside(self, p: Proc) -> list[Proc]:
        """The processes alive while p ran that are neither its ancestors nor its descendants
        (daemons started earlier, a parallel branch of the boot)."""
        if p.end_ns is None:
            return []
        skip = {id(q) for q in self.ancestors(p)} | {id(p)}
        out = []
        for q in self.procs:
            if id(q) in skip or q.start_ns >= p.end_ns or (q.end_ns is not None and q.end_ns <= p.start_ns):
                continue
            if any(a is p for a in self.ancestors(q)):
                continue
            out.append(q)
        return out


def cpu_count(ba: BootAnalysis) -> int | None:
    """The CPUs the kernel brought up (``smp: Brought up 1 node, 2 CPUs``), when it says."""
    lines = ba.boot.lines
    for i in lines.grep("smp: Brought up"):  # rules/_kernel.SMP_DONE: the needle K.cpus greps, cached once
        m = re.search(r"Brought up \d+ nodes?, (\d+) CPUs?", lines.text[i])
        if m:
            return to_int(m[1], CPUS_MAX)
    return None


def sharing_note(ba: BootAnalysis, tree: ProcTree, p: Proc) -> str | None:
    """Why the measured saving of removing p's span can come out smaller: other processes ran
    alongside it, and on one CPU the work they did within the span is invisible here (the trace
    has forks and exits, not scheduling) and moves after it once the span is gone. A sleep that
    hides klogd forwarding the kernel's backlog to syslogd is the usual case."""
    cpus = cpu_count(ba)
    if cpus is not None and cpus > 1:
        return None
    others = [q for q in tree.alongside(p) if q.pid != 1]
    if not others:
        return None
    names = ", ".join(f"{q.name} (pid {q.pid}, forked at line {q.line_no})" for q in others[:4])
    note = (f"{names} ran alongside; {'on this single-CPU system' if cpus == 1 else 'if the system has one CPU'}"
            " the work they did within this span is not in the log and moves after it when the span goes, so "
            "the measured saving can be smaller than this figure")
    klogd = next((q for q in others if q.name == "klogd"), None)
    if klogd is not None:
        lines = ba.boot.lines
        upto = lines.index_of(klogd.line_no)
        backlog = len(lines.kernel[:upto]) - lines.kernel[:upto].count(None)
        note += (f" (klogd forwards the {backlog} kernel lines printed before it started to syslogd: the more the "
                 "kernel printed, initcall_debug for one, the more of this span was theirs)")
    return note


def has_process_events(ba: BootAnalysis) -> bool:
    """True when the log holds process trace events at all."""
    return ba.counts.processes > 0


def reached_userspace(ba: BootAnalysis) -> bool:
    """True when the boot got as far as starting init."""
    return run_init_line(ba) is not None


@per_boot  # asked by several rules
def run_init_line(ba: BootAnalysis) -> int | None:
    """The line where the kernel starts init (``Run /init as init process``)."""
    for e, _ in kind_events(ba, Kind.MILESTONE):
        if e.name == Milestone.RUN_INIT:
            return e.line_no
    return None


@per_boot  # the same: the ready marker is the last event of a boot
def ready_marker(ba: BootAnalysis) -> tuple[Event, int] | None:
    """The ready marker and its axis time, when the boot has one that can be placed."""
    for e, t in kind_events(ba, Kind.MARKER):  # the markers only: no Event built for the initcalls
        if e.name == READY and t is not None:
            return e, t
    return None


def proc_evidence(ba: BootAnalysis, procs: Iterable[Proc]) -> tuple[Evidence, ...]:
    """The fork and exit lines of some processes."""
    nos: list[int | None] = []
    for p in procs:
        nos += [p.line_no, p.end_line_no]
    return evidence(ba.boot, nos)


def union_ns(spans: Iterable[tuple[int, int]]) -> int:
    """Total length of a set of (start, end) intervals, overlaps counted once."""
    total, start, end = 0, 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if end is not None:
        total += end - start
    return total


# --- the target's files ------------------------------------------------------------------------


def rootfs_key(path: str) -> str:
    """A path on the target as a key of :attr:`Context.rootfs_files` (no leading slash)."""
    return path.lstrip("/")


def script_text(files: Mapping[str, bytes], path: str | None) -> str | None:
    """The text of a shell script bootlens knows, or None (unknown file, or not a script)."""
    if path is None:
        return None
    data = files.get(rootfs_key(path))
    if data is None or not data.startswith(b"#!"):
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def known_scripts(files: Mapping[str, bytes]) -> list[tuple[str, str]]:
    """Every shell script among the known files: (path with a leading slash, text), by path."""
    out = []
    for key in sorted(files):
        text = script_text(files, key)
        if text is not None:
            out.append(("/" + key, text))
    return out


def commands(text: str) -> list[str]:
    """The lines of a script that do something: not blank, not comments, not the #! line."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def rcs_skips_non_executable(files: Mapping[str, bytes]) -> bool:
    """True when rcS runs only the executable S-scripts (``[ -x "$s" ]``, as busybox's and
    Buildroot's do), so that clearing a script's execute bit stops it being run at all."""
    text = script_text(files, "etc/init.d/rcS")
    return text is not None and re.search(r"(\[|\btest)\s+-x\s+\"?\$\{?\w+\}?\"?", text) is not None


def elf_interpreter(data: bytes) -> str | None:
    """For an ELF file: its program interpreter (the dynamic loader, e.g.
    ``/lib/ld-linux-aarch64.so.1``), or "" for a statically linked one; None when ``data`` is
    not an ELF file. Read from the program headers (PT_INTERP), as ``readelf -l`` does."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    try:
        if is64:
            phoff, = struct.unpack_from(end + "Q", data, 0x20)
            phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
        else:
            phoff, = struct.unpack_from(end + "I", data, 0x1C)
            phentsize, phnum = struct.unpack_from(end + "HH", data, 0x2A)
        for i in range(phnum):
            off = phoff + i * phentsize
            p_type, = struct.unpack_from(end + "I", data, off)
            if p_type != 3:  # PT_INTERP
                continue
            if is64:
                p_offset, = struct.unpack_from(end + "Q", data, off + 8)
                p_filesz, = struct.unpack_from(end + "Q", data, off + 32)
            else:
                p_offset, = struct.unpack_from(end + "I", data, off + 4)
                p_filesz, = struct.unpack_from(end + "I", data, off + 16)
            raw = data[p_offset:p_offset + p_filesz]
            return raw.split(b"\0", 1)[0].decode("latin-1")
    except struct.error:
        return None
    return ""


def inittab_programs(files: Mapping[str, bytes]) -> list[tuple[str, str]]:
    """busybox inittab entries as (action, program path): ``::once:/usr/bin/app`` gives
    ("once", "/usr/bin/app")."""
    data = files.get("etc/inittab")
    if data is None:
        return []
    out = []
    for ln in data.decode("utf-8", "replace").splitlines():
        parts = ln.strip().split(":", 3)
        if len(parts) == 4 and not ln.lstrip().startswith("#") and parts[3].strip():
            out.append((parts[2].strip(), parts[3].split()[0]))
    return out


def app_process(tree: ProcTree, ba: BootAnalysis, files: Mapping[str, bytes]) -> Proc | None:
    """The application: the process that printed the ready marker, or else the program
    inittab starts once user space is up (``::once:`` / ``::respawn:``).

    The printer of the ready line is one of the processes alive at that line: the one whose
    known file holds the line's text, else the one started last (daemons started by the init
    scripts are alive too, but started earlier)."""
    ready = ready_marker(ba)
    if ready is not None:
        no = ready[0].line_no
        text = line_text(ba.boot, no).encode()
        alive = tree.alive_at(no)
        if text:
            for p in alive:
                key = rootfs_key(p.exe) if p.exe else None
                if key is not None and text in files.get(key, b""):
                    return p
        if alive:
            return max(alive, key=lambda p: (p.start_ns, p.line_no))
        return None
    wanted = {path for action, path in inittab_programs(files) if action in ("once", "respawn")}
    starts = tree.with_exe(wanted)
    return starts[-1] if starts else None


# --- shell-text edits ---------------------------------------------------------------------------


def replace_commands(text: str, pattern: re.Pattern[str], note: str) -> tuple[str, list[str]]:
    """``text`` with every match of ``pattern`` on a command line (not a comment) replaced by
    ``:`` (the shell's no-op, so that an ``if``/``&&`` around it stays valid); a line that held
    nothing else becomes ``: # bootlens: removed "..."``. Returns the new text and what was
    removed."""
    removed: list[str] = []
    out: list[str] = []
    for ln in text.splitlines(keepends=True):
        body = ln.rstrip("\n")
        stripped = body.strip()
        if not stripped or stripped.startswith("#"):
            out.append(ln)
            continue
        code, comment = split_comment(body)
        found = [m.group(0) for m in pattern.finditer(code)]
        if not found:
            out.append(ln)
            continue
        removed += found
        nl = ln[len(body):]
        if pattern.fullmatch(code.strip()):
            indent = body[: len(body) - len(body.lstrip())]
            out.append(f'{indent}: # bootlens ({note}): removed "{code.strip()}"{nl}')
        else:
            out.append(pattern.sub(":", code) + comment + nl)
    return "".join(out), removed


def split_comment(line: str) -> tuple[str, str]:
    """A shell line's command part and its trailing comment: a ``#`` that starts a word outside
    quotes (``: # removed "sleep 1"``, bootlens's own note on an edited line, is a comment, not a
    sleep)."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t;"):
            return line[:i], line[i:]
    return line, ""


def sorted_unique(items: Sequence[str]) -> list[str]:
    """Items in first-seen order, each once."""
    return list(dict.fromkeys(items))


class ProcessRule(Rule):
    """A user-space rule: measured from the process events when the log has them, else read from
    the init scripts alone (no figure then); silent when the boot never reached user space."""

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        if not reached_userspace(boot):
            return
        if has_process_events(boot):
            yield from self._measured(boot, ctx, proc_tree(boot))
        else:
            yield from self._from_scripts(boot, ctx)

    @abstractmethod
    def _measured(self, boot: BootAnalysis, ctx: Context, tree: ProcTree) -> Iterable[Finding]:
        """Findings with figures from the process tree."""

    @abstractmethod
    def _from_scripts(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        """Findings without figures, from the scripts alone."""


@per_boot
def proc_tree(boot: BootAnalysis) -> ProcTree:
    """The boot's process tree, built once for all the rules that read it."""
    return ProcTree(boot)
