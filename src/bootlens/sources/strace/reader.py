"""strace and ltrace text: one :class:`Call` per system (or library) call, signal and exit.

Forms read (strace 4.x to 6.x, ltrace 0.7):

- the pid: a column (``strace -f``: ``286   15:12:06.713695 execve(...)``), the ``[pid N]``
  form (older strace -f, ltrace -f), none (one process; or ``-ff -o NAME`` files, whose pid is
  the file name's ``.N`` suffix: :func:`pid_from_name`, the one thing taken from a name);
- the time: ``-t`` (``15:12:06``), ``-tt`` (``15:12:06.713695``), ``-ttt`` (seconds since the
  epoch), ``-r`` (seconds since the previous line, padded: ``     0.000123``), or none;
- ``-T`` durations ``<0.000123>`` (``<unavailable>`` when the process died in the call);
- calls split by another process's line: ``clone( <unfinished ...>`` then
  ``<... clone resumed> ...) = 27370``, joined into one call stamped at its start;
- ``--- SIGCHLD {si_signo=...} ---`` (ltrace: ``--- SIGCHLD (Child exited) ---``, and
  ``--- Called exec() ---``; its ``execve(... <no return ...>``),
  ``+++ exited with 0 +++`` (ltrace: ``+++ exited (status 0) +++``), ``+++ killed by SIGKILL +++``;
- ltrace's caller before a call's name (``-e``/``-x``: ``sh->printf(``), dropped;
- results ``= 3``, ``= -1 ENOENT (No such file or directory)``, ``= ?``, ``= 0x55f6...``,
  ``-y``/``-yy`` paths after fds (``= 3</dev/console>``, ``write(1</dev/console>, ...)``).

Times are integer nanoseconds on the trace's own clock (:attr:`Trace.clock`): "wall" (time of
day, -t/-tt), "epoch" (-ttt), "relative" (-r, summed from the first line) or "none". Lines not
understood are counted (:attr:`Trace.unparsed`), never raised on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ...core.numbers import NS_PER_S, PID_MAX, TIME_NS_MAX, Tally, to_int

DAY_NS = 86_400 * NS_PER_S

_PREFIX = re.compile(
    r"^\s*(?:\[pid\s+(?P<pid>\d+)\]\s*|(?P<pid2>\d+)\s+(?=\d|[<+-]|\S*\())?"
    r"(?:(?P<hms>\d\d:\d\d:\d\d(?:\.\d+)?)|(?P<secs>\d+\.\d+))?\s*(?P<body>.*)$")
_SIGNAL = re.compile(r"^--- (?P<sig>SIG\w+|\w+) (?P<info>[{(].*[})]) ---$")
_EXITED = re.compile(r"^\+\+\+ exited (?:with (?P<a>-?\d+)|\(status (?P<b>-?\d+)\)) \+\+\+$")
_KILLED = re.compile(r"^\+\+\+ killed by (?P<sig>SIG\w+)(?: \(core dumped\))? \+\+\+$")
# ltrace -e/-x name a call with the object that made it: "sh->printf(", "libc.so.6->fopen(" (the
# caller is dropped: the call is the same whoever made it)
_CALLER = r"(?:[\w.+-]+->)?"
_UNFINISHED = re.compile(r"^" + _CALLER + r"(?P<name>[\w@.$]+)\((?P<args>.*)<unfinished \.\.\.>$")
_NORETURN = re.compile(r"^" + _CALLER + r"(?P<name>[\w@.$]+)\((?P<args>.*)<no return \.\.\.>$")  # ltrace: execve
_RESUMED = re.compile(r"^<\.\.\. (?P<name>[\w@.$]+) resumed>\s?(?P<rest>.*)$")
_CALL = re.compile(r"^" + _CALLER + r"(?P<name>[\w@.$]+)\((?P<args>.*)$")
_CALLED_BY = re.compile(r"^[\w.+-]+->[\w@.$]+\(")  # only ltrace writes the caller
# the result at the end of a finished call: ") = ret [ERRNO] [(text)] [<dur>]"
_RESULT = re.compile(
    r"\s*=\s+(?P<ret>\?|<void>|-?\d+|0x[0-9a-f]+|[\w-]+|\"(?:[^\"\\\\]|\\\\.)*\"(?:\.\.\.)?)(?P<path><(?:[^<>]|<[^<>]*>)*>)?"
    r"(?:\s+(?P<errno>E[A-Z0-9_]+|ERESTART\w+))?(?:\s+\([^()]*(?:\([^()]*\)[^()]*)*\))?(?:\s+\[[^\]]*\])?"
    r"(?:\s+<(?P<dur>\d+\.\d+|unavailable)>)?\s*")
MAX_LINE = 65536  # longer lines (strace -s with a huge limit) are cut before parsing: the result is lost
_TRIES = 4  # " = " positions tried from the right of a line


def _result(text: str) -> tuple[int, re.Match[str]] | None:
    """The result at the end of a finished call, found from the right (an argument string may
    hold " = " too) and matched on the tail only, so that a long line costs linear time: (where
    the args end, the match)."""
    end = len(text)
    for _ in range(_TRIES):
        eq = text.rfind("=", 0, end)
        if eq <= 0:
            return None
        close = text.rfind(")", 0, eq)
        if close >= 0 and not text[close + 1:eq].strip():
            r = _RESULT.fullmatch(text, close + 1)
            if r is not None:
                return close, r
        end = eq
    return None
_PID_SUFFIX = re.compile(r"\.(\d+)$")
_NOISE = ("strace: ", "ltrace: ", "Process ", "System call ")


@dataclass(frozen=True, slots=True)
class Call:
    """One line (or joined pair) of a trace.

    ``kind``: "call" (a system or library call), "signal" (``name`` the signal),
    "exit" (``ret`` the exit code), "killed" (``name`` the signal) or "exec" (ltrace's
    ``--- Called exec() ---``). ``args`` is the text
    between the parentheses, unparsed; ``ret`` the result as written ("0", "-1", "?");
    ``errno`` the error name of a failed call; ``dur_ns`` the ``-T`` time; ``t_ns`` the stamp
    on the trace's clock (None without a time column); ``ret_path`` the ``-y`` path of a
    returned fd.
    """

    pid: int | None
    t_ns: int | None
    kind: str
    name: str
    args: str = ""
    ret: str = ""
    errno: str | None = None
    dur_ns: int | None = None
    line_no: int = 0
    ret_path: str | None = None

    @property
    def failed(self) -> bool:
        """A call that returned an error (``= -1 ENOENT``, ``= ? ERESTARTSYS``)."""
        return self.errno is not None

    @property
    def ret_int(self) -> int | None:
        """The result as an integer, None for "?" and the like, and for a value no syscall
        returns (a kernel long: a damaged line's digit run past 64 bits)."""
        if len(self.ret) > 24:  # a long in decimal or hex, its sign: before int() reads 4,300 digits
            return None
        try:
            v = int(self.ret, 0)
        except ValueError:
            return None
        return v if -(2**63) <= v < 2**63 else None


@dataclass(frozen=True, slots=True)
class Trace:
    """The calls of one or more trace files, in file order (per-pid files one after another)."""

    source: str
    tool: str  # "strace" or "ltrace"
    clock: str  # "wall", "epoch", "relative" or "none"
    calls: tuple[Call, ...]
    lines: int = 0
    unparsed: int = 0
    unfinished: int = 0  # "<unfinished ...>" never resumed (the trace was cut)
    warnings: tuple[str, ...] = ()
    has_durations: bool = False  # -T was given


# ------------------------------------------------------------------------------------ sniffing

def sniff(head: str) -> bool:
    """True when the text's first lines are strace or ltrace output: at least three lines (or
    all, when fewer) in a call or signal form, one of them an ``= result``."""
    lines = [ln for ln in head.splitlines()[:30] if ln.strip()]
    if len(lines) > 1 and len(lines) == 30:
        lines = lines[:-1]  # the head may cut the last line
    good = results = 0
    for ln in lines:
        m = _PREFIX.match(ln)
        body = m.group("body").rstrip() if m else ln
        if _result(body) and _CALL.match(body) or _RESUMED.match(body):
            good += 1
            results += 1
        elif any(rx.match(body) for rx in (_UNFINISHED, _NORETURN, _SIGNAL, _EXITED, _KILLED)):
            good += 1
    return results >= 1 and good >= min(3, len(lines)) and good * 2 >= len(lines)


def pid_from_name(name: str) -> int | None:
    """The pid of an ``strace -ff -o NAME`` file: its ``.N`` suffix (the content has no pid)."""
    m = _PID_SUFFIX.search(name)
    return to_int(m.group(1), PID_MAX) if m else None


# ------------------------------------------------------------------------------------- reading

def _hms_ns(s: str) -> int:
    h, m, rest = s.split(":")
    sec, _, frac = rest.partition(".")
    return ((int(h) * 60 + int(m)) * 60 + int(sec)) * NS_PER_S + int((frac + "000000000")[:9])


# -ttt's seconds since 1970 (past TIME_NS_MAX, an uptime's bound, since 2006): up to 2116, so that
# any two of them summed stay in 63 bits
EPOCH_NS_MAX = 2**62


def _secs_ns(s: str, hi: int = TIME_NS_MAX) -> int | None:
    """"SECONDS.FRACTION" as ns; None past ``hi`` (a damaged line's digit run)."""
    whole, _, frac = s.partition(".")
    secs = to_int(whole, hi // NS_PER_S - 1)
    return None if secs is None else secs * NS_PER_S + int((frac + "000000000")[:9])


class _Reader:
    """State of one pass over the lines: pending unfinished calls, the -r sum, midnight."""

    def __init__(self, default_pid: int | None) -> None:
        self.default_pid = default_pid
        self.calls: list[Call] = []
        self.pending: dict[int | None, tuple[str, str, int | None, int]] = {}
        self.unparsed = 0
        self.examples: list[str] = []
        self.clock = "none"
        self.rel_sum = 0
        self.last_wall: int | None = None
        self.day = 0
        self.durations = False
        self.ltrace = False
        self.tally = Tally("strace")  # pids, times and durations past what a kernel writes

    def stamp(self, hms: str | None, secs: str | None) -> int | None:
        if hms is not None:
            self.clock = "wall"
            t = _hms_ns(hms) + self.day
            if self.last_wall is not None and t < self.last_wall - DAY_NS // 2:  # past midnight
                self.day += DAY_NS
                t += DAY_NS
            self.last_wall = t
            return t
        if secs is not None:
            ns = _secs_ns(secs, EPOCH_NS_MAX)
            if ns is None or (ns < 100_000_000 * NS_PER_S and self.rel_sum + ns > TIME_NS_MAX):
                self.tally.refuse("time", None)
                return None
            # -ttt is seconds since 1970 (10 digits today); -r a small delta since the last line
            if ns >= 100_000_000 * NS_PER_S:
                self.clock = "epoch"
                return ns
            self.clock = "relative"
            self.rel_sum += ns
            return self.rel_sum
        return None

    def bad(self, line: str) -> None:
        self.unparsed += 1
        if len(self.examples) < 3:
            self.examples.append(line[:80])

    def finish(self, pid: int | None, t: int | None, text: str, n: int) -> None:
        """A complete "name(args) = ret ..." text."""
        m = _CALL.match(text)
        found = _result(text) if m is not None else None
        if m is None or found is None:
            self.bad(text)
            return
        close, r = found
        args = text[m.end("name") + 1:close]
        dur_s = r.group("dur")
        dur = None
        if dur_s is not None and dur_s != "unavailable":
            dur = _secs_ns(dur_s)
            if dur is None:
                self.tally.refuse("duration", n)
            self.durations = True
        path = r.group("path")
        self.calls.append(Call(pid, t, "call", m.group("name"), args, r.group("ret"), r.group("errno"), dur, n,
                               path[1:-1] if path else None))

    def line(self, raw: str, n: int) -> None:
        if not raw.strip():
            return
        m = _PREFIX.match(raw)
        if m is None:  # cannot happen: every part is optional
            self.bad(raw)
            return
        pid_s = m.group("pid") or m.group("pid2")
        pid = self.tally.take(pid_s, PID_MAX, field="pid", line_no=n) if pid_s else self.default_pid
        if pid_s and pid is None:
            return  # counted: whose call it is is not known
        body = m.group("body").rstrip()
        if body.startswith(_NOISE):  # "strace: Process 27369 attached", "ltrace: ..."
            return
        t = self.stamp(m.group("hms"), m.group("secs"))
        if "->" in body and _CALLED_BY.match(body):
            self.ltrace = True
        if body == "--- Called exec() ---":  # ltrace: the process exec'd (the file is not shown)
            self.ltrace = True
            self.calls.append(Call(pid, t, "exec", "exec", line_no=n))
            return
        if body.startswith("---"):
            s = _SIGNAL.match(body)
            if s is None:
                self.bad(raw)
                return
            if s.group("info").startswith("("):
                self.ltrace = True
            self.calls.append(Call(pid, t, "signal", s.group("sig"), s.group("info"), line_no=n))
            return
        if body.startswith("+++"):
            e = _EXITED.match(body)
            if e is not None:
                if e.group("b") is not None:
                    self.ltrace = True
                self.calls.append(Call(pid, t, "exit", "exit", ret=e.group("a") or e.group("b") or "0", line_no=n))
                return
            k = _KILLED.match(body)
            if k is not None:
                self.calls.append(Call(pid, t, "killed", k.group("sig"), line_no=n))
                return
            self.bad(raw)
            return
        u = _UNFINISHED.match(body)
        if u is not None:
            if pid in self.pending:  # two unfinished in a row for one pid: the first is lost
                self.bad(raw)
            self.pending[pid] = (u.group("name"), u.group("args").rstrip(), t, n)
            return
        nr = _NORETURN.match(body)
        if nr is not None:
            self.calls.append(Call(pid, t, "call", nr.group("name"), nr.group("args").rstrip(), "?", line_no=n))
            return
        r = _RESUMED.match(body)
        if r is not None:
            head = self.pending.pop(pid, None)
            if head is None or head[0] != r.group("name"):
                # its start is not in this trace (attached mid-call): stamped at the resume
                self.finish(pid, t, f"{r.group('name')}({r.group('rest')}", n)
                return
            name, args, t0, n0 = head
            sep = ", " if args and r.group("rest") and not r.group("rest").startswith(")") else ""
            self.finish(pid, t0, f"{name}({args}{sep}{r.group('rest')}", n0)
            return
        if _CALL.match(body):
            self.finish(pid, t, body, n)
            return
        self.bad(raw)


def read_trace(text: str, source: str = "", pid: int | None = None, first_line: int = 1) -> Trace:
    """Read one trace file; ``pid`` is the process of a file without a pid column (a ``-ff``
    file's suffix), else None."""
    return read_traces([(source, text, pid)], first_line)


def read_traces(files: Iterable[tuple[str, str, int | None]], first_line: int = 1) -> Trace:
    """Read (source, text, pid) files into one trace (``-ff`` writes one file per process); the
    calls of all files are sorted by time when every file has one."""
    calls: list[Call] = []
    sources: list[str] = []
    warnings: list[str] = []
    clocks: set[str] = set()
    lines = unparsed = unfinished = 0
    durations = ltrace = False
    for source, text, pid in files:
        rd = _Reader(pid)
        n = first_line - 1
        for n, raw in enumerate(text.splitlines(), first_line):
            rd.line(raw[:MAX_LINE], n)
        lines += max(0, n - first_line + 1)
        unparsed += rd.unparsed
        unfinished += len(rd.pending)
        for p, (name, args, t, n0) in rd.pending.items():  # cut by the end of the trace: kept, no result
            rd.calls.append(Call(p, t, "call", name, args, "?", None, None, n0))
        if rd.unparsed:
            warnings.append(f"{source or 'trace'}: {rd.unparsed} line(s) not understood as strace/ltrace "
                            f"output, e.g. {rd.examples[0]!r}")
        warnings += rd.tally.warnings()
        calls.extend(rd.calls)
        sources.append(source)
        if rd.clock != "none":
            clocks.add(rd.clock)
        durations = durations or rd.durations
        ltrace = ltrace or rd.ltrace or any("@" in c.name for c in rd.calls if c.kind == "call")
    if len(clocks) > 1:
        warnings.append(f"the trace files have different time columns ({', '.join(sorted(clocks))}): "
                        "times not comparable")
    clock = clocks.pop() if len(clocks) == 1 else "none"
    if len(sources) > 1 and clock != "none":
        calls.sort(key=lambda c: (c.t_ns if c.t_ns is not None else -1))
    if unfinished:
        warnings.append(f"{unfinished} call(s) <unfinished ...> never resumed (the trace ends in them)")
    return Trace(", ".join(s for s in sources if s), "ltrace" if ltrace else "strace", clock, tuple(calls), lines,
                 unparsed, unfinished, tuple(warnings), durations)
