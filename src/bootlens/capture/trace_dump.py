"""A trace buffer dumped on the console after the ready line (``bootlens run --trace``,
:mod:`bootlens.targets.tracerun`): the lines between two marker lines are the trace's text, not what the
boot printed. The recording keeps every byte; :func:`drop_dump` leaves the dump out of the
console's lines, :func:`save_dump` splits it into ``boot-N.trace.txt`` beside the recording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .recording import line_times, read_recording

DUMP_BEGIN = "=== bootlens: ftrace buffer begin ==="
DUMP_END = "=== bootlens: ftrace buffer end ==="
TRACE_SUFFIX = ".trace.txt"


def _is(line: bytes, marker: str) -> bool:
    return line.rstrip(b"\r\n").endswith(marker.encode())


def dump_span(lines: Sequence[bytes]) -> tuple[int, int] | None:
    """(index of the begin marker line, index after the end marker line, or len(lines) when the
    capture ended inside the dump) of the first dump in these console lines; None without one."""
    begin = next((i for i, ln in enumerate(lines) if _is(ln, DUMP_BEGIN)), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(lines)) if _is(lines[i], DUMP_END)), None)
    return begin, (len(lines) if end is None else end + 1)


def drop_dump(lines: list[bytes], times: list[int]) -> tuple[list[bytes], list[int]]:
    """The console lines (and their times) without the trace dump: what the boot printed."""
    span = dump_span(lines)
    if span is None:
        return lines, times
    a, b = span
    return lines[:a] + lines[b:], times[:a] + times[b:]


@dataclass(frozen=True, slots=True)
class Dump:
    """A trace dump split out of a recording."""

    text: bytes  # the buffer's text, LF line ends
    lines: int
    complete: bool  # the end marker was seen (else the capture stopped inside the dump)


def split_dump(recording: str) -> Dump | None:
    """The trace dumped on the console of this recording, or None when it holds none."""
    lines, _ = line_times(read_recording(recording), wire=False)
    span = dump_span(lines)
    if span is None:
        return None
    a, b = span
    complete = b <= len(lines) and b > a + 1 and _is(lines[b - 1], DUMP_END)
    body = lines[a + 1:b - 1] if complete else lines[a + 1:b]
    # the console's tty turns LF into CRLF; the buffer's own text has LF only
    text = b"".join(ln.rstrip(b"\r\n") + b"\n" for ln in body)
    return Dump(text, len(body), complete)


def trace_path(recording: Path) -> Path:
    """Where a recording's trace goes: ``boot-1.rec`` -> ``boot-1.trace.txt``."""
    return recording.with_name(recording.stem + TRACE_SUFFIX)


def save_dump(recording: Path) -> Dump | None:
    """Split the recording's trace dump into :func:`trace_path` (None: no dump in it)."""
    dump = split_dump(str(recording))
    if dump is not None:
        trace_path(recording).write_bytes(dump.text)
    return dump
