"""Recordings: the contract between capture and everything else (docs/recording.md).

A recording is JSON Lines. The first line is a header; every other line is either a chunk of
bytes exactly as read, with the host CLOCK_MONOTONIC time of the read, or an event (a gap, the
end). Writing is append-only, one complete line per ``os.write``: a capture killed with SIGKILL
leaves every chunk it had read, and a reader skips at most one torn last line.
"""

from __future__ import annotations

import base64
import errno
import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from .. import __version__
from ..core.errors import BootlensError, InputError, printable, refuse_special_file
from ..core.lines import whole_chars
from .exclusive import RecordingExists as RecordingExists
from .exclusive import check_free as check_free
from .exclusive import create_exclusive
# the check every log goes through lives apart, so that a plain log does not import this module
from .recording_sniff import BOM, FORMAT as FORMAT
from .recording_sniff import is_recording as is_recording

FORMAT_VERSION = 1
BITS_PER_BYTE_8N1 = 10  # start + 8 data + stop: what one byte costs on a UART line
MAX_NS = (1 << 63) - 1  # times are signed 64-bit nanoseconds everywhere downstream
BAUD_RANGE = (50, 100_000_000)  # what a UART, a USB adapter or an emulator can be set to
BITS_PER_BYTE_RANGE = (7, 13)  # 5N1 = 7 ... 9 data bits, parity, 2 stop bits = 13
HEADER_DEPTH_MAX = 32  # nesting of a header line handed to the (recursive) standard json parser
NOTE_ROOM = 1024  # bytes kept allocated beyond the recording's end, so that the end note fits
RESERVE_STEP = 64 * 1024  # reserve this much more at a time: one fallocate per 64 KiB written
SPLIT_MIN = 64  # on a full disk, a read is split down to pieces of this many bytes
END_DETAIL_MAX = 400  # an end note's detail is cut to this, so that it fits in NOTE_ROOM


class RecordingWriteError(BootlensError):
    """The recording could not be written (disk full, I/O error); what was written stays readable."""

    exit_code = 1

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{printable(path)}: cannot write the recording: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Header:
    """What a recording says about itself."""

    source: str  # what was read: a device, a URL, a command, "<stdin>"
    baud: int | None  # line rate, when known: lets readers correct for time on the wire
    origin: str  # what t=0 is: "power_on" (capture released the target) or "start" (capture start)
    started_wall: str  # ISO 8601 wall-clock time of t=0, for humans
    t0_monotonic_ns: int | None  # host CLOCK_MONOTONIC at t=0 (None: a damaged header's, unknown)
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
    """Append chunks to a recording as they arrive; each record is one ``os.write``.

    A write that fails (disk full, I/O error) is undone (the file is cut back to its last whole
    record) and raises :class:`RecordingWriteError`; every record written before stays. So that
    the end note still fits on a full disk, the writer keeps ``NOTE_ROOM`` bytes allocated beyond
    the end of the file (``fallocate`` with ``FALLOC_FL_KEEP_SIZE``: invisible in the file's
    size) and stops with "No space left on device" when it cannot renew that reserve; the
    reserve is released by :meth:`close`. Where the file system cannot reserve (a pipe, some
    network file systems), the end note is written if the disk still has room.
    """

    def __init__(self, path: str, header: Header, replace: bool = False) -> None:
        self.path = path
        self.header = header
        self._fd, self._new = create_exclusive(path, replace)
        self.kept_old = False  # replace: nothing was received, the earlier recording stays
        self.size = 0  # bytes of whole records in the file
        self._reserved = 0  # file offset up to which space is allocated
        self._can_reserve = True
        self.bytes = 0
        self.chunks = 0
        try:
            self._write(header.to_json())
        except RecordingWriteError:
            os.close(self._fd)
            if self._new is not None:
                os.unlink(self._new)  # the earlier recording stays as it was
            raise

    def chunk(self, t_ns: int, data: bytes) -> None:
        """Record one read. The data reach the kernel before this returns.

        A read whose record does not fit on the disk any more is recorded in smaller pieces,
        each with the read's time, for as much of it as fits (``bytes`` counts what was
        written); then :class:`RecordingWriteError`."""
        step = max(len(data), 1)
        done = 0
        while done < len(data) or not data:
            piece = data[done:done + step]
            try:
                self._write({"t": t_ns, "b64": base64.b64encode(piece).decode("ascii")})
            except RecordingWriteError:
                if step <= SPLIT_MIN:
                    raise
                step = max(SPLIT_MIN, step // 2)
                continue
            done += len(piece)
            self.bytes += len(piece)
            self.chunks += 1
            if self._new is not None and piece:
                self._replace()
            if not data:
                break

    def note(self, t_ns: int, event: str, detail: str = "") -> None:
        """Record an event (a gap, a marker)."""
        self._write({"t": t_ns, "event": event, **({"detail": detail} if detail else {})})

    def end(self, t_ns: int, reason: str) -> bool:
        """Write the end note, into the reserve if the disk is full; False if it could not be."""
        if len(reason) > END_DETAIL_MAX:
            reason = reason[:END_DETAIL_MAX - 3] + "..."
        try:
            self._write({"t": t_ns, "event": "end", "detail": reason}, reserve=False)
        except RecordingWriteError:
            return False
        return True

    def _write(self, obj: dict[str, Any], reserve: bool = True) -> None:
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        if reserve:
            self._reserve(len(line) + NOTE_ROOM)
        done = 0
        while done < len(line):  # a regular file takes it whole, unless the disk fills meanwhile
            try:
                n = os.write(self._fd, line[done:])
            except OSError as e:
                self._undo()
                raise RecordingWriteError(self.path, e.strerror or str(e)) from None
            if n <= 0:
                self._undo()
                raise RecordingWriteError(self.path, os.strerror(errno.ENOSPC))
            done += n
        self.size += len(line)

    def _reserve(self, need: int) -> None:
        """Make sure ``need`` bytes past the end are allocated; raise when the disk is full."""
        if not self._can_reserve or self.size + need <= self._reserved:
            return
        for length in (need + RESERVE_STEP, need):
            err = _fallocate(self._fd, _FALLOC_FL_KEEP_SIZE, self.size, length)
            if err == 0:
                self._reserved = self.size + length
                return
            if err not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                self._can_reserve = False  # not supported here: write without a reserve
                return
        raise RecordingWriteError(self.path, os.strerror(errno.ENOSPC))

    def _undo(self) -> None:
        """Cut a record torn by a failed write off the file."""
        try:
            os.ftruncate(self._fd, self.size)
        except OSError:
            pass  # not a regular file: nothing to cut

    def _replace(self) -> None:
        """Put the new recording in the place of the one it replaces (``replace``), once it holds
        a byte: until then the earlier one stays, so a capture that fails at once loses nothing.
        The rename is atomic: a reader sees the old recording or the new, never a mixture."""
        import fcntl

        new, self._new = self._new, None
        assert new is not None
        try:
            old = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            old = -1  # gone meanwhile: the rename just puts it there
        try:
            if old >= 0:
                try:  # held while renaming, so that no other writer takes the path meanwhile
                    fcntl.flock(old, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    self._new = new
                    raise RecordingWriteError(self.path, f"another capture is writing it; this capture "
                                              f"is in {printable(new)}") from None
            try:
                os.rename(new, self.path)
            except OSError as e:
                self._new = new
                raise RecordingWriteError(self.path, f"cannot replace it ({e.strerror or e}); this capture "
                                          f"is in {printable(new)}") from None
        finally:
            if old >= 0:
                os.close(old)

    def close(self) -> None:
        """Release the reserve, flush to disk and close. With ``replace``, a capture that received
        nothing is dropped and the earlier recording kept (``kept_old``)."""
        if self._reserved > self.size:
            self._undo()  # truncating to its own size frees what lies beyond (ext4, xfs, tmpfs)
        try:
            os.fsync(self._fd)
        except OSError:
            pass
        try:
            os.close(self._fd)
        except OSError:
            pass
        if self._new is not None and self.bytes == 0:
            try:
                os.unlink(self._new)
                self.kept_old = True
            except OSError:
                pass
            self._new = None


_FALLOC_FL_KEEP_SIZE = 0x01
_fallocate_fn: list[Callable[..., int] | None] = []  # looked up once; [None] where libc has none


def _fallocate(fd: int, mode: int, offset: int, length: int) -> int:
    """Linux fallocate(2) with a mode (``os.posix_fallocate`` has none); 0 or the errno."""
    import ctypes  # here: only writing a recording needs it, reading one is on analyze's start-up

    if not _fallocate_fn:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fn = getattr(libc, "fallocate64", None) or getattr(libc, "fallocate")
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
            fn.restype = ctypes.c_int
            _fallocate_fn.append(fn)
        except (OSError, AttributeError):
            _fallocate_fn.append(None)
    fn = _fallocate_fn[0]
    if fn is None:
        return errno.EOPNOTSUPP
    while fn(fd, mode, offset, length) != 0:
        err = ctypes.get_errno()
        if err != errno.EINTR:
            return err
    return 0


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
    bad_records: int  # lines that were not valid records (e.g. torn by a kill), skipped
    warnings: tuple[str, ...] = ()  # header fields that were not valid and what was used instead

    @property
    def data(self) -> bytes:
        """All bytes, in order."""
        return b"".join(c.data for c in self.chunks)


def header_of(path: str) -> Header | None:
    """A recording's header (only its first line is read), or None for anything else: not a
    file (stdin), not a recording, or a header that does not read."""
    try:
        with open(path, "rb") as f:
            head = f.readline(1 << 16)
    except OSError:
        return None
    if not is_recording(head):
        return None
    try:
        return read_recording(path, head).header
    except InputError:
        return None


def read_recording(path: str, raw: bytes | None = None) -> Recording:
    """Read a recording, validating every field (docs/recording.md, "Reading").

    A header that is not a bootlens header, or of a format version this bootlens cannot read,
    raises :class:`InputError`; a header field that is not valid is replaced by what is safe
    (unknown, or the capture's start) with a warning. A record that is not valid is skipped and
    counted in ``bad_records``, never fatal.
    """
    if raw is None:
        refuse_special_file(path)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None
    records = raw.removeprefix(BOM).split(b"\n")
    header, warnings = _read_header(path, records[0])
    chunks: list[Chunk] = []
    notes: list[Note] = []
    patterns: dict[str, bool] = {}  # start pattern -> whether it compiles
    bad = 0
    for line in records[1:]:
        if not line.strip():
            continue
        rec = _record(line, patterns)
        if rec is None:
            bad += 1
        elif isinstance(rec, Chunk):
            chunks.append(rec)
        else:
            notes.append(rec)
    return Recording(path, header, tuple(chunks), tuple(notes), bad, tuple(warnings))


def _int(v: object, lo: int, hi: int) -> int | None:
    """``v`` if it is a JSON integer in [lo, hi] (a bool is an int to Python, not to JSON), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi else None


def _show(v: object) -> str:
    """A header value for a one-line warning, cut short."""
    if isinstance(v, float) and not math.isfinite(v):
        text = str(v)
    else:
        try:
            text = json.dumps(v)
        except (TypeError, ValueError):
            text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _loads_header(line: bytes) -> Any:
    """The header line as JSON. orjson first (it never recurses on depth and rejects NaN,
    Infinity and numbers beyond 64 bits); when it refuses a shallow line, the standard parser,
    which reads those, so that one out-of-range header value is a warning, not an unreadable
    recording. A deeply nested line never reaches the standard parser (it recurses)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        if line.count(b"[") + line.count(b"{") > HEADER_DEPTH_MAX:
            raise
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as e:  # int-limit overflow is a ValueError too
        doc = line.decode("utf-8", "replace")
        raise orjson.JSONDecodeError(str(e), doc, min(getattr(e, "pos", 0), len(doc))) from None


class NotARecording(InputError):
    """A file that is not a recording at all (a console log given where a recording is read)."""


def _read_header(path: str, line: bytes) -> tuple[Header, list[str]]:
    """The header, and a warning for each field replaced by a safe value."""
    if not is_recording(line[:512]):
        raise NotARecording(path, "not a bootlens recording: its first line is no recording header")
    try:
        h = _loads_header(line)
    except orjson.JSONDecodeError as e:  # the parser's own words ("Expecting value") say nothing to a user
        raise InputError(path, f"bad header line: not valid JSON (at column {e.colno})") from None
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        raise NotARecording(path, "not a bootlens recording: its first line is no recording header")
    raw_version = h.get("format_version", 1)
    version = _int(raw_version, 1, MAX_NS)
    if version is None:
        raise InputError(path, f"bad header line: format_version {_show(raw_version)} is not a version number")
    if version > FORMAT_VERSION:
        raise InputError(path, f"recording format {version} is newer than this bootlens")
    warnings: list[str] = []

    def text(key: str, default: str) -> str:
        v = h.get(key, default)
        if isinstance(v, str):
            return whole_chars(v)
        warnings.append(f"recording header: {key} {_show(v)} is not text; ignored")
        return default

    source, started_wall, version_text = text("source", ""), text("started_wall", ""), text("bootlens", "")
    origin = h.get("origin", "start")
    if origin not in ("start", "power_on"):
        warnings.append(f"recording header: origin {_show(origin)} is unknown; times count from the capture's start")
        origin = "start"
    raw_baud, raw_bits = h.get("baud"), h.get("bits_per_byte", BITS_PER_BYTE_8N1)
    baud, bits = _int(raw_baud, *BAUD_RANGE), _int(raw_bits, *BITS_PER_BYTE_RANGE)
    if bits is None:
        warnings.append(f"recording header: bits_per_byte {_show(raw_bits)} is not a UART frame; "
                        "line times are not corrected for time on the wire")
        baud = None
    elif raw_baud is not None and baud is None:
        warnings.append(f"recording header: baud {_show(raw_baud)} is not a line rate; "
                        "line times are not corrected for time on the wire")
    raw_t0 = h.get("t0_monotonic_ns")
    t0 = _int(raw_t0, 0, MAX_NS)
    if raw_t0 is not None and t0 is None:
        warnings.append(f"recording header: t0_monotonic_ns {_show(raw_t0)} is not a time; unknown")
    extra = h.get("extra", {})
    if not isinstance(extra, dict):
        warnings.append(f"recording header: extra {_show(extra)} is not an object; ignored")
        extra = {}
    header = Header(source, baud, origin, started_wall, t0, bits or BITS_PER_BYTE_8N1, version_text, extra)
    return header, warnings


def _record(line: bytes, patterns: dict[str, bool]) -> Chunk | Note | None:
    """One chunk or note, or None for a line that is not a valid record (torn, nested,
    out-of-range time, bad base64, a start pattern that does not compile)."""
    try:
        rec = orjson.loads(line)  # never recurses on depth; NaN, Infinity, > 64-bit numbers refused
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rec, dict):
        return None
    t = _int(rec.get("t"), 0, MAX_NS)
    if t is None:
        return None
    if "b64" in rec:
        b64 = rec["b64"]
        if not isinstance(b64, str):
            return None
        try:
            return Chunk(t, base64.b64decode(b64, validate=True))
        except ValueError:  # binascii.Error, or a non-ASCII string
            return None
    event, detail = rec.get("event"), rec.get("detail", "")
    if not isinstance(event, str) or not isinstance(detail, str):
        return None
    if event == "start":  # export --restart compiles it: one a capture could not have written is damage
        if detail not in patterns:
            try:
                re.compile(detail)
                patterns[detail] = True
            except (re.error, RecursionError, OverflowError, ValueError):
                patterns[detail] = False
        if not patterns[detail]:
            return None
    return Note(t, event, detail)


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
    A trace buffer dumped after the ready line (``run --trace``) is left out: it is the
    trace's text, split into its own file, not lines the boot printed.
    """
    from .trace_dump import drop_dump

    lines, times = drop_dump(*line_times(rec, wire))
    starts = _compiled(n.detail for n in rec.notes if n.event == "start" and n.detail) if restart else []
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


def _compiled(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    """Each distinct pattern compiled; one that does not compile is left out (the reader
    already counted its note as damaged)."""
    out = []
    for p in dict.fromkeys(patterns):
        try:
            out.append(re.compile(p))
        except (re.error, RecursionError, OverflowError, ValueError):
            pass
    return out
