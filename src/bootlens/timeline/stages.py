"""Splitting a boot into stages from its milestones.

Top-level stages follow each other on the axis: firmware, SPL, bootloader, kernel load,
kernel init, user space; the boot ends at the ``ready`` marker. Kernel init has sub-stages when
initcall_debug is on: early init (clock start to the first initcall), initcalls, and the late
part (root mount, freeing init memory) up to ``Run /init``.

A stage whose boundaries were not both seen is "not measured" (duration None), never guessed;
SPL is "absent" when no SPL banner was seen, since many boards have none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .align import Alignment
from ..core.model import NS_PER_S, READY, Boot, Clock, Event, Events, Kind, Milestone, NamedTuple, Stamp

MEASURED = "measured"
NOT_MEASURED = "not measured"
ABSENT = "absent"


# NamedTuples, not frozen dataclasses (start-up: a dataclass costs ~1.3 ms to build at import, a
# NamedTuple ~0.3 ms; both typed and immutable; copies are made with ._replace)
class Point(NamedTuple):
    """A stage boundary: axis time (None if unknown) and the line it comes from."""

    ns: int | None
    line_no: int | None
    what: str
    estimated: bool = False  # the line had no time of its own (see lines.estimate_stamp)
    error_ns: int | None = 0  # for an estimate: true time in [ns, ns + error_ns]; None = unbounded


class Stage(NamedTuple):
    """One stage of the boot on the axis."""

    name: str
    label: str
    parent: str | None
    start_ns: int | None
    duration_ns: int | None
    status: str  # MEASURED, NOT_MEASURED or ABSENT
    start: Point | None
    end: Point | None

    @property
    def estimated(self) -> bool:
        """True when a boundary comes from a line without a time of its own."""
        return bool((self.start and self.start.estimated) or (self.end and self.end.estimated))

    @property
    def end_ns(self) -> int | None:
        """Axis time the stage ends, or None."""
        if self.start_ns is None or self.duration_ns is None:
            return None
        return self.start_ns + self.duration_ns


class Total(NamedTuple):
    """The headline: from the axis origin (or power-on) to application ready."""

    origin: str  # "power-on", "first byte", "kernel start"
    start_ns: int
    end_ns: int | None
    end: str  # what ended it: "ready marker at line N" or why it is unknown
    estimated: bool = False
    error_ns: int | None = 0  # for an estimated end: it lies in [end_ns, end_ns + error_ns]
    end_name: str = READY  # "ready" (the ready marker) or "login prompt" when no marker was given
    notes: tuple[str, ...] = ()  # why a stage or the total is not what its lines alone would give (warnings)

    @property
    def duration_ns(self) -> int | None:
        """Total boot time, or None without a ready marker."""
        return None if self.end_ns is None else self.end_ns - self.start_ns


def _point(firsts: dict[tuple[Kind, str], Event], al: Alignment, name: str,
           kind: Kind = Kind.MILESTONE) -> Point | None:
    e = firsts.get((kind, name))
    if e is None:
        return None
    ns = al.to_axis(e.start)
    est = e.start is not None and e.start.estimated
    return Point(ns, e.line_no, name, est, e.start.error_ns if e.start is not None and est else 0)


def compute_stages(boot: Boot, al: Alignment, times: Sequence[int | None] | None = None,
                   ready_given: bool = False) -> tuple[tuple[Stage, ...], Total]:
    """Stages and the headline total of one boot (``times``: al.times(boot.events), if known).
    ``ready_given``: a ready marker was asked for, so that the boot ends there or has no total
    (without one, a login prompt ends it)."""
    firsts: dict[tuple[Kind, str], Event] = {}
    events = Events.of(boot.events)
    for kind in (Kind.MILESTONE, Kind.MARKER):  # the first of each name: the kinds apart is the same
        for e in events.of_kind(kind):
            firsts.setdefault((e.kind, e.name), e)
    kstart_ev = _point(firsts, al, Milestone.KERNEL_START)
    # Kernel init ends when init is exec'd: "Run /init" where the kernel prints it (4.x+), else
    # free_initmem's "Freeing ... memory" or the initial-console warning, both printed by
    # kernel_init right before it execs init.
    # A journal whose kernel lines were cut still shows systemd starting: kernel init lasts
    # until then (systemd-analyze's "kernel" does the same).
    systemd_start = _point(firsts, al, Milestone.SYSTEMD_START)
    run_init = (_point(firsts, al, Milestone.RUN_INIT) or _point(firsts, al, Milestone.INITMEM_FREED)
                or _point(firsts, al, Milestone.NO_INITIAL_CONSOLE) or systemd_start)
    ready = _point(firsts, al, READY, Kind.MARKER)
    login = _point(firsts, al, Milestone.LOGIN_PROMPT)
    finished = _point(firsts, al, Milestone.STARTUP_FINISHED)

    has_kernel = kstart_ev is not None or boot.lines.has_kernel_time(5000)
    k0_ns = al.to_axis(Stamp(Clock.KERNEL, 0)) if has_kernel else None
    # Without its "Linux version" line (a cut ring buffer, a fragment) the kernel still started at
    # its printk clock's zero, so kernel init up to a later milestone is measured on that clock;
    # what needs the first lines (early init before the first initcall) is not.
    k0 = Point(k0_ns, kstart_ev.line_no if kstart_ev else None, "kernel clock start") if has_kernel else None
    if (k0 is None or k0.ns is None) and kstart_ev is not None and kstart_ev.ns is not None:
        # no printk times (printk.time=0) but a host-stamped capture: the kernel's first line
        # arrived when the kernel had started, give or take the console's delay
        k0 = kstart_ev
    notes: list[str] = []
    handoff = _point(firsts, al, Milestone.STARTING_KERNEL)
    if k0 is not None and k0.ns is not None and kstart_ev is not None and kstart_ev.ns is not None \
            and handoff is not None and handoff.ns is not None and k0.ns < handoff.ns <= kstart_ev.ns:
        # the printk clock did not start with this kernel (an arch timer counting from power-on,
        # a kexec): its zero would put kernel init before the bootloader handed over
        notes.append(f"the printk clock's zero falls at {k0.ns / NS_PER_S:.6f} s, before the hand-over to the "
                     f"kernel at line {handoff.line_no} ({handoff.ns / NS_PER_S:.6f} s): it did not start with this "
                     f"kernel; kernel init is measured from the kernel's first line ({kstart_ev.line_no})")
        k0 = kstart_ev
    power = Point(al.power_on_ns, None, "power-on") if al.power_on_ns is not None else None

    # A capture whose times are whole seconds (journalctl's short format, dmesg -T): a span shorter
    # than a second between two of them is below the clock's resolution, not measured ("0 ns"
    # would be a figure the log does not give)
    whole = _whole_seconds(boot, al)

    def span(name: str, label: str, a: Point | None, b: Point | None, parent: str | None = None,
             absent_ok: bool = False) -> Stage:
        if a is not None and b is not None and a.ns is not None and b.ns is not None and b.ns >= a.ns \
                and not (whole and b.ns - a.ns < NS_PER_S):
            return Stage(name, label, parent, a.ns, b.ns - a.ns, MEASURED, a, b)
        status = ABSENT if absent_ok else NOT_MEASURED
        start_ns = a.ns if a is not None else None
        return Stage(name, label, parent, start_ns, None, status, a, b)

    # firmware, TPL, SPL, bootloader and kernel load (imported here: prekernel builds on Stage)
    from .prekernel import prekernel_stages

    stages: list[Stage] = prekernel_stages(boot, al, power, k0)
    ki = span("kernel_init", "kernel init", k0, run_init)
    if ki.status != MEASURED and kstart_ev is None:
        ki = ki._replace(start_ns=None)  # neither end seen: a cut log shows no start either
    stages.append(ki)

    if times is None:
        times = al.times(events)
    if k0 is not None and kstart_ev is not None:
        limit = run_init.ns if run_init is not None and run_init.ns is not None else None
        bounds = _initcall_bounds(events, times, limit)
        if bounds is not None:
            first = Point(bounds[0], bounds[1], "first initcall")
            last = Point(bounds[2], bounds[3], "last initcall returned")
            stages.append(span("kernel_early", "early init (before initcalls)", k0, first, "kernel_init"))
            stages.append(span("initcalls", "initcalls", first, last, "kernel_init"))
            stages.append(span("kernel_late", "root mount, free init memory", last, run_init, "kernel_init"))
    # Without a ready marker, systemd's "Startup finished" (every boot job done) ends the boot,
    # else the login prompt, as far as the log can tell.
    end = ready or finished or login
    stages.append(span("userspace", "init and user space", run_init, end))
    root = _point(firsts, al, Milestone.ROOT_MOUNTED)
    stages.extend(_systemd_stages(run_init, systemd_start, finished, ready, span, root))

    if al.power_on_ns is not None:
        origin, start = "power-on", al.power_on_ns
    elif al.axis is Clock.HOST:
        origin, start = "first byte", 0
    else:
        origin, start = "kernel start", 0
    if ready is not None and ready.ns is not None:
        # line 0: a logic analyzer's ready channel (logic_align), no console line
        at = f"at line {ready.line_no}" if ready.line_no else "from the logic analyzer"
        total = Total(origin, start, ready.ns, f"ready marker {at}", ready.estimated,
                      ready.error_ns)
    elif ready is not None:
        total = Total(origin, start, None, f"ready marker at line {ready.line_no} has no time on this axis")
    elif ready_given:
        total = Total(origin, start, None, "the ready marker was not seen")
    elif finished is not None and finished.ns is not None:
        total = Total(origin, start, finished.ns, f"systemd's Startup finished at line {finished.line_no}; no ready "
                      "marker (--marker ready=REGEX to choose)", finished.estimated, finished.error_ns,
                      "startup finished")
    elif login is not None and login.ns is not None:
        total = Total(origin, start, login.ns, f"login prompt at line {login.line_no}; no ready marker "
                      "(--marker ready=REGEX to choose)", login.estimated, login.error_ns, "login prompt")
    else:
        total = Total(origin, start, None, "no ready marker (use --marker ready=REGEX)")
    if total.end_ns is not None and total.end_ns < total.start_ns:
        notes.append(f"the boot's end ({total.end}) falls at {total.end_ns / NS_PER_S:.6f} s, before its start "
                     f"({total.origin}): the clocks disagree, the total is not measured")
        total = Total(origin, start, None, f"{total.end}, before the {total.origin} on this axis")
    notes += _disorder(stages, total)
    return tuple(stages), total._replace(notes=tuple(notes))


def _disorder(stages: Sequence[Stage], total: Total) -> list[str]:
    """What breaks the order of the top-level stages on the axis: one that starts before the
    previous one ends, or lies outside the total. Each comes from its own lines, so a disorder is
    clocks that disagree (say so; the figures stay those of the lines)."""
    out: list[str] = []
    prev: Stage | None = None
    for st in stages:
        if st.parent is not None or st.status != MEASURED or st.start_ns is None or st.end_ns is None:
            continue
        if st.start_ns < total.start_ns or (total.end_ns is not None and st.end_ns > total.end_ns):
            out.append(f"{st.label} ({st.start_ns / NS_PER_S:.6f} s to {st.end_ns / NS_PER_S:.6f} s) lies outside the "
                       f"total ({total.start_ns / NS_PER_S:.6f} s to "
                       f"{'?' if total.end_ns is None else f'{total.end_ns / NS_PER_S:.6f}'} s): their clocks disagree")
        elif prev is not None and prev.end_ns is not None and st.start_ns < prev.end_ns:
            out.append(f"{st.label} starts at {st.start_ns / NS_PER_S:.6f} s, before {prev.label} ends at "
                       f"{prev.end_ns / NS_PER_S:.6f} s: their clocks disagree")
        prev = st
    return out


def _initcall_bounds(events: Events, times: Sequence[int | None],
                     limit: int | None) -> tuple[int, int, int, int] | None:
    """(first start, its line, last end at most ``limit``, its line) of the initcalls placed on
    the axis, or None when no returned one ends by ``limit``: the earliest line among equal
    starts, the largest end line among equal ends. Over the block's columns when every initcall
    is a row of it (native/src/events.rs initcall_span, the same rule)."""
    block = events.block
    if block is not None and not events.count(Kind.INITCALL) - block.count(0):
        found: tuple[int, int, int, int] | None = block.initcall_span(times, limit)
        return found
    initcall = Kind.INITCALL
    placed = [(t, e) for e, t in zip(events, times) if t is not None and e.kind is initcall]
    if not placed:
        return None
    starts = [t for t, _ in placed]
    first_t = min(starts)
    first_ev = placed[starts.index(first_t)][1]  # the earliest line among equal starts
    ends = [t + e.duration_ns for t, e in placed if e.duration_ns is not None]
    ok = ends if limit is None else [x for x in ends if x <= limit]
    if not ok:
        return None
    last_end = max(ok)
    returned = [e for _, e in placed if e.duration_ns is not None]
    last_line = max((e.end_line_no or e.line_no) for e, x in zip(returned, ends) if x == last_end)
    return first_t, first_ev.line_no, last_end, last_line


def _systemd_stages(run_init: Point | None, systemd_start: Point | None, finished: Point | None,
                    ready: Point | None, span: Callable[..., Stage], root: Point | None = None) -> list[Stage]:
    """User space under systemd, in systemd-analyze's terms: the initramfs before the root's
    systemd (systemd-analyze counts it as "kernel"), systemd's own start-up up to "Startup
    finished" (its "userspace"), and the application after it, up to the ready marker.

    ``root``: where the kernel said it mounted the root itself ("VFS: Mounted root"). Then no
    initramfs ran: the kernel exec'd the root's init, and the span up to systemd's first line is
    the init binary loading from the root device, not an initramfs."""
    out: list[Stage] = []
    if systemd_start is None or systemd_start.ns is None:
        return out
    if run_init is not None and run_init.ns is not None and systemd_start.ns > run_init.ns \
            and run_init.what != Milestone.SYSTEMD_START:
        if root is not None and root.line_no is not None and run_init.line_no is not None \
                and root.line_no <= run_init.line_no:
            out.append(span("init_start", "init's start, before systemd's first line", run_init, systemd_start,
                            "userspace"))
        else:
            out.append(span("initramfs", "initramfs, before the root's systemd", run_init, systemd_start,
                            "userspace"))
    if finished is not None:
        out.append(span("systemd", "systemd start-up (to Startup finished)", systemd_start, finished, "userspace"))
        if ready is not None and ready.ns is not None and finished.ns is not None and ready.ns > finished.ns:
            out.append(span("application", "after Startup finished, to ready", finished, ready, "userspace"))
    elif ready is not None:
        out.append(span("systemd", "systemd start-up (to ready)", systemd_start, ready, "userspace"))
    return out


def _whole_seconds(boot: Boot, al: Alignment) -> bool:
    """True when every time of the boot's axis clock is a whole second, one at least not zero:
    journalctl's short format (host times), dmesg -T (read as printk times), both 1 s resolution.
    The first time that is not whole ends the scan."""
    if al.power_on_ns is not None:
        return False
    col = boot.lines.host if al.axis is Clock.HOST else boot.lines.kernel
    nonzero = False
    for t in col:
        if t:
            if t % NS_PER_S:
                return False
            nonzero = True
    return nonzero
