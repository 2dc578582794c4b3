"""Framings of logs that tools other than a serial console wrote: LAVA job logs, journalctl's
wall-clock formats, ``dmesg -T`` and ``dmesg -x``, Android's ``logcat``; and ``journalctl -o json``
(journal.py).

These are line-oriented wrappers around console or kernel text, read once per file and never
at the rate of a live console, so they live in Python only: the native framing pass returns
None for them (:func:`bootlens.read.reader.frame_text` then takes this path). Each framing keeps one
output line per input line, so line numbers in evidence still point into the file; a line that
is not console output (a LAVA dispatcher message) keeps its number with empty text and no time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from .journal import frame_json, is_json_line
from ..core.lazyre import lazy
from ..core.lines import KERNEL_ENTRY
from .._native import native_module  # start-up: most logs need few of these patterns

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from datetime import datetime

# LAVA (lava_common/log.py): "- " + a flow-style YAML map dumped with default_style='"', so
# every scalar is double-quoted and escaped YAML-style; keys are sorted (dt, lvl, msg[, ns]).
_LAVA = lazy(r'- \{"dt": "([^"]*)", "lvl": "([a-z]+)", "msg": (.*)\}\s*$')
_LAVA_PREFIX = '- {"dt": "'  # how every LAVA line opens (a prefix: no pattern to compile)
# YAML double-quoted escapes (YAML 1.1 as PyYAML writes them).
_YAML_ESC = lazy(r'\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)', re.S)
_YAML_SIMPLE = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
                "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
                "_": "\xa0", "L": "\u2028", "P": "\u2029"}
# Control characters the console cleaning removes (tab kept); LAVA already drops ESC.
_CTRL = lazy(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
# ... but only the ESC byte: the rest of each escape stays in the message ("[0;32m  OK  [0m]",
# "c[?7l[2J" for ESC c ESC [?7l ESC [2J). The console cleaning would have removed the whole
# sequence, so these remnants go too: colours (SGR), private modes, erase, and the "c" of a reset
# where the mode change follows it (tuxrun's real logs, tests/golden/lava/). A printk stamp or
# "[  OK  ]" has spaces or a dot inside and never matches; a digit is required so that "[mem ...]"
# stays, and a bare "[K" (erase line) only when no letter follows ("[Kernel" stays).
_ESC_REMNANT = lazy(r"c?\[\?[0-9;]{1,16}[hl]|\[[0-9;]{1,16}[mJK]|\[K(?![A-Za-z])")

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                        "Nov", "Dec"), 1)}
# journalctl prints the month as the C library's locale abbreviates it (%b): the glibc abbreviations of
# the locales boot logs come in (fr, de, es, it, pt, nl, pl, ru, zh/ja), lower case, without the dot
# French puts after some ("févr."); none means two months.
_LOCAL_MONTHS = {
    **{m.lower(): i for m, i in _MONTHS.items()},
    **{m: i for i, ms in enumerate((
        ("janv", "ene", "gen", "sty", "янв"), ("févr", "fév", "fev", "lut", "фев"), ("mars", "mär", "mrt", "мар"),
        ("avr", "abr", "kwi", "апр"), ("mai", "mag", "mei", "maj", "мая", "май"), ("juin", "giu", "cze", "июн"),
        ("juil", "lug", "lip", "июл"), ("août", "ago", "sie", "авг"), ("sept", "set", "wrz", "сен"),
        ("okt", "ott", "out", "paź", "окт"), ("lis", "ноя"), ("déc", "dic", "dez", "gru", "дек")), 1) for m in ms},
    **{f"{i}月": i for i in range(1, 13)},
}
# journalctl -o short / short-precise: "Jan 30 09:37:23[.123456] host ident[pid]: message" (any
# locale's month: "févr. 05 17:36:57", "4月 11 21:54:22").
_J_SHORT = lazy(r"(\S{1,6}?)\.? +([0-9]{1,2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{6}))? (\S+) ")


def month_of(word: str) -> int | None:
    """The month a journal line's first word names, in any locale of :data:`_LOCAL_MONTHS`, or None."""
    return _LOCAL_MONTHS.get(word.lower())
# journalctl -o short-iso / short-iso-precise: "2024-01-30T09:37:23[.123456]+01:00 host ...".
_J_ISO = lazy(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{6}))?(?:Z|[+-]\d\d:?\d\d) (\S+) ",
                    re.ASCII)
# journalctl's own lines: "-- Boot 0123... --", "-- Logs begin at ... --", "-- No entries --".
_J_META = lazy(r"-- .* --$")
_CATALOG = "\u2591\u2591"  # "░░": journalctl -x's catalog text, below the entry it explains
_KERNEL_IDENT = "kernel: "
# dmesg -T (util-linux, ctime format): "[Tue Jan 20 10:17:44 2026] message".
_DMESG_T = lazy(r"\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\] ?", re.ASCII)
# dmesg -x / --decode: "kern  :info  : " (facility and level names padded to 6).
_DMESG_X = lazy(r"([a-z0-9]{2,8}) *:([a-z]{3,6}) *: ", re.ASCII)
_DMESG_X_LEVELS = frozenset(("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"))
# Android logcat -v threadtime (its default since Android 7): "09-26 18:18:27.847  2519  2519 I vold    : msg"
# (month-day, wall clock to the ms, pid, tid, level, the tag padded to 8, ": ", the message); each
# buffer's entries open with "--------- beginning of main" (logcat -b all: kernel, main, system, crash).
_LOGCAT = lazy(r"([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3}) +([0-9]+) +([0-9]+) [VDIWEFS] ",
               re.ASCII)
_LOGCAT_HEAD = "--------- beginning of "
# The printk prefix is read by the native framing's own matcher (native_module().printk_prefix):
# one reader of it for every framing.
_KERNEL_START = ("Linux version", "Booting Linux")

NS = 1_000_000_000
FRAMINGS = ("lava", "journalctl-short", "dmesg-T", "dmesg-x", "journal-json", "logcat")

Columns = tuple[list[str], list[int | None], list[int | None], list[str]]  # text, kernel, host, notes
# ... and a journal entry's structured fields by line (journal.SIDE_FIELDS), empty for the others
Framed = tuple[list[str], list[int | None], list[int | None], list[str], dict[int, dict[str, str]]]


def detect(sample: Sequence[str]) -> str | None:
    """The framing at least half of the sample's lines carry, or None."""
    n = len(sample)
    if not n:
        return None
    for name, test in _TESTS:
        if sum(1 for s in sample if test(s)) * 2 >= n:
            return name
    return None


# Start-up: each test first looks at the characters its pattern must open with, so a console log
# (lines opening with "[" or text) compiles none of these patterns to be told apart (six compiles,
# ~1 ms of a small log's ``analyze``); tests/test_startup.py checks each test against its bare
# pattern on every golden and wild line.
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DIGITS = frozenset("0123456789")
_X_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")  # _DMESG_X's [a-z0-9]{2,8}
_J_FIRST = _UPPER | _DIGITS | frozenset("abcdefghijklmnopqrstuvwxyz")  # _J_SHORT's month, _J_ISO's year


def _is_journal(s: str) -> bool:
    c = s[:1]
    if c not in _J_FIRST and (not c or c.isascii()):  # a month in another script: "févr.", "4月", "янв"
        return False
    m = _J_SHORT.match(s)
    return (m is not None and month_of(m[1]) is not None) or _J_ISO.match(s) is not None


def _is_dmesg_x(s: str) -> bool:
    if s[:1] not in _X_FIRST:
        return False
    m = _DMESG_X.match(s)
    return m is not None and m[2] in _DMESG_X_LEVELS


_TESTS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("journal-json", is_json_line),
    ("lava", lambda s: s.startswith(_LAVA_PREFIX)),
    ("dmesg-x", _is_dmesg_x),
    ("dmesg-T", lambda s: s[:1] == "[" and s[1:2] in _UPPER and _DMESG_T.match(s) is not None),
    # journalctl -x adds the catalog's explanation of an entry below it, each line opening "░░ "
    ("journalctl-short", lambda s: _is_journal(s) or (s[:3] == "-- " and _J_META.match(s) is not None)
     or s[:2] == _CATALOG),
    ("logcat", lambda s: (s[:1] in _DIGITS and _LOGCAT.match(s) is not None) or s.startswith(_LOGCAT_HEAD)),
)


def frame(raw: list[str], framing: str) -> Framed:
    """Frame the lines of one of :data:`FRAMINGS`; returns the columns, notes for the stats and
    the journal's side fields (the journals' only: their kernel entries, and more in JSON)."""
    if framing == "journal-json":
        return frame_json(raw)
    if framing == "lava":
        cols = _lava(raw)
    elif framing == "journalctl-short":
        return _journal(raw)
    elif framing == "dmesg-T":
        cols = _dmesg(raw, decoded=False)
    elif framing == "dmesg-x":
        cols = _dmesg(raw, decoded=True)
    elif framing == "logcat":
        cols, fields = _logcat(raw)
        return (*cols, fields)
    else:
        raise ValueError(f"unknown framing {framing!r}")
    return (*cols, {})


def _unyaml(body: str) -> str | None:
    """The string of a YAML double-quoted scalar (``"..."``), or None for anything else (a map)."""
    if len(body) < 2 or body[0] != '"' or body[-1] != '"':
        return None
    s = body[1:-1]
    if "\\" not in s:
        return s

    def esc(m: re.Match[str]) -> str:
        e = m[1]
        if len(e) > 1:
            # at most 8 hex digits (the pattern); past Unicode or a lone surrogate (which no UTF-8
            # writer takes) reads as U+FFFD, as undecodable bytes do
            code = int(e[1:], 16)
            return "\ufffd" if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF else chr(code)
        return _YAML_SIMPLE.get(e, e)

    return _YAML_ESC.sub(esc, s)


def _console(msgs: list[str]) -> tuple[list[str], list[int | None]]:
    """printk prefixes of console messages: (text, kernel ns) per message."""
    texts: list[str] = []
    kernel: list[int | None] = []
    printk = native_module().printk_prefix
    for s in msgs:
        m = printk(s)
        if m is None:
            texts.append(s)
            kernel.append(None)
        else:
            texts.append(s[m[0]:])
            kernel.append(m[1])
    return texts, kernel


def _lava(raw: list[str]) -> Columns:
    """LAVA job log: ``target`` lines are the console; ``dt`` (UTC, µs) is when the dispatcher
    read the line, t=0 at the first target line. Other levels are the dispatcher's own messages
    (info, debug, input sent to the board, results, feedback from other connections): they keep
    their line numbers with empty text.

    A prompt has no newline, so LAVA writes its record only when the echo of what it typed ends
    the line ("tuxtest login: root", after the ``input`` record "root"): such a line is timed at
    the first dispatcher record after the previous console line, when LAVA had matched the prompt,
    not a keystroke round trip later."""
    texts = [""] * len(raw)
    kernel: list[int | None] = [None] * len(raw)
    host: list[int | None] = [None] * len(raw)
    levels: Counter[str] = Counter()
    bad = remnants = prompts = 0
    idx: list[int] = []
    msgs: list[str] = []
    times: list[int | None] = []
    first_other: int | None = None  # dt of the first dispatcher record since the last target line
    typed = ""  # what LAVA last sent to the board since the last target line
    for i, s in enumerate(raw):
        if not s.strip():
            continue
        m = _LAVA.match(s)
        if m is None:
            bad += 1
            continue
        if m[2] != "target":
            levels[m[2]] += 1
            if first_other is None:
                first_other = _dt(m[1])
            if m[2] == "input":
                typed = (_unyaml(m[3]) or "").strip()
            continue
        msg = _unyaml(m[3])
        if msg is None:
            bad += 1
            continue
        t = _dt(m[1])
        if typed and first_other is not None and len(msg.rstrip()) > len(typed) and msg.rstrip().endswith(typed):
            t = first_other
            prompts += 1
        first_other, typed = None, ""
        idx.append(i)
        # a bare CR mid-line (progress output) disappears as in a console capture
        if _CTRL.search(msg):
            msg = _CTRL.sub("", msg)
        if "[" in msg:
            msg, n = _ESC_REMNANT.subn("", msg)
            remnants += n
        msgs.append(msg)
        times.append(t)
    ctexts, ckernel = _console(msgs)
    t0 = next((t for t in times if t is not None), 0)
    for i, txt, k, t in zip(idx, ctexts, ckernel, times):
        texts[i] = txt
        kernel[i] = k
        host[i] = None if t is None else t - t0
    notes = []
    if levels:
        kinds = ", ".join(f"{n} {lvl}" for lvl, n in sorted(levels.items()))
        notes.append(f"LAVA job log: {len(idx)} target (console) lines read; {sum(levels.values())} dispatcher "
                     f"lines are not console output and were skipped ({kinds})")
    if bad:
        notes.append(f"LAVA job log: {bad} lines were not LAVA log records and were skipped")
    if prompts:
        notes.append(f"LAVA job log: {prompts} prompt line{'s' * (prompts != 1)} ended by the echo of LAVA's "
                     "input timed when LAVA matched the prompt")
    if remnants:
        notes.append(f"LAVA job log: {remnants} terminal escapes whose ESC byte LAVA had dropped were removed")
    return texts, kernel, host, notes


def _dt(s: str) -> int | None:
    """ns since the epoch of a LAVA ``dt`` (ISO 8601, UTC, µs), or None when it does not read."""
    from datetime import datetime  # here: a console log never needs it (start-up, ~3 ms)

    try:
        return _epoch_ns(datetime.fromisoformat(s))
    except ValueError:
        return None


def _epoch_ns(d: datetime) -> int:
    """ns since the epoch of a naive or aware datetime (naive: as if UTC; only differences count)."""
    days = d.toordinal()
    sec = ((days * 24 + d.hour) * 60 + d.minute) * 60 + d.second
    off = d.utcoffset()
    if off is not None:
        sec -= int(off.total_seconds())
    return sec * NS + d.microsecond * 1000


class _Yearless:
    """Wall-clock stamps printed without a year (journalctl short, logcat), in ns since the epoch
    of a year guessed to fit: a leap year, so that Feb 29 reads; a month going back by more than
    half a year is the next year (only differences count)."""

    __slots__ = ("year", "last_month")

    def __init__(self) -> None:
        self.year = 2000
        self.last_month = 0

    def ns(self, month: int, day: int, h: int, mi: int, sec: int) -> int | None:
        """The stamp's ns (whole seconds; the caller adds the fraction), or None for a date that
        does not exist."""
        from datetime import datetime

        if month < self.last_month - 6:
            self.year += 1
        self.last_month = month
        try:
            return _epoch_ns(datetime(self.year, month, day, h, mi, sec))
        except ValueError:
            return None


def _journal(raw: list[str]) -> Framed:
    """journalctl short, short-precise, short-iso, short-iso-precise: wall-clock host time
    (1 s or 1 µs resolution), t=0 at the first entry. Kernel entries' text is the message, the
    entry marked the kernel's in the side fields (:data:`~bootlens.core.lines.KERNEL_ENTRY`);
    other entries keep ``ident[pid]: message`` (user-space parsers look for ``systemd[1]:``)."""
    from datetime import datetime

    texts: list[str] = []
    host: list[int | None] = []
    clock = _Yearless()  # short has no year
    t0: int | None = None
    precise = iso = 0
    entries: dict[int, dict[str, str]] = {}
    for s in raw:
        m = _J_SHORT.match(s)
        t: int | None = None
        end = 0
        if m is not None and (month := month_of(m[1])) is not None:
            t = clock.ns(month, int(m[2]), int(m[3]), int(m[4]), int(m[5]))
            if t is not None:
                t += int(m[6]) * 1000 if m[6] else 0
                precise += m[6] is not None
            end = m.end()
        else:
            m = _J_ISO.match(s)
            if m is not None:
                try:
                    t = _epoch_ns(datetime.fromisoformat(s[:m.start(8) - 1]))
                except ValueError:
                    t = None
                iso += 1
                precise += m[7] is not None
                end = m.end()
        if t is None:
            texts.append(s)
            host.append(None)
            continue
        if t0 is None:
            t0 = t
        host.append(t - t0)
        rest = s[end:]
        if rest.startswith(_KERNEL_IDENT):
            entries[len(texts)] = KERNEL_ENTRY
            rest = rest[len(_KERNEL_IDENT):]
        texts.append(rest)
    timed = len(host) - host.count(None)
    notes = []
    if timed and precise * 2 < timed:
        notes.append("journalctl short format: times are wall clock with 1 s resolution; "
                     "durations below a second are not measured")
    kernel: list[int | None] = [None] * len(texts)
    return texts, kernel, host, notes, entries


def _logcat(raw: list[str]) -> tuple[Columns, dict[int, dict[str, str]]]:
    """Android logcat (threadtime): wall-clock host time to the ms, t=0 at the first entry. Text is
    ``TAG: message`` as the program logged it; for the kernel's entries (pid 0, read by logd from
    the kernel's ring buffer, the tag being what came before the message's first colon) that is the
    kernel's own line back ("PM: RTC time: ...", an untagged "Linux version ..."). The buffer
    headers and lines that are no entry (adb's own messages) keep their number with no time, the
    headers with empty text. The first entry of each user-space process carries its pid in the
    line's fields (``_PID``): a log that starts in user space shows where."""
    texts: list[str] = []
    host: list[int | None] = []
    fields: dict[int, dict[str, str]] = {}
    seen: set[str] = set()
    clock = _Yearless()  # logcat prints no year
    t0: int | None = None
    heads = kernel = back = 0
    for i, s in enumerate(raw):
        m = _LOGCAT.match(s)
        t = None if m is None else clock.ns(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]))
        if m is None or t is None:
            if s.startswith(_LOGCAT_HEAD):
                heads += 1
                s = ""
            texts.append(s)
            host.append(None)
            continue
        t += int(m[6]) * 1_000_000
        if t0 is None:
            t0 = t
        host.append(t - t0)
        rest = s[m.end():]
        tag, sep, msg = rest.partition(": ")
        tag = tag.rstrip()
        if not sep:  # "with arguments:" as the last word: an empty message
            tag, msg = rest.rstrip().rstrip(":").rstrip(), ""
        texts.append(f"{tag}: {msg}" if tag else msg)
        pid = m[7]
        if pid == "0":
            kernel += 1
            fields[i] = KERNEL_ENTRY  # the kernel's entry, as a journal marks it (core.lines.kernel_entry)
        elif pid not in seen:
            seen.add(pid)
            fields[i] = {"_PID": pid}
    entries = len(host) - host.count(None)
    # logcat lists each buffer's entries in turn, and a clock set while it ran steps back: an entry
    # later than the one after it, or earlier than the first, is out of time order, and a span
    # measured to or from it would be false (a "silence" of minutes between two kernel lines of the
    # same second); it keeps its line and text, with no time
    timed = [i for i, h in enumerate(host) if h is not None]
    for a, b in zip(timed, timed[1:] + [None]):
        ha = host[a]
        assert ha is not None
        if ha < 0 or (b is not None and (hb := host[b]) is not None and hb < ha):
            host[a] = None
            back += 1
    notes = [f"logcat: {entries} entries, times are wall clock to the ms (the kernel's as logd converted "
             "its printk times)" + (f"; {kernel} kernel entries" if kernel else "")]
    if heads:
        notes.append(f"logcat: {heads} buffer headers ('--------- beginning of ...') are no entry")
    if back:
        notes.append(f"logcat: {back} entries out of time order (a buffer's entries after another's, a clock "
                     "set back) keep their line and no time")
    return (texts, [None] * len(texts), host, notes), fields


def _dmesg(raw: list[str], decoded: bool) -> Columns:
    """dmesg -T (printk times converted to wall clock, 1 s resolution) and dmesg -x (facility
    and level before the stamp). -T times go back onto the kernel clock, t=0 at the kernel's
    first line, when the log starts with the kernel start; otherwise they stay relative wall
    times on the host column (a cut ring buffer must not pretend to start at 0)."""
    from datetime import datetime

    printk = native_module().printk_prefix
    texts: list[str] = []
    kernel: list[int | None] = []
    wall: list[int | None] = []
    walls = 0
    for s in raw:
        pos = 0
        if decoded:
            x = _DMESG_X.match(s)
            if x is not None and x[2] in _DMESG_X_LEVELS:
                pos = x.end()
        w = _DMESG_T.match(s, pos)
        if w is not None:
            month = _MONTHS.get(w[1])
            t = None
            if month is not None:
                try:
                    t = _epoch_ns(datetime(int(w[6]), month, int(w[2]), int(w[3]), int(w[4]), int(w[5])))
                except ValueError:
                    t = None
            wall.append(t)
            kernel.append(None)
            texts.append(s[w.end():])
            walls += t is not None
            continue
        wall.append(None)
        p = printk(s, pos)
        if p is None:
            kernel.append(None)
            texts.append(s[pos:])
        else:
            kernel.append(p[1])
            texts.append(s[p[0]:])
    notes: list[str] = []
    if not walls:
        return texts, kernel, [None] * len(texts), notes
    first = next(i for i, t in enumerate(wall) if t is not None)
    w0 = wall[first]
    starts = any(texts[i].startswith(_KERNEL_START) for i in range(first, len(texts))
                 if wall[i] is not None and wall[i] == w0)
    if starts:
        for i, t in enumerate(wall):
            if t is not None and kernel[i] is None:
                kernel[i] = t - w0  # type: ignore[operator]
        notes.append("dmesg -T: wall-clock times (1 s resolution) read as kernel times from the "
                      f"kernel's first line (line {first + 1}); durations below a second are not measured")
        return texts, kernel, [None] * len(texts), notes
    host = [None if t is None else t - w0 for t in wall]  # type: ignore[operator]
    notes.append("dmesg -T without the kernel's first line (a cut ring buffer): wall-clock times "
                 "(1 s resolution) kept relative to the first line, not as kernel times")
    return texts, kernel, host, notes
