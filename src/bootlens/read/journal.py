"""The systemd journal as input: ``journalctl -o json`` and ``journalctl -o export``.

Both are one record per journal entry, not console text, so they are framed here rather than in
the console framings; like those (:mod:`bootlens.read.framings`) they are read once per file, in
Python only (the native framing pass returns None for them).

- Times: ``_SOURCE_MONOTONIC_TIMESTAMP`` (kernel entries: the printk time) or else
  ``__MONOTONIC_TIMESTAMP`` (when journald received the entry) less how late it received it
  (``__REALTIME_TIMESTAMP - _SOURCE_REALTIME_TIMESTAMP``), microseconds of CLOCK_MONOTONIC since
  boot, go into the printk column: the axis is the kernel's clock, as with a dmesg (the printk
  clock and CLOCK_MONOTONIC are the same time base on the kernels we read).
- Text: the message for kernel entries, ``IDENT[PID]: message`` for the others, what
  ``journalctl -o short-monotonic`` shows, so one unit parser reads every form.
- The structured fields a parser needs and the message does not say (:data:`SIDE_FIELDS`: the
  unit's file name, the job's type and result, the message id, the "Startup finished" times) go
  into :attr:`bootlens.core.lines.Lines.fields` by line; the message text is never rewritten.
- One output line per input line: the entry's ``MESSAGE`` line (export) or its JSON line carries
  the text and time, every other line keeps its number with empty text and no time, so evidence
  line numbers point into the file. Lines that are not JSON objects and damaged export entries
  are counted in a note, never raised.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..core.lazyre import lazy
from ..core.lines import KERNEL_ENTRY, whole_chars
from ..core.model import NS_PER_US, InputStats

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

    from ..core.lines import Lines

# Fields carried to the parsers beside the text.
SIDE_FIELDS = ("UNIT", "USER_UNIT", "JOB_TYPE", "JOB_RESULT", "MESSAGE_ID", "FIRMWARE_USEC", "LOADER_USEC",
               "KERNEL_USEC", "INITRD_USEC", "USERSPACE_USEC")
_SIDE = frozenset(SIDE_FIELDS)
# Fields the framing itself reads.
_WANTED = _SIDE | {"MESSAGE", "_TRANSPORT", "SYSLOG_IDENTIFIER", "_COMM", "SYSLOG_PID", "_PID",
                   "__MONOTONIC_TIMESTAMP", "_SOURCE_MONOTONIC_TIMESTAMP", "__REALTIME_TIMESTAMP",
                   "_SOURCE_REALTIME_TIMESTAMP"}
_EXPORT_HEADS = (b"__CURSOR=", b"__REALTIME_TIMESTAMP=", b"__MONOTONIC_TIMESTAMP=", b"__SEQNUM=")
_JSON_KEYS = ('"__CURSOR"', '"__REALTIME_TIMESTAMP"', '"__MONOTONIC_TIMESTAMP"', '"MESSAGE"')
# Export field names: "uppercase letters, digits and underscores" (systemd's JOURNAL_EXPORT_FORMATS);
# compiled where an export is read (re's cache keeps it), not at import: every input imports this module
_FIELD_NAME = rb"[A-Z0-9_]{1,64}\Z"
# What the console cleaning removes from a message (lines._ANSI and lines._CTRL, tab kept).
# (compiled on first use: framings imports this module for every input, start-up)
_ANSI = lazy(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[()*+][0-~]|[0-~])")
_CTRL = lazy(r"[\x00-\x08\x0b-\x1f\x7f]")

Framed = tuple[list[str], list[int | None], list[int | None], list[str], dict[int, dict[str, str]]]


def is_json_line(s: str) -> bool:
    """True for one line of ``journalctl -o json`` (an object holding a journal field)."""
    return s.startswith("{") and s.rstrip().endswith("}") and any(k in s for k in _JSON_KEYS)


def is_export(data: bytes) -> bool:
    """True when the bytes start as ``journalctl -o export`` (its entries start with __CURSOR)."""
    return data.lstrip(b"\n")[:32].startswith(_EXPORT_HEADS)


def _clean(msg: str) -> str:
    """A message as one console-like line: colour escapes and control characters removed, a
    multi-line message (a backtrace) joined with spaces."""
    if "\x1b" in msg:
        msg = _ANSI.sub("", msg)
    if "\n" in msg or "\r" in msg:
        msg = " ".join(p for p in msg.replace("\r", "\n").split("\n") if p.strip())
    if _CTRL.search(msg):
        msg = _CTRL.sub("", msg)
    return msg


def _entry(fields: dict[str, str]) -> tuple[str, int | None, dict[str, str]]:
    """Text, kernel-clock ns and side fields of one entry."""
    msg = _clean(fields.get("MESSAGE", ""))
    kernel = fields.get("_TRANSPORT") == "kernel"
    t = _usec(fields, "_SOURCE_MONOTONIC_TIMESTAMP") if kernel else None
    if t is None:
        t = _usec(fields, "__MONOTONIC_TIMESTAMP")
        # __MONOTONIC is when journald received the entry; a busy journald (flushing to disk at
        # boot) receives systemd's job messages seconds late. _SOURCE_REALTIME is when the sender
        # wrote it: moved onto the monotonic clock by the entry's own realtime - monotonic offset
        # (both read together on receipt). Measured on the reference target's journal: without
        # it 5 of 36 units over 100 ms differ from systemd-analyze blame by more than 10 %.
        src, real = _usec(fields, "_SOURCE_REALTIME_TIMESTAMP"), _usec(fields, "__REALTIME_TIMESTAMP")
        if t is not None and src is not None and real is not None and 0 <= real - src <= t:
            t -= real - src
    t = None if t is None else t * NS_PER_US
    ident = fields.get("SYSLOG_IDENTIFIER") or fields.get("_COMM") or ("kernel" if kernel else "unknown")
    # what user space wrote to /dev/kmsg before journald ran (systemd's first lines) comes in with
    # the kernel transport and its "systemd[1]: " taken apart: put back as journalctl shows it
    if ident != "kernel":
        pid = fields.get("SYSLOG_PID") or fields.get("_PID")
        msg = f"{ident}[{pid}]: {msg}" if pid else f"{ident}: {msg}"
    side = {k: v for k, v in fields.items() if k in _SIDE}
    if ident == "kernel":
        side = {**side, **KERNEL_ENTRY} if side else KERNEL_ENTRY
    return msg, t, side


def _usec(fields: dict[str, str], key: str) -> int | None:
    """A journal timestamp field (decimal microseconds), None when absent or out of range."""
    v = fields.get(key, "")
    return int(v) if v.isdigit() and len(v) <= 16 else None


def _json_value(v: Any) -> str | None:
    """A journal field's JSON value: a string, an array of bytes (binary or not UTF-8), or an
    array of values (a field set more than once: the first is taken)."""
    while isinstance(v, list) and v:  # a loop, not recursion: nesting is the input's to choose
        if all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in v):
            return bytes(v).decode("utf-8", errors="replace")
        v = v[0]
    return whole_chars(v) if isinstance(v, str) else None


def frame_json(raw: list[str]) -> Framed:
    """``journalctl -o json``: one object per line."""
    texts = [""] * len(raw)
    kernel: list[int | None] = [None] * len(raw)
    host: list[int | None] = [None] * len(raw)
    side: dict[int, dict[str, str]] = {}
    bad = 0
    import json  # here: a console log never pays for the package (start-up, docs/performance.md step 25)

    for i, s in enumerate(raw):
        if not s.strip():
            continue
        try:
            obj = json.loads(s)
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            bad += 1
            continue
        fields = {k: v for k, v in ((k, _json_value(obj[k])) for k in _WANTED & obj.keys()) if v is not None}
        texts[i], kernel[i], f = _entry(fields)
        if f:
            side[i] = f
    notes = [f"journal JSON: {bad} lines were not JSON objects and were skipped"] if bad else []
    return texts, kernel, host, notes, side


def frame_export(data: bytes) -> Framed:
    """``journalctl -o export``: entries of ``KEY=VALUE`` lines, separated by a blank line; a
    binary field is ``KEY\\n``, its length as 64-bit little-endian, the bytes, ``\\n``. Output
    lines are counted as ``grep -n`` counts them in the file (a binary value's own newlines
    too); a damaged entry is skipped up to the next blank line."""
    texts: list[str] = []
    kernel: list[int | None] = []
    side: dict[int, dict[str, str]] = {}
    bad = 0
    field_name = re.compile(_FIELD_NAME)
    pos, n = 0, len(data)
    line = 0  # output index of the line at pos
    fields: dict[str, str] = {}
    msg_line: int | None = None
    broken = False

    def flush() -> None:
        nonlocal fields, msg_line, broken, bad
        if fields and not broken:
            at = msg_line if msg_line is not None else entry_first
            texts[at], kernel[at], f = _entry(fields)
            if f:
                side[at] = f
        elif broken:
            bad += 1
        fields, msg_line, broken = {}, None, False

    entry_first = 0
    while pos < n:
        end = data.find(b"\n", pos)
        if end < 0:
            end = n
        row = data[pos:end]
        if not row:  # a blank line ends the entry
            texts.append("")
            kernel.append(None)
            flush()
            line += 1
            pos = end + 1
            entry_first = line
            continue
        eq = row.find(b"=")
        if eq > 0 and field_name.match(row[:eq]):
            key = row[:eq].decode("ascii")
            texts.append("")
            kernel.append(None)
            if key in _WANTED and not broken:
                fields[key] = row[eq + 1:].decode("utf-8", errors="replace")
                if key == "MESSAGE":
                    msg_line = line
            line += 1
            pos = end + 1
            continue
        if field_name.match(row) and end + 9 <= n:
            size = int.from_bytes(data[end + 1:end + 9], "little")
            stop = end + 9 + size
            if stop < n and data[stop:stop + 1] == b"\n" or stop == n:
                key = row.decode("ascii")
                rows = data.count(b"\n", pos, stop) + 1  # the name's line to the value's last
                texts += [""] * rows
                kernel += [None] * rows
                if key in _WANTED and not broken:
                    fields[key] = data[end + 9:stop].decode("utf-8", errors="replace")
                    if key == "MESSAGE":
                        msg_line = line
                line += rows
                pos = stop + 1
                continue
        # neither a field nor a binary field that fits: the entry is damaged
        broken = True
        texts.append("")
        kernel.append(None)
        line += 1
        pos = end + 1
    flush()
    notes = [f"journal export: {bad} damaged entries were skipped"] if bad else []
    return texts, kernel, [None] * len(texts), notes, side


def read_export(source: str, data: bytes, needles: Sequence[str] = (), prefixes: Sequence[str] = ()
                ) -> tuple[Lines, InputStats]:
    """``journalctl -o export`` as :func:`bootlens.read.reader.frame_bytes` returns inputs: framed from
    the bytes (its binary fields carry a length the console cleaning would take apart), indexed
    and settled like every framing (``needles``, ``prefixes``: see :func:`~bootlens.read.reader.frame_text`)."""
    from .reader import index, keywords
    from ..core.lines import Lines
    from .quirks import settle

    texts, kernel, host, notes, fields = frame_export(data)
    lines = Lines(texts, kernel, host)
    lines.fields = fields
    lines.journal = True
    lines.set_hits(*index(texts, *keywords(needles, prefixes)))
    settle(lines, notes)
    return lines, InputStats(source=source, bytes=len(data), lines=len(lines), framing="journal-export",
                             no_final_newline=not data.endswith(b"\n"), warnings=tuple(notes))
