"""What the kernel and filesystem rules read from a boot: log lines, initcalls, processes and the
command line, on the boot's axis. Not a rule (it registers nothing); the ``kernel_*`` and ``fs_*``
rule modules share it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import compress, repeat
from operator import is_
from typing import NamedTuple

from ...analyze import BootAnalysis
from ...lines import clip, native_module, stamp_at
from ...model import BLOCK_KINDS, Event, Events, InitcallDetail, Kind, Milestone, ProbeDetail, ProcessDetail
from ...numbers import CPUS_MAX, INT_MAX, to_int
from ..base import Evidence
from ..memo import per_boot

MAIN_PID = 1  # initcalls "@ 1" run on the init thread, which everything after them waits for
EVIDENCE_MAX = 6  # log lines quoted per finding; the arithmetic names the rest by count

_SMP_DONE = re.compile(r"smp: Brought up (\d+) nodes?, (\d+) CPUs?")
_VERSION = re.compile(r"(\d+)\.(\d+)")


def ms(ns: int | None) -> str:
    """A duration for the arithmetic, in milliseconds with microsecond precision."""
    return "?" if ns is None else f"{ns / 1e6:.3f} ms"


def text(ba: BootAnalysis, line_no: int) -> str:
    """The message of input line ``line_no`` (printk and host prefixes removed), stripped."""
    lines = ba.boot.lines
    i = lines.index_of(line_no)
    if not 0 <= i < len(lines):
        return ""
    return clip(lines.text[i].strip())


def evidence(ba: BootAnalysis, line_nos: Iterable[int | None]) -> tuple[Evidence, ...]:
    """Evidence lines, in log order, each once, at most :data:`EVIDENCE_MAX`."""
    seen = sorted({n for n in line_nos if n is not None})
    return tuple(Evidence(n, text(ba, n)) for n in seen[:EVIDENCE_MAX])


def event_evidence(ba: BootAnalysis, timed: Iterable[Timed]) -> tuple[Evidence, ...]:
    """The first and last line of each event (an initcall's calling and returned lines)."""
    nos: list[int | None] = []
    for t in timed:
        nos += [t.event.line_no, t.event.end_line_no]
    return evidence(ba, nos)


def line_time(ba: BootAnalysis, idx: int) -> int | None:
    """Axis time of the line at index ``idx`` of the boot's lines, or None if it has no time."""
    return ba.alignment.to_axis(stamp_at(ba.boot.lines, idx))


def grep(ba: BootAnalysis, needle: str) -> Sequence[int]:
    """Indices of the lines containing ``needle`` (cached by the line index)."""
    return ba.boot.lines.grep(needle)


def line_no(ba: BootAnalysis, idx: int) -> int:
    """Input line number of a line index."""
    return ba.boot.lines.no(idx)


def cmdline(ba: BootAnalysis) -> list[str]:
    """The kernel command line's arguments, from ``Kernel command line:`` (empty if not seen)."""
    f = ba.boot.fact("cmdline") or ba.boot.fact("early_cmdline")
    return f.value.split() if f is not None else []


def arg(ba: BootAnalysis, name: str) -> str | None:
    """The value of the last ``name=value`` (or "" for a bare ``name``) on the command line.

    The kernel hands every occurrence to the parameter's handler in order, so the last wins.
    """
    found: str | None = None
    for a in cmdline(ba):
        key, eq, value = a.partition("=")
        if key == name:
            found = value if eq else ""
    return found


def kernel_version(ba: BootAnalysis) -> tuple[int, int] | None:
    """(major, minor) from ``Linux version``, or None."""
    f = ba.boot.fact("kernel_version")
    m = _VERSION.match(f.value) if f is not None else None
    major, minor = (to_int(m[1], INT_MAX), to_int(m[2], INT_MAX)) if m else (None, None)
    return (major, minor) if major is not None and minor is not None else None


SMP_DONE = "smp: Brought up"  # advise/userspace.cpu_count greps the same needle: one cached hit list
NEEDLES = (SMP_DONE,)  # what the helpers here grep for, found in advise()'s one pass


def cpus(ba: BootAnalysis) -> tuple[int | None, int | None]:
    """(CPUs brought up, line number) from ``smp: Brought up N nodes, M CPUs``; (None, None)."""
    for i in grep(ba, SMP_DONE):
        m = _SMP_DONE.search(ba.boot.lines.text[i])
        if m and (n := to_int(m[2], CPUS_MAX)) is not None:
            return n, line_no(ba, i)
    return None, None


class Timed(NamedTuple):
    """An event with its start on the boot's axis (None when it cannot be placed). A NamedTuple:
    a boot has a million of them, and it is built in a third of a frozen dataclass's time."""

    event: Event
    start: int | None

    @property
    def end(self) -> int | None:
        """Axis time it ended, when both start and duration are known."""
        d = self.event.duration_ns
        return None if self.start is None or d is None else self.start + d

    @property
    def duration(self) -> int:
        """Its duration, 0 when unknown."""
        return self.event.duration_ns or 0


class _ByKind:
    """The boot's events by kind: each kind's :class:`Timed` made once, when a rule first asks for
    it (a pass over all events per question was 1.3 us an event). The events of a kind are
    found by a pass in C over the kinds (``compress``), and their Timed made by ``map`` without a
    Python call each (``tuple.__new__`` on the (event, time) pairs is what ``Timed._make`` does)."""

    def __init__(self, ba: BootAnalysis) -> None:
        evs = ba.boot.events
        self._events = evs
        self._times: Sequence[int | None] = ba.times if len(ba.times) == len(evs) else (None,) * len(evs)
        # the native block's rows are found by kind in its columns; the kinds of every event are
        # read (an Event built each) only without a block
        self._block = evs.block if isinstance(evs, Events) else None
        self._kinds: list[Kind] = [] if self._block is not None else [e.kind for e in evs]
        self._other_kinds: list[Kind] | None = None
        self._timed: dict[Kind, tuple[Timed, ...]] = {}

    def _positions(self, kind: Kind) -> list[int]:
        """The positions of the events of ``kind``, ascending."""
        block = self._block
        if block is None:
            return list(compress(range(len(self._kinds)), map(is_, self._kinds, repeat(kind))))
        if self._other_kinds is None:  # the other events' kinds, read once (a few thousand)
            self._other_kinds = [e.kind for e in block.others()]
        others = list(compress(block.other_positions(), map(is_, self._other_kinds, repeat(kind))))
        code = BLOCK_KINDS.get(kind)
        if code is None:
            return others
        rows: list[int] = block.positions(code)
        return sorted(rows + others) if others else rows

    def timed(self, kind: Kind) -> tuple[Timed, ...]:
        """The events of ``kind`` in log order, with their axis times."""
        got = self._timed.get(kind)
        if got is None:
            idx = self._positions(kind)
            if self._block is not None:  # the Timed rows built natively (report.rs timed_at)
                timed_at = native_module().timed_at

                got = self._timed[kind] = tuple(timed_at(self._block, idx, self._times, Timed))
            else:
                evs = map(self._events.__getitem__, idx)
                got = self._timed[kind] = tuple(map(_new_timed, zip(evs, map(self._times.__getitem__, idx))))
        return got


_new_timed: Callable[[tuple[Event, int | None]], Timed] = partial(tuple.__new__, Timed)


@per_boot
def _by_kind(ba: BootAnalysis) -> _ByKind:
    return _ByKind(ba)


def events(ba: BootAnalysis, kind: Kind) -> Iterator[Timed]:
    """The boot's events of one kind, in log order, with their axis times."""
    return iter(_by_kind(ba).timed(kind))


def of_kind(evs: Sequence[Event], kind: Kind) -> Sequence[Event]:
    """The events of one kind in order: from the columns of a native block (an Event built for
    those only), else by a pass over the events (model.Events does both)."""
    return Events.of(evs).of_kind(kind)


def initcalls(ba: BootAnalysis) -> list[Timed]:
    """Initcalls that returned, in log order (a fresh list: the scan itself is done once)."""
    return [t for t, _ in initcall_rows(ba)]


@per_boot
def initcall_rows(ba: BootAnalysis) -> tuple[tuple[Timed, InitcallDetail], ...]:
    """Initcalls that returned, in log order, each with its detail (typed, for the rules)."""
    return tuple((t, d) for t in _by_kind(ba).timed(Kind.INITCALL)
                 if isinstance(d := t.event.detail, InitcallDetail) and d.returned)


@per_boot
def probe_rows(ba: BootAnalysis) -> tuple[tuple[Timed, ProbeDetail], ...]:
    """Device probes, in log order, each with its detail (typed, for the rules)."""
    return tuple((t, d) for t in _by_kind(ba).timed(Kind.PROBE) if isinstance(d := t.event.detail, ProbeDetail))


def initcall_detail(t: Timed) -> InitcallDetail:
    """The initcall detail of an initcall event (the parser always sets it)."""
    d = t.event.detail
    assert isinstance(d, InitcallDetail)
    return d


def probe_detail(t: Timed) -> ProbeDetail:
    """The probe detail of a probe event (the parser always sets it)."""
    d = t.event.detail
    assert isinstance(d, ProbeDetail)
    return d


def main_thread_initcalls(ba: BootAnalysis) -> list[Timed]:
    """Built-in initcalls run on the init thread (``@ 1``): the path user space waits for."""
    return list(_main_thread_initcalls(ba))


@per_boot
def _main_thread_initcalls(ba: BootAnalysis) -> tuple[Timed, ...]:
    return tuple(t for t, d in initcall_rows(ba) if d.pid == MAIN_PID and d.module is None)


def first_initcall(ba: BootAnalysis, name: str) -> Timed | None:
    """The first returned initcall called ``name``."""
    return next((t for t in initcalls(ba) if t.event.name == name), None)


def kthreads(ba: BootAnalysis, comm: str) -> list[Timed]:
    """Kernel threads named ``comm`` seen by the process trace (fork to exit), in log order."""
    return [t for t in _kthreads(ba) if t.event.detail.comm == comm]  # type: ignore[union-attr]


@per_boot
def _kthreads(ba: BootAnalysis) -> tuple[Timed, ...]:
    # the kernel threads' positions from the process rows' columns: no Event for the others
    evs = Events.of(ba.boot.events)
    times = ba.times if len(ba.times) == len(evs) else None
    return tuple(Timed(evs[i], None if times is None else times[i]) for i in evs.positions(Kind.PROCESS, kthread=True)
                 if isinstance(evs[i].detail, ProcessDetail))


def enclosing(calls: list[Timed], at: int | None) -> Timed | None:
    """The initcall of ``calls`` running at axis time ``at`` (the innermost, if nested; of equal
    ones, the first in ``calls``). For many times against one list, use :class:`Enclosing`."""
    if at is None:
        return None
    best: Timed | None = None
    for c in calls:
        end = c.end
        if c.start is not None and end is not None and c.start <= at < end:
            if best is None or c.duration < best.duration:
                best = c
    return best


class Enclosing:
    """:func:`enclosing` for many times against one list of calls: the calls sorted by start
    with a running maximum of their ends, so a time looks only at the calls that started before
    it and back only while one of them can still be running. A scan of every call per time made
    ``advise`` quadratic (1,610 probes x 30,000 initcalls: 13 s of a 100,000-line log)."""

    __slots__ = ("_starts", "_ends", "_reach", "_order", "_calls")

    def __init__(self, calls: Sequence[Timed]) -> None:
        # placed: a start and a duration (Timed.end not None), without a property call per call
        placed = sorted([(c.start, i) for i, c in enumerate(calls)
                         if c.start is not None and c.event.duration_ns is not None])
        self._calls = [calls[i] for _, i in placed]
        self._order = [i for _, i in placed]  # position in ``calls``: the tie-break of enclosing()
        self._starts = [s for s, _ in placed]
        self._ends = [s + c.event.duration_ns for s, c in zip(self._starts, self._calls)]  # type: ignore[operator]
        reach, top = [], None
        for e in self._ends:
            top = e if top is None or e > top else top
            reach.append(top)
        self._reach = reach  # the latest end among calls 0..j

    def __call__(self, at: int | None) -> Timed | None:
        if at is None:
            return None
        best: tuple[int, int] | None = None
        found: Timed | None = None
        j = bisect_right(self._starts, at) - 1
        while j >= 0 and self._reach[j] > at:
            if self._ends[j] > at:
                key = (self._calls[j].duration, self._order[j])
                if best is None or key < best:
                    best, found = key, self._calls[j]
            j -= 1
        return found


def coarse_before(ba: BootAnalysis) -> int | None:
    """Axis time of ``clocksource: Switched to clocksource``: initcall_debug times taken before it
    come from the jiffies clock (whole ticks, 4 ms at HZ=250), or None if the line was not seen."""
    for t in events(ba, Kind.MILESTONE):
        if t.event.name == Milestone.CLOCKSOURCE:
            return t.start
    return None


def coarse_note(ba: BootAnalysis, timed: Iterable[Timed]) -> str:
    """A note for the arithmetic when some of these events were timed in whole jiffies."""
    switch = coarse_before(ba)
    if switch is None:
        return ""
    n = sum(1 for t in timed if t.start is not None and t.start < switch)
    if not n:
        return ""
    return (f" ({n} of these ran before the switch to a high-resolution clocksource, so their times are "
            "in whole jiffies: right on average, not one by one)")


def stage_end(ba: BootAnalysis, name: str) -> int | None:
    """Axis time a stage ends (e.g. "initcalls", "kernel_init"), or None if not measured."""
    for s in ba.stages:
        if s.name == name:
            return s.end_ns
    return None


def span(ba: BootAnalysis, a: int, b: int) -> int | None:
    """Time from line index ``a`` to line index ``b`` on the axis, or None."""
    ta, tb = line_time(ba, a), line_time(ba, b)
    return None if ta is None or tb is None or tb < ta else tb - ta


def previous_timed(ba: BootAnalysis, idx: int) -> int | None:
    """Index of the closest line before ``idx`` that carries a time, or None."""
    for j in range(idx - 1, -1, -1):
        if line_time(ba, j) is not None:
            return j
    return None


_PART = re.compile(r"^(mmcblk\d+|nvme\d+n\d+|mtdblock\d+|[a-z]+)(p?\d+)?$")


def root_disk(ba: BootAnalysis) -> tuple[str, str] | None:
    """(root device, its disk) from ``root=/dev/...`` (e.g. mmcblk0p2, mmcblk0), or None."""
    root = arg(ba, "root")
    if not root or not root.startswith("/dev/"):
        return None
    name = root[5:]
    m = _PART.match(name)
    return (name, m[1]) if m else (name, name)


def device_seen(ba: BootAnalysis, root: str, disk: str, after: int = 0) -> int | None:
    """Index of the first line from ``after`` on that shows the root device exists: the
    partition scan (``mmcblk0: p1 p2``, ``sda: sda1 sda2``) or a line naming the device (not the
    command line, nor the kernel's own "Waiting ..." lines)."""
    texts = ba.boot.lines.text
    scan = re.compile(r"\s*" + re.escape(disk) + r": ")
    for i in grep(ba, disk):
        if i >= after and not texts[i].startswith(("Kernel command line", "Command line", "Waiting")) and (
                (scan.match(texts[i]) and root[len(disk):] in texts[i]) or root in texts[i]):
            return i
    return None
