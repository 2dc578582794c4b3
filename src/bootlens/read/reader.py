"""Reading an input: bytes -> clean text -> :class:`Lines` (columns of text and times).

Everything odd in the bytes is counted in :class:`~bootlens.core.model.InputStats`, nothing is fatal
here. Cleaning (NULs, CR, ANSI escapes, control characters) runs over the whole buffer with
``str`` methods and compiled regexes, in C. Framing (peeling grabserial and printk prefixes off
each line) and the keyword index the parsers start from are the per-line work that bounds
throughput: the native core (``bootlens._scan``, native/) does them in one pass, the only
implementation of those formats (docs/performance.md). The framings it does not know (grabserial
-T, the wild framings of framings.py) are framed here in Python, with the native readers of the
printk and grabserial prefixes, and indexed natively.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from ..capture.recording_sniff import BOM
from ..core.errors import InputError, printable, refuse_special_file
from ..core.lazyre import lazy
from .._native import native_module
from ..core.lines import Index, Lines, Texts, grep, looks_garbled, starting
from ..core.model import InputStats
from .quirks import CALLER_HEADS, settle

_native = native_module()

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

LONG_LINE = 4096  # characters; longer lines are kept but clipped when quoted as evidence
SNIFF_LINES = 400

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), charset selection, then any 2-char escape
# (ESC c = reset, which SeaBIOS and the kernel's x86 console print).
_ANSI = lazy(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[()*+][0-~]|[0-~])")
_CTRL = lazy(r"[\x00-\x08\x0b-\x1f\x7f]")
# The same two over UTF-8 bytes (cleaning runs on the bytes: every pattern is ASCII, and no byte
# of a multi-byte UTF-8 character is ASCII, so they match where the str patterns match); compiled
# when an input needs them (start-up), then from re's cache.
_ANSI_B = _ANSI.pattern.encode()
_CTRL_B = _CTRL.pattern.encode()
_FFFD = "\ufffd".encode()
_CHUNK = 1 << 20  # bytes decoded at a time when invalid UTF-8 is replaced

# The host and printk prefixes (printk's "[    1.234567] " with an optional "<6>" level and
# "[    T1]" caller id; grabserial -t's "[elapsed delta] " and -T's "[HH:MM:SS.ffffff delta] ";
# journalctl -o short-monotonic's "host kernel: " / "host ident[pid]: ") are read natively, by
# the matchers that frame every line (native/src/frame.rs: frame, printk_prefix,
# grabserial_sys_prefix, detect_framing): one reader of each, so detection and framing agree.
# printk has printed exactly six decimals since CONFIG_PRINTK_TIME appeared (2.6.x, "%5lu.%06lu"),
# and so do dmesg and journalctl: "[   0.114]" (a U-Boot that stamps its own lines with
# milliseconds since reset) is a bootloader clock and stays in the text for the bootloader parser.

_DAY_NS = 86_400 * 1_000_000_000
# Framings whose lines are a journal's entries (journalctl's text formats, JSON, export).
JOURNAL_FRAMINGS = frozenset(("journalctl", "journalctl-short", "journal-json", "journal-export"))


def read_path(path: str, needles: Sequence[str] = (), prefixes: Sequence[str] = ()) -> tuple[Lines, InputStats]:
    """Read a file (or ``-`` for standard input) and frame it into lines.

    ``needles`` and ``prefixes``: the keywords to index while framing (see :func:`frame_text`),
    those of the parsers that will read the lines (:func:`bootlens.timeline.boots.index_keywords`).
    """
    if path == "-":
        data = sys.stdin.buffer.read()
        from ..capture.recording_sniff import is_recording  # not the reader: every log is asked (start-up)

        if is_recording(data[:512]):
            return _frame_recording("<stdin>", data, needles, prefixes)
        box = [data]
        del data  # the framing frees the raw bytes once cleaned (box: the only reference)
        return _frame_owned("<stdin>", box, needles, prefixes)
    refuse_special_file(path)
    try:
        with open(path, "rb") as f:  # not pathlib: it alone imports urllib.parse and ipaddress (~8 ms start-up)
            data = _read_file(f)
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, expected a log file") from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    from ..capture.recording_sniff import is_recording  # not the reader: every log is asked (start-up)

    if is_recording(data[:512]):
        return _frame_recording(path, data, needles, prefixes)
    box = [data]
    del data  # the framing frees the raw bytes once cleaned (box: the only reference)
    return _frame_owned(printable(path), box, needles, prefixes)


# A regular file this large that needs no cleaning is mapped read-only, not read: reading the
# 746 MB of a 10M-line log cost ~0.6 s (first touch of fresh pages, then the copy), the map and a
# pass over it ~0.1 s (docs/performance.md, step 17). The hazard of a map: a file truncated by
# another process while it is analysed kills bootlens with SIGBUS (a read copies it first).
MAP_MIN = 16 << 20


def _read_file(f: Any) -> bytes:
    """The contents of an open file: bytes, or for a regular file of MAP_MIN bytes or more that
    is plain text with nothing to clean (not a recording, not a journal export, not blank) a
    ``_scan.Pinned`` read-only map, which the framing reads in place like bytes."""
    import os
    import stat

    try:
        st = os.fstat(f.fileno())
    except (OSError, ValueError, AttributeError):  # not a file of the OS (tests wrap one)
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size < MAP_MIN:
        data: bytes = f.read()
        return data
    import mmap

    from .journal import is_export
    from ..capture.recording_sniff import is_recording

    try:
        pinned = _native.Pinned(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        data = f.read()
        return data
    head: bytes = pinned[: 1 << 16]
    if (is_recording(head[:512]) or not head.lstrip(b"\n") or is_export(head) or head.isspace()
            or not _native.clean_as_is(pinned)):
        data = pinned[:]  # the paths that convert or clean the input want bytes
        return data
    mapped: bytes = pinned  # bytes to the framing: len, [a:b] and the native buffer
    return mapped


def _frame_recording(path: str, data: bytes, needles: Sequence[str], prefixes: Sequence[str]
                     ) -> tuple[Lines, InputStats]:
    """A recording is read as the grabserial -t text it exports to, with its own origin."""
    from ..capture.recording import read_recording, to_grabserial

    rec = read_recording(path, data)
    lines, stats = frame_bytes(printable(path), to_grabserial(rec), needles, prefixes)
    notes: list[str] = list(rec.warnings)
    if rec.bad_records:
        notes.append(f"{rec.bad_records} damaged records in the recording were skipped")
    for n in rec.notes:
        if n.event.startswith("gap"):
            notes.append(f"capture {n.event.replace('_', ' ')} at {n.t_ns / 1e9:.6f} s: {n.detail}")
    origin = "power_on" if rec.header.origin == "power_on" else "first_byte"
    return lines, stats.replace(host_origin=origin, warnings=stats.warnings + tuple(notes))


def clean_text(data: bytes) -> tuple[str, dict[str, int | bool]]:
    """Decode and clean a whole buffer; returns the text and counts of what was removed."""
    text, counts = _clean([data])
    return text.decode("utf-8"), counts


def _clean(box: list[bytes]) -> tuple[bytes, dict[str, int | bool]]:
    """Clean a whole buffer (popped from ``box``, so that each step frees the one before) into
    valid UTF-8 bytes; returns them and counts of what was removed.

    The work is on bytes, never on a decoded str of the whole input: a str of a mostly-ASCII log
    with one character past U+00FF takes 2 or 4 bytes a character, and the native framing would
    keep a UTF-8 copy beside it. Invalid UTF-8 is replaced by U+FFFD a chunk at a time.
    """
    counts: dict[str, int | bool] = {}
    invalid = 0
    if not _native.is_utf8(box[0]):
        fffd = box[0].count(_FFFD)  # U+FFFD already in the file (EF BF BD) is not a decoding error
        data = _replace_invalid(box)
        invalid = data.count(_FFFD) - fffd
    else:
        data = box.pop()
    counts["invalid_utf8"] = invalid
    data = data.removeprefix(BOM)  # a UTF-8 byte-order mark from a Windows terminal program
    nul = data.count(b"\x00")
    if nul:
        data = data.replace(b"\x00", b"")
    counts["nul_bytes"] = nul
    cr_only = False
    if b"\r" in data:
        if b"\n" not in data:
            cr_only = True
            data = data.replace(b"\r", b"\n")
        else:
            # grabserial drops CR too; a bare CR mid-line (progress output) just disappears.
            data = data.replace(b"\r", b"")
    counts["cr_only"] = cr_only
    ctrl = 0
    if b"\x1b" in data:
        data, n = re.subn(_ANSI_B, b"", data)
        ctrl += n
    # the native has_control runs at memory speed where a regex scan costs 0.4 s per 70 MB
    if _native.has_control(data) and re.search(_CTRL_B, data) is not None:
        data, n = re.subn(_CTRL_B, b"", data)
        ctrl += n
    counts["control_chars"] = ctrl
    return data, counts


def _replace_invalid(box: list[bytes]) -> bytes:
    """The bytes popped from ``box`` with each invalid UTF-8 sequence replaced by U+FFFD, as
    ``decode(errors="replace")`` does, decoded and encoded back a chunk at a time (a str of the
    whole input would take up to 4 bytes a character). Chunks end after a newline: an ASCII byte
    ends any sequence, so the replacements are those of one whole decode."""
    data = box.pop()
    parts: list[bytes] = []
    i, n = 0, len(data)
    while i < n:
        j = data.find(b"\n", i + _CHUNK)
        j = n if j < 0 else j + 1
        parts.append(data[i:j].decode("utf-8", errors="replace").encode("utf-8"))
        i = j
    del data  # freed before the join (the caller holds no other reference): 2x the input, not 3x
    return b"".join(parts)


def _detect_framing(text: str) -> str:
    """Which host prefix the lines carry: grabserial -t, -T, journalctl, or none."""
    head = text[: 1 << 16].split("\n", SNIFF_LINES * 4)[: SNIFF_LINES * 4]
    sample = [s for s in head if s.strip()][:SNIFF_LINES]
    if not sample:
        return "plain"
    found: str | None = _native.detect_framing(sample)  # grabserial -t / -T, journalctl
    if found is not None:
        return found
    from .framings import detect

    return detect(sample) or "plain"


# The message prefixes every input is indexed for whoever reads it, the reader's own: the quirks
# pass (quirks.settle) runs inside the framing, before any parser, and starts from the lines that
# open with a vendor caller prefix's first characters. The parsers' keywords come from the caller
# (each parser declares its own: Parser.needles, Parser.prefixes); anything else is found on demand.
OWN_PREFIXES = CALLER_HEADS


def keywords(needles: Sequence[str], prefixes: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the framing indexes given a caller's keywords: each once, the reader's own prefixes after them."""
    return tuple(dict.fromkeys(needles)), tuple(dict.fromkeys((*prefixes, *OWN_PREFIXES)))


def frame_bytes(source: str, data: bytes, needles: Sequence[str] = (), prefixes: Sequence[str] = ()
                ) -> tuple[Lines, InputStats]:
    """Decode, clean and frame a whole input (``needles``, ``prefixes``: see :func:`frame_text`)."""
    return _frame_owned(source, [data], needles, prefixes)


def _frame_owned(source: str, box: list[bytes], needles: Sequence[str], prefixes: Sequence[str]
                 ) -> tuple[Lines, InputStats]:
    """frame_bytes of the bytes in ``box``, popped: when the caller holds no other reference, the
    raw bytes are freed as soon as they are cleaned (on the CR / non-ASCII path the framing would
    otherwise hold them beside the cleaned copy)."""
    data = box.pop()
    # a map (_read_file) is known non-blank, plain text and clean: the bytes checks are skipped
    mapped = not isinstance(data, bytes)
    if not mapped and (not data or data.isspace()):
        raise InputError(source, "empty input")
    nbytes = len(data)
    from .journal import is_export, read_export

    if not mapped and is_export(data):  # framed from the bytes: binary fields carry a length cleaning would break
        return read_export(source, data, needles, prefixes)
    text: bytes
    if mapped or _native.clean_as_is(data):
        # nothing to clean (the common case, checked in one pass at memory speed): framed in place, never
        # decoded as a whole, so the input is held once (the native TextColumn's buffer)
        text = data
        del data
        counts: dict[str, int | bool] = {"invalid_utf8": 0, "nul_bytes": 0, "cr_only": False, "control_chars": 0}
    else:
        box.append(data)
        del data
        text, counts = _clean(box)
    no_final_newline = text[-1:] != b"\n"
    # the first 64 Ki characters (at most 4 bytes each; the cut character is dropped)
    framing = _detect_framing(text[: 1 << 18].decode("utf-8", errors="ignore")[: 1 << 16])
    notes: list[str] = []
    lines = frame_text(text, framing, needles, prefixes, notes)
    if framing == "grabserial-t":
        from .quirks import host_restarts

        notes += host_restarts(lines, lambda: _as_str(text).split("\n"))
    n = len(lines)
    long_lines = 0
    longest = lines.max_len if lines.max_len is not None else max(map(len, lines.text), default=0)
    if longest > LONG_LINE:
        long_lines = sum(1 for t in lines.text if len(t) > LONG_LINE)
    # only lines holding U+FFFD can look garbled: found natively, not by a str of every line
    garbled = sum(1 for i in grep(lines.text, ["\ufffd"])[0] if looks_garbled(lines.text[i])) \
        if counts["invalid_utf8"] else 0
    stats = InputStats(
        source=source,
        bytes=nbytes,
        lines=n,
        framing=framing,
        invalid_utf8=int(counts["invalid_utf8"]),
        nul_bytes=int(counts["nul_bytes"]),
        control_chars=int(counts["control_chars"]),
        long_lines=long_lines,
        garbled_lines=garbled,
        no_final_newline=no_final_newline,
        cr_only=bool(counts["cr_only"]),
        warnings=tuple(notes) + _stats_warnings(counts, long_lines, garbled, no_final_newline, n),
    )
    return lines, stats


def _as_str(text: str | bytes) -> str:
    """The cleaned input as str (bytes here are valid UTF-8: cleaned, or checked)."""
    if isinstance(text, str):
        return text
    return (text if isinstance(text, bytes) else text[:]).decode("utf-8")  # [:]: a map's bytes


def _stats_warnings(
    counts: dict[str, int | bool], long_lines: int, garbled: int, no_nl: bool, n: int
) -> tuple[str, ...]:
    w: list[str] = []
    if counts["invalid_utf8"]:
        w.append(f"{counts['invalid_utf8']} undecodable byte sequences replaced by U+FFFD")
    if garbled:
        w.append(f"{garbled} lines look like noise (wrong baud rate?)")
    if counts["nul_bytes"]:
        w.append(f"{counts['nul_bytes']} NUL bytes removed")
    if counts["cr_only"]:
        w.append("input uses bare CR line endings; treated as newlines")
    if long_lines:
        w.append(f"{long_lines} lines longer than {LONG_LINE} characters")
    if no_nl:
        w.append(f"last line ({n}) has no newline: the capture was cut mid-line")
    return tuple(w)


def frame_text(text: str | bytes, framing: str, needles: Sequence[str] = (), prefixes: Sequence[str] = (),
               notes: list[str] | None = None) -> Lines:
    """Peel host and printk prefixes off every line of ``text`` (a final newline ends the last
    line; it does not start an empty one), then settle what the stamps mean (quirks.py).

    ``text``: str, or UTF-8 bytes (framed natively in place). ``needles`` and ``prefixes``:
    what to index while the lines are at hand (see :meth:`Lines.grep` and
    :meth:`Lines.starting`), besides the reader's own (:data:`OWN_PREFIXES`). ``notes``: where a
    framing that has something to say about the input (skipped lines, clock resolution) appends it.
    """
    needles, prefixes = keywords(needles, prefixes)
    cols = _native.frame(text, framing, list(needles), list(prefixes))
    if cols is not None:
        lines = Lines(cols[0], cols[1], cols[2])
        lines.max_len = cols[3]
        lines.set_hits(dict(zip(needles, cols[4])), dict(zip(prefixes, cols[5])))
    else:  # a framing the native pass does not know
        lines = _frame_py(_as_str(text), framing, notes)
        lines.set_hits(*index(lines.text, needles, prefixes))
    lines.journal = framing in JOURNAL_FRAMINGS
    settle(lines, notes)
    return lines


def index(texts: Texts, needles: Sequence[str], prefixes: Sequence[str]
          ) -> tuple[dict[str, Index], dict[str, Index]]:
    """The keyword index of lines framed in Python, as the native framing pass builds it."""
    return dict(zip(needles, grep(texts, needles))), dict(zip(prefixes, starting(texts, prefixes)))


def _frame_py(text: str, framing: str, notes: list[str] | None = None) -> Lines:
    """The framings the native pass does not know: the wild ones (framings.py), grabserial -T."""
    if text.endswith("\n"):
        text = text[:-1]
    from .framings import FRAMINGS, frame

    if framing in FRAMINGS:
        wild = frame(text.split("\n"), framing)
        if notes is not None:
            notes += wild[3]
        lines = Lines(wild[0], wild[1], wild[2])
        lines.fields = wild[4]
        return lines
    return _frame_slow(text.split("\n"), framing)


def _frame_slow(raw: Sequence[str], framing: str) -> Lines:
    """Line-by-line framing: grabserial -T (wall clock, midnight wrap), printk stamps after it."""
    texts: list[str] = []
    kernel: list[int | None] = []
    host: list[int | None] = []
    pk = _native.printk_prefix
    hostm = _native.grabserial_sys_prefix if framing == "grabserial-T" else None
    wall0: int | None = None
    prev_wall = 0
    days = 0
    for s in raw:
        h_ns: int | None = None
        pos = 0
        if hostm is not None:
            h = hostm(s)
            if h is not None:
                pos, t = h  # the end of the prefix, the time since midnight in ns
                if t + days < prev_wall - _DAY_NS // 2:  # crossed midnight
                    days += _DAY_NS
                t += days
                prev_wall = t
                if wall0 is None:
                    wall0 = t
                h_ns = t - wall0
        host.append(h_ns)
        m = pk(s, pos)
        if m is None:
            kernel.append(None)
            end = pos
        else:
            end, k_ns = m
            kernel.append(k_ns)
        texts.append(s[end:])
    return Lines(texts, kernel, host)
