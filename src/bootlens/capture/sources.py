"""Where console bytes come from: the :class:`Source` a capture reads (:mod:`.loop`), and its
kinds: a serial port or any pyserial URL, a command run under the keeper (:mod:`.keeper`), a file
descriptor (standard input, a pipe), a replay of timed chunks for tests, and a throttle that reads
another source no faster than a serial line would.

Sources read in chunks (whatever the device has, up to 64 KiB per call), never a byte per
system call: after an idle period the first read returns the first byte alone, so the start of
each burst is timed exactly, and the rest of the burst comes in bulk.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from ..core.errors import BootlensError

READ_MAX = 1 << 16  # bytes per read at most


class CaptureError(BootlensError):
    """The console could not be opened or read."""

    exit_code = 2


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
    """A pyserial URL: /dev/ttyUSB0, socket://host:port, rfc2217://host:port, ...

    ``socket://`` is read through a plain TCP socket, not pyserial: pyserial's open() discards
    what arrived at connect (:func:`_keeping_input`), and its socket port tells one byte waiting
    at most, so it was read a byte per call (4,690 records for 4,690 bytes)."""

    def __init__(self, url: str, baud: int = 115200, bytesize: int = 8, parity: str = "N",
                 stopbits: float = 1, rtscts: bool = False, xonxoff: bool = False) -> None:
        self.name = url
        self.baud = baud if "://" not in url else None  # a network port's line rate is not ours
        self._args = dict(baudrate=baud, bytesize=bytesize, parity=parity, stopbits=stopbits,
                          rtscts=rtscts, xonxoff=xonxoff)
        self._port: Any = None
        self._sock: Any = None  # socket://: the connection

    def open(self) -> None:
        if self.name.lower().startswith("socket://"):
            self._sock = _connect(self.name)
            return
        import serial  # type: ignore[import-untyped]  # pyserial; imported here: analysis never needs it

        try:
            if "://" in self.name:
                # the class pyserial picks for this URL, opened without discarding what came at connect
                kind = type(serial.serial_for_url(self.name, do_not_open=True))
                port = _keeping_input(kind)(None, timeout=0.1, **self._args)
                port.port = self.name
                port.open()
                self._port = port
            else:
                self._port = serial.serial_for_url(self.name, timeout=0.1, **self._args)
        except (serial.SerialException, ValueError, OSError) as e:
            raise CaptureError(f"{self.name}: {open_failure(self.name, e)}") from None

    def read(self, timeout: float) -> bytes:
        if self._sock is not None:
            return _receive(self._sock, self.name, timeout)
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
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._port is not None:
            self._port.close()
            self._port = None


def _connect(url: str) -> Any:
    """A TCP connection to a ``socket://host:port`` console (pyserial's URL; its one option,
    ``logging``, is about pyserial's own log and has nothing to do here)."""
    import socket
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
        unknown = [k for k in parse_qs(parts.query, keep_blank_values=True) if k != "logging"]
    except ValueError as e:
        raise CaptureError(f"{url}: not a socket://HOST:PORT address ({e})") from None
    if not parts.hostname or port is None:
        raise CaptureError(f"{url}: not a socket://HOST:PORT address")
    if unknown:
        raise CaptureError(f"{url}: unknown option {unknown[0]!r} (socket:// takes none)")
    try:
        sock = socket.create_connection((parts.hostname, port), timeout=5)
    except OSError as e:
        raise CaptureError(f"{url}: cannot open: {e.strerror or e}") from None
    sock.setblocking(False)
    return sock


def _receive(sock: Any, name: str, timeout: float) -> bytes:
    """What a connection has within ``timeout`` seconds (up to READ_MAX bytes); SourceGone when
    the other end closed it or it failed."""
    try:
        if not select.select([sock], [], [], timeout)[0]:
            return b""
        data: bytes = sock.recv(READ_MAX)
    except BlockingIOError:
        return b""
    except OSError as e:
        raise SourceGone(f"{name}: {e.strerror or e}") from None
    if not data:
        raise SourceGone(f"{name}: the other end closed the connection")
    return data


def _keeping_input(kind: Any) -> Any:
    """``kind`` (a pyserial port class) whose ``open()`` keeps the bytes that arrive while it opens.

    pyserial ends ``open()`` of a network port with ``reset_input_buffer()`` "for a clean start":
    for ``socket://`` it reads and drops whatever the socket holds, for ``rfc2217://`` it asks the
    server to purge its buffer and empties its own queue. A network console (ser2net, a console
    server, QEMU's ``-serial tcp:...,server``) sends what the device printed since the connection
    was made, or buffered before it: the first lines of a boot, lost (issue 29: 0 of 301 lines
    sent at accept were recorded). So bootlens does not rely on pyserial's open here: the reset
    is skipped while the port opens and works as before afterwards. A local serial device is
    left as pyserial opens it (its flush there drops bytes received before the line was set up,
    at whatever rate it had)."""

    class KeepingInput(kind):  # type: ignore[misc]
        _opening = False

        def open(self) -> None:
            self._opening = True
            try:
                super().open()
            finally:
                self._opening = False

        def reset_input_buffer(self) -> None:
            if not self._opening:
                super().reset_input_buffer()

    return KeepingInput


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


def stdin_source() -> Source:
    """Standard input as a source."""
    return FdSource(sys.stdin.fileno(), "<stdin>")
