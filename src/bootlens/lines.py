"""Reading an input: bytes -> clean text -> :class:`~bootlens.model.Line` tuples.

Everything odd in the bytes is counted in :class:`~bootlens.model.InputStats`, nothing is fatal
here. Cleaning (NULs, CR, ANSI escapes, control characters) runs over the whole buffer with
``str`` methods and compiled regexes, in C; the per-line loop only peels the host prefix
(grabserial ``-t``/``-T``) and the printk prefix, because that loop is what bounds throughput.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import InputError
from .model import Clock, InputStats, Line, Stamp

LONG_LINE = 4096  # characters; longer lines are kept but clipped when quoted as evidence
SNIFF_LINES = 400

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), charset selection, then any 2-char escape
# (ESC c = reset, which SeaBIOS and the kernel's x86 console print).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[()*+][0-~]|[0-~])")
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# printk: "[    1.234567] ", with an optional "<6>" level and an optional "[    T1]" caller id.
_PRINTK = re.compile(r"[ \t]*(?:<(\d{1,3})>)?\[ *(\d{1,10})\.(\d{1,9})\](?:\[ *[TC]\d+\])? ?")
# The same anywhere in a line, strict 6-digit form, for output glued after unterminated noise.
_PRINTK_ANYWHERE = re.compile(r"\[ *(\d{1,10})\.(\d{6})\](?:\[ *[TC]\d+\])? ?")
# grabserial -t: "[elapsed delta] " (elapsed "%4.6f", delta "%2.6f").
_GS_T = re.compile(r"\[ *(\d{1,10})\.(\d{6}) +-?\d+\.\d{6}\] ?")
# grabserial -T: "[HH:MM:SS.ffffff delta] " or, with delta off, "[HH:MM:SS.ffffff] ".
_GS_SYS = re.compile(r"\[(\d\d):(\d\d):(\d\d)\.(\d{6})(?: +-?\d+\.\d{6})?\] ?")
# journalctl -k -o short-monotonic: "[    1.234567] host kernel: message".
_JOURNAL = re.compile(r"\S+ kernel: ")

_DAY_NS = 86_400 * 1_000_000_000


def _frac_ns(frac: str) -> int:
    """Fractional seconds digits -> ns (printk always prints 6 digits; be lenient)."""
    return int((frac + "000000000")[:9])


def read_path(path: str) -> tuple[list[Line], InputStats]:
    """Read a file (or ``-`` for standard input) and frame it into lines."""
    if path == "-":
        data = sys.stdin.buffer.read()
        return frame_bytes("<stdin>", data)
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, expected a log file") from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    return frame_bytes(path, data)


def clean_text(data: bytes) -> tuple[str, dict[str, int | bool]]:
    """Decode and clean a whole buffer; returns the text and counts of what was removed."""
    counts: dict[str, int | bool] = {}
    try:
        text = data.decode("utf-8")
        invalid = 0
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        invalid = text.count("\ufffd")
    counts["invalid_utf8"] = invalid
    nul = text.count("\x00")
    if nul:
        text = text.replace("\x00", "")
    counts["nul_bytes"] = nul
    cr_only = False
    if "\r" in text:
        if "\n" not in text:
            cr_only = True
            text = text.replace("\r", "\n")
        else:
            # grabserial drops CR too; a bare CR mid-line (progress output) just disappears.
            text = text.replace("\r", "")
    counts["cr_only"] = cr_only
    ctrl = 0
    if "\x1b" in text:
        text, n = _ANSI.subn("", text)
        ctrl += n
    if _CTRL.search(text) is not None:
        text, n = _CTRL.subn("", text)
        ctrl += n
    counts["control_chars"] = ctrl
    return text, counts


def _detect_framing(raw: Sequence[str]) -> str:
    """Which host prefix the lines carry: grabserial -t, -T, journalctl, or none."""
    sample = [s for s in raw[: SNIFF_LINES * 4] if s.strip()][:SNIFF_LINES]
    if not sample:
        return "plain"
    n = len(sample)
    gs_t = sum(1 for s in sample if _GS_T.match(s))
    if gs_t * 2 >= n:
        return "grabserial-t"
    gs_sys = sum(1 for s in sample if _GS_SYS.match(s))
    if gs_sys * 2 >= n:
        return "grabserial-T"
    journal = 0
    for s in sample:
        m = _PRINTK.match(s)
        if m and _JOURNAL.match(s, m.end()):
            journal += 1
    if journal * 2 >= n:
        return "journalctl"
    return "plain"


def frame_bytes(source: str, data: bytes) -> tuple[list[Line], InputStats]:
    """Decode, clean and frame a whole input."""
    if not data.strip():
        raise InputError(source, "empty input")
    text, counts = clean_text(data)
    raw = text.split("\n")
    no_final_newline = raw[-1] != ""
    if not no_final_newline:
        raw.pop()
    framing = _detect_framing(raw)
    lines = frame_lines(raw, framing)
    long_lines = sum(1 for s in raw if len(s) > LONG_LINE)
    garbled = 0
    if counts["invalid_utf8"]:
        garbled = sum(1 for s in raw if _looks_garbled(s))
    stats = InputStats(
        source=source,
        bytes=len(data),
        lines=len(raw),
        framing=framing,
        invalid_utf8=int(counts["invalid_utf8"]),
        nul_bytes=int(counts["nul_bytes"]),
        control_chars=int(counts["control_chars"]),
        long_lines=long_lines,
        garbled_lines=garbled,
        no_final_newline=no_final_newline,
        cr_only=bool(counts["cr_only"]),
        warnings=_stats_warnings(counts, long_lines, garbled, no_final_newline, len(raw)),
    )
    return lines, stats


def _looks_garbled(s: str) -> bool:
    """Noise from a wrong baud rate: mostly replacement or non-ASCII characters."""
    if "\ufffd" not in s:
        return False
    bad = sum(1 for c in s if c == "\ufffd" or ord(c) > 0x7E)
    return bad * 4 >= len(s)


def _stats_warnings(
    counts: dict[str, int | bool], long_lines: int, garbled: int, no_nl: bool, n: int
) -> tuple[str, ...]:
    w: list[str] = []
    if counts["invalid_utf8"]:
        w.append(f"{counts['invalid_utf8']} undecodable byte sequences replaced by U+FFFD")
    if garbled:
        w.append(f"{garbled} lines look like noise (wrong baud rate?) and were ignored by the parsers")
    if counts["nul_bytes"]:
        w.append(f"{counts['nul_bytes']} NUL bytes removed")
    if counts["cr_only"]:
        w.append("input uses bare CR line endings; treated as newlines")
    if long_lines:
        w.append(f"{long_lines} lines longer than {LONG_LINE} characters")
    if no_nl:
        w.append(f"last line ({n}) has no newline: the capture was cut mid-line")
    return tuple(w)


def frame_lines(raw: Sequence[str], framing: str) -> list[Line]:
    """Peel host and printk prefixes off each line. The hot loop: keep it lean."""
    out: list[Line] = []
    append = out.append
    pk = _PRINTK.match
    anywhere = _PRINTK_ANYWHERE.search
    journal = _JOURNAL.match if framing == "journalctl" else None
    if framing == "grabserial-t":
        host = _GS_T.match
    elif framing == "grabserial-T":
        host = _GS_SYS.match
    else:
        host = None
    wall = framing == "grabserial-T"
    wall0: int | None = None
    prev_wall = 0
    days = 0
    for i, s in enumerate(raw, 1):
        h_ns: int | None = None
        pos = 0
        if host is not None:
            h = host(s)
            if h is not None:
                pos = h.end()
                if wall:
                    t = (int(h[1]) * 3600 + int(h[2]) * 60 + int(h[3])) * 1_000_000_000 + int(h[4]) * 1000
                    if t + days < prev_wall - _DAY_NS // 2:  # crossed midnight
                        days += _DAY_NS
                    t += days
                    prev_wall = t
                    if wall0 is None:
                        wall0 = t
                    h_ns = t - wall0
                else:
                    h_ns = int(h[1] + h[2]) * 1000
        m = pk(s, pos)
        if m is None:
            if "[" in s:
                m2 = anywhere(s, pos)
                if m2 is not None:
                    append(Line(i, h_ns, int(m2[1] + m2[2]) * 1000, s[m2.end() :]))
                    continue
            append(Line(i, h_ns, None, s[pos:] if pos else s))
            continue
        frac = m[3]
        k = int(m[2] + frac) * 1000 if len(frac) == 6 else int(m[2]) * 1_000_000_000 + _frac_ns(frac)
        end = m.end()
        if journal is not None:
            j = journal(s, end)
            if j is not None:
                end = j.end()
        append(Line(i, h_ns, k, s[end:]))
    return out


def stamp_of(line: Line) -> Stamp | None:
    """The best time a line carries: the kernel's own clock beats the host's arrival time."""
    if line.kernel_ns is not None:
        return Stamp(Clock.KERNEL, line.kernel_ns)
    if line.host_ns is not None:
        return Stamp(Clock.HOST, line.host_ns)
    return None


def estimate_stamp(lines: Sequence[Line], idx: int) -> Stamp | None:
    """Time of ``lines[idx]``; for an untimed line, bounded by the kernel lines around it.

    A user-space line on a printk-only console has no time of its own, but it was printed after
    the previous kernel line and before the next: the estimate is the earlier bound, with the
    width of the interval as ``error_ns``.
    """
    line = lines[idx]
    st = stamp_of(line)
    if st is not None:
        return st
    before = None
    for j in range(idx - 1, -1, -1):
        if lines[j].kernel_ns is not None:
            before = lines[j].kernel_ns
            break
    if before is None:
        return None
    after = None
    for j in range(idx + 1, len(lines)):
        k = lines[j].kernel_ns
        if k is not None:
            after = k
            break
    return Stamp(Clock.KERNEL, before, True, (after - before) if after is not None and after >= before else None)


def clip(text: str, limit: int = 300) -> str:
    """A line as quoted evidence: clipped, with the clipping visible."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
