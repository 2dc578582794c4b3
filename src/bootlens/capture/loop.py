"""Capturing a console into a recording: every read is timestamped and written as it returns.

:func:`capture` reads one :class:`~.sources.Source` (a serial port, a command, a pipe: see
:mod:`.sources`) into a recording (:mod:`.recording`) until the source ends, a quit pattern is
seen or the end time comes; :func:`capture_files` makes a series of recordings (grabserial's -a
and -R). :class:`Stamper` stamps the lines of the echo; :func:`low_wakeup_latency` keeps the
wake-up that times each read prompt.
"""

from __future__ import annotations

import os
import re
import signal
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any, Protocol

from ..core.errors import BootlensError
from .recording import RecordingExists, RecordingWriteError, RecordingWriter, check_free, new_header
from .sources import READ_MAX, CaptureError, Source, SourceGone

QUIT_GRACE_NS = 200_000_000  # how long to wait for the end of a line the quit pattern matched


class Interrupted(BootlensError):
    """Ctrl-C or SIGTERM ended a capture in a series of boots (``run``, ``experiment``): the
    series stops there too, its recordings kept; the exit code is the shell's, 128 + signal."""

    def __init__(self, result: CaptureResult) -> None:
        sig = "SIGTERM" if result.reason == "terminated" else "Ctrl-C"
        super().__init__(f"{sig} during {result.path}; the recordings made so far are kept")
        self.exit_code = 143 if result.reason == "terminated" else 130


def stop_if_interrupted(result: CaptureResult) -> CaptureResult:
    """``result``, unless Ctrl-C or SIGTERM ended it: then :class:`Interrupted`."""
    if result.reason in ("interrupted", "terminated"):
        raise Interrupted(result)
    return result


PM_QOS_DEVICE = "/dev/cpu_dma_latency"


@contextmanager
def low_wakeup_latency(enabled: bool = True) -> Iterator[bool]:
    """Ask the kernel to wake a CPU at once when data arrives, for as long as the block runs.

    A capture spends its time asleep in select(); how late it wakes when the first byte of a
    line arrives is the error of that line's timestamp. Deep CPU idle states (and, in a virtual
    machine, a halted vCPU) add milliseconds to that wake-up. A PM QoS request for 0 us of wake-up
    latency keeps idle CPUs polling instead, as cyclictest does: measured on the 2-core VM, p99
    wake-up 3 ms without it and 0.11 ms with it. The request lives as long as the file is open,
    so the kernel drops it when the capture ends, however it ends (even SIGKILL). Needs write
    access to /dev/cpu_dma_latency (root, or a udev rule); without it the capture runs as before
    and yields False.
    """
    fd = -1
    if enabled:
        try:
            fd = os.open(PM_QOS_DEVICE, os.O_WRONLY)
            os.write(fd, struct.pack("i", 0))
        except OSError:
            if fd >= 0:
                os.close(fd)
            fd = -1
    try:
        yield fd >= 0
    finally:
        if fd >= 0:
            os.close(fd)


@dataclass(slots=True)
class Stamper:
    """How the echo stamps each line. bootlens's own: ``[   1.234567] `` seconds since the
    capture began (or since the last line matching the start pattern, that line included).
    grabserial's (``time`` for its -t, ``systime`` for its -T, both for both): ``[elapsed delta]
    ``, ``[HH:MM:SS.ffffff delta] `` or ``[HH:MM:SS.ffffff elapsed delta] ``, elapsed counted from
    the first byte (``launch``: from the start, grabserial's -l), delta from the line before
    (``delta`` False: none, its -n); a start-pattern line is shown on the old base and the lines
    after it on the new, as grabserial does. The recording is the same whatever the echo."""

    time: bool = False
    systime: bool = False
    timeformat: str = "%H:%M:%S.%f"
    delta: bool = True
    launch: bool = False
    wall0_ns: int = 0  # the wall clock at t=0 (set by capture)
    base: int | None = None
    prev: float = 0.0

    @property
    def grabserial(self) -> bool:
        return self.time or self.systime

    def stamp(self, t_ns: int, restart: bool) -> str:
        """The prefix of a line whose first byte came at ``t_ns``; ``restart``: it matched the
        start pattern."""
        if not self.grabserial:
            if restart or self.base is None:
                self.base = t_ns if restart else 0
            return f"[{(t_ns - self.base) / 1e9:11.6f}] "
        if self.base is None:
            self.base = 0 if self.launch else t_ns
        elapsed = (t_ns - self.base) / 1e9
        parts = []
        if self.systime:
            import datetime

            parts.append(datetime.datetime.fromtimestamp((self.wall0_ns + t_ns) / 1e9).strftime(self.timeformat))
        if self.time:
            parts.append(f"{elapsed:4.6f}")
        if self.delta:
            parts.append(f"{elapsed - self.prev:2.6f}")
        self.prev = elapsed
        if restart:
            self.base, self.prev = t_ns, 0
        return f"[{' '.join(parts)}] "


@dataclass(frozen=True, slots=True)
class CaptureResult:
    """How a capture ended."""

    path: str
    bytes: int
    chunks: int
    seconds: float
    reason: str  # "quit pattern", "end time", "source ended: ...", "interrupted", "terminated", "output closed"
    instants: tuple[tuple[str, int | None], ...] = ()  # each --instant pattern and when first seen (ns)
    kept_old: bool = False  # ``force``, and nothing received: the earlier recording at ``path`` stays


class Echo(Protocol):
    """Where the echo goes: standard output, or a filter in front of it (``capture``'s made
    harmless terminal text)."""

    def write(self, s: str, /) -> int: ...

    def flush(self) -> None: ...


class _Terminated(Exception):
    pass


class _OutputClosed(Exception):
    """The echo's reader went away (``bootlens capture ... | head -1``)."""


def _echo(echo: Echo, text: str, flush: bool = False) -> None:
    try:
        echo.write(text)
        if flush:
            echo.flush()
    except BrokenPipeError:
        raise _OutputClosed() from None


def capture(
    source: Source,
    path: str,
    *,
    origin: str = "start",
    quit_pattern: str | None = None,
    end_s: float | None = None,
    echo: Echo | None = None,
    on_ready: Callable[[], None] | None = None,
    reconnect: bool = False,
    t0_after_ready: bool = False,
    start_pattern: str | None = None,
    instant_patterns: Sequence[str] = (),
    low_latency: bool = True,
    stamper: Stamper | None = None,
    force: bool = False,
) -> CaptureResult:
    """Capture ``source`` into the recording at ``path`` until it ends, ``quit_pattern`` is seen
    in a line, ``end_s`` seconds pass, or SIGINT/SIGTERM. ``on_ready`` runs once the source is
    open and t=0 taken (e.g. to release a target started paused: then ``origin='power_on'``).
    With ``reconnect``, a source that vanishes (a USB adapter losing power with the board) is
    reopened as soon as it is back; the recording marks the gap. With ``t0_after_ready``, t=0
    is when ``on_ready`` returns (a power-cycle command that ends when power is restored).

    grabserial's ``-m`` and ``-i``: each line matching ``start_pattern`` writes a ``start`` note
    at the time of the line's first byte, and the echo shows times from there on relative to it;
    each of ``instant_patterns`` writes an ``instant`` note the first time it matches, even in
    the middle of a line (a login prompt). The recording's times stay absolute. ``stamper``:
    how the echo stamps lines (bootlens's own format by default, grabserial's -t/-T on request).

    With ``low_latency`` (and the permission), the capture holds a PM QoS request that keeps
    idle CPUs awake (see :func:`low_wakeup_latency`); the header notes it.

    A recording already at ``path`` is refused (:class:`~.recording.RecordingExists`) before the
    source is opened; with ``force`` it is replaced once the first byte is recorded (and kept
    if none comes). A device or pipe (``/dev/stdout``) is written as it is."""
    quit_rx = re.compile(quit_pattern) if quit_pattern else None
    start_rx = re.compile(start_pattern) if start_pattern else None
    instants = [(p, re.compile(p)) for p in instant_patterns]
    seen: dict[str, int] = {}  # instant pattern -> time first seen
    check_free(path, force)  # early news; creating the recording decides (O_EXCL)
    held = ExitStack()
    qos = held.enter_context(low_wakeup_latency(low_latency))
    try:
        source.open()
    except BaseException:
        held.close()
        raise
    old_term = signal.getsignal(signal.SIGTERM)
    if _is_main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        if t0_after_ready and on_ready is not None:
            on_ready()
            on_ready = None
        t0 = time.monotonic_ns()
        wall0 = time.time_ns()
        header = new_header(source.name, source.baud, origin, t0)
        if qos:
            header = replace(header, extra={"cpu_wakeup_latency_us": 0})
        writer = RecordingWriter(path, header, force)
    except BaseException:  # nothing recorded yet: put things back as they were
        source.close()
        held.close()
        if _is_main_thread():
            signal.signal(signal.SIGTERM, old_term)
        raise
    reason = "interrupted"
    failed: RecordingWriteError | None = None
    ended = False
    quit_pending: int | None = None  # deadline to finish a line the quit pattern matched early
    tail = b""  # the unfinished last line, for the quit pattern and the echo
    line_start_t = 0
    stamper = stamper if stamper is not None else Stamper()
    stamper.wall0_ns = wall0
    t = 0
    try:
        if on_ready is not None:
            on_ready()
        while True:
            if end_s is not None and time.monotonic_ns() - t0 >= end_s * 1e9:
                reason = "end time"
                break
            try:
                data = source.read(0.05)
            except SourceGone as e:
                if not reconnect:
                    reason = f"source ended: {e}"
                    break
                writer.note(time.monotonic_ns() - t0, "gap_start", str(e))
                if not _reopen(source, t0, end_s):
                    reason = "end time"
                    break
                writer.note(time.monotonic_ns() - t0, "gap_end", "reopened")
                continue
            t = time.monotonic_ns() - t0
            if not data:
                if quit_pending is not None and time.monotonic_ns() >= quit_pending:
                    reason = "quit pattern"
                    break
                continue
            writer.chunk(t, data)  # always recorded before any decision to stop
            if quit_rx is None and echo is None and start_rx is None and not instants:
                continue
            # the tail (an unfinished line) started earlier; every other line starts here
            first_start = line_start_t if tail else t
            if len(seen) < len(instants):
                window = (tail + data).decode("utf-8", "replace")
                for pat, rx in instants:
                    if pat not in seen and rx.search(window):
                        seen[pat] = t
                        writer.note(t, "instant", pat)
            lines = (tail + data).split(b"\n")
            tail = lines.pop()[-READ_MAX:]  # a line without end (noise) is kept in the recording only
            for k, ln in enumerate(lines):
                text = ln.decode("utf-8", "replace").rstrip("\r")
                lt = first_start if k == 0 else t
                restart = start_rx is not None and start_rx.search(text) is not None
                if restart:
                    writer.note(lt, "start", start_pattern or "")
                if echo is not None:
                    _echo(echo, f"{stamper.stamp(lt, restart)}{text}\n")
                if quit_rx is not None and quit_rx.search(text):
                    reason = "quit pattern"
            line_start_t = first_start if not lines else t
            if reason == "quit pattern":
                break
            if quit_rx is not None and quit_pending is None and quit_rx.search(tail.decode("utf-8", "replace")):
                # matched before the line ended: read on briefly so that the line is whole
                quit_pending = time.monotonic_ns() + QUIT_GRACE_NS
            elif quit_pending is not None and time.monotonic_ns() >= quit_pending:
                reason = "quit pattern"
                break
            if echo is not None:
                _echo(echo, "", flush=True)
    except KeyboardInterrupt:
        reason = "interrupted"
    except _Terminated:
        reason = "terminated"
    except _OutputClosed:
        reason = "output closed"
    except RecordingWriteError as e:
        failed = e
        reason = f"write failed: {e.reason}"
    finally:
        # whatever happened, the recording gets its end note if it can, and the command ends
        try:
            if tail and echo is not None and reason != "output closed":
                try:
                    _echo(echo, f"{stamper.stamp(line_start_t, False)}{tail.decode('utf-8', 'replace')}\n",
                          flush=True)
                except _OutputClosed:
                    pass
            ended = writer.end(time.monotonic_ns() - t0, reason)
            writer.close()
        finally:
            if _is_main_thread():  # first: a second SIGTERM must not interrupt the clean-up
                signal.signal(signal.SIGTERM, old_term)
            source.close()
            held.close()
    if failed is not None:
        kept = f"it keeps the first {writer.bytes:,} bytes read"
        raise RecordingWriteError(path, f"{failed.reason}; {kept}"
                                  + ("" if ended else ", without an end note"))
    return CaptureResult(path, writer.bytes, writer.chunks, (time.monotonic_ns() - t0) / 1e9, reason,
                         tuple((p, seen.get(p)) for p, _ in instants), writer.kept_old)


def capture_files(
    source: Source,
    output: str,
    *,
    end_s: float | None = None,
    again: bool = False,
    rotate_s: float | None = None,
    rotate_round: bool = False,
    stamper: Callable[[], Stamper] = Stamper,
    on_result: Callable[[CaptureResult], None] | None = None,
    retry_s: float = 1.0,
    **options: Any,
) -> list[CaptureResult]:
    """One capture into ``output`` as :func:`capture` makes it, or, for grabserial's -a and -R,
    a series of recordings: with ``rotate_s`` a new one every ``rotate_s`` seconds (on the wall
    clock's multiples of it with ``rotate_round``) until ``end_s``; with ``again``, once ``end_s``
    has passed, the quit pattern was seen or the device went away (waited for, polled every
    ``retry_s``), everything starts over in a new recording, until Ctrl-C or SIGTERM.

    ``output`` is a file name in which strftime's codes are replaced when each recording begins
    (``%`` alone: grabserial's ``%Y-%m-%d_%H:%M:%S``); a name met twice in one series gets
    ``-2``, ``-3``... before its extension, so that no recording replaces another; so does a
    name with strftime codes that a file has already (two captures started in one second).
    A plain name that is taken is refused (:class:`~.recording.RecordingExists`), unless
    ``force`` is among ``options``."""
    results: list[CaptureResult] = []
    used: set[str] = set()
    last_reason = ""
    while True:
        session_end = time.monotonic() + end_s if end_s is not None else None
        rotate_at = _first_rotation(rotate_s, rotate_round) if rotate_s else None
        while True:
            limits = [x for x in (session_end, rotate_at) if x is not None]
            until = max(min(limits) - time.monotonic(), 0.001) if limits else None
            path = _file_name(output, used)
            if os.path.dirname(path):  # as grabserial makes -o's folders (strftime codes in them)
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                except OSError as e:
                    raise CaptureError(f"{path}: cannot create its folder: {e.strerror or e}") from None
            try:
                r = capture(source, path, end_s=until, stamper=stamper(), **options)
            except RecordingExists as e:
                if "%" not in output or e.busy:
                    raise
                used.add(path)  # a made-up name: make up the next one (the summary line says it)
                continue
            except CaptureError:
                if not (again and last_reason.startswith("source ended")):
                    raise
                time.sleep(retry_s)  # the device is gone: wait for it to come back, as grabserial -a does
                continue
            used.add(path)
            results.append(r)
            last_reason = r.reason
            if on_result is not None:
                on_result(r)
            rotation_due = rotate_at is not None and time.monotonic() >= rotate_at - 0.002
            if r.reason == "end time" and rotation_due and rotate_s and \
                    (session_end is None or time.monotonic() < session_end - 0.002):
                assert rotate_at is not None
                rotate_at += rotate_s
                continue
            break
        if not again or r.reason in ("interrupted", "terminated", "output closed"):
            return results


def _first_rotation(period_s: float, rounded: bool) -> float:
    """When the first rotation is due, on the monotonic clock: ``period_s`` from now, or the
    next multiple of ``period_s`` on the wall clock (grabserial's -R 30m: at :00 and :30)."""
    if not rounded:
        return time.monotonic() + period_s
    now = time.time()
    return time.monotonic() + ((now // period_s) + 1) * period_s - now


def _file_name(pattern: str, used: set[str]) -> str:
    """The file name for a recording starting now (strftime codes replaced), never one of ``used``."""
    from datetime import datetime

    head, sep, tail = pattern.rpartition("/")
    if tail == "%":
        tail = "%Y-%m-%d_%H:%M:%S"
    name = datetime.now().strftime(head + sep + tail) if "%" in pattern else pattern
    if name not in used:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or "/" in ext:
        stem, dot, ext = name, "", ""
    k = 2
    while f"{stem}-{k}{dot}{ext}" in used:
        k += 1
    return f"{stem}-{k}{dot}{ext}"


def _reopen(source: Source, t0: int, end_s: float | None) -> bool:
    """Reopen a vanished source, polling every 50 ms; False if the end time came first."""
    source.close()
    while end_s is None or time.monotonic_ns() - t0 < end_s * 1e9:
        try:
            source.open()
            return True
        except CaptureError:
            time.sleep(0.05)
    return False


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated()


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
