"""Cutting an input into boots and running the parsers over each.

One input may hold several boots (a console left running across resets, a board that resets
itself before the kernel). A new boot starts at the first line of a new chain of programs: a
banner (:mod:`bootlens.parsers.banners`: boot ROM, DDR blob, TPL, SPL, firmware, bootloader) of
an earlier stage than something the current boot already ran, or of the same stage again (a
second U-Boot banner); ``Booting Linux``/``Linux version`` once the kernel was seen; the
printk clock going back by more than :data:`BACKWARDS_SPLIT_NS` and staying back (a reset with
the start of the console lost); or the console garbled right after the kernel said it restarts
(:data:`KERNEL_RESTARTS`: the UART's glitch at the reset); or a second U-Boot bootstage report
that is not the first typed again (each is one boot's record, its marks counted from that
boot's reset). Only printk stamps take part: a
bootloader's own stamps are on another clock, and one line printed out of order by another CPU
is no reset, nor are a few lines stamped far off the run around them (pasted, interleaved, or a
ring buffer's overlap read twice): those are named in a warning.

Where the kernel said it restarts, the new boot starts right after the old kernel's last line,
not at the later line that proved the reset (a DRAM init before the bootloader's banner, the
torn first line of a second last_kmsg record).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..core.errors import InputError
from ..core.lazyre import lazy
from ..core.lines import Lines, looks_garbled, steps_back
from ..core.model import BLOCK_KINDS, NS_PER_MS, Boot, Event, Events, EventSeq, Fact, InputStats, Kind, NamedTuple
from ..parsers import Registry, default_registry
from ..core.options import ParseOptions
from ..parsers.banners import HANDOVERS, RANK_KERNEL, find_banners, kernel_goes_on
from ..parsers.uboot import bootstage_reports

BACKWARDS_SPLIT_NS = 500 * NS_PER_MS
# The kernel's first words: where a boot starts once the kernel was seen. Indexed while framing.
KERNEL_STARTS = ("Booting Linux", "Linux version")
# The kernel's last words before a reset (kernel/reboot.c, kernel/panic.c, arch reset paths): the
# lines after them that are not the kernel's own are the next boot's.
KERNEL_RESTARTS = ("Restarting system", "Rebooting in ", "Machine restart", "machine_restart")
# A few lines whose printk times leave the run around them and come back to it are not a reset:
# at most this many stamped lines (corpus more/55's ring buffer repeats up to 6 lines at a time).
FOREIGN_MAX_LINES = 16
# A console line's leading bracketed stamp of a form the framing does not read as a clock (an
# Android kernel's "[12-31 18:43:16.325]" wall time): the old kernel's lines after its restart
# line carry the same form.
_LEADING_STAMP = lazy(r"\[[^\]]{0,40}\d[^\]]{0,40}\]")
_DIGIT = lazy(r"\d")
# journalctl's own line between the entries of two boots (a journal of several, an excerpt that
# starts in the previous one): the reset, where the next boot begins
JOURNAL_REBOOTS = ("-- Reboot --", "-- Boot ")


def index_keywords(options: ParseOptions, registry: Registry | None = None
                   ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The needles and prefixes to index while an input is framed for these parsers (the default
    registry's when None): each parser's own (:meth:`bootlens.parsers.ParserRegistry.keywords`), the literal
    markers of ``options``, and the boot splitter's :data:`KERNEL_STARTS`."""
    needles, prefixes = (registry if registry is not None else default_registry()).keywords()
    return (*needles, *options.needles()), (*prefixes, *KERNEL_STARTS, *HANDOVERS, *JOURNAL_REBOOTS)


class Cut(NamedTuple):
    """One boot of an input as the splitter found it."""

    lines: Lines
    reason: str  # why this boot starts here
    backwards: int  # printk backward steps within it (lines stamped out of order)
    foreign: tuple[tuple[int, int], ...]  # (first, last) input line numbers of runs stamped off the boot's run


def split_boots(lines: Lines) -> list[Cut]:
    """Cut lines into boots (:func:`iter_cuts`, all at once)."""
    return list(iter_cuts(lines))


def iter_cuts(lines: Lines) -> Iterator[Cut]:
    """Cut lines into boots, each given as soon as the next one starts (a log of a million boots
    never holds a million cuts: issue 29).

    Only the lines that can start a boot are visited: banner lines found through the keyword
    index, the places where the printk clock steps back (``steps_back``), the kernel's restart
    lines and garbled lines after them; all found over whole columns.

    A banner is a reset signature only where the chain cannot go on: after the kernel ran (its
    banner, or printk-stamped lines), or when the same program starts again with no hand-over
    (:data:`HANDOVERS`) since it last did, or when a boot ROM or first stage (rank 0), which
    nothing hands over to, starts again. Before the kernel, a program the boot has not run yet is
    the next link of its chain, whatever its usual place (Broadcom's SPL loads a TPL; U-Boot starts
    OpenSBI; TF-A starts a second SPL).
    """
    kern, texts = lines.kernel, lines.text
    kernel_starts = lines.starting(*KERNEL_STARTS)
    starts = set(kernel_starts)
    handovers = set(lines.starting(*HANDOVERS))
    reboots = {i for i in lines.starting(*JOURNAL_REBOOTS) if texts[i].startswith(JOURNAL_REBOOTS)
               and texts[i].rstrip().endswith("--")} if lines.journal else set()
    restarts = set() if lines.journal else set(lines.grep(*KERNEL_RESTARTS))
    # the console garbled after a restart line: the UART's glitch at the reset (corpus more/44)
    noise = {i for i in lines.grep("\ufffd") if i > min(restarts) and kern[i] is None
             and looks_garbled(texts[i])} if restarts else set()
    banners = {i: b for i, b, _ in find_banners(lines)}
    back = {i: j for i, j in steps_back(kern)}
    reports = dict(bootstage_reports(lines))
    cuts: list[tuple[int, str]] = [(0, "start of input")]  # the current boot's start and reason
    top = -1  # the latest stage of the chain the current boot has run (banner rank)
    seen_kernel = seen_version = False
    ran: dict[str, int] = {}  # the programs (banner names) the current boot has run: where each last started
    handed = -1  # the current boot's last hand-over line
    restart = -1  # the current boot's last restart line
    backwards = 0  # the current boot's
    foreign: list[tuple[int, int]] = []  # the current boot's
    done = False  # a cut was given already
    report: tuple[str, ...] | None = None  # the current boot's bootstage report (its first records)
    for i in sorted(starts | banners.keys() | back.keys() | handovers | reboots | restarts | noise | reports.keys()):
        t = texts[i]
        k = kern[i]
        last_cut = cuts[-1][0]
        reason = None
        start = i
        if i in reboots:
            if i > last_cut:
                yield Cut(lines.slice(last_cut, i), cuts[-1][1], backwards, tuple(foreign))
                cuts[-1], backwards, foreign, done = (i, f"journal: {t.strip()}"), 0, [], True
            top, seen_kernel, seen_version, ran, handed, restart, report = -1, False, False, {}, -1, -1, None
            continue
        if i in reports:
            # reports typed at the prompt after each of several boots (a mailing-list comparison,
            # a lab's log of resets with no banner between them): one boot each
            if report is not None and reports[i] != report and i > last_cut:
                yield Cut(lines.slice(last_cut, i), cuts[-1][1], backwards, tuple(foreign))
                cuts[-1], backwards, foreign, done = (i, "new bootstage report (marks from another reset)"), 0, [], True
                top, seen_kernel, seen_version, ran, handed, restart = -1, False, False, {}, -1, -1
            report = reports[i]
            continue
        if i in handovers and i not in banners and i not in back and i not in restarts:
            if t.startswith(HANDOVERS):
                handed = i
            continue
        j = back.get(i)
        if j is not None and j >= last_cut:  # compare only within the current boot
            prev = kern[j]
            assert prev is not None and k is not None
            # a journal is in the order journald received its entries, each stamped when it was
            # written: a busy journald puts seconds-old entries after newer ones, no reset
            if prev - k <= BACKWARDS_SPLIT_NS or lines.journal:
                backwards += 1
            elif (run := _foreign(kern, i, j, last_cut, starts)) is not None:
                foreign.append((lines.no(run[0]), lines.no(run[1])))
            else:
                reason = f"printk time went back from {prev / 1e9:.6f} to {k / 1e9:.6f}"
        rank = None
        kernel_ran = seen_kernel or _stamped_since(kern, last_cut, i, KERNEL_RAN_LINES)
        if (b := banners.get(i)) is not None:
            rank = b.rank
            if (top > b.rank or (top == b.rank and b.repeat_splits)) and \
                    (kernel_ran or (b.name in ran and (handed < ran[b.name] or b.rank == 0))):
                reason = f"new {b.name} banner"
        elif t.startswith("Booting Linux"):
            if seen_kernel:
                reason = "new kernel start (Booting Linux)"
            seen_kernel = True
            rank = RANK_KERNEL
        elif t.startswith("Linux version ") and (k is not None or not _kernel_since(kern, last_cut, i)):
            if seen_version:
                reason = "new kernel start (Linux version)"
            seen_kernel = seen_version = True
            rank = RANK_KERNEL
        elif i in noise and last_cut <= restart < i and not kernel_goes_on(kern, i, None, 0):
            reason = f"{RESET_NOISE}{lines.no(restart)} ({_quote(texts[restart])}): the console garbled"
        if reason is not None and last_cut <= restart < i and i not in noise:
            start = _after_restart(lines, restart, i)
        if reason is not None and i > last_cut:
            start = start if start > last_cut else i
            yield Cut(lines.slice(last_cut, start), cuts[-1][1], backwards, tuple(foreign))
            cuts[-1], backwards, foreign, done = (start, reason), 0, [], True
            # the boundary line itself opens the new boot
            top = -1
            seen_kernel = t.startswith(("Booting Linux", "Linux version "))
            seen_version = t.startswith("Linux version ")
            ran, handed, restart, report = {}, -1, -1, None
        if rank is not None:
            top = max(top, rank)
        if b is not None:
            ran[b.name] = i
        if i in restarts:
            restart = i
    if not done:  # one boot: the input's own Lines, not a copy
        yield Cut(lines, cuts[0][1], backwards, tuple(foreign))
        return
    start, reason = cuts[-1]
    yield Cut(lines.slice(start, len(lines)), reason, backwards, tuple(foreign))


# The kernel ran when it printed this many printk-stamped lines (its banner may be lost: a
# decayed last_kmsg, a ring buffer's tail); one stamp of that shape may be a bootloader's.
KERNEL_RAN_LINES = 3


def _stamped_since(kern: Sequence[int | None], start: int, end: int, need: int) -> bool:
    """True if at least ``need`` lines in [start, end) carry a printk timestamp."""
    n = 0
    for j in range(end - 1, start - 1, -1):
        if kern[j] is not None:
            n += 1
            if n >= need:
                return True
    return False


def _foreign(kern: Sequence[int | None], i: int, j: int, start: int, starts: set[int],
             look: int = FOREIGN_MAX_LINES) -> tuple[int, int] | None:
    """The indices (first, last) of a few lines stamped off the run around them, where the clock
    steps back at i from j, or None for a reset: lines from i stamped earlier, after which the clock
    comes back to ``kern[j]``; or lines up to j stamped far later (by more than
    :data:`BACKWARDS_SPLIT_NS`) than both the line before them and line i, which the clock comes
    back to. Neither holds a kernel start (``starts``): a new kernel's lines are its own boot."""
    prev, k = kern[j], kern[i]
    assert prev is not None and k is not None
    seen = 0
    for q in range(i, len(kern)):
        if q in starts:
            break
        v = kern[q]
        if v is None:
            continue
        if v >= prev:
            return i, q - 1
        seen += 1
        if seen > look:
            break
    seen = 0
    for q in range(j, start - 1, -1):
        if q in starts:
            return None
        v = kern[q]
        if v is None:
            continue
        if v <= k:
            return (q + 1, i - 1) if seen else None
        if v <= k + BACKWARDS_SPLIT_NS:
            return None
        seen += 1
        if seen > look:
            return None
    return None


def _after_restart(lines: Lines, r: int, i: int) -> int:
    """Where a boot found at line i starts when the boot before said it restarts at line r: at
    the garbled lines of the reset between them, else after the old kernel's last line (its
    printk-stamped lines, and its lines with the restart line's own leading stamp form)."""
    kern, texts = lines.kernel, lines.text
    base = r
    for q in range(i, r, -1):
        if q != i and kern[q] is not None:
            base = q
            break
        if looks_garbled(texts[q]):
            while q - 1 > r and kern[q - 1] is None and looks_garbled(texts[q - 1]):
                q -= 1
            return q
    form = _stamp_form(texts[r])
    start = base + 1
    while form is not None and start < i and _stamp_form(texts[start]) == form:
        start += 1
    return start


def _stamp_form(text: str) -> str | None:
    """A line's leading bracketed stamp with its digits as 0, or None."""
    m = _LEADING_STAMP.match(text.lstrip())
    return None if m is None else _DIGIT.sub("0", m[0])


def _quote(text: str, limit: int = 40) -> str:
    t = " ".join(text.split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _kernel_since(kern: Sequence[int | None], start: int, end: int) -> bool:
    """True if a line in [start, end) carries a printk timestamp."""
    return any(kern[j] is not None for j in range(end - 1, start - 1, -1))


def parse_boot(
    source: str,
    index: int,
    lines: Lines,
    reason: str,
    options: ParseOptions,
    registry: Registry | None = None,
) -> Boot:
    """Run every parser that recognises something in these lines."""
    reg = registry if registry is not None else default_registry()
    events: list[Event] = []
    ranks: list[int] = []  # the place in the run of each event's parser
    facts: list[Fact] = []
    warnings: list[str] = []
    found: list[tuple[float, str]] = []
    blocks: list[tuple[int, Events]] = []  # parsers' columnar events (the initcall and process scans'), kept
    for rank, parser in enumerate(reg.instances()):
        confidence = parser.sniff(lines, options)
        if confidence <= 0:
            continue
        result = parser.parse(lines, options)
        if result.events or result.facts:
            found.append((confidence, parser.name))
        if isinstance(result.events, Events) and result.events.block is not None and not result.events.block.others():
            blocks.append((rank, result.events))
        else:
            events.extend(result.events)
            ranks += [rank] * len(result.events)
        facts.extend(result.facts)
        warnings.extend(result.warnings)
    all_events = _in_line_order(events, ranks, blocks)
    facts.sort(key=lambda f: f.line_no)
    found.sort(key=lambda cf: -cf[0])
    if lines.has_kernel_time():
        found.insert(0, (1.0, "printk"))
    return Boot(
        source=source,
        index=index,
        lines=lines,
        events=all_events,
        facts=tuple(facts),
        warnings=tuple(warnings),
        formats=tuple(name for _, name in found),
        split_reason=reason,
    )


def _in_line_order(events: list[Event], ranks: list[int], blocks: list[tuple[int, Events]]) -> EventSeq:
    """Every parser's events in line order, as a stable sort of them in parser order would put
    them: the blocks' rows joined (each parser's on a line after the rows of the parsers before
    it), and ``events`` merged into them (``ranks``: the place in the run of each one's parser,
    ``blocks`` with theirs)."""
    order = sorted(range(len(events)), key=[e.line_no for e in events].__getitem__)
    if not blocks:
        return tuple(events[i] for i in order)
    rank, first = blocks[0]
    block = first.block
    row_ranks = [rank] * len(BLOCK_KINDS)
    for rank, more in blocks[1:]:
        block = block.joined(more.block)
    for rank, more in blocks:  # a kind's rows come from one parser
        for kind, code in BLOCK_KINDS.items():
            if more.count(kind):
                row_ranks[code] = rank
    return Events(block.merged([events[i] for i in order], [ranks[i] for i in order], row_ranks))


def _has_boot(boot: Boot) -> bool:
    if any(e.kind is not Kind.MARKER for e in boot.events):
        return True
    # the board reset (the kernel said so, the console garbled): a boot attempt, though no
    # parser names the program that printed after it
    return boot.lines.has_kernel_time() or boot.split_reason.startswith(RESET_NOISE)


RESET_NOISE = "reset after line "


def foreign_note(runs: Sequence[tuple[int, int]]) -> str:
    """The warning for lines stamped off the run around them (:func:`_foreign`)."""
    n = sum(b - a + 1 for a, b in runs)
    shown = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs[:5])
    more = f" and {len(runs) - 5} more runs" if len(runs) > 5 else ""
    return (f"{n} lines stamped off the printk run around them (pasted, interleaved, or a ring buffer "
            f"read twice), kept in this boot, not taken for a restart: lines {shown}{more}")


def boots_from_lines(
    source: str,
    lines: Lines,
    stats: InputStats,
    options: ParseOptions,
    registry: Registry | None = None,
) -> list[Boot]:
    """Split and parse; raise :class:`InputError` when no boot is found at all."""
    return list(iter_boots(source, lines, stats, options, registry))


def iter_boots(
    source: str,
    lines: Lines,
    stats: InputStats,
    options: ParseOptions,
    registry: Registry | None = None,
) -> Iterator[Boot]:
    """:func:`boots_from_lines` one boot at a time; the InputError (no boot at all) comes where
    the first boot would have."""
    n = 0
    skipped = 0
    for cut in iter_cuts(lines):
        boot = parse_boot(source, n, cut.lines, cut.reason, options, registry)
        if not _has_boot(boot):
            skipped += len(cut.lines)
            continue
        extra: list[str] = []
        if cut.backwards:
            extra.append(f"printk time went backwards {cut.backwards} times (lines stamped out of order, "
                         "not a restart at zero)")
        if cut.foreign:
            extra.append(foreign_note(cut.foreign))
        if skipped:
            extra.append(f"{skipped} lines before this boot hold no boot output")
            skipped = 0
        if extra:
            boot = Boot(boot.source, boot.index, boot.lines, boot.events, boot.facts,
                        boot.warnings + tuple(extra), boot.formats, boot.split_reason)
        n += 1
        yield boot
    if not n:
        if stats.garbled_lines * 2 >= max(1, stats.lines) or stats.nul_bytes * 4 >= max(1, stats.bytes):
            raise InputError(source, "binary or garbled input: no boot log found in it")
        if lines.journal:
            # a journal without the kernel's entries or the system manager's (a grep, `journalctl -u`)
            users = len(lines.grep("Startup finished in "))
            raise InputError(source, "no boot found: the journal holds no kernel entry and no line of the system "
                             "manager (systemd[1])" + (f"; its {users} 'Startup finished' lines are user managers' "
                                                       "(systemd --user): login sessions, not boots" if users else ""))
        raise InputError(source, "no boot found (no U-Boot, kernel or printk lines)")
