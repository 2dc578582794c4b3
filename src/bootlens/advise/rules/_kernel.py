"""What the kernel and filesystem rules read from a boot: log lines, initcalls, processes and the
command line, on the boot's axis. Not a rule (it registers nothing); the ``kernel_*`` and ``fs_*``
rule modules share it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

from ...timeline.analyze import BootAnalysis
from ...core.lines import stamp_at
from ..._native import native_module
from ...core.model import BLOCK_KINDS, Event, Events, InitcallDetail, Kind, Milestone, ProbeDetail, ProcessDetail
from ...core.numbers import CPUS_MAX, INT_MAX, to_int
from ...core.units import duration
from ..base import Evidence
from ..evidence import evidence
from ..memo import per_boot

MAIN_PID = 1  # initcalls "@ 1" run on the init thread, which everything after them waits for
EVIDENCE_MAX = 6  # log lines quoted per finding; the arithmetic names the rest by count

_SMP_DONE = re.compile(r"smp: Brought up (\d+) nodes?, (\d+) CPUs?")
_VERSION = re.compile(r"(\d+)\.(\d+)")


def ms(ns: int | None) -> str:
    """A duration for the arithmetic, in milliseconds with microsecond precision."""
    return duration(ns, {"ms": 3}, none="?")


def event_evidence(ba: BootAnalysis, timed: Iterable[Timed]) -> tuple[Evidence, ...]:
    """The first and last line of each event (an initcall's calling and returned lines), at most
    :data:`EVIDENCE_MAX` lines."""
    nos: list[int | None] = []
    for t in timed:
        nos += [t.event.line_no, t.event.end_line_no]
    return evidence(ba.boot, nos, EVIDENCE_MAX)


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
    found in the block's columns and Events' grouping of the others by kind, and their Timed
    made by ``map`` without a Python call each (``tuple.__new__`` on the (event, time) pairs is
    what ``Timed._make`` does)."""

    def __init__(self, ba: BootAnalysis) -> None:
        evs = ba.boot.events
        self._events = evs
        self._grouped = Events.of(evs)  # its events outside the block by kind, grouped once
        self._times: Sequence[int | None] = ba.times if len(ba.times) == len(evs) else (None,) * len(evs)
        # the native block's rows are found by kind in its columns, the other events (all of them
        # without a block) by Events' grouping of them by kind
        self._block = evs.block if isinstance(evs, Events) else None
        self._timed: dict[Kind, tuple[Timed, ...]] = {}
        self._located: dict[Kind, list[tuple[int, Timed]]] = {}

    def _positions(self, kind: Kind) -> list[int]:
        """The positions of the events of ``kind``, ascending."""
        return self._grouped.positions(kind)

    def outside(self, kind: Kind) -> list[tuple[int, Timed]]:
        """The events of ``kind`` outside the block (all of them without one), in log order, each
        with its position: what :func:`pick` tests in Python (made once per kind)."""
        got = self._located.get(kind)
        if got is None:
            times = self._times
            got = self._located[kind] = [(i, _new_timed((e, times[i]))) for i, e in self._grouped.others_of(kind)]
        return got

    @property
    def block(self) -> Any:
        """The native EventBlock, or None."""
        return self._block

    @property
    def times(self) -> Sequence[int | None]:
        """The axis time of each event (None: not placed)."""
        return self._times

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


class Among(NamedTuple):
    """The values a field of :class:`Query` may have (with ``negate``: may not have)."""

    values: frozenset[object]
    negate: bool = False

    def allows(self, v: object) -> bool:
        """True if ``v`` passes."""
        return (v in self.values) != self.negate


def among(*values: object) -> Among:
    """A field that is one of ``values``."""
    return Among(frozenset(values))


def other_than(*values: object) -> Among:
    """A field that is none of ``values``."""
    return Among(frozenset(values), True)


DETAIL_OF: dict[Kind, type[InitcallDetail] | type[ProbeDetail]] = {
    Kind.INITCALL: InitcallDetail, Kind.PROBE: ProbeDetail, Kind.FIXUP: ProbeDetail}
_FIELDS = ("pid", "module", "ret", "returned")  # of a detail, as Query names them


class Query(NamedTuple):
    """Which events of one kind a rule asks about: those whose detail is the kind's
    (:data:`DETAIL_OF`) and that pass every filter given. ``pid``, ``module``, ``ret``,
    ``returned``: the detail's field (a probe's has only ``ret``); ``names``: the event's name;
    ``name_has``: a substring of its name; ``min_ns``: its duration (0 when it has none) at least
    this; ``starts``: (a, b), its axis time ``a <= t < b``. :meth:`test` is the filter in Python;
    native/src/events/query.rs ``pick`` runs the same one over a native block's columns."""

    kind: Kind
    pid: Among | None = None
    module: Among | None = None
    ret: Among | None = None
    returned: Among | None = None
    names: Among | None = None
    name_has: str | None = None
    min_ns: int | None = None
    starts: tuple[int, int] | None = None

    def fields(self) -> list[tuple[str, Among]]:
        """The detail fields filtered on (ValueError for one the kind's detail does not have)."""
        got = [(f, a) for f in _FIELDS if (a := getattr(self, f)) is not None]
        have = DETAIL_OF[self.kind]._fields
        if any(f not in have for f, _ in got) or (self.kind is not Kind.INITCALL and len(got) > (self.ret is not None)):
            raise ValueError(f"{self.kind}: its detail has only {have} (and a probe's only ret here)")
        return got

    def test(self, t: Timed, fields: list[tuple[str, Among]] | None = None) -> bool:
        """True if the event passes (the Python filter: the events outside a native block);
        ``fields``: :meth:`fields`, when the caller tests many."""
        e, d = t.event, t.event.detail
        if e.kind is not self.kind or not isinstance(d, DETAIL_OF[self.kind]):
            return False
        if any(not a.allows(getattr(d, f)) for f, a in (self.fields() if fields is None else fields)):
            return False
        if (self.names is not None and not self.names.allows(e.name)) or (
                self.name_has is not None and self.name_has not in e.name):
            return False
        if self.min_ns is not None and (e.duration_ns or 0) < self.min_ns:
            return False
        return self.starts is None or (t.start is not None and self.starts[0] <= t.start < self.starts[1])


class Picked:
    """The events a :class:`Query` picked, in log order. A native block's rows stay its columns
    (``bootlens._scan.Picked``; an Event is built only for a row a rule reads), the events
    outside the block (all of them without one) are tested in Python: the answers below join
    the two, as if all were one list in log order."""

    __slots__ = ("_native", "_others")

    def __init__(self, native: Any, others: list[tuple[int, Timed]]) -> None:
        self._native = native  # bootlens._scan.Picked, or None
        self._others = others  # (position, Timed) outside the block

    def __len__(self) -> int:
        return (len(self._native) if self._native is not None else 0) + len(self._others)

    def _rows(self, places: list[int] | None = None) -> list[tuple[int, Timed]]:
        """(position, Timed) of the native rows (those at ``places`` in the pick only)."""
        if self._native is None:
            return []
        return list(zip(self._native.positions(places), self._native.timed(Timed, places)))

    def located(self) -> list[tuple[int, Timed]]:
        """All of them with their positions, in log order."""
        return sorted(self._rows() + self._others, key=_position) if self._others else self._rows()

    def timed(self) -> list[Timed]:
        """All of them, in log order."""
        return [t for _, t in self.located()]

    def first(self) -> Timed | None:
        """The first in log order."""
        rows = self._rows([0]) if self._native is not None and len(self._native) else []
        return min(rows + self._others[:1], key=_position, default=(0, None))[1]

    def keep(self, names: set[str]) -> Picked:
        """Those of them named one of ``names``."""
        return Picked(self._native.keep(names) if self._native is not None else None,
                      [(i, t) for i, t in self._others if t.event.name in names])

    def names(self) -> set[str]:
        """Their names."""
        got = set(self._native.names()) if self._native is not None else set()
        got.update(t.event.name for _, t in self._others)
        return got

    def total(self) -> int:
        """The sum of their durations (0 for one without)."""
        own: int = self._native.total() if self._native is not None else 0
        return own + sum(t.duration for _, t in self._others)

    def longest(self, n: int) -> list[Timed]:
        """The ``n`` longest (a duration of 0 when none), longest first, ties to the earlier one."""
        rows = self._rows(self._native.longest(n)) if self._native is not None else []
        return [t for _, t in sorted(rows + self._others, key=lambda pt: (-pt[1].duration, pt[0]))[:n]]

    def enclosing(self, ats: Sequence[int | None]) -> list[Timed | None]:
        """For each axis time, the innermost of these running then, as :class:`Enclosing` finds it
        (of equal durations the first in log order), or None."""
        mine = Enclosing([t for _, t in self._others])
        found: list[tuple[int, int, Timed] | None] = []  # (duration, position, Timed)
        for at in ats:
            k = mine.place(at)
            found.append(None if k is None else (self._others[k][1].duration, self._others[k][0], self._others[k][1]))
        if self._native is not None:
            native = self._native.enclosing(list(ats))
            places = sorted({f[0] for f in native if f is not None})
            timed = dict(zip(places, self._native.timed(Timed, places)))
            for j, f in enumerate(native):
                if f is not None and (found[j] is None or (f[2], f[1]) < found[j][:2]):  # type: ignore[index]
                    found[j] = (f[2], f[1], timed[f[0]])
        return [f[2] if f is not None else None for f in found]


def _position(pt: tuple[int, Timed]) -> int:
    return pt[0]


def pick(ba: BootAnalysis, q: Query) -> Picked:
    """The boot's events that pass ``q``: a native block's rows filtered over its columns
    (query.rs ``pick``), the other events by :meth:`Query.test`."""
    bk = _by_kind(ba)
    fields = q.fields()
    others = [(i, t) for i, t in bk.outside(q.kind) if q.test(t, fields)]
    code = BLOCK_KINDS.get(q.kind)
    if bk.block is None or code is None:
        return Picked(None, others)
    args = {f: (a.negate, list(a.values)) for f, a in fields}
    if q.names is not None:
        args["names"] = (q.names.negate, list(q.names.values))
    rows = native_module().pick(bk.block, code, bk.times, name_has=q.name_has, min_ns=q.min_ns, starts=q.starts,
                                **args)
    return Picked(rows, others)


def picked(ba: BootAnalysis, *queries: Query) -> list[Timed]:
    """The events any of ``queries`` picks, in log order, each once."""
    found = {i: t for q in queries for i, t in pick(ba, q).located()}
    return [found[i] for i in sorted(found)]


def first_initcall(ba: BootAnalysis, name: str) -> Timed | None:
    """The first returned initcall called ``name``."""
    return pick(ba, Query(Kind.INITCALL, returned=among(True), names=among(name))).first()


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
        j = self._find(at)
        return None if j is None else self._calls[j]

    def place(self, at: int | None) -> int | None:
        """The place in ``calls`` of the one running at ``at``, or None."""
        j = self._find(at)
        return None if j is None else self._order[j]

    def _find(self, at: int | None) -> int | None:
        if at is None:
            return None
        best: tuple[int, int] | None = None
        found: int | None = None
        j = bisect_right(self._starts, at) - 1
        while j >= 0 and self._reach[j] > at:
            if self._ends[j] > at:
                key = (self._calls[j].duration, self._order[j])
                if best is None or key < best:
                    best, found = key, j
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
