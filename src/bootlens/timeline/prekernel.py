"""The stages before the kernel: firmware / ROM, TPL, VPL, SPL, bootloader, kernel load.

Each boundary is a milestone. A milestone can be seen more than once: its banner line (with a
host time, or none on a plain console) and a bootloader-clock mark (U-Boot's bootstage report,
Qualcomm SBL1's ``B -`` lines, LK's ``[ms]``, NVIDIA's ``at:N ms``), all counting from reset.
A stage is measured on the boot's axis when both of its ends have an axis time; otherwise, when
both ends were read on the bootloader clock, it is measured as a duration with no position on
the axis (``start_ns`` None, status measured: a *duration-only* stage). Where the bootloader
clock only gives the end of a run of stages (Rockchip's SPL ``Total:``, LK's handoff), the run
from power-on is measured as one stage, not split.

Labels name the program that ran (``bootloader (GRUB)``, ``SPL (MediaTek preloader)``), from
the banners of :mod:`bootlens.parsers.banners`, never a default guess.
"""

from __future__ import annotations

from collections.abc import Sequence

from .align import Alignment
from ..core.model import BOOTLOADER_STARTS, Boot, Clock, Event, Events, Kind, Milestone, NamedTuple
from ..parsers.banners import (
    BOOTLOADER,
    FIRMWARE,
    FIRMWARE_END,
    SPL,
    SPL_END,
    STAGE_TOTAL,
    TPL,
    TPL_END,
    VPL,
    VPL_END,
    Banner,
    find_banners,
    output_before,
)
from .stages import ABSENT, MEASURED, NOT_MEASURED, Point, Stage, point_of


class _End(NamedTuple):
    """A stage boundary: where it is on the axis (``point.ns``) and on the bootloader clock."""

    point: Point
    bl_ns: int | None  # bootloader clock (0 = reset), when the boundary was read on it


def _pick(events: Sequence[Event], al: Alignment) -> _End | None:
    """The best sighting of one milestone: one with a time of its own on the axis, else one
    mapped onto it, else one on the bootloader clock, else the first line."""
    if not events:
        return None
    # the line's own arrival first (it is where the console saw it), then a mapped clock
    best = next((e for e in events if e.start is not None and e.start.clock is not Clock.BOOTLOADER
                 and al.to_axis(e.start) is not None), None)
    best = best or next((e for e in events if al.to_axis(e.start) is not None), None)
    best = best or next((e for e in events if e.start is not None and e.start.clock is Clock.BOOTLOADER), None)
    point = point_of(best or events[0], al)
    bl = next((x.start.ns for x in events if x.start is not None and x.start.clock is Clock.BOOTLOADER), None)
    return _End(point, bl)


def _span(name: str, label: str, a: _End | None, ends: Sequence[_End | None], absent: bool = False) -> Stage:
    """A stage from a to the first end that measures it (axis or bootloader clock), else to the
    first end seen, not measured."""
    for b in ends:
        if a is None or b is None:
            continue
        pa, pb = a.point, b.point
        if pa.ns is not None and pb.ns is not None and pb.ns >= pa.ns:
            return Stage(name, label, None, pa.ns, pb.ns - pa.ns, MEASURED, pa, pb)
        if a.bl_ns is not None and b.bl_ns is not None and b.bl_ns >= a.bl_ns:
            # both ends on the bootloader clock: a duration, placed on the axis when its start is
            start = pa.ns if pa.ns is not None else (pb.ns - (b.bl_ns - a.bl_ns) if pb.ns is not None else None)
            return Stage(name, label, None, start, b.bl_ns - a.bl_ns, MEASURED, pa, pb)
    end = next((b for b in ends if b is not None), None)
    return Stage(name, label, None, a.point.ns if a is not None else None, None,
                 ABSENT if absent else NOT_MEASURED, a.point if a else None, end.point if end else None)


def _own_total(st: Stage, total: Event | None) -> Stage:
    """A stage not measured by its ends, measured by its own timer (how long it ran, not where):
    a MediaTek preloader's step timers summed, LK's own clock from its start to its handoff, an EDK2
    firmware's first to last progress code."""
    if st.status == MEASURED or total is None or total.duration_ns is None:
        return st
    return Stage(st.name, st.label, None, None, total.duration_ns, MEASURED,
                 Point(None, total.line_no, "own timer start", clock=Clock.BOOTLOADER),
                 Point(None, total.end_line_no, "own timer end", clock=Clock.BOOTLOADER))


def _first(*ends: _End | None) -> _End | None:
    return next((x for x in ends if x is not None), None)


def _next(start: _End | None, *ends: _End | None) -> _End | None:
    """The stage that starts next after ``start``: where every candidate is a console line, the
    first by line after it (Broadcom's SPL loads a TPL: the usual order is not the chain's, more/38);
    else, with a bootloader clock's marks among them (a bootstage report's rows come after every
    banner), the first in the usual order (:func:`_first`: the candidates are given in it, the
    unusual ones last)."""
    cands = [x for x in ends if x is not None]
    after = start.point.line_no if start is not None else 0
    if after is None or not all(x.point.line_no is not None and x.point.clock is not Clock.BOOTLOADER for x in cands):
        return _first(*ends)
    later = [x for x in cands if (x.point.line_no or 0) > after]
    return min(later, key=lambda x: x.point.line_no or 0) if later else _first(*ends)


def _short(b: Banner) -> str:
    # coreboot's stages are one program
    return "coreboot" if b.name.startswith("coreboot") else b.name


def _names(chain: Sequence[tuple[int, Banner]], roles: tuple[str, ...], lo: int = 0, hi: int | None = None
           ) -> list[str]:
    out: list[str] = []
    for no, b in chain:
        if b.role in roles and no >= lo and (hi is None or no < hi) and _short(b) not in out:
            out.append(_short(b))
    return out


def _label(base: str, names: Sequence[str]) -> str:
    return f"{base} ({', then '.join(names)})" if names else base


def prekernel_stages(boot: Boot, al: Alignment, power: Point | None, k0: Point | None) -> list[Stage]:
    """The firmware, TPL, VPL, SPL, bootloader and kernel-load stages of one boot."""
    seen: dict[str, list[Event]] = {}
    totals: dict[str, Event] = {}
    bl_clock = False
    # only milestones and bootloader steps matter, a few among up to a million events: picked
    # out by kind (model.Events: the initcall rows stay columns, not visited)
    events = Events.of(boot.events)
    for e in events.of_kind(Kind.MILESTONE):
        seen.setdefault(e.name, []).append(e)
        bl_clock = bl_clock or (e.start is not None and e.start.clock is Clock.BOOTLOADER)
    for e in events.of_kind(Kind.BOOTLOADER):
        if e.start is None and e.name.startswith(STAGE_TOTAL):
            totals.setdefault(e.name[len(STAGE_TOTAL):], e)

    def pick(name: str) -> _End | None:
        return _pick(seen.get(name, ()), al)

    def _first_line(name: str) -> int | None:
        return min((e.line_no for e in seen.get(name, ())), default=None)

    # U-Boot's and any other bootloader's start are one boundary: the first seen (U-Boot may start GRUB)
    seen[Milestone.UBOOT_START] = sorted((e for n in BOOTLOADER_STARTS for e in seen.get(n, ())),
                                         key=lambda e: e.line_no)
    fw, tpl, spl, uboot = (pick(Milestone.FIRMWARE_BANNER), pick(Milestone.TPL_START), pick(Milestone.SPL_START),
                           pick(Milestone.UBOOT_START))
    vpl, vpl_end = pick(Milestone.VPL_START), pick(VPL_END)
    tpl_end, spl_end, fw_end = pick(TPL_END), pick(SPL_END), pick(FIRMWARE_END)
    starting = pick(Milestone.STARTING_KERNEL) or pick(Milestone.EFI_STUB)
    kernel = _End(k0, None) if k0 is not None else None
    on = None
    if power is not None:
        on = _End(power, 0 if bl_clock else None)
    elif bl_clock:  # the bootloader clock counts from reset: power-on is its zero
        on = _End(Point(None, None, "power-on", clock=Clock.BOOTLOADER), 0)

    chain = [(boot.lines.no(i), b) for i, b, _ in find_banners(boot.lines)]
    first_stage = next((no for no, b in chain if b.role != FIRMWARE), None)
    bl_names = _names(chain, (BOOTLOADER,))
    bl_fact = boot.fact("bootloader")
    if not bl_names and bl_fact is not None:
        bl_names = [bl_fact.value]
    stages: list[Stage] = []

    # each stage ends where the next one starts, or where it says it ended
    fw_stop = _next(None, tpl, vpl, spl, uboot, starting if fw is not None else None, fw_end)
    stages.append(_own_total(_span("firmware", _label("firmware / ROM", _names(chain, (FIRMWARE,), 0, first_stage)),
                                   on, [fw_stop]), totals.get(FIRMWARE)))
    if tpl is not None:
        stages.append(_span("tpl", _label("TPL", _names(chain, (TPL,))), tpl,
                            [tpl_end, _next(tpl, vpl, spl, uboot, starting)]))
    if vpl is not None:  # U-Boot's VPL, run after TPL on verified-boot builds, picks the SPL
        stages.append(_span("vpl", _label("VPL", _names(chain, (VPL,))), vpl,
                            [vpl_end, _next(vpl, spl, uboot, starting, tpl)]))
    if spl is not None or SPL in totals:
        # what ran between the SPL's banner and the bootloader's (TF-A BL31, OpenSBI)
        names = _names(chain, (SPL,)) + _names(chain, (FIRMWARE,), _first_line(Milestone.SPL_START) or 0,
                                               _first_line(Milestone.UBOOT_START))
        st = _span("spl", _label("SPL", names), spl, [spl_end, _next(spl, uboot, starting, tpl, vpl)])
        stages.append(_own_total(st, totals.get(SPL)))
    else:
        # "absent" only when the chain's first banner opens the boot; a program that printed before
        # it without a banner bootlens knows (AT91Bootstrap, a Rockchip miniloader, MT7621's stage1)
        # may have been the SPL: not measured, never said absent
        unnamed = output_before(boot.lines, boot.lines.index_of(chain[0][0])) if chain else False
        stages.append(Stage("spl", "SPL", None, None, None, NOT_MEASURED if unnamed else ABSENT, None, None))
    # the first stages in the order they ran: by their banners' lines, where each is a console line
    # (Broadcom's SPL runs before its TPL, more/38); a bootloader clock's marks keep the usual order
    firsts = stages[1:]
    if len(firsts) > 1 and all(st.start is not None and st.start.line_no is not None
                               and st.start.clock is not Clock.BOOTLOADER for st in firsts):
        stages[1:] = sorted(firsts, key=lambda st: st.start.line_no or 0)  # type: ignore[union-attr]
    if uboot is None and spl is None and tpl is None and fw is not None and not bl_names:
        # firmware (SeaBIOS, TF-A, coreboot) handed over with no bootloader seen
        stages.append(Stage("bootloader", "bootloader", None, None, None, ABSENT, None, None))
    else:
        st = _span("bootloader", _label("bootloader", bl_names), uboot, [starting])
        stages.append(_own_total(st, totals.get(BOOTLOADER)))
    stages.append(_span("kernel_load", "kernel load / decompress", starting, [kernel]))

    if on is not None and on.bl_ns is not None and stages[0].status != MEASURED:
        # The bootloader clock gives the end of a run of stages but not their starts: the run
        # from power-on is measured as a whole.
        # where a later stage is measured on that clock (a vboot report whose TPL rows have no
        # name, but VPL's have), the run ends at its start, so that the two do not overlap
        measured = {st.name for st in stages if st.status == MEASURED}
        later = next(((end, what) for end, name, what in ((tpl, "tpl", "TPL start"), (vpl, "vpl", "VPL start"),
                                                           (spl, "spl", "SPL start"))
                      if name in measured and end is not None and end.bl_ns is not None), None)
        for end, what in ((later,) if later is not None else ()) + (
                (starting, "kernel handoff"), (uboot, "bootloader start"), (spl_end, "end of SPL"),
                (tpl_end, "end of TPL")):
            if end is not None and end.bl_ns is not None:
                st = _span("from_reset", f"power-on to {what} (not split further)", on, [end])
                if st.status == MEASURED:
                    stages.append(st)
                break
    early = ("firmware", "tpl", "vpl", "spl", "bootloader", "kernel_load", "from_reset")
    if power is not None and k0 is not None and not any(st.status == MEASURED for st in stages
                                                        if st.name in early):
        # Nothing printed between power-on and the kernel (e.g. a BIOS silent on the serial
        # line): that span is measured as a whole, even though it cannot be split.
        # (or what was printed carries no time on this axis: a log read on the guest's clocks)
        why = "its console lines carry no time on this clock" if chain else "no console output to split it"
        stages.append(_span("pre_kernel", f"power-on to kernel clock ({why})", _End(power, None), [kernel]))
    return stages
