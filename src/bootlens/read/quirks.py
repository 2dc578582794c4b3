"""Second pass over framed lines, the same whichever framing pass (native or Python) ran first:
the format knowledge that is about what a stamp *means* rather than where it is.

- A printk stamp glued after console text that had no newline (a login prompt, a half-written
  user-space line, noise) is the kernel's: the line gets its time, the message its text, and
  the console text before it is kept in :attr:`Lines.glued`. A stamp quoted by a test harness
  (kselftest's ``# [   86.098289] test_bpf: ...``) is output of the test, and stays text.
- Vendor caller prefixes after the stamp are peeled off before any parser matches a message:
  Samsung/Android ``[0:        swapper:    0]``, MediaTek ``(0)[151:bat_thread_kthr]`` and
  ``-(0)[0:swapper/0]``, with its level first on 3.18 (``<0>-(0)[0:swapper]``) (``[T1]``/``[C0]``
  are part of the printk prefix itself).
- A ``<6>`` level without a stamp is peeled off; a ring buffer cut in the middle of one leaves
  ``6>`` on its first line.
- Host clocks that restart (grabserial ``-m``) are put back on one axis.
- A stamp out of the range a time can take (numbers.TIME_NS_MAX; a ten-digit printk second can
  exceed it) is no time: the line keeps its text, untimed, and the lines are counted in a note.
- A decayed stamp (:func:`decayed`: a pstore/last_kmsg buffer read back from RAM that lost bits) is
  no time either: one digit of it off by one bit breaks the run of its neighbours, which agree.

Each step starts from an index (untimed lines holding ``[``, lines starting with a caller
prefix's first characters), so the plain path pays nothing per line.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, MutableSequence, Sequence

from ..core.lazyre import lazy  # start-up: most logs need few of these patterns
from ..core.lines import Lines
from .._native import native_module
from ..core.numbers import NS_PER_US, TIME_NS_MAX, in_range, to_int

# The strict printk stamp anywhere in a line (six decimals, as printk prints them).
_ANYWHERE = lazy(r"\[ *(\d{1,10})\.(\d{6})(?:@\d{1,4})?\](?:\[ *[TC]\d+\])? ?", re.ASCII)  # as native stamp()
# What a test harness puts before quoted kernel output: kselftest/TAP diagnostics "# ", "# # ".
_QUOTED = lazy(r"[ \t]*(?:#+[ \t]*)+$")
_LEVEL_TAIL = lazy(r"<\d{1,3}>$")
# A firmware's own tag right before a stamp of the printk shape: MediaTek's TF-A prints
# "[ATF](0)[0.000000]el3_exit" on its own clock, not the kernel's.
_FIRMWARE_TAG = lazy(r"\[[A-Za-z][\w-]{0,15}\](?:\(\d{1,3}\))?$")
# Vendor caller prefixes, after the printk stamp and the one space the framing takes.
# MediaTek 3.18 puts the message's level first: "<0>-(0)[0:swapper]Linux version ...".
# Samsung's Spreadtrum kernels follow theirs with the CPU again: " [3:   init:    1] [c3] ".
# The groups: the task's pid and comm (MediaTek's, then Samsung's).
_CALLER = lazy(r"(?:<[0-7]>)?[- ]?\(\d{1,4}\)\[(\d{1,7}):([^\]]*)\]"  # MediaTek: " (0)[151:comm]", "-(0)[0:comm]"
                     r"| ?\[ *\d{1,4}:([^\]]*): *(\d{1,7})\] ?(?:\[c\d{1,2}\] )?",  # Samsung/Android: " [0:   swapper:    0] "
                     re.ASCII)
CALLER_HEADS = (" (", "-(", " [", "(", "[", "<")  # first characters of _CALLER: indexed while framing
_TORN_LEVEL = lazy(r"[0-7]>(?=\S)")
_LEVEL = lazy(r"<[0-7]>(?=\S)")


def _exec_comm(comm: str) -> bool:
    """Whether pid 1's comm in a caller prefix is an exec'd program's ("init", "systemd"): before
    its exec pid 1 is the kernel's init thread, named after the idle task ("swapper/0"; "swapper"
    before 3.x). An exec'd name is a file's, without "/"; a last_kmsg's bit errors change letters
    and add some ("swap0er/0", "sgapper", "swapper-0", "(swapper/0"): seven letters anywhere in it
    within two of "swapper" are no exec's."""
    if not comm or "/" in comm:
        return False
    padded = comm.ljust(7)
    return all(sum(a != b for a, b in zip(padded[k:k + 7], "swapper")) > 2 for k in range(len(padded) - 6))


def settle(lines: Lines, notes: list[str] | None = None) -> None:
    """Glued and quoted stamps (not a firmware's, behind its own tag), caller prefixes, a torn
    first level, times out of range: in
    place. ``notes``: where to say how many stamps were out of range."""
    dropped = _out_of_range(lines.kernel) + _out_of_range(lines.host)
    texts, kernel = lines.text, lines.kernel
    changes: dict[int, str] = {}
    if texts and kernel[0] is None and _TORN_LEVEL.match(texts[0]):
        changes[0] = texts[0][2:]
    if kernel.count(None):
        search = _ANYWHERE.search
        quoted = _QUOTED.match
        for i in _nones(kernel):
            t = changes.get(i, texts[i])
            if t[:1] == "<":  # a level without a stamp (dmesg -r, or printk time off)
                lv = _LEVEL.match(t)
                if lv is not None:
                    t = changes[i] = t[lv.end():]
            if "[" not in t:
                continue
            m = search(t)
            if m is None:
                continue
            before = t[: m.start()]
            if before and quoted(before):
                continue  # quoted kernel output (kselftest): text of the test, not a kernel line
            if before and _FIRMWARE_TAG.match(before):
                continue  # a firmware's line on its own clock
            k = int(m[1] + m[2]) * 1000  # at most 16 digits
            changes[i] = t[m.end():]
            if k > TIME_NS_MAX:  # as a stamp at the line's start: taken off the text, counted, not used
                dropped += 1
            else:
                kernel[i] = k
            before = _LEVEL_TAIL.sub("", before)
            if before.strip():
                lines.glued[i] = before
    if dropped and notes is not None:
        notes.append(f"{dropped} timestamps out of range (over {TIME_NS_MAX // 10**9:,} s) were not used")
    caller = _CALLER.match
    by_init: list[tuple[int, str]] = []
    for i in sorted(set(lines.starting(*CALLER_HEADS)).union(changes)):
        if kernel[i] is None:
            continue
        t = changes.get(i, texts[i])
        m = caller(t)
        if m is not None and m.end() < len(t):
            changes[i] = t[m.end():]
            pid, comm = (m[1], m[2]) if m[1] is not None else (m[4], m[3])
            if pid == "1" and _exec_comm(comm.strip()):
                by_init.append((i, comm.strip()))
    if by_init:  # a name seen once could be a bit error's (a last_kmsg decays): two lines say it
        seen = Counter(c for _, c in by_init)
        lines.by_init = [i for i, c in by_init if seen[c] >= 2]
    placed = _android_wall(lines, changes)
    if placed and notes is not None:
        notes.append(placed)
    if changes:
        lines.retext(changes)
    if not lines.journal:  # a journal's order is journald's, not the stamps' (timeline.boots)
        bad = decayed(kernel)
        for i in bad:
            kernel[i] = None
        if bad and notes is not None:
            notes.append(decay_note(bad, lines.first))


# Android kernels print their wall clock before what user space writes to /dev/kmsg, in a
# last_kmsg ("[01-03 09:43:51.503] init: init first stage started!"): CLOCK_REALTIME to the ms.
# The RTC driver set that clock at a printk time ("[    3.820166] rtc_tps6591x rtc_tps6591x.0:
# setting system clock to 2018-01-03 09:43:51 UTC (1514972631)", hctosys): from there on the
# wall clock reads the anchor plus the printk time since, exactly, so such a line's printk time
# is T + (wall - anchor). Until user space steps the clock (network time): a stamp that would
# fall before the anchor or before the line placed last ends the mapping. Corpus 27 and 35.
_WALL = lazy(r"\[(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3})\] ")
_HCTOSYS = lazy(r".*\bsetting system clock to (\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) UTC")


def _android_wall(lines: Lines, changes: dict[int, str]) -> str | None:
    """Give the Android wall-clock lines after an RTC's 'setting system clock' their printk time
    (and take the prefix off their text, in ``changes``); a note saying how many, or None."""
    from datetime import datetime, timezone

    kern, texts = lines.kernel, lines.text
    anchors = [i for i in lines.grep("setting system clock to") if kern[i] is not None]
    if not anchors:
        return None
    walls = [i for i in lines.starting("[0", "[1") if kern[i] is None and i > anchors[0]]
    placed = stepped = 0
    a_at: int | None = None  # the anchor's printk time, its wall clock, and the last line placed
    a_wall = datetime(1970, 1, 1, tzinfo=timezone.utc)
    last = 0
    for i in walls:
        while anchors and anchors[0] < i:  # the latest anchor before the line (one per boot)
            j = anchors.pop(0)
            m = _HCTOSYS.match(texts[j])
            if m is not None:
                try:
                    a_wall = datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]),
                                      tzinfo=timezone.utc)
                except ValueError:
                    continue
                a_at = last = kern[j] or 0  # anchors are stamped lines
        w = _WALL.match(changes.get(i, texts[i]))
        if w is None or a_at is None:
            continue
        mo = int(w[1])
        # a stamp in January after a December anchor is the next year's
        y = a_wall.year + 1 if mo < a_wall.month - 6 else a_wall.year
        try:
            wall = datetime(y, mo, int(w[2]), int(w[3]), int(w[4]), int(w[5]), int(w[6]) * 1000, tzinfo=timezone.utc)
        except ValueError:
            continue
        k = a_at + round((wall - a_wall).total_seconds() * 1e6) * 1000
        if k < last:  # the clock was stepped back (or this is another boot's line): no more
            stepped += 1
            a_at = None
            continue
        kern[i] = last = k
        changes[i] = changes.get(i, texts[i])[w.end():]
        placed += 1
    if not placed:
        return None
    return (f"{placed} lines stamped with Android's wall clock ([MM-DD HH:MM:SS.mmm]) read on the printk clock "
            "through the RTC's 'setting system clock'" + (f"; {stepped} after the clock was stepped back not placed"
                                                            if stepped else ""))


# A stamp is decayed when its neighbours agree (the one before is not later than the one after),
# it lies at least DECAY_MIN_NS outside them (an SMP race puts a line a few ms out of order, never
# this far), and one bit flipped back in one of its digits puts it within DECAY_SLACK_NS of them.
# The class: pstore console-ramoops and Android last_kmsg read back from RAM after a reset
# (corpus more/55, more/56: "[    2.000000]" among 0.000000 lines, "0.160425" for 0.560425).
DECAY_MIN_NS = 20_000_000
DECAY_SLACK_NS = 1_000_000
_BITS = (1, 2, 4, 8)  # an ASCII digit 0x30-0x39 that loses or gains one of these bits


def decayed(kern: Sequence[int | None]) -> list[int]:
    """Ascending indices of the printk stamps that are bit decay (see DECAY_MIN_NS): each one
    steps back from the stamp before it or is stepped back from by the one after it, so only the
    clock's backward steps (native, one pass) are looked at."""
    from ..core.lines import steps_back

    cands: set[int] = set()
    for i, j in steps_back(kern):
        cands.add(i)
        cands.add(j)
    out = []
    for c in sorted(cands):
        prev = _near(kern, c, -1)
        nxt = _near(kern, c, 1)
        v = kern[c]
        if prev is None or nxt is None or v is None or prev > nxt:
            continue
        if prev - DECAY_MIN_NS < v < nxt + DECAY_MIN_NS or v % 1000:
            continue
        if _one_flip_within(v // 1000, (prev - DECAY_SLACK_NS) // 1000, (nxt + DECAY_SLACK_NS) // 1000):
            out.append(c)
    return out


def _near(kern: Sequence[int | None], i: int, step: int, look: int = 8) -> int | None:
    """The first stamp before (step -1) or after (step 1) index i, within ``look`` lines."""
    j = i + step
    while 0 <= j < len(kern) and abs(j - i) <= look:
        v = kern[j]
        if v is not None:
            return v
        j += step
    return None


def _one_flip_within(us: int, lo: int, hi: int) -> bool:
    """True when flipping one bit of one decimal digit of ``us`` (as printk prints it, padded
    to the width of ``hi``) gives a value in lo..hi."""
    digits = str(us).rjust(len(str(hi)), "0")
    n = len(digits)
    for p, ch in enumerate(digits):
        d = ord(ch) - 48
        place = 10 ** (n - 1 - p)
        for bit in _BITS:
            d2 = d ^ bit
            if d2 <= 9 and lo <= us + (d2 - d) * place <= hi:
                return True
    return False


def decay_note(bad: Sequence[int], first: int = 1) -> str:
    """The warning for decayed stamps: how many, and the first lines."""
    shown = ", ".join(str(first + i) for i in bad[:8])
    more = f" and {len(bad) - 8} more" if len(bad) > 8 else ""
    return (f"{len(bad)} printk stamps look decayed (one bit off, out of the run of their neighbours: "
            f"line{'s' if len(bad) > 1 else ''} {shown}{more}): not used for times")


def _out_of_range(col: MutableSequence[int | None]) -> int:
    """Set the times outside -TIME_NS_MAX..TIME_NS_MAX to None (wall-clock framings give times
    relative to the first line, which may be negative); returns how many. filter(), max() and
    min() run in C, so an input without such a time pays passes at memory speed."""
    if not col:
        return 0
    drop = getattr(col, "drop_outside", None)  # a native TimeColumn does it in one pass
    if drop is not None:
        dropped: int = drop(TIME_NS_MAX)
        return dropped
    timed = list(filter(None, col))  # zeros left out too: in range
    if not timed or (max(timed) <= TIME_NS_MAX and min(timed) >= -TIME_NS_MAX):
        return 0
    n = 0
    for i, v in enumerate(col):
        if v is not None and not -TIME_NS_MAX <= v <= TIME_NS_MAX:
            col[i] = None
            n += 1
    return n


def _nones(col: Sequence[int | None]) -> list[int]:
    """Indices of the None values: list.index runs in C, so a column with few is read at
    memory speed (a list comprehension would cost a Python step per line)."""
    nones = getattr(col, "nones", None)  # a native TimeColumn answers in one pass
    if nones is not None:
        found: list[int] = nones()
        return found
    out: list[int] = []
    i = -1
    try:
        while True:
            i = col.index(None, i + 1)
            out.append(i)
    except ValueError:
        return out


def host_restarts(lines: Lines, raw: Callable[[], list[str]]) -> list[str]:
    """grabserial ``-m``: the host time jumps back to about 0 at the line after the match.

    grabserial resets its base to the matched line's start and its previous-line time to 0, so
    the next line shows as elapsed and as delta the time since the matched line: that line is
    put at the previous line's time plus its delta, and every later line moves with it. A
    negative delta is a host clock stepped back (NTP): the line keeps the previous time.
    ``raw`` gives the unframed lines (read only when a jump was found). Returns the notes.
    """
    from ..core.lines import steps_back

    host = lines.host
    if not steps_back(host):
        return []
    src = raw()
    jumps: list[tuple[int, int]] = []
    off = 0
    last: int | None = None
    for i, h in enumerate(host):
        if h is None:
            continue
        v = h + off
        if last is not None and v < last:
            # the line's grabserial -t delta (native/src/frame.rs, the framing's own reader of the prefix)
            m = native_module().grabserial_t_delta(src[i]) if i < len(src) else None
            d = None if m is None or m[0] else to_int(m[1], TIME_NS_MAX // NS_PER_US)
            delta = 0 if d is None else d * NS_PER_US
            new = last + delta if in_range(last + delta) else last
            jumps.append((i, last - v))
            off += new - v
            v = new
        host[i] = v
        last = v
    _out_of_range(host)  # many restarts can carry the last lines past any time
    shown = ", ".join(f"line {lines.no(i)} (back {back / 1e9:.6f} s)" for i, back in jumps[:5])
    more = f" and {len(jumps) - 5} more" if len(jumps) > 5 else ""
    return [f"host clock restarted {len(jumps)} time(s) (grabserial -m?) at {shown}{more}: later lines "
            "were moved onto one axis by the time of the line before each restart plus the line's own delta"]
