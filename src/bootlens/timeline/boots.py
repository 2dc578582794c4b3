"""Cutting an input into boots and running the parsers over each.

One input may hold several boots (a console left running across resets, a board that resets
itself before the kernel). A new boot starts at the first line of a new chain of programs: a
banner (:mod:`bootlens.parsers.banners`: boot ROM, DDR blob, TPL, SPL, firmware, bootloader) of
an earlier stage than something the current boot already ran, or of the same stage again (a
second U-Boot banner); ``Booting Linux``/``Linux version`` once the kernel was seen; or the
printk clock going back by more than :data:`BACKWARDS_SPLIT_NS` and staying back (a reset with
the start of the console lost). Only printk stamps take part: a bootloader's own stamps are on
another clock, and one line printed out of order by another CPU is no reset.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import InputError
from ..core.lines import Lines, steps_back
from ..core.model import BLOCK_KINDS, NS_PER_MS, Boot, Event, Events, EventSeq, Fact, InputStats, Kind
from ..parsers import Registry, default_registry
from ..core.options import ParseOptions
from ..parsers.banners import HANDOVERS, RANK_KERNEL, find_banners

BACKWARDS_SPLIT_NS = 500 * NS_PER_MS
# The kernel's first words: where a boot starts once the kernel was seen. Indexed while framing.
KERNEL_STARTS = ("Booting Linux", "Linux version")
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


def split_boots(lines: Lines) -> list[tuple[Lines, str, int]]:
    """Cut lines into boots: (lines, why this boot starts here, printk backward steps).

    Only the lines that can start a boot are visited: banner lines found through the keyword
    index and the places where the printk clock steps back (``steps_back``); both run over
    whole columns.

    A banner is a reset signature only where the chain cannot go on: after the kernel ran, or
    when the same program starts again with no hand-over (:data:`HANDOVERS`) since it last did, or
    when a boot ROM or first stage (rank 0), which nothing hands over to, starts again. Before
    the kernel, a program the boot has not run yet is the next link of its chain, whatever its
    usual place (Broadcom's SPL loads a TPL; U-Boot starts OpenSBI; TF-A starts a second SPL).
    """
    kern, texts = lines.kernel, lines.text
    kernel_starts = lines.starting(*KERNEL_STARTS)
    handovers = set(lines.starting(*HANDOVERS))
    reboots = {i for i in lines.starting(*JOURNAL_REBOOTS) if texts[i].startswith(JOURNAL_REBOOTS)
               and texts[i].rstrip().endswith("--")} if lines.journal else set()
    banners = {i: b for i, b, _ in find_banners(lines)}
    back = {i: j for i, j in steps_back(kern)}
    cuts: list[tuple[int, str]] = [(0, "start of input")]
    top = -1  # the latest stage of the chain the current boot has run (banner rank)
    seen_kernel = seen_version = False
    ran: dict[str, int] = {}  # the programs (banner names) the current boot has run: where each last started
    handed = -1  # the current boot's last hand-over line
    backwards = [0]
    for i in sorted(set(kernel_starts) | banners.keys() | back.keys() | handovers | reboots):
        t = texts[i]
        k = kern[i]
        last_cut = cuts[-1][0]
        reason = None
        if i in reboots:
            if i > last_cut:
                cuts.append((i, f"journal: {t.strip()}"))
                backwards.append(0)
            top, seen_kernel, seen_version, ran, handed = -1, False, False, {}, -1
            continue
        if i in handovers and i not in banners and i not in back:
            if t.startswith(HANDOVERS):
                handed = i
            continue
        j = back.get(i)
        if j is not None and j >= last_cut:  # compare only within the current boot
            prev = kern[j]
            assert prev is not None and k is not None
            # a journal is in the order journald received its entries, each stamped when it was
            # written: a busy journald puts seconds-old entries after newer ones, no reset
            if prev - k > BACKWARDS_SPLIT_NS and not lines.journal and not _resumes(kern, i, prev):
                reason = f"printk time went back from {prev / 1e9:.6f} to {k / 1e9:.6f}"
            else:
                backwards[-1] += 1
        rank = None
        if (b := banners.get(i)) is not None:
            rank = b.rank
            if (top > b.rank or (top == b.rank and b.repeat_splits)) and \
                    (seen_kernel or (b.name in ran and (handed < ran[b.name] or b.rank == 0))):
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
        if reason is not None and i > last_cut:
            cuts.append((i, reason))
            backwards.append(0)
            # the boundary line itself opens the new boot
            top = -1
            seen_kernel = t.startswith(("Booting Linux", "Linux version "))
            seen_version = t.startswith("Linux version ")
            ran, handed = {}, -1
        if rank is not None:
            top = max(top, rank)
        if b is not None:
            ran[b.name] = i
    if len(cuts) == 1:
        return [(lines, cuts[0][1], backwards[0])]
    out = []
    for n, (start, reason) in enumerate(cuts):
        end = cuts[n + 1][0] if n + 1 < len(cuts) else len(lines)
        out.append((lines.slice(start, end), reason, backwards[n]))
    return out


def _resumes(kern: Sequence[int | None], i: int, prev: int, look: int = 3) -> bool:
    """True when the printk clock is back at ``prev`` or later within the next few stamped lines
    after i: line i was printed out of order (another CPU's message), not after a reset."""
    seen = 0
    for j in range(i + 1, len(kern)):
        v = kern[j]
        if v is None:
            continue
        if v >= prev:
            return True
        seen += 1
        if seen >= look:
            return False
    return False


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
    return boot.lines.has_kernel_time()


def boots_from_lines(
    source: str,
    lines: Lines,
    stats: InputStats,
    options: ParseOptions,
    registry: Registry | None = None,
) -> list[Boot]:
    """Split and parse; raise :class:`InputError` when no boot is found at all."""
    boots: list[Boot] = []
    skipped = 0
    for lines_, reason, backwards in split_boots(lines):
        boot = parse_boot(source, len(boots), lines_, reason, options, registry)
        if not _has_boot(boot):
            skipped += len(lines_)
            continue
        extra: list[str] = []
        if backwards:
            extra.append(f"printk time went backwards {backwards} times (lines stamped out of order, "
                         "not a restart at zero)")
        if skipped:
            extra.append(f"{skipped} lines before this boot hold no boot output")
            skipped = 0
        if extra:
            boot = Boot(boot.source, boot.index, boot.lines, boot.events, boot.facts,
                        boot.warnings + tuple(extra), boot.formats, boot.split_reason)
        boots.append(boot)
    if not boots:
        if stats.garbled_lines * 2 >= max(1, stats.lines) or stats.nul_bytes * 4 >= max(1, stats.bytes):
            raise InputError(source, "binary or garbled input: no boot log found in it")
        if lines.journal:
            # a journal without the kernel's entries or the system manager's (a grep, `journalctl -u`)
            users = len(lines.grep("Startup finished in "))
            raise InputError(source, "no boot found: the journal holds no kernel entry and no line of the system "
                             "manager (systemd[1])" + (f"; its {users} 'Startup finished' lines are user managers' "
                                                       "(systemd --user): login sessions, not boots" if users else ""))
        raise InputError(source, "no boot found (no U-Boot, kernel or printk lines)")
    return boots
