"""Recordings: the contract between capture and everything else (docs/recording.md).

A recording is JSON Lines. The first line is a header; every other line is either a chunk of
bytes exactly as read, with the host CLOCK_MONOTONIC time of the read, or an event (a gap, the
end). Writing is append-only, one complete line per ``os.write``: a capture killed with SIGKILL
leaves every chunk it had read, and a reader skips at most one torn last line.
"""

from __future__ import annotations

import base64
import re
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from . import __version__
from .errors import InputError

FORMAT = "bootlens-recording"
FORMAT_VERSION = 1
BITS_PER_BYTE_8N1 = 10  # start + 8 data + stop: what one byte costs on a UART line


@dataclass(frozen=True, slots=True)
class Header:
    """What a recording says about itself."""

    source: str  # what was read: a device, a URL, a command, "<stdin>"
    baud: int | None  # line rate, when known: lets readers correct for time on the wire
    origin: str  # what t=0 is: "power_on" (capture released the target) or "start" (capture start)
    started_wall: str  # ISO 8601 wall-clock time of t=0, for humans
    t0_monotonic_ns: int  # host CLOCK_MONOTONIC at t=0
    bits_per_byte: int = BITS_PER_BYTE_8N1
    version: str = __version__
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The header line."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "bootlens": self.version,
            "source": self.source,
            "baud": self.baud,
            "bits_per_byte": self.bits_per_byte,
            "origin": self.origin,
            "started_wall": self.started_wall,
            "clock": "CLOCK_MONOTONIC",
            "t0_monotonic_ns": self.t0_monotonic_ns,
            **({"extra": self.extra} if self.extra else {}),
        }


@dataclass(frozen=True, slots=True)
class Chunk:
    """Bytes returned by one read, and when the read returned (ns after t=0)."""

    t_ns: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Note:
    """Something that happened during the capture: a gap in the data, the end, a marker."""

    t_ns: int
    event: str  # "gap_start", "gap_end", "end", "marker"
    detail: str = ""


class RecordingWriter:
    """Append chunks to a recording as they arrive; each record is one ``os.write``."""

    def __init__(self, path: str, header: Header) -> None:
        self.path = path
        self.header = header
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        except OSError as e:
            raise InputError(path, f"cannot write the recording: {e.strerror or e}") from None
        self._write(header.to_json())
        self.bytes = 0
        self.chunks = 0

    def _write(self, obj: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def chunk(self, t_ns: int, data: bytes) -> None:
        """Record one read. The data reach the kernel before this returns."""
        self._write({"t": t_ns, "b64": base64.b64encode(data).decode("ascii")})
        self.bytes += len(data)
        self.chunks += 1

    def note(self, t_ns: int, event: str, detail: str = "") -> None:
        """Record an event (a gap, the end, a marker)."""
        self._write({"t": t_ns, "event": event, **({"detail": detail} if detail else {})})

    def close(self) -> None:
        """Flush to disk and close."""
        try:
            os.fsync(self._fd)
        except OSError:
            pass
        os.close(self._fd)


def new_header(source: str, baud: int | None, origin: str, t0_monotonic_ns: int) -> Header:
    """A header stamped with the current wall-clock time."""
    wall = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    return Header(source, baud, origin, wall, t0_monotonic_ns)


@dataclass(frozen=True, slots=True)
class Recording:
    """A recording read back: header, chunks in order, notes, and how many lines were damaged."""

    path: str
    header: Header
    chunks: tuple[Chunk, ...]
    notes: tuple[Note, ...]
    bad_records: int  # lines that were not valid records (e.g. torn by a kill)

    @property
    def data(self) -> bytes:
        """All bytes, in order."""
        return b"".join(c.data for c in self.chunks)


def is_recording(head: bytes) -> bool:
    """True if these first bytes of a file start a bootlens recording."""
    return head.lstrip()[:1] == b"{" and FORMAT.encode() in head[:512]


def read_recording(path: str, raw: bytes | None = None) -> Recording:
    """Read a recording; damaged lines are counted, never fatal, as long as the header reads."""
    if raw is None:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None
    records = raw.split(b"\n")
    try:
        h = json.loads(records[0])
        if h.get("format") != FORMAT:
            raise ValueError
        header = Header(
            source=str(h.get("source", "")),
            baud=h.get("baud"),
            origin=str(h.get("origin", "start")),
            started_wall=str(h.get("started_wall", "")),
            t0_monotonic_ns=int(h.get("t0_monotonic_ns", 0)),
            bits_per_byte=int(h.get("bits_per_byte", BITS_PER_BYTE_8N1)),
            version=str(h.get("bootlens", "")),
        )
    except (ValueError, TypeError, AttributeError):
        raise InputError(path, "not a bootlens recording (bad header line)") from None
    if int(h.get("format_version", 1)) > FORMAT_VERSION:
        raise InputError(path, f"recording format {h.get('format_version')} is newer than this bootlens")
    chunks: list[Chunk] = []
    notes: list[Note] = []
    bad = 0
    for rec in _records(records[1:]):
        if rec is None:
            bad += 1
            continue
        t = rec.get("t")
        if not isinstance(t, int):
            bad += 1
        elif "b64" in rec:
            try:
                chunks.append(Chunk(t, base64.b64decode(rec["b64"], validate=True)))
            except (ValueError, TypeError):
                bad += 1
        elif "event" in rec:
            notes.append(Note(t, str(rec["event"]), str(rec.get("detail", ""))))
        else:
            bad += 1
    return Recording(path, header, tuple(chunks), tuple(notes), bad)


def _records(lines: list[bytes]) -> Iterator[dict[str, Any] | None]:
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            yield None
            continue
        yield rec if isinstance(rec, dict) else None


def line_times(rec: Recording, wire: bool = True) -> tuple[list[bytes], list[int]]:
    """Split a recording into lines (on LF) with the host time each line's first byte arrived.

    A chunk's time is when the read returned, i.e. when its last byte had arrived. With the baud
    rate known and ``wire`` on, byte k of an n-byte chunk is placed (n - 1 - k) byte-times
    earlier: when the target sent it, to within one byte time, if the line was busy sending.
    Without a baud rate every byte of a chunk gets the chunk's time.
    """
    byte_ns = 0
    if wire and rec.header.baud:
        byte_ns = rec.header.bits_per_byte * 1_000_000_000 // rec.header.baud
    lines: list[bytes] = []
    times: list[int] = []
    pending = bytearray()
    pending_t: int | None = None
    prev_end = None  # earliest a byte of this chunk can have been sent: after the previous read
    for c in rec.chunks:
        n = len(c.data)
        start = 0
        while start < n:
            nl = c.data.find(b"\n", start)
            piece_end = n if nl < 0 else nl + 1
            if pending_t is None:
                t = c.t_ns - (n - 1 - start) * byte_ns
                if prev_end is not None and t < prev_end:
                    t = prev_end  # a byte cannot have been sent before the previous read ended
                pending_t = t
            pending += c.data[start:piece_end]
            if nl >= 0:
                lines.append(bytes(pending))
                times.append(pending_t)
                pending = bytearray()
                pending_t = None
            start = piece_end
        prev_end = c.t_ns
    if pending:
        lines.append(bytes(pending))
        times.append(pending_t if pending_t is not None else 0)
    return lines, times


def to_grabserial(rec: Recording, wire: bool = True, restart: bool = False) -> bytes:
    """The recording as grabserial ``-t`` text: ``[elapsed delta] `` before every line.

    With ``restart`` (grabserial ``-m``), times after a line that matched the capture's
    ``--start`` pattern (a ``start`` note) count from that line, as grabserial shows them.
    """
    lines, times = line_times(rec, wire)
    starts = [re.compile(p) for p in dict.fromkeys(n.detail for n in rec.notes if n.event == "start" and n.detail)] \
        if restart else []
    out = bytearray()
    prev = 0
    base = 0
    for data, t in zip(lines, times):
        t = max(t, 0)
        if starts:
            text = data.decode("utf-8", "replace")
            if any(rx.search(text) for rx in starts):
                base = prev = t
        r = t - base
        out += f"[{r // 1_000_000_000}.{r % 1_000_000_000 // 1000:06d} {(t - prev) / 1e9:.6f}] ".encode()
        out += data
        prev = t
    return bytes(out)
