"""Analysis of aligned boots: stage table, worst offenders, silences, kernel facts.

:func:`analyze_paths` is the one call behind ``bootlens analyze``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from itertools import chain

from .align import Alignment, align
from ..parsers.banners import quiet_kernel
from ..parsers.kernel import first_stamped
from ..sources.systemd_analyze import ALONE as SYSTEMD_ALONE
from .boots import BACKWARDS_SPLIT_NS, FOREIGN_MAX_LINES, index_keywords, iter_boots
from ..read.reader import read_path
from ..core.errors import InputError
from ..core.lines import Lines, gaps, steps_back
from ..core.model import BOOTLOADER_STARTS, CUT_START_NS, NOT_MEASURED, NS_PER_MS, NS_PER_S, READY, Boot, Clock, Event, Events, InputStats, Kind, Milestone, NamedTuple, UnitDetail
from ..parsers import Registry
from ..core.options import ParseOptions
from .stages import Stage, Total, compute_stages

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from ..sources.supplements import Supplement


# NamedTuples, not frozen dataclasses (start-up: a dataclass costs ~1.3 ms to build at import, a
# NamedTuple ~0.3 ms; both typed and immutable; copies are made with ._replace)
class Silence(NamedTuple):
    """A stretch of the boot in which the console printed nothing."""

    start_ns: int
    duration_ns: int
    line_before: int
    line_after: int
    text_before: str
    text_after: str


class Counts(NamedTuple):
    """How much of each kind of thing a boot holds."""

    lines: int
    timed_lines: int
    initcalls: int  # returned
    initcalls_unfinished: int
    probes: int
    processes: int
    user_processes: int
    markers: int
    units: int = 0  # systemd unit start jobs with a duration
    units_not_measured: int = 0  # start jobs seen to begin and end on lines without a time of their own


class BootAnalysis(NamedTuple):
    """Everything bootlens knows about one boot, on one axis."""

    boot: Boot
    alignment: Alignment
    stages: tuple[Stage, ...]
    total: Total
    top_initcalls: tuple[Event, ...]
    top_probes: tuple[Event, ...]
    top_processes: tuple[Event, ...]
    silences: tuple[Silence, ...]
    counts: Counts
    partial_reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    times: Sequence[int | None] = ()  # axis time of each of boot.events, in order (a native column
    # for an Events with a block: see Alignment.times)
    top_units: tuple[Event, ...] = ()  # systemd units, longest start job first
    supplement: Supplement | None = None  # systemd-analyze outputs, a bootchart, given with the log

    @property
    def partial(self) -> bool:
        """True when pieces of the boot are missing from the log."""
        return bool(self.partial_reasons)


class Analysis(NamedTuple):
    """The result of analysing one or more inputs."""

    inputs: tuple[InputStats, ...]
    boots: tuple[BootAnalysis, ...]


def _top(events: Sequence[Event], n: int) -> tuple[Event, ...]:
    """The n longest events, ties to the earlier line (events are in line order)."""
    durs = [-1 if e.duration_ns is None else e.duration_ns for e in events]
    import heapq  # here, not at import: a small log's events are a native block, whose top is native

    # nlargest is stable and the key is a C method: no Python call per event
    best = heapq.nlargest(n, range(len(durs)), key=durs.__getitem__)
    return tuple(events[i] for i in best if durs[i] >= 0)


def silences(boot: Boot, al: Alignment, n: int) -> tuple[Silence, ...]:
    """The n longest gaps between consecutive console lines, by the time each line arrived
    (host axis) or was printed (kernel axis).

    A silence is time in which nothing was printed, so it is never negative and never measured
    from a line stamped off the run around it: after a few lines stamped earlier (out of order,
    pasted, a ring buffer read twice) it counts from the latest time printed before them, and a few
    lines stamped far later (pasted) are passed over to the line the clock comes back to (the
    same few lines, :data:`bootlens.timeline.boots.FOREIGN_MAX_LINES`, the splitter keeps in a boot)."""
    use_host = al.axis is Clock.HOST
    col = boot.lines.host if use_host else boot.lines.kernel
    back = steps_back(col)
    peaks = _valley_peaks(col, back) if back else {}
    found = gaps(col, n + len(back) + len(peaks))
    off = al.offsets.get(Clock.HOST if use_host else Clock.KERNEL, 0)
    out = []
    for g, a, b in found:
        t0, tb = col[a], col[b]
        assert t0 is not None and tb is not None
        t0 = peaks.get(a, t0)
        if back:
            ret = _comes_back(col, b, t0, tb, peaks)
            if ret is not None:
                b, tb = ret
        g = tb - t0
        if g < 0:  # a line stamped before the one above it: out of order, no silence
            continue
        la, lb = boot.lines[a], boot.lines[b]
        out.append(Silence(t0 + off, g, la.no, lb.no, la.text.strip(), lb.text.strip()))
    out.sort(key=lambda s: (-s.duration_ns, s.line_before))
    return tuple(out[:n])


def _valley_peaks(col: Sequence[int | None], back: Sequence[tuple[int, int]]) -> dict[int, int]:
    """For the stamped lines in a short valley of the clock (it steps back at i and is back at the
    time before within FOREIGN_MAX_LINES stamped lines), the latest time printed before them."""
    peaks: dict[int, int] = {}
    end = -1
    for i, j in back:
        if i <= end:
            continue
        top = col[j]
        assert top is not None
        top = peaks.get(j, top)
        inside: list[int] = []
        q = i
        while q < len(col) and len(inside) <= FOREIGN_MAX_LINES:
            v = col[q]
            if v is not None:
                if v >= top:
                    peaks.update((x, top) for x in inside)
                    end = q
                    break
                inside.append(q)
            q += 1
    return peaks


def _comes_back(col: Sequence[int | None], b: int, ta: int, tb: int, peaks: dict[int, int]
                ) -> tuple[int, int] | None:
    """(index, time) of the line the clock comes back to, between ``ta`` and ``tb`` less
    BACKWARDS_SPLIT_NS, within FOREIGN_MAX_LINES stamped lines from b, when the lines from b on were
    stamped far later than the run around them; else None. A line in a short valley (``peaks``)
    is the other way round: a few lines stamped earlier, after which the clock is back at b's."""
    seen = 0
    for q in range(b + 1, len(col)):
        v = col[q]
        if v is None:
            continue
        if ta <= v <= tb - BACKWARDS_SPLIT_NS:
            return None if q in peaks else (q, v)
        seen += 1
        if seen > FOREIGN_MAX_LINES:
            break
    return None


_USERSPACE_SEEN = (Milestone.RUN_INIT, Milestone.INITMEM_FREED, Milestone.NO_INITIAL_CONSOLE,
                   Milestone.USERSPACE_FIRST, Milestone.LOGIN_PROMPT)
_KERNEL_SEEN = frozenset({Milestone.KERNEL_START, Milestone.CALIBRATE_DELAY, Milestone.CONSOLE_ENABLED,
                          Milestone.ROOT_MOUNTED, Milestone.INITMEM_FREED, Milestone.RUN_INIT, Milestone.KERNEL_PANIC,
                          Milestone.NO_INITIAL_CONSOLE})
_BOOTLOADER_SEEN = (Milestone.FIRMWARE_BANNER, Milestone.TPL_START, Milestone.VPL_START, Milestone.SPL_START,
                    *BOOTLOADER_STARTS, Milestone.STARTING_KERNEL)


def _partial(boot: Boot, names: set[str]) -> list[str]:
    """Why this boot is not whole: what the log does not show."""
    out: list[str] = []
    lines = boot.lines
    # a journal says which entries are the kernel's (journalctl's "kernel: "), with no printk time
    kernel_entry = lines.first_kernel_entry() if lines.journal else None
    kernel_seen = bool(names & _KERNEL_SEEN) or lines.has_kernel_time() or kernel_entry is not None
    if boot.split_reason == SYSTEMD_ALONE:  # systemd's figures: whole when 'time' (or a plot) said how long
        return [] if Milestone.STARTUP_FINISHED in names else [
            "systemd-analyze outputs without 'time' or a plot: the units' durations, no timeline"]
    if not kernel_seen:
        if Milestone.USERSPACE_FIRST in names and not any(n in names for n in _BOOTLOADER_SEEN):
            out.append("no kernel output: a user-space log (its first entry is user space's; "
                       "the boot before it is not in the log)")
        elif any(n in names for n in _BOOTLOADER_SEEN):
            out.append("no kernel output (bootloader only)")
        else:
            out.append("no kernel output")
        return out
    if Milestone.KERNEL_START not in names:
        at = first_stamped(boot.lines)
        first = boot.lines.kernel[at] if at is not None else None
        if first is not None and first >= CUT_START_NS and at is not None and quiet_kernel(boot.lines, at):
            # a bootloader handed over (or printed), and the kernel's first line came late: a quiet console
            out.append(f"kernel start not in the log: its first line is at {first / NS_PER_S:.6f} s, after the "
                       "bootloader's output (a quiet console, or one enabled late)")
        elif first is not None and first >= CUT_START_NS:
            out.append(f"log starts mid-boot (first printk time {first / NS_PER_S:.6f} s, no 'Linux version'): "
                       "a cut ring buffer or a fragment; what came before is not measured")
        elif at is None and kernel_entry is not None:
            out.append(f"kernel start (Linux version) not in the log: the journal's first kernel entry is "
                       f"line {lines.no(kernel_entry)}")
        else:
            out.append("kernel start (Linux version) not in the log")
    if Milestone.KERNEL_PANIC in names:
        out.append("kernel panic")
    elif not any(n in names for n in _USERSPACE_SEEN):
        out.append("log ends before user space started (no 'Run /init', 'Freeing ... memory' or user-space output)")
    return out


def _late_kernel_clock(boot: Boot, stages: Sequence[Stage]) -> str | None:
    """Said when kernel init starts at a first kernel line whose printk clock was already running
    (a vendor kernel whose timer the firmware started: issue 28, class 1), so that the reader
    knows where the time before it went."""
    ki = next((s for s in stages if s.name == "kernel_init"), None)
    p = ki.start if ki is not None else None
    if p is None or p.what != Milestone.KERNEL_START or p.clock is not Clock.KERNEL or not p.line_no:
        return None
    k = boot.lines.kernel[boot.lines.index_of(p.line_no)]
    if k is None or k < 10_000_000:  # most kernels print their first line at 0.000000
        return None
    return (f"the kernel's first line (line {p.line_no}) reads {k / 1e9:.6f} s on the printk clock: kernel init is "
            "counted from there; the time before it passed before the kernel (in firmware and bootloader, if "
            "the clock counts from reset)")


def analyze_boot(boot: Boot, top: int = 10, host_origin: str = "first_byte", ready_given: bool = False,
                 supplement: Supplement | None = None) -> BootAnalysis:
    """Align one boot and compute its stages, top offenders and silences; ``ready_given``: a
    ready marker was asked for (then a boot without it has no total, and says so);
    ``supplement``: what came with the log (:mod:`bootlens.sources.supplements`), its events added."""
    if supplement:
        from ..sources.supplements import extend_boot

        boot, supplement = extend_boot(boot, supplement)
    al = align(boot, host_origin)
    events = Events.of(boot.events)  # the kind filters, counts and longest N over its columns
    times = al.times(events)
    stages, total = compute_stages(boot, al, times, ready_given)
    markers = events.of_kind(Kind.MARKER)
    timed = boot.lines.timed_count()
    counts = Counts(
        lines=len(boot.lines),
        timed_lines=timed,
        initcalls=events.count(Kind.INITCALL, True),
        initcalls_unfinished=events.count(Kind.INITCALL, False),
        probes=events.count(Kind.PROBE),
        processes=events.count(Kind.PROCESS),
        user_processes=events.count(Kind.PROCESS, kthread=False),  # with a detail, not a kernel thread's
        markers=len(markers),
        units=events.count(Kind.UNIT, True),
        units_not_measured=sum(1 for e in events.of_kind(Kind.UNIT)
                               if isinstance(e.detail, UnitDetail) and e.detail.duration_bound == NOT_MEASURED),
    )
    names = {e.name for e in events.of_kind(Kind.MILESTONE)}
    partial = _partial(boot, names)
    warnings = list(boot.warnings) + list(al.notes) + list(total.notes) + list(supplement.warnings if supplement else ())
    bootloader_only = bool(partial) and partial[0].startswith("no kernel output")
    if timed == 0:
        warnings.append("no timestamps in this boot: durations only (capture with host timestamps: bootlens "
                        "capture" + (")" if bootloader_only else "; or enable printk.time=1)"))
    if not any(e.name == READY for e in markers) and ready_given:
        warnings.append("the ready marker was not seen: the boot did not reach it, or its pattern does not match")
    elif not any(e.name == READY for e in markers) and not bootloader_only:
        warnings.append("no ready marker: pass --marker ready=REGEX to measure up to the application"
                        + (" (the login prompt ends the boot meanwhile)" if total.end_name != READY else ""))
    late = _late_kernel_clock(boot, stages)
    if late:
        warnings.append(late)
    untimed = times.count(None)
    if untimed:
        warnings.append(f"{untimed} events have no time on the {al.axis.value} axis "
                        "(seen, listed in tables, not placed)")
    return BootAnalysis(
        boot=boot,
        alignment=al,
        stages=stages,
        total=total,
        top_initcalls=events.top(Kind.INITCALL, top),
        top_probes=events.top(Kind.PROBE, top),
        top_processes=events.top(Kind.PROCESS, top, kthread=False),
        silences=silences(boot, al, min(top, 10)),
        counts=counts,
        partial_reasons=tuple(partial),
        warnings=tuple(warnings),
        times=tuple(times) if isinstance(times, list) else times,
        top_units=events.top(Kind.UNIT, top),
        supplement=supplement or None,
    )


def analyze_side_boot(boot: Boot, top: int = 10, supplement: Supplement | None = None) -> BootAnalysis:
    """A boot a side format made of its own figures (systemd-analyze outputs, a bootchart),
    analysed: "no timestamps in this boot" speaks of a console log, a side file's times are its own."""
    b = analyze_boot(boot, top, supplement=supplement)
    b = b._replace(warnings=tuple(w for w in b.warnings if not w.startswith("no timestamps in this boot")))
    t = supplement.startup if supplement is not None and boot.split_reason == SYSTEMD_ALONE else None
    if t is None or t.total_ns is None:
        return b
    total = _printed_total(b.total, t.total_ns)
    if total is b.total:
        return b
    boot2, times = _finished_at(b, (total.end_ns or 0) - (b.total.end_ns or 0))
    return b._replace(total=total, boot=boot2, times=times)


def _finished_at(b: BootAnalysis, shift: int) -> tuple[Boot, tuple[int | None, ...]]:
    """The 'Startup finished' milestone where its line says, at systemd's printed total (its
    stages end at the printed parts' sum, 1-2 ms before: :func:`_printed_total`): the boot with
    that one event moved by ``shift``, and the events' axis times."""
    events, times = list(b.boot.events), list(b.times)
    for i, e in enumerate(events):
        if e.kind is Kind.MILESTONE and e.name == Milestone.STARTUP_FINISHED and e.start is not None:
            events[i] = e._replace(start=e.start._replace(ns=e.start.ns + shift))
            t = times[i]
            times[i] = None if t is None else t + shift
    old = b.boot
    boot = Boot(old.source, old.index, old.lines, tuple(events), old.facts, old.warnings, old.formats,
                old.split_reason)
    return boot, tuple(times)


def _printed_total(total: Total, printed_ns: int) -> Total:
    """The total of a boot of systemd's figures as systemd printed it ("= 48.180s"): its stages
    end where the printed parts add up to (alone_boot), which, each cut to the ms, fall 1-2 ms
    short of the printed total; the total is systemd's own figure, its evidence says so."""
    ev = total.evidence
    if total.end_name != "startup finished" or total.duration_ns is None or total.duration_ns == printed_ns \
            or ev is None or abs(total.duration_ns - printed_ns) > 10 * NS_PER_MS:
        return total
    parts = total.duration_ns
    return total._replace(
        end_ns=total.start_ns + printed_ns,
        end=f"{total.end}; systemd's own total, its parts (each to the ms) add up to {parts / NS_PER_S:.3f} s",
        evidence=ev._replace(low_ns=printed_ns, high_ns=printed_ns))


def analyze_paths(
    paths: Sequence[str],
    options: ParseOptions | None = None,
    top: int = 10,
    registry: Registry | None = None,
    supplement: Supplement | None = None,
) -> Analysis:
    """Read, split, parse, align and analyse every input. Raises InputError on unusable input.
    ``supplement`` is attached to every boot (:mod:`bootlens.sources.supplements`)."""
    with paused_gc():
        stats, boots = stream_paths(paths, options, top, registry, supplement)
        return Analysis(stats, tuple(boots))


def stream_paths(
    paths: Sequence[str],
    options: ParseOptions | None = None,
    top: int = 10,
    registry: Registry | None = None,
    supplement: Supplement | None = None,
) -> tuple[tuple[InputStats, ...], Iterator[BootAnalysis]]:
    """:func:`analyze_paths` as a stream: every input read and its first boot analysed now (an
    input without a boot raises InputError before anything is printed), the other boots analysed
    one at a time as the iterator is read, so that a log of a million boots never holds more than
    one boot's analysis (issue 29)."""
    opts = options or ParseOptions()
    ready_given = any(m.name == READY for m in opts.markers)
    needles, prefixes = index_keywords(opts, registry)
    stats_all: list[InputStats] = []
    parts: list[Iterator[BootAnalysis]] = []
    for path in paths:
        with paused_gc():
            lines, stats = read_path(path, needles, prefixes)
        if opts.guest_clock:  # the guest's clocks alone: the host's arrival times set aside
            lines.host = [None] * len(lines)
        it = _analyses(stats.source, lines, stats, opts, registry, top, ready_given, supplement)
        try:
            first = next(it)
        except InputError:
            # no boot in it: systemd-analyze outputs pasted in a transcript are systemd's figures
            # of one boot per board (not looked for in a log with a boot: a command typed there
            # is the user's, after the boot)
            from ..sources.systemd_analyze.attach import transcript_boots

            made = transcript_boots(stats.source, lines) if lines.grep("systemd-analyze") else []
            if not made:
                raise
            stats_all.append(stats)
            with paused_gc():
                parts.append(iter([analyze_side_boot(boot, top, sup) for boot, sup in made]))
            continue
        stats_all.append(stats)
        parts.append(chain((first,), it))
    return tuple(stats_all), chain.from_iterable(parts)


def _analyses(source: str, lines: Lines, stats: InputStats, opts: ParseOptions, registry: Registry | None,
              top: int, ready_given: bool, supplement: Supplement | None) -> Iterator[BootAnalysis]:
    """Each boot of one input's lines, analysed when asked for (the collector paused meanwhile)."""
    boots = iter_boots(source, lines, stats, opts, registry)
    while True:
        with paused_gc():
            boot = next(boots, None)
            if boot is None:
                return
            b = analyze_boot(boot, top, stats.host_origin, ready_given, supplement)
        yield b


class paused_gc:  # noqa: N801 - used as ``with paused_gc():``, as the generator it replaces
    """Pause the cyclic garbage collector while building large acyclic structures.

    Parsing a big log allocates hundreds of thousands of tuples; every few hundred allocations
    the collector would rescan them all (1.6x the parse time on a 1M-line log). Nothing built
    here forms a reference cycle, so reference counting alone frees it.

    On the way out the survivors go straight to the oldest generation (``freeze`` then
    ``unfreeze``, no traversal): left in generation 0, the first allocation after ``enable``
    would start a young collection that walks every one of them (0.17 s per exit on a 1M-line
    log, twice per ``analyze --json``). They stay collectable by a later full collection.

    A class rather than a ``contextlib.contextmanager`` generator: contextlib is ~0.8 ms of a
    small ``bootlens analyze``'s start-up and nothing else on that path needs it.
    """

    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        gc.freeze()
        gc.unfreeze()
        if self._was:
            gc.enable()
