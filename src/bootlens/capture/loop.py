"""Capturing a console into a recording: every read is timestamped and written as it returns.

Sources read in chunks (whatever the device has, up to 64 KiB per call), never a byte per
system call: after an idle period the first read returns the first byte alone, so the start of
each burst is timed exactly, and the rest of the burst comes in bulk.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any, TextIO

from ..core.errors import BootlensError
from .recording import RecordingWriteError, RecordingWriter, new_header

READ_MAX = 1 << 16
QUIT_GRACE_NS = 200_000_000  # how long to wait for the end of a line the quit pattern matched


class CaptureError(BootlensError):
    """The console could not be opened or read."""

    exit_code = 2


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


class SourceGone(Exception):
    """The source ended (EOF, process exit, device removed)."""


class Source(ABC):
    """Where console bytes come from."""

    name: str
    baud: int | None = None

    @abstractmethod
    def open(self) -> None:
        """Open the source; raise CaptureError with a one-line reason if it cannot be."""

    @abstractmethod
    def read(self, timeout: float) -> bytes:
        """Bytes available within ``timeout`` seconds (b'' if none); SourceGone at the end."""

    @abstractmethod
    def close(self) -> None:
        """Release the source."""


class SerialSource(Source):
    """A pyserial URL: /dev/ttyUSB0, socket://host:port, rfc2217://host:port, ..."""

    def __init__(self, url: str, baud: int = 115200, bytesize: int = 8, parity: str = "N",
                 stopbits: float = 1, rtscts: bool = False, xonxoff: bool = False) -> None:
        self.name = url
        self.baud = baud if "://" not in url else None  # a network port's line rate is not ours
        self._args = dict(baudrate=baud, bytesize=bytesize, parity=parity, stopbits=stopbits,
                          rtscts=rtscts, xonxoff=xonxoff)
        self._port: Any = None

    def open(self) -> None:
        import serial  # type: ignore[import-untyped]  # pyserial; imported here: analysis never needs it

        try:
            self._port = serial.serial_for_url(self.name, timeout=0.1, **self._args)
        except (serial.SerialException, ValueError, OSError) as e:
            raise CaptureError(f"{self.name}: {open_failure(self.name, e)}") from None

    def read(self, timeout: float) -> bytes:
        import serial

        port = self._port
        try:
            if port.timeout != timeout:  # the setter reconfigures the port (tcsetattr): only on change
                port.timeout = timeout
            # whatever is waiting, or block for the first byte of the next burst
            data: bytes = port.read(port.in_waiting or 1)
        except (serial.SerialException, OSError) as e:
            raise SourceGone(f"{self.name}: {e}") from None
        return data

    def close(self) -> None:
        if self._port is not None:
            self._port.close()


def open_failure(name: str, e: Exception) -> str:
    """Why a serial port did not open, said for a person: the device missing (with the ones
    that exist), no permission (with the group to join), busy; else pyserial's words."""
    import errno
    import glob

    code = getattr(e, "errno", None)
    if code == errno.ENOENT and "://" not in name:
        have = sorted(glob.glob("/dev/ttyUSB*") + glob.glob("/dev/ttyACM*"))
        if name.upper().startswith("COM") and name[3:].isdigit():
            why = "no such serial device (COMn is Windows' name for a port; Linux's are /dev/ttyUSB0, /dev/ttyACM0, ...)"
        else:
            why = "no such serial device"
        return why + (f"; present: {', '.join(have)}" if have else "; no USB serial adapter is plugged in")
    if code == errno.EACCES:
        try:
            import grp

            group = grp.getgrgid(os.stat(name).st_gid).gr_name
            return f"permission denied (join its group: sudo usermod -aG {group} $USER, then log in again)"
        except (OSError, KeyError):
            return "permission denied"
    if code == errno.EBUSY:
        return "in use by another program"
    text = str(e)
    if code is not None and e.args and isinstance(e.args[-1], str):  # pyserial repeats the path
        text = e.args[-1].replace(f"could not open port {name}: ", "")
    return f"cannot open: {text}"


class FdSource(Source):
    """A file descriptor: standard input, or a pipe."""

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name
        self.read_max = READ_MAX  # bytes per read; ThrottledSource lowers it

    def open(self) -> None:
        pass

    def read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return b""
        try:
            data = os.read(self.fd, self.read_max)
        except OSError as e:
            raise SourceGone(f"{self.name}: {e}") from None
        if not data:
            raise SourceGone(f"{self.name}: end of input")
        return data

    def close(self) -> None:
        pass


class CommandSource(FdSource):
    """The standard output (and error) of a command, e.g. ``qemu-system-aarch64 -nographic``.

    The command runs under the keeper (keeper.py), in a process group of its own: when bootlens
    ends, however it ends (SIGKILL and disk full included), the kernel tells the keeper, which
    ends the command and everything it started. ``proc`` is the keeper; its exit status is the
    command's. The kernel signals the keeper when the *thread* that called :meth:`open` ends, so
    open and read from a thread that lives as long as the capture (``capture()`` does). Starting
    the keeper costs about 40 ms, before t=0.
    """

    def __init__(self, argv: Sequence[str]) -> None:
        super().__init__(-1, " ".join(argv))
        self.argv = list(argv)
        self.proc: subprocess.Popen[bytes] | None = None

    def open(self) -> None:
        keeper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keeper.py")
        status_r, status_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", keeper, str(status_w), str(os.getpid()), "--", *self.argv],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, pass_fds=(status_w,))
        except OSError as e:
            os.close(status_r)
            raise CaptureError(f"cannot start the command's keeper ({sys.executable}): {e.strerror or e}") from None
        finally:
            os.close(status_w)
        status = _read_all(status_r, 30.0)  # empty once the command runs
        if status:
            self.close()
            if status.startswith(b"E") and status[1:].isdigit():
                raise CaptureError(f"{self.argv[0]}: cannot run: {os.strerror(int(status[1:]))}")
            raise CaptureError(f"{self.argv[0]}: not started ({status[1:].decode('utf-8', 'replace')})")
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()

    def read(self, timeout: float) -> bytes:
        try:
            return super().read(timeout)
        except SourceGone:
            assert self.proc is not None
            try:
                status = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                raise SourceGone("the command closed its output") from None
            raise SourceGone(f"the command exited with status {status}") from None

    def close(self) -> None:
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        if p.stdout is not None:
            p.stdout.close()


def _read_all(fd: int, limit_s: float) -> bytes:
    """Everything written to a pipe until its writers close it (or ``limit_s`` passes); closes it."""
    out = b""
    deadline = time.monotonic() + limit_s
    try:
        while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 256)
            if not chunk:
                break
            out += chunk
    finally:
        os.close(fd)
    return out


class ReplaySource(Source):
    """Chunks with their times, replayed in real time: a console without hardware, for tests."""

    def __init__(self, chunks: Sequence[tuple[float, bytes]], name: str = "replay", baud: int | None = None) -> None:
        self.name = name
        self.baud = baud
        self._chunks = list(chunks)
        self._i = 0
        self._t0 = 0.0

    def open(self) -> None:
        self._t0 = time.monotonic()

    def read(self, timeout: float) -> bytes:
        if self._i >= len(self._chunks):
            raise SourceGone("replay finished")
        at, data = self._chunks[self._i]
        wait = self._t0 + at - time.monotonic()
        if wait > timeout:
            time.sleep(timeout)
            return b""
        if wait > 0:
            time.sleep(wait)
        self._i += 1
        return data

    def close(self) -> None:
        pass


class ThrottledSource(Source):
    """Another source read no faster than a serial line at ``baud`` would deliver it.

    For a target whose emulated UART is infinitely fast (QEMU): bytes are taken at most a few
    milliseconds' worth at a time and handed on only when the last of them would have arrived
    at ``baud`` (``bits_per_byte`` per byte, 10 for 8N1). A command's output pipe is shrunk to one
    page, so the target blocks as soon as a page is waiting, as it would block on a full FIFO,
    only later: QEMU's PL011 blocks its vCPU on a full output (docs/target.md has the figures).
    """

    def __init__(self, inner: Source, baud: int, bits_per_byte: int = 10) -> None:
        self.inner = inner
        self.name = inner.name
        self.baud = baud
        self.byte_s = bits_per_byte / baud
        self.chunk = max(1, min(READ_MAX, int(0.005 / self.byte_s)))
        self.line_free = 0.0  # when the simulated line has sent everything handed on so far
        if not isinstance(inner, FdSource):
            raise CaptureError("--baud throttling needs a command or a pipe as its source")
        inner.read_max = self.chunk

    def open(self) -> None:
        self.inner.open()
        fd = getattr(self.inner, "fd", -1)
        if fd >= 0 and hasattr(fcntl, "F_SETPIPE_SZ"):
            try:
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 4096)
            except OSError:
                pass  # not a pipe
        self.line_free = time.monotonic()

    def read(self, timeout: float) -> bytes:
        now = time.monotonic()
        if now < self.line_free:  # the line is still busy with what was handed on last
            time.sleep(min(self.line_free - now, timeout))
            if time.monotonic() < self.line_free:
                return b""
        data = self.inner.read(timeout)
        if not data:
            return data
        start = max(self.line_free, time.monotonic())
        self.line_free = start + len(data) * self.byte_s
        wait = self.line_free - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        return data

    def close(self) -> None:
        self.inner.close()


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


class _Terminated(Exception):
    pass


class _OutputClosed(Exception):
    """The echo's reader went away (``bootlens capture ... | head -1``)."""


def _echo(echo: TextIO, text: str, flush: bool = False) -> None:
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
    echo: TextIO | None = None,
    on_ready: Callable[[], None] | None = None,
    reconnect: bool = False,
    t0_after_ready: bool = False,
    start_pattern: str | None = None,
    instant_patterns: Sequence[str] = (),
    low_latency: bool = True,
    stamper: Stamper | None = None,
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
    idle CPUs awake (see :func:`low_wakeup_latency`); the header notes it."""
    quit_rx = re.compile(quit_pattern) if quit_pattern else None
    start_rx = re.compile(start_pattern) if start_pattern else None
    instants = [(p, re.compile(p)) for p in instant_patterns]
    seen: dict[str, int] = {}  # instant pattern -> time first seen
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
        writer = RecordingWriter(path, header)
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
                         tuple((p, seen.get(p)) for p, _ in instants))


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
    ``-2``, ``-3``... before its extension, so that no recording replaces another."""
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


def stdin_source() -> Source:
    """Standard input as a source."""
    return FdSource(sys.stdin.fileno(), "<stdin>")
