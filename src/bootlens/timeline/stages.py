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
from itertools import islice

from .align import USERSPACE_START, Alignment
from ..sources.systemd_analyze import ALONE as SYSTEMD_ALONE
from ..core.ticks import tick_of
from ..core.model import NS_PER_MS, NS_PER_S, READY, Boot, Clock, Event, Events, Kind, Milestone, NamedTuple, Stamp
# how sure a figure is: core.model's words (a unit's duration uses them too), re-exported here with
# a stage's status
from ..core.model import ESTIMATE as ESTIMATE, EXACT as EXACT, LOWER as LOWER, NOT_MEASURED as NOT_MEASURED
from ..core.model import UPPER as UPPER

MEASURED = "measured"
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
    clock: Clock | None = None  # the clock its time was read on; None: derived (power-on)
    upper: bool = False  # the true time is at most ns (e.g. a kernel start seen only by a late line)




class Evidence(NamedTuple):
    """How sure a duration is: the true value lies in ``[low_ns, high_ns]`` (None: no limit
    known on that side), give or take ``tick_ns``, the resolution of the clocks it was read on.
    ``kind`` sums it up: EXACT (both ends read on their lines' own times), UPPER (the figure is
    at most this: an end is bounded from one side only), LOWER (at least this), ESTIMATE (a range,
    or no limit either way)."""

    kind: str
    low_ns: int | None
    high_ns: int | None
    tick_ns: int
    clocks: tuple[str, ...]  # the clocks of its ends ("host", "kernel", "bootloader", "derived")
    start: Point | None = None  # the boundaries it rests on
    end: Point | None = None


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
    evidence: Evidence | None = None  # how sure the duration is (timeline.evidence), once computed

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
    evidence: Evidence | None = None  # how sure the duration is, and the two lines it rests on
    notes: tuple[str, ...] = ()  # why a stage or the total is not what its lines alone would give (warnings)

    @property
    def duration_ns(self) -> int | None:
        """Total boot time, or None without a ready marker."""
        return None if self.end_ns is None else self.end_ns - self.start_ns


def point_of(e: Event, al: Alignment, name: str | None = None) -> Point:
    """An event's start as a stage boundary: its axis time, line, clock, and whether it is an
    estimate (a line without a time of its own) or an upper bound (a clock mapped through a
    report read after the fact: :attr:`Anchor.upper`)."""
    st = e.start
    est = st is not None and st.estimated
    upper = st is not None and al.upper(st.clock)
    return Point(al.to_axis(st), e.line_no, name or e.name, est, st.error_ns if st is not None and est else 0,
                 st.clock if st is not None else None, upper)


def _offsets(p: Point, cancel: bool) -> tuple[int | None, int | None]:
    """Where the true time may lie around ``p.ns``: (lowest, highest) offset, None = unbounded.
    ``cancel``: both ends were read on one clock mapped onto the axis, so that mapping's slack
    cancels."""
    lo: int | None = 0 if cancel or not p.upper else None
    hi: int | None = (p.error_ns if p.estimated else 0)
    return lo, hi


def evidence(duration_ns: int | None, a: Point | None, b: Point | None, ticks: dict[Clock, int]) -> Evidence | None:
    """The evidence of a span from ``a`` to ``b`` lasting ``duration_ns``; None when not measured.

    A span whose ends' axis times do not give its duration was read on an own timer (a
    bootloader's clock: bootstage, LK's ms, a preloader's step timers), exact on that clock."""
    if duration_ns is None or a is None or b is None:
        return None
    if a.ns is None or b.ns is None or b.ns - a.ns != duration_ns:
        tick = ticks.get(Clock.BOOTLOADER, 1_000)
        return Evidence(EXACT, duration_ns, duration_ns, tick, (Clock.BOOTLOADER.value,), a, b)
    # An upper bound on a mapped clock (the kernel's or a bootloader's, placed through an anchor)
    # is the mapping's: a span read on that one clock does not move with it. On the host's clock
    # an upper bound is a line's own (it arrived, or was imported, after the fact): no cancelling.
    same = a.clock is not None and a.clock is b.clock and a.clock is not Clock.HOST
    a_lo, a_hi = _offsets(a, same)
    b_lo, b_hi = _offsets(b, same)
    # true duration = (b.ns + db) - (a.ns + da), db in [b_lo, b_hi], da in [a_lo, a_hi]
    low = None if b_lo is None or a_hi is None else duration_ns + b_lo - a_hi
    high = None if b_hi is None or a_lo is None else duration_ns + b_hi - a_lo
    if low == high == duration_ns:
        kind = EXACT
    elif high == duration_ns:
        kind = UPPER
    elif low == duration_ns:
        kind = LOWER
    else:
        kind = ESTIMATE
    clocks = tuple(p.clock.value if p.clock is not None else "derived" for p in (a, b))
    ta, tb = (ticks.get(p.clock, 1_000) if p.clock is not None else 0 for p in (a, b))
    tick = max(ta, tb) if a.clock is b.clock else ta + tb
    return Evidence(kind, max(low, 0) if low is not None else None, high, tick, clocks, a, b)


_TICK_SAMPLE = 4096  # a clock's first times show its step (a 1M-line log is not walked for it)


_TICK_ENOUGH = 8  # fewer times than this can sit on a coarse step by chance (a hand-made excerpt)


def _tick(values: Sequence[int | None]) -> int:
    """core.ticks.tick_of over the first non-zero times; 1 µs (a printed stamp's usual step)
    where they are too few to say."""
    if len(values) < _TICK_ENOUGH:  # a short boot (a log of a million one-line boots: ~4% of its time)
        return 1_000
    first = list(islice((v for v in values if v), _TICK_SAMPLE))
    return (tick_of(first) or 1_000) if len(first) >= _TICK_ENOUGH else 1_000


def clock_ticks(boot: Boot) -> dict[Clock, int]:
    """Each clock's resolution in this boot (core.ticks.tick_of over its first times)."""
    lines = boot.lines
    events = Events.of(boot.events)
    bl = [e.start.ns for e in events.of_kind(Kind.BOOTSTAGE) if e.start is not None]
    bl += [e.start.ns for e in events.of_kind(Kind.MILESTONE) if e.start is not None and e.start.clock is Clock.BOOTLOADER]
    if boot.split_reason == SYSTEMD_ALONE:
        # systemd's own figures (systemd-analyze time, a plot's heading, on its monotonic clock; the
        # firmware's and loader's on the firmware's): each printed to the ms (format_timespan with
        # an accuracy of 1 ms), so every boundary placed from them is known to the ms
        return {Clock.KERNEL: NS_PER_MS, Clock.HOST: NS_PER_MS, Clock.BOOTLOADER: NS_PER_MS, Clock.UPTIME: NS_PER_MS}
    return {Clock.KERNEL: _tick(lines.kernel), Clock.HOST: _tick(lines.host), Clock.BOOTLOADER: _tick(bl),
            Clock.UPTIME: 10_000_000}  # /proc/uptime prints hundredths of a second


def _point(firsts: dict[tuple[Kind, str], Event], al: Alignment, name: str,
           kind: Kind = Kind.MILESTONE) -> Point | None:
    e = firsts.get((kind, name))
    return None if e is None else point_of(e, al, name)


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
    # on the host's axis the printk clock's zero is placed through the lower envelope of the lines'
    # arrivals: the kernel started there at the latest (an upper bound, with no line of its own)
    k0 = Point(k0_ns, kstart_ev.line_no if kstart_ev else None, "kernel clock start", clock=Clock.KERNEL,
               upper=al.axis is Clock.HOST) if has_kernel else None
    if kstart_ev is not None and kstart_ev.ns is not None and kstart_ev.clock is Clock.KERNEL \
            and not kstart_ev.estimated:
        # Kernel init starts at the kernel's first line, whatever its printk clock reads there: many
        # vendor kernels (Rockchip, Android-derived, arm64 with the architected timer started by the
        # firmware) print "[    1.702674] Booting Linux" first; the 1.7 s before belong to the
        # stages before the kernel (issue 28, class 1). On most kernels the first line is at 0.
        k0 = kstart_ev
    elif (k0 is None or k0.ns is None) and kstart_ev is not None and kstart_ev.ns is not None:
        # no printk times (printk.time=0) but a host-stamped capture: the kernel's first line
        # arrived when the kernel had started, give or take the console's delay (a quiet console
        # prints its first line late): the kernel started at the latest there
        k0 = kstart_ev._replace(upper=kstart_ev.upper or kstart_ev.clock is Clock.HOST)
    power = None
    if al.power_on_ns is not None:
        # power-on is the bootloader clock's zero when the alignment read it there (the capture
        # did not release the target itself): as sure as that clock's mapping
        from_bl = al.origin != "power_on" and al.axis is Clock.HOST
        power = Point(al.power_on_ns, None, "power-on", clock=Clock.BOOTLOADER if from_bl else None,
                      upper=from_bl and al.upper(Clock.BOOTLOADER))
    notes: list[str] = []

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
            first = Point(bounds[0], bounds[1], "first initcall", clock=Clock.KERNEL)
            last = Point(bounds[2], bounds[3], "last initcall returned", clock=Clock.KERNEL)
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
    elif al.origin == USERSPACE_START:  # systemd's figures of a container: no kernel, t=0 its start
        origin, start = "user space start", 0
    else:  # the printk clock: the kernel's first line (it may read more than 0, see k0)
        origin, start = "kernel start", k0.ns if k0 is not None and k0.ns is not None else 0
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
    ticks = clock_ticks(boot)
    imported = _imported_upto(boot)
    if imported is not None:
        stages = [st._replace(start=_imported(st.start, imported), end=_imported(st.end, imported)) for st in stages]
        ready, finished, login, k0 = (_imported(p, imported) for p in (ready, finished, login, k0))
    stages = [st._replace(evidence=evidence(st.duration_ns, st.start, st.end, ticks)) if st.status == MEASURED else st
              for st in stages]
    from_pt = power if origin == "power-on" else (
        Point(0, boot.first_line, "first byte", clock=Clock.HOST) if origin == "first byte" else
        systemd_start if origin == "user space start" else
        k0 or Point(start, None, "kernel clock start", clock=Clock.KERNEL))  # no kernel line: the axis's 0
    if imported is not None:
        from_pt = _imported(from_pt, imported)
    to_pt = {READY: ready, "startup finished": finished, "login prompt": login}.get(total.end_name)
    total = total._replace(evidence=evidence(total.duration_ns, from_pt, to_pt, ticks))
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


def _imported_upto(boot: Boot) -> int | None:
    """In a journal read on its wall clock (not short-monotonic), the line of journald's first
    "Journal started": the entries before it were logged before journald ran (the kernel's, the
    initramfs's, systemd's first) and carry the time journald imported them, not when they were
    logged (issue 28, N2). None for anything else."""
    lines = boot.lines
    if not lines.journal or lines.has_kernel_time(5000):
        return None
    for i in lines.grep("Journal started"):
        if lines.text[i].startswith("systemd-journald["):
            return lines.no(i)
    return None


def _imported(p: Point | None, upto: int) -> Point | None:
    """A boundary on an entry imported by journald: it happened at the latest then."""
    if p is None or p.clock is not Clock.HOST or p.line_no is None or p.line_no >= upto or p.upper:
        return p
    return p._replace(upper=True)


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
