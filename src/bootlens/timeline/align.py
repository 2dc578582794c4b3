"""Putting every clock domain of a boot on one axis.

- With host timestamps the axis is the host's: t=0 is the capture's first byte (or power-on,
  when the capture released the target itself). The kernel's printk clock is mapped through the
  lower envelope of (host arrival - printk time): a line cannot arrive before it was printed, so
  every line gives an upper bound on where kernel t=0 lies on the host axis, and the smallest is
  the tightest. Console buffering (lines printed before the console driver came up, a slow UART)
  only ever adds delay, so it cannot pull the estimate early.
- U-Boot's bootstage timer (microseconds since reset) is mapped by pairing its ``start_kernel``
  mark with the host time of ``Starting kernel ...``; that also yields power-on on the host axis.
- Without host timestamps the axis is the printk clock: t=0 is the kernel's clock start and
  everything earlier is "not measured".

/proc/uptime readings (the UPTIME domain) are mapped with the kernel's offset; they are close to
printk time but not equal, and are always shown as estimates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from ..core.model import Boot, Clock, Event, Events, Kind, Milestone, NamedTuple, Stamp
from ..sources.systemd_analyze import ALONE as SYSTEMD_ALONE
from .boots import BACKWARDS_SPLIT_NS, FOREIGN_MAX_LINES


# NamedTuples, not frozen dataclasses (start-up: a dataclass costs ~1.3 ms to build at import, a
# NamedTuple ~0.3 ms; both typed and immutable; copies are made with ._replace)
class Anchor(NamedTuple):
    """How one clock was mapped onto the axis: ``axis = clock + offset_ns``."""

    clock: Clock
    offset_ns: int
    line_no: int | None  # the log line the mapping rests on
    method: str  # human explanation, shown in the output
    upper: bool = False  # the mapping only bounds this clock's times from above (a report read later)


class Alignment(NamedTuple):
    """The axis of one boot and the offsets that map each clock onto it."""

    axis: Clock  # HOST or KERNEL
    origin: str  # what t=0 is: "power_on", "first_byte", "kernel_start" or USERSPACE_START
    anchors: tuple[Anchor, ...]
    power_on_ns: int | None = None  # power-on on the axis, when known
    latency_median_ns: int | None = None  # typical console delay of kernel lines (host axis)
    offsets: Mapping[Clock, int] = MappingProxyType({})  # read-only: a NamedTuple default is shared
    notes: tuple[str, ...] = ()  # why a mapping was refused, for the warnings

    def to_axis(self, st: Stamp | None) -> int | None:
        """Axis time of a stamp, or None when its clock cannot be mapped."""
        if st is None:
            return None
        off = self.offsets.get(st.clock)
        return None if off is None else st.ns + off

    def times(self, events: Sequence[Event]) -> Sequence[int | None]:
        """Axis time of every event's start, in order: the bulk form of :meth:`to_axis`. For
        an :class:`Events` with a native block, a native column (8 bytes an event) computed
        over the block's columns."""
        kernel = Clock.KERNEL
        if isinstance(events, Events) and events.block is not None:
            block = events.block
            others = [self.to_axis(e.start) for e in block.others()]
            col: Sequence[int | None] = block.times(self.offsets.get(kernel), self.offsets.get(Clock.HOST), others)
            return col
        k_off = self.offsets.get(kernel)
        if k_off is None:
            return [self.to_axis(e.start) for e in events]
        to_axis = self.to_axis
        return [
            None if (st := e.start) is None else (st.ns + k_off if st.clock is kernel else to_axis(st))
            for e in events
        ]

    def upper(self, clock: Clock) -> bool:
        """True when times of ``clock`` land on the axis no earlier than they happened: the
        mapping rests on a report read after the fact (:attr:`Anchor.upper`)."""
        a = self.anchor(clock)
        return a is not None and a.upper

    def anchor(self, clock: Clock) -> Anchor | None:
        """The anchor for one clock, or None."""
        for a in self.anchors:
            if a.clock is clock:
                return a
        return None


def align(boot: Boot, host_origin: str = "first_byte") -> Alignment:
    """Work out the axis of a boot. ``host_origin`` says what host t=0 of the input is."""
    lines = boot.lines
    if not lines.has_host_time():  # C-speed count; the scan below would walk every line
        if not len(lines) and boot.events and all(e.start is None or e.start.clock is Clock.HOST for e in boot.events):
            # a side file alone whose times are its own (an strace's: 0 = its first line); the
            # kernel's clock is not in it
            return Alignment(Clock.HOST, "first_byte", (Anchor(Clock.HOST, 0, None, "the input's first line"),),
                             offsets={Clock.HOST: 0})
        return _kernel_axis(boot)
    fi = next(i for i, h in enumerate(lines.host) if h is not None)

    anchors: list[Anchor] = []
    # Host t=0: the input's own t=0 for its first boot when that is power-on; otherwise the
    # first byte of this boot (later boots in one capture start at their own first line).
    first_host_ns = lines.host[fi]
    assert first_host_ns is not None
    logic_on = _logic_power_on(boot, Clock.HOST)
    if logic_on is not None:  # a logic analyzer saw the power rail rise: the hardware's own t=0
        host_off, origin = -logic_on, "power_on"
    elif boot.index == 0 and host_origin == "power_on":
        host_off, origin = 0, "power_on"
    else:
        host_off, origin = -first_host_ns, "first_byte"
    anchors.append(Anchor(Clock.HOST, host_off, None if logic_on is not None else lines.no(fi),
                          LOGIC_POWER_ON if logic_on is not None else
                          "power-on (capture released the target)" if origin == "power_on"
                          else "first byte received"))

    # A kernel line glued after console text ("login: [  119.26] hrtimer: ...") carries the host
    # time of the text's first byte, seconds before the kernel printed: it says nothing of the
    # offset (the reference systemd target's login prompt moved the axis by 27 s).
    glued = lines.glued
    diffs = [(h - k, i) for i, (h, k) in enumerate(zip(lines.host, lines.kernel))
             if h is not None and k is not None and i not in glued]
    latency = None
    notes: list[str] = []
    if len(diffs) > FOREIGN_MAX_LINES + 1:
        diffs, off = _agreeing(diffs, lines.kernel)
        if off:
            first = min(off)
            notes.append(f"{len(off)} lines' printk times disagree with when they arrived (line {lines.no(first)}: "
                         f"{(lines.kernel[first] or 0) / 1e9:.6f} s, arrived at {(lines.host[first] or 0) / 1e9:.6f} s): "
                         "not used to place the kernel's clock")
    if diffs:
        best = min(diffs)
        k_off = best[0] + host_off
        anchors.append(Anchor(Clock.KERNEL, k_off, lines.no(best[1]),
                              "lower envelope of host arrival - printk time"))
        anchors.append(Anchor(Clock.UPTIME, k_off, lines.no(best[1]), "same as kernel (approximate)"))
        values = sorted(d for d, _ in diffs)
        latency = values[len(values) // 2] - best[0]

    power_on = 0 if origin == "power_on" else None
    bl = _bootloader_anchor(boot, host_off)
    if bl is not None:
        anchors.append(bl)
        if power_on is None:
            if bl.offset_ns <= first_host_ns + host_off:
                power_on = bl.offset_ns  # bootloader clock 0 is reset
            else:
                notes.append("bootstage's clock starts after the first console byte, so it does not "
                             "count from power-on; power-on not measured")
    offsets = {a.clock: a.offset_ns for a in anchors}
    return Alignment(Clock.HOST, origin, tuple(anchors), power_on, latency, offsets, tuple(notes))


def _agreeing(diffs: list[tuple[int, int]], kern: Sequence[int | None]) -> tuple[list[tuple[int, int]], list[int]]:
    """The (host - printk, index) pairs the kernel's clock may rest on, and the indices left out:
    a few lines (at most FOREIGN_MAX_LINES) that claim to have arrived more than
    BACKWARDS_SPLIT_NS sooner after being printed than every other line. No console is that much
    faster for a few lines: their printk time disagrees with their arrival (a decayed or pasted
    stamp), and the lower envelope would move the whole kernel by it.

    A line stamped 0.000000 is never left out: the kernel prints its first lines before its clock
    runs (sched_clock registered later: on a slow simulator such as an FVP, 0.6 s of host time
    later), so they arrive "sooner" than the rest honestly, and the kernel started at the latest
    when they arrived."""
    values = sorted(d for d, i in diffs if kern[i])
    if len(values) <= FOREIGN_MAX_LINES:
        return diffs, []
    floor = values[FOREIGN_MAX_LINES] - BACKWARDS_SPLIT_NS
    if values[0] >= floor:
        return diffs, []
    return ([x for x in diffs if x[0] >= floor or not kern[x[1]]],
            sorted(i for d, i in diffs if d < floor and kern[i]))


def _kernel_axis(boot: Boot) -> Alignment:
    anchors = (
        Anchor(Clock.KERNEL, 0, None, "printk clock"),
        Anchor(Clock.UPTIME, 0, None, "same as kernel (approximate)"),
    )
    # a logic analyzer aligned with printk times places power-on before the kernel's 0
    power_on = _logic_power_on(boot, Clock.KERNEL)
    if power_on is None and (counted := _counter_power_on(boot)) is not None:
        # the guest's reset-based counter (the deterministic mode's guestclock): the guest's own
        # clocks from power-on, t=0 at its reset, as a host capture released at power-on reads
        line, at = counted
        how = SYSTEMD_POWER_ON if boot.split_reason == SYSTEMD_ALONE else GUEST_POWER_ON
        anchors = (Anchor(Clock.KERNEL, -at, line, how), Anchor(Clock.UPTIME, -at, line, "same as kernel (approximate)"))
        return Alignment(Clock.KERNEL, "power_on", anchors, 0, None, {a.clock: a.offset_ns for a in anchors})
    if power_on is None and boot.split_reason == SYSTEMD_ALONE and _userspace_only(boot):
        # systemd's figures of a boot with no kernel of its own (a container: "Startup finished in
        # 5.235s (userspace)"): t=0 is systemd's start, not a kernel's, which started elsewhere
        anchors = (Anchor(Clock.KERNEL, 0, None, "systemd's start (its figures have no kernel part)"), anchors[1])
        return Alignment(Clock.KERNEL, USERSPACE_START, anchors, None, None, {a.clock: a.offset_ns for a in anchors})
    return Alignment(Clock.KERNEL, "kernel_start", anchors, power_on, None, {a.clock: a.offset_ns for a in anchors})


def _userspace_only(boot: Boot) -> bool:
    """True when the boot's milestones start at systemd's start, with no kernel start."""
    names = {e.name for e in boot.events if e.kind is Kind.MILESTONE}
    return Milestone.SYSTEMD_START in names and Milestone.KERNEL_START not in names


GUEST_POWER_ON = "guest counter: power-on at its zero (printk time of its reading - ticks / Hz)"
SYSTEMD_POWER_ON = "systemd-analyze time: power-on its firmware + loader before the kernel's start"
USERSPACE_START = "userspace_start"  # Alignment.origin of systemd's figures with no kernel part (a container)


def _counter_power_on(boot: Boot) -> tuple[int, int] | None:
    """(line, power-on on the printk clock) from the first guest-clock reading
    (:mod:`bootlens.parsers.markers`) or systemd-analyze time's firmware + loader (a boot of
    systemd's figures alone), or None."""
    for e in Events.of(boot.events).of_kind(Kind.MILESTONE):
        if e.name == Milestone.POWER_ON and e.line_no and e.start is not None and e.start.clock is Clock.KERNEL:
            return e.line_no, e.start.ns
    return None


LOGIC_POWER_ON = "power-on (logic analyzer)"


def _logic_power_on(boot: Boot, clock: Clock) -> int | None:
    """Power-on as a logic analyzer's power (or reset) channel gave it (bootlens.sources.logic.align),
    in ``clock``; None without one."""
    # logic_align appends its events (line 0, as every supplement's) after the log's own, which
    # are in line order: the walk stops at the log's last event
    for e in reversed(boot.events):
        if e.line_no:
            break
        if e.kind is Kind.MILESTONE and e.name == Milestone.POWER_ON and e.start is not None \
                and e.start.clock is clock:
            return e.start.ns
    return None


def _bootloader_anchor(boot: Boot, host_off: int) -> Anchor | None:
    """Map U-Boot's bootstage timer through the report's own arrival time.

    With CONFIG_BOOTSTAGE_REPORT, U-Boot marks ``start_kernel`` and prints the report at once,
    then ``Starting kernel ...``: the report's first line arrives just after its last mark. A
    report typed later with ``bootstage report`` only gives an upper bound, and says so.
    """
    rows = [e for e in Events.of(boot.events).of_kind(Kind.BOOTSTAGE) if e.start is not None]
    if not rows:
        return None
    last = max(rows, key=lambda e: (e.start.ns if e.start else 0) + (e.duration_ns or 0))
    assert last.start is not None
    mark = last.start.ns + (last.duration_ns or 0)
    lines = boot.lines
    idx = lines.index_of(min(e.line_no for e in rows))
    # the "Timer summary" heading is a line or two above the first row
    head_i = idx - 2 if idx >= 2 and "Timer summary" in lines.text[idx - 2] else max(0, idx - 1)
    head_ns = lines.host[head_i]
    if head_ns is None:
        return None
    at_handoff = any(e.kind is Kind.MILESTONE and e.name == Milestone.STARTING_KERNEL
                     and 0 <= e.line_no - last.line_no <= 8 for e in Events.of(boot.events).of_kind(Kind.MILESTONE))
    how = (f"bootstage mark '{last.name}' = arrival of its report"
           if at_handoff else f"bootstage mark '{last.name}' <= arrival of its report (upper bound)")
    return Anchor(Clock.BOOTLOADER, head_ns + host_off - mark, lines.no(head_i), how, not at_handoff)
