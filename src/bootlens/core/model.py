"""The timeline model: lines, clock-tagged times, events and boots.

Time is integer nanoseconds tagged with the clock domain it was read in. Converting between
domains happens only in :mod:`bootlens.timeline.align`, through anchors recorded from the log.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from enum import StrEnum
from types import FunctionType

try:
    from _collections import _tuplegetter  # type: ignore[import-not-found]  # the C field accessor namedtuple uses
except ImportError:  # pragma: no cover (not CPython)
    from operator import itemgetter

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(itemgetter(index), doc=doc)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any, Self, overload
    from typing import NamedTuple as NamedTuple  # what mypy sees; bootlens's modules import it from here

    from .lines import Lines
else:
    def overload(f: Any) -> Any:  # typing.overload's run-time effect
        return f


class _TupleMeta(type):
    """Builds ``class X(NamedTuple):`` as typing.NamedTuple does (collections.namedtuple with
    the annotated fields, their defaults, the docstring, methods and properties), minus typing's
    check of each annotation: under ``from __future__ import annotations`` every one is a string
    that typing compiles into a ForwardRef, 0.35 ms a class against 0.13 here, ~5 ms of the 26
    such classes on ``bootlens analyze``'s path (docs/performance.md, step 18). The annotations
    stay strings in ``__annotations__`` (nothing evaluates them at run time)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> Any:
        if not bases:  # the base class itself
            return super().__new__(mcls, name, bases, ns)
        if "__classcell__" in ns:
            raise TypeError(f"{name}: super() in a NamedTuple's method (typing's does not allow it either)")
        ann: dict[str, Any] = ns.get("__annotations__", {})
        defaults = [ns[f] for f in ann if f in ns]
        if any(f not in ns for f in list(ann)[len(ann) - len(defaults):]):
            raise TypeError(f"{name}: a field without a default after one with a default")
        cls = _tuple_class(name, tuple(ann), tuple(defaults), ns["__module__"])
        cls.__annotations__ = ann
        for key, value in ns.items():  # as typing's: everything but the fields (__doc__, __qualname__ too)
            if key not in ("__module__", "__annotations__") and key not in ann:
                setattr(cls, key, value)
        return cls


# The __new__ of a tuple class of N fields, for N up to 16: their code is compiled with this
# module (into its .pyc), and a class's __new__ is one of them renamed for its fields (the
# bytecode reads arguments by position). Their _tuple_new is _NEW_GLOBALS's.
_tuple_new = tuple.__new__
if TYPE_CHECKING:
    _NEW_CODE: list[Any]
else:
    def _new0(_cls):
        return _tuple_new(_cls, ())

    def _new1(_cls, _0):
        return _tuple_new(_cls, (_0,))

    def _new2(_cls, _0, _1):
        return _tuple_new(_cls, (_0, _1))

    def _new3(_cls, _0, _1, _2):
        return _tuple_new(_cls, (_0, _1, _2))

    def _new4(_cls, _0, _1, _2, _3):
        return _tuple_new(_cls, (_0, _1, _2, _3))

    def _new5(_cls, _0, _1, _2, _3, _4):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4))

    def _new6(_cls, _0, _1, _2, _3, _4, _5):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5))

    def _new7(_cls, _0, _1, _2, _3, _4, _5, _6):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6))

    def _new8(_cls, _0, _1, _2, _3, _4, _5, _6, _7):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7))

    def _new9(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8))

    def _new10(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9))

    def _new11(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10))

    def _new12(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11))

    def _new13(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12))

    def _new14(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13))

    def _new15(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14))

    def _new16(_cls, _0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15):
        return _tuple_new(_cls, (_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15))

    _NEW_CODE = [f.__code__ for f in (_new0, _new1, _new2, _new3, _new4, _new5, _new6, _new7, _new8, _new9, _new10,
                                       _new11, _new12, _new13, _new14, _new15, _new16)]


def _new_code(fields: tuple[str, ...], qualname: str) -> Any:
    """The code of ``__new__(_cls, *fields) -> tuple`` for these fields: a template above
    renamed, or compiled here for a class of more than 16 fields."""
    if len(fields) < len(_NEW_CODE):
        code = _NEW_CODE[len(fields)]
    else:
        ns: dict[str, Any] = {}
        exec(f"def _new(_cls, {', '.join(fields)}): return _tuple_new(_cls, ({', '.join(fields)},))", ns)
        code = ns["_new"].__code__
    return code.replace(co_varnames=("_cls", *fields), co_name="__new__", co_qualname=qualname)


_NEW_GLOBALS = {"_tuple_new": tuple.__new__, "__builtins__": {}}


def _tuple_class(name: str, fields: tuple[str, ...], defaults: tuple[Any, ...], module: str) -> Any:
    """What ``collections.namedtuple(name, fields, defaults=defaults, module=module)`` returns,
    built the same way but for its ``__new__``: namedtuple compiles a new one from source for
    every class (~0.26 million instructions, 0.07 ms; 26 classes on ``bootlens analyze``'s path),
    this renames one compiled with this module (docs/performance.md, step 26). The same class:
    fields, defaults, ``_make``, ``_replace``, ``_asdict``, repr, pickling, field docs."""
    n = len(fields)
    arg_list = ", ".join(fields) + ("," if n == 1 else "")
    repr_fmt = "(" + ", ".join(f"{f}=%r" for f in fields) + ")"
    tuple_new = tuple.__new__
    new = FunctionType(_new_code(fields, f"{name}.__new__"), _NEW_GLOBALS, "__new__", defaults or None)
    new.__doc__ = f"Create new instance of {name}({arg_list})"

    def _make(cls: type, iterable: Any) -> Any:
        result: tuple[Any, ...] = tuple_new(cls, iterable)
        if len(result) != n:
            raise TypeError(f"Expected {n} arguments, got {len(result)}")
        return result

    _make.__doc__ = f"Make a new {name} object from a sequence or iterable"

    def _replace(self: Any, /, **kwds: Any) -> Any:
        result = self._make(map(kwds.pop, fields, self))
        if kwds:
            raise ValueError(f"Got unexpected field names: {list(kwds)!r}")
        return result

    _replace.__doc__ = f"Return a new {name} object replacing specified fields with new values"

    def __repr__(self: Any) -> str:
        "Return a nicely formatted representation string"
        return str(self.__class__.__name__ + repr_fmt % self)

    def _asdict(self: Any) -> dict[str, Any]:
        "Return a new dict which maps field names to their values."
        return dict(zip(self._fields, self))

    def __getnewargs__(self: Any) -> tuple[Any, ...]:
        "Return self as a plain tuple.  Used by copy and pickle."
        return tuple(self)

    for method in (_make, _replace, __repr__, _asdict, __getnewargs__):
        method.__qualname__ = f"{name}.{method.__name__}"
    body: dict[str, Any] = {
        "__doc__": f"{name}({arg_list})", "__slots__": (), "_fields": fields,
        "_field_defaults": dict(zip(fields[n - len(defaults):], defaults)) if defaults else {},
        "__new__": new, "_make": classmethod(_make), "_replace": _replace, "__repr__": __repr__,
        "_asdict": _asdict, "__getnewargs__": __getnewargs__, "__match_args__": fields,
    }
    for index, field in enumerate(fields):
        body[field] = _tuplegetter(index, sys.intern(f"Alias for field number {index}"))
    cls = type(name, (tuple,), body)
    cls.__module__ = module
    return cls


if not TYPE_CHECKING:
    class NamedTuple(metaclass=_TupleMeta):
        """The base of bootlens's typed tuples at run time (mypy sees typing.NamedTuple)."""

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
NS_PER_US = 1_000


class Clock(StrEnum):
    """The clock a time was read in."""

    HOST = "host"  # the capture host: seconds since the first byte (or power-on)
    BOOTLOADER = "bootloader"  # U-Boot's timer (bootstage marks, microseconds since reset)
    KERNEL = "kernel"  # the printk clock (local_clock, 0 when the kernel's sched_clock starts)
    UPTIME = "uptime"  # user space CLOCK_BOOTTIME, as read from /proc/uptime


class Line(NamedTuple):
    """One input line with its prefixes decoded: a view of one row of
    :class:`bootlens.core.lines.Lines`, which stores lines as columns."""

    no: int  # 1-based line number in the input, as `grep -n` counts it
    host_ns: int | None  # host capture time of the line's first byte
    kernel_ns: int | None  # printk timestamp
    text: str  # the message, host and printk prefixes and control characters removed


class Stamp(NamedTuple):
    """A point in time in one clock domain.

    Stamp, Event and the details are NamedTuples rather than frozen dataclasses: a boot has
    hundreds of thousands of them and a NamedTuple is built in half the time (measured on the
    2-core reference machine: 0.8 us against 1.6 us); both are typed and immutable.

    ``estimated`` marks a time the line did not carry itself (a user-space line without a
    timestamp, bounded by the kernel lines around it): the true time lies in
    ``[ns, ns + error_ns]``, or anywhere after ``ns`` when ``error_ns`` is None.
    """

    clock: Clock
    ns: int
    estimated: bool = False
    error_ns: int | None = 0


class Kind(StrEnum):
    """What an event is."""

    INITCALL = "initcall"
    PROBE = "probe"
    FIXUP = "fixup"  # a PCI quirk run with initcall_debug ("pci DEV: calling  quirk... took N usecs")
    PROCESS = "process"
    MARKER = "marker"
    MILESTONE = "milestone"
    BOOTLOADER = "bootloader"  # a timed step inside the bootloader (autoboot delay, image load)
    BOOTSTAGE = "bootstage"  # a row of U-Boot's bootstage report
    UNIT = "unit"  # a systemd unit's start job: activating -> active/done (a span), or a target
    # reached / socket listening with no "Starting" before it (an instant)


class Milestone(StrEnum):
    """Names of the milestones that stage boundaries are built from."""

    FIRMWARE_BANNER = "firmware_banner"
    TPL_START = "tpl_start"
    VPL_START = "vpl_start"  # U-Boot's VPL (verifying program loader, between TPL and SPL)
    SPL_START = "spl_start"
    UBOOT_START = "uboot_start"  # U-Boot proper's banner (or its bootstage "board_init_f" mark)
    # A bootloader proper that is not U-Boot (barebox, GRUB, iPXE, RedBoot, LK, an NVIDIA or
    # EcoNet boot loader, the Raspberry Pi's start.elf, systemd-analyze's EFI "loader"): the
    # boot's "bootloader" fact on the same line names it (Boot.bootloader_at).
    BOOTLOADER_START = "bootloader_start"
    AUTOBOOT = "autoboot"
    STARTING_KERNEL = "starting_kernel"
    EFI_STUB = "efi_stub"
    KERNEL_START = "kernel_start"  # "Booting Linux" / "Linux version"
    CALIBRATE_DELAY = "calibrate_delay"
    CONSOLE_ENABLED = "console_enabled"
    CLOCKSOURCE = "clocksource_switch"
    INITRD_FREED = "initrd_freed"
    ROOT_MOUNTED = "root_mounted"
    INITMEM_FREED = "initmem_freed"
    RUN_INIT = "run_init"
    NO_INITIAL_CONSOLE = "no_initial_console"  # "Warning: unable to open an initial console."
    # Kernels before 4.x and most vendor BSPs print no "Run /init": user space is seen through
    # what it prints itself (systemd[1]:, "INIT: version", BusyBox init, Android init:, ...).
    USERSPACE_FIRST = "userspace_first"  # the first line user space printed
    SYSTEMD_START = "systemd_start"  # the system manager of the root file system started
    # ("systemd 252 running in system mode", userspace_timestamp): systemd-analyze's kernel ends here
    STARTUP_FINISHED = "startup_finished"  # "Startup finished in ...": every boot job done
    LOGIN_PROMPT = "login_prompt"  # "login:" or "Please press Enter to activate this console."
    KERNEL_PANIC = "kernel_panic"
    POWER_ON = "power_on"  # a logic analyzer's power-rail (or reset) edge: hardware t=0


# The start of the bootloader proper, whichever it is: the bootloader stage opens at the first seen.
BOOTLOADER_STARTS = (Milestone.UBOOT_START, Milestone.BOOTLOADER_START)

READY = "ready"  # the user marker name that means "application ready"

# A log whose first printk time is past this and that has no "Linux version" starts mid-boot (a
# cut ring buffer, a fragment). Early boot lines are stamped 0.000000 until sched_clock runs, and
# a normal boot's console handover or a quiet kernel's first warning comes well under it.
CUT_START_NS = NS_PER_S


class InitcallDetail(NamedTuple):
    """What initcall_debug says about one initcall."""

    pid: int | None  # the thread that ran it (1 for the main init thread; others are async)
    module: str | None  # "[sd_mod]" for module init functions
    ret: int | None  # return value; None when it never returned before the log ended, or when the
    # source shows no return value (a function_graph trace: returned True, ret None)
    returned: bool

    @property
    def outcome(self) -> str:
        """How it ended, as the report says it: "returned 0", "returned" (no value shown), "never returned"."""
        if not self.returned:
            return "never returned"
        return "returned" if self.ret is None else f"returned {self.ret}"


class ProbeDetail(NamedTuple):
    """What the driver core's probe debug line says about one device probe."""

    device: str
    driver: str | None
    ret: int


class ProcessDetail(NamedTuple):
    """A process seen through sched_process_fork/exec/exit trace events."""

    pid: int
    ppid: int | None
    comm: str
    exe: str | None  # the last exec'd filename
    kthread: bool
    exec_ns: int | None  # time from fork to exec, in the event's clock
    exited: bool
    forks: int  # children this process forked


class LoadDetail(NamedTuple):
    """A bootloader image load: ``N bytes read in M ms (X MiB/s)``."""

    size_bytes: int
    rate: str | None


# How sure a figure is (a stage's evidence, a unit's duration): read between two lines' own times,
# at most or at least what it reads, an interval or a guess; or not measured at all.
EXACT = "exact"
UPPER = "upper bound"
LOWER = "lower bound"
ESTIMATE = "estimate"
NOT_MEASURED = "not measured"


class UnitDetail(NamedTuple):
    """What systemd says about one unit's start job.

    ``unit`` is the unit's file name ("systemd-udevd.service") when the log gives it (the journal's
    UNIT field, systemd >= 250's "name - description" status text, systemd-analyze), else None and
    the event's name is the description systemd printed ("Journal Service"); ``description`` is
    that text, "" when unknown. ``result`` is systemd's JOB_RESULT word: "done", "failed",
    "timeout", "dependency", "skipped", "canceled", "assert", or "" while the job had not finished when
    the log ended. ``source`` says what the times rest on: "console" (status lines, host or
    printk time), "journal", "kmsg" (systemd[1]: lines in a dmesg) or "systemd-analyze"; "kmsg+console"
    when kmsg saw the job begin and only the console its end (journald took systemd's log over).

    ``duration_bound`` says how the event's duration was read: "exact" between two lines with a
    time of their own (an instant, no begin line, is "exact" too, its duration None); "estimate"
    for a job with one end on a line without a time of its own (a console status line between
    printk lines): the duration lies in ``[duration_ns, duration_ns + duration_error_ns]`` (None:
    unbounded above); "not measured" for a job seen to begin and end whose two lines both have no
    time of their own (``duration_ns`` None: the two estimates rest on the same kernel lines, their
    difference is no measurement).
    """

    unit: str | None
    description: str
    result: str
    source: str
    duration_bound: str = EXACT
    duration_error_ns: int | None = 0


class LogicDetail(NamedTuple):
    """An edge of a logic analyzer channel (:mod:`bootlens.sources.logic.align`): no console line
    holds it (the event's line is 0)."""

    channel: str
    edge: str  # "rise" or "fall"
    role: str  # "power", "reset", "ready", "marker" or "align"
    capture_ns: int  # the edge's time in the capture (ns since its first sample)


Detail = InitcallDetail | ProbeDetail | ProcessDetail | LoadDetail | UnitDetail | LogicDetail


def unit_text(name: str, detail: object) -> str:
    """What the console printed of a unit whose name it cut and bootlens could not complete
    (name "systemd-tmpfiles-setup-de…", description "…Create Static Device Nodes in /dev"): the
    name and the description as one text, for matching against unit files and a dump's names
    ("name - description" starts and ends like it); ``name`` itself otherwise."""
    if "…" not in name or not isinstance(detail, UnitDetail) or detail.unit or not detail.description:
        return name
    d = detail.description  # "…Create ..." (the description's end) or a whole one after both ends of the name
    return name + d[1:] if d.startswith("…") and name.endswith("…") else f"{name} - {d}"


class Event(NamedTuple):
    """A span (``duration_ns`` set) or an instant (``duration_ns`` None) read from the log.

    ``start`` is None when the line carried no time at all; ``line_no`` is where the event
    starts in the input, ``end_line_no`` where it ends (an initcall's ``returned`` line).
    """

    kind: Kind
    name: str
    start: Stamp | None
    duration_ns: int | None
    line_no: int
    end_line_no: int | None = None
    detail: Detail | None = None


# The kinds the native scans keep as rows of a block (the initcall scan's, the process trace's),
# by their code in native/src/events.rs.
BLOCK_KINDS = {Kind.INITCALL: 0, Kind.PROBE: 1, Kind.FIXUP: 2, Kind.PROCESS: 3}
# What a block builds its rows' Event objects from (events.rs Types), in this order.
BLOCK_TYPES = (Event, Stamp, InitcallDetail, ProbeDetail, Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Clock.KERNEL,
               Clock.HOST, ProcessDetail, Kind.PROCESS)


def _is_kthread(e: Event, kthread: bool | None) -> bool:
    """Whether ``e`` passes a ``kthread`` filter: None all; True a kernel thread's process event,
    False one with a detail that is not (an event without a detail is neither)."""
    if kthread is None:
        return True
    d = e.detail
    return d is not None and bool(getattr(d, "kthread", False)) == kthread


class Events(Sequence[Event]):
    """A boot's events in line order, to every reader a ``Sequence[Event]`` like a tuple.

    The initcall, probe and fixup rows of the native scan stay columns in a native block
    (``bootlens._scan.EventBlock``, native/src/events.rs: 42 bytes a row where an Event with its
    Stamp costs ~500) beside the boot's other events; an Event is built when one is asked for,
    equal to the one the scan would have built. The passes over every event that analyze and
    the JSON writer make (:meth:`count`, :meth:`top`, :meth:`of_kind`, axis times, the JSON of the
    initcalls) run over the columns. The process events of the sched_process trace are rows too
    (kind 3, step 24b). Without a block (``Events.of(tuple)``) it wraps a tuple
    and the same methods are plain Python.
    """

    __slots__ = ("_block", "_items", "_groups")

    def __init__(self, block: Any = None, items: tuple[Event, ...] = ()) -> None:
        self._block = block
        self._items = items  # the events, when there is no block
        self._groups: dict[Kind, list[tuple[int, Event]]] | None = None

    @staticmethod
    def of(events: Sequence[Event]) -> Events:
        """``events`` as an Events (itself when it is one)."""
        return events if isinstance(events, Events) else Events(None, tuple(events))

    @property
    def block(self) -> Any:
        """The native EventBlock, or None."""
        return self._block

    def __len__(self) -> int:
        return len(self._block) if self._block is not None else len(self._items)

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Event, ...]: ...

    def __getitem__(self, i: int | slice) -> Event | tuple[Event, ...]:
        src = self._block if self._block is not None else self._items
        out: Event | tuple[Event, ...] = src[i]
        return out

    def __iter__(self) -> Iterator[Event]:
        return iter(self._block if self._block is not None else self._items)

    def __add__(self, other: Sequence[Event]) -> Events:
        """Concatenation, as a tuple's: ``other`` after these events."""
        if not other:
            return self
        if self._block is None:
            return Events(None, self._items + tuple(other))
        return Events(self._block.appended(list(other)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Events, tuple, list)) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Events({len(self)} events)"

    def _others(self) -> dict[Kind, list[tuple[int, Event]]]:
        """The events outside the block (all of them without one) by kind, with positions."""
        if self._groups is None:
            groups: dict[Kind, list[tuple[int, Event]]] = {}
            if self._block is None:
                pairs: Iterator[tuple[int, Event]] = enumerate(self._items)
            else:
                pairs = zip(self._block.other_positions(), self._block.others())
            for i, e in pairs:
                groups.setdefault(e.kind, []).append((i, e))
            self._groups = groups
        return self._groups

    def others_of(self, kind: Kind) -> list[tuple[int, Event]]:
        """(position, event) of the events of one kind that are not rows of the block (all of
        them without a block), in order."""
        return list(self._others().get(kind, ()))

    def positions(self, kind: Kind, kthread: bool | None = None) -> list[int]:
        """The positions of the events of one kind (``kthread``: as :meth:`count`), ascending,
        no Event built for a row."""
        others = [i for i, e in self._others().get(kind, ()) if _is_kthread(e, kthread)]
        code = BLOCK_KINDS.get(kind)
        if self._block is None or code is None:
            return others
        rows: list[int] = self._block.positions(code, kthread)
        return sorted(rows + others) if others else rows

    def located(self, kind: Kind) -> list[tuple[int, Event]]:
        """(position, event) of the events of one kind, in order: the block's position column
        for its kinds and the other events grouped by kind, so no Event is built for a row of
        another kind."""
        others = self._others().get(kind, [])
        code = BLOCK_KINDS.get(kind)
        if self._block is None or code is None or not self._block.count(code):
            return list(others)
        at = sorted(list(self._block.positions(code)) + [i for i, _ in others])
        return list(zip(at, self._block.events_at(at)))

    def of_kind(self, kind: Kind) -> list[Event]:
        """The events of one kind, in order."""
        return [e for _, e in self.located(kind)]

    def count(self, kind: Kind, timed: bool | None = None, kthread: bool | None = None) -> int:
        """How many events of this kind; ``timed``: only those with (True) or without (False) a
        duration; ``kthread``: only kernel threads' process events (True), or only events with a
        detail that are not (False: the user processes)."""
        n = sum(1 for _, e in self._others().get(kind, ())
                if (timed is None or (e.duration_ns is not None) == timed) and _is_kthread(e, kthread))
        code = BLOCK_KINDS.get(kind)
        if self._block is not None and code is not None:
            n += self._block.count(code, timed, kthread)
        return int(n)

    def top(self, kind: Kind, n: int, kthread: bool | None = None) -> tuple[Event, ...]:
        """The n longest events of this kind (``kthread``: as :meth:`count`), longest first, ties
        to the earlier one."""
        # as analyze's nlargest over durations (None and negative ones left out)
        best: list[tuple[int, int]] = [(-e.duration_ns, i) for i, e in self._others().get(kind, ())
                                       if e.duration_ns is not None and e.duration_ns >= 0 and _is_kthread(e, kthread)]
        code = BLOCK_KINDS.get(kind)
        if self._block is not None and code is not None:
            best += [(-d, i) for d, i in self._block.top(code, n, kthread)]
        best.sort()
        return tuple(self[i] for _, i in best[:n])


EventSeq = Events | tuple[Event, ...]  # what Boot.events and ParseResult.events hold


# NamedTuples, not frozen dataclasses (start-up: a dataclass costs ~1.3 ms to build at import, a
# NamedTuple ~0.3 ms; both typed and immutable; copies are made with ._replace). Boot and
# InputStats are _Records (copied with .replace()): no dataclass is left on analyze's path
class Fact(NamedTuple):
    """A value read from the log that is not a time: kernel version, command line, lpj."""

    key: str
    value: str
    line_no: int


class ParseResult(NamedTuple):
    """What one parser found in one boot."""

    events: EventSeq = ()
    facts: tuple[Fact, ...] = ()
    warnings: tuple[str, ...] = ()


class _Record:
    """The base of :class:`Boot` and :class:`InputStats`: what ``@dataclass(frozen=True,
    slots=True)`` gave them (immutable, slotted, compared, hashed and shown by their fields in
    declaration order, copied with changes by :meth:`replace`) without importing dataclasses,
    which brings inspect, ast and dis: ~8 ms of a small log's start-up (docs/performance.md,
    step 18). A subclass declares its fields once, as annotations (what mypy reads; ``__slots__``
    is made from them), and an ``__init__`` taking them in that order that calls :meth:`_fill`."""

    __slots__: tuple[str, ...] = ()

    def _fill(self, values: dict[str, Any]) -> None:
        """Set every field from ``values`` (the ``__init__``'s ``locals()``)."""
        for name in self.__slots__:
            object.__setattr__(self, name, values[name])

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (field name -> value), as ``dataclasses.replace`` made one."""
        values = {name: getattr(self, name) for name in self.__slots__}
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        return type(self)(**values)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of an immutable {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of an immutable {type(self).__name__}")

    def __getstate__(self) -> tuple[Any, ...]:  # pickle and copy: past the __setattr__ above
        return self._values()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(self.__slots__, state):
            object.__setattr__(self, name, value)


class Boot(_Record):
    """One boot cut out of an input: its lines and everything the parsers found in them."""

    source: str
    index: int  # 0-based position of this boot in its input
    lines: Lines
    events: EventSeq  # in line order (an Events when the initcall scan found rows)
    facts: tuple[Fact, ...]
    warnings: tuple[str, ...]
    formats: tuple[str, ...]  # parsers that recognised something, best first
    split_reason: str
    __slots__ = tuple(__annotations__)

    def __init__(self, source: str, index: int, lines: Lines, events: EventSeq = (), facts: tuple[Fact, ...] = (),
                 warnings: tuple[str, ...] = (), formats: tuple[str, ...] = (),
                 split_reason: str = "start of input") -> None:
        self._fill(locals())

    @property
    def first_line(self) -> int:
        """Input line number of the boot's first line."""
        return self.lines.first if len(self.lines) else 0

    @property
    def last_line(self) -> int:
        """Input line number of the boot's last line."""
        return self.lines.first + len(self.lines) - 1 if len(self.lines) else 0

    def fact(self, key: str) -> Fact | None:
        """The first fact with this key, or None."""
        for f in self.facts:
            if f.key == key:
                return f
        return None

    def bootloader_at(self, line_no: int) -> str | None:
        """The bootloader proper whose start is on ``line_no`` (its banner's "bootloader" fact),
        else the boot's first one named, else None: what a ``bootloader_start`` is called."""
        named = [f for f in self.facts if f.key == "bootloader"]
        return next((f.value for f in named if f.line_no == line_no), named[0].value if named else None)


class InputStats(_Record):
    """How clean an input was: every oddity is counted, none is fatal."""

    source: str
    bytes: int
    lines: int
    framing: str  # "grabserial-t", "grabserial-T", "journalctl", "journalctl-short", "lava", "dmesg-T",
    # "dmesg-x", "journal-json", "journal-export" or "plain"
    invalid_utf8: int  # undecodable byte sequences, replaced by U+FFFD
    nul_bytes: int
    control_chars: int  # other control characters and ANSI sequences removed
    long_lines: int  # lines over LONG_LINE characters (kept, but clipped in evidence)
    garbled_lines: int  # lines that look like noise (wrong baud rate)
    no_final_newline: bool
    cr_only: bool  # the input used bare CR as line terminator
    warnings: tuple[str, ...]
    host_origin: str  # host t=0: "first_byte", or "power_on" for a capture that released the target itself
    __slots__ = tuple(__annotations__)

    def __init__(self, source: str, bytes: int, lines: int, framing: str, invalid_utf8: int = 0,
                 nul_bytes: int = 0, control_chars: int = 0, long_lines: int = 0, garbled_lines: int = 0,
                 no_final_newline: bool = False, cr_only: bool = False, warnings: tuple[str, ...] = (),
                 host_origin: str = "first_byte") -> None:
        self._fill(locals())
