"""Network consoles (``socket://``, ``rfc2217://``): what the device sends the moment the
connection is made is captured (issue 29 item 7). Real TCP servers on 127.0.0.1, real
``bootlens capture`` processes."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bootlens.capture.recording import read_recording

CLI = [sys.executable, "-m", "bootlens.cli"]
# a boot log the device sends at once, before the client has sent or read anything
LOG = b"".join(b"[    0.%06d] initcall probe_%d+0x0/0x40 returned 0 after %d usecs\r\n" % (i * 37, i, i)
               for i in range(300)) + b"APP READY\r\n"


@contextmanager
def server(at_accept: Callable[[socket.socket], None]) -> Iterator[int]:
    """A TCP server on a free port that accepts one connection and runs ``at_accept`` on it."""
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(1)
    lsn.settimeout(30)

    def serve() -> None:
        try:
            conn, _ = lsn.accept()
        except OSError:
            return
        with conn:
            at_accept(conn)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield lsn.getsockname()[1]
    finally:
        lsn.close()
        t.join(timeout=30)


def _capture(url: str, out: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, "capture", "-q", "-d", url, "-o", str(out), "--quit", "APP READY", "-e", "20"],
                          capture_output=True, timeout=60)


def test_socket_console_keeps_the_bytes_sent_at_connect(tmp_path: Path) -> None:
    """pyserial's socket:// discarded whatever had arrived when its open() ended (its
    reset_input_buffer reads and drops it): 0 of the 301 lines were recorded."""

    def send_at_once(conn: socket.socket) -> None:
        conn.sendall(LOG)
        time.sleep(2)  # keep the connection open: the client stops at APP READY

    out = tmp_path / "net.rec"
    with server(send_at_once) as port:
        r = _capture(f"socket://127.0.0.1:{port}", out)
    assert r.returncode == 0, r.stderr
    rec = read_recording(str(out))
    assert rec.data == LOG
    assert len(rec.chunks) < 20  # read in bulk: pyserial's socket port gave one byte per read
    assert b"(quit pattern)" in r.stderr


def test_socket_console_that_sends_and_closes(tmp_path: Path) -> None:
    """A device that sends its log and hangs up at once: every byte, then 'source ended'."""
    out = tmp_path / "closed.rec"
    with server(lambda conn: conn.sendall(LOG[:2000])) as port:
        r = subprocess.run([*CLI, "capture", "-q", "-d", f"socket://127.0.0.1:{port}", "-o", str(out), "-e", "20"],
                           capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert read_recording(str(out)).data == LOG[:2000]
    assert b"source ended" in r.stderr


def test_rfc2217_console_keeps_the_bytes_sent_at_connect(tmp_path: Path) -> None:
    """An RFC 2217 server (pyserial's own PortManager, over a loop:// port) that sends the log
    the moment it accepts: pyserial's client purged them when its open() ended."""
    import serial  # type: ignore[import-untyped]
    from serial.rfc2217 import PortManager  # type: ignore[import-untyped]

    class Connection:  # what PortManager writes its answers to
        def __init__(self, conn: socket.socket) -> None:
            self.write = conn.sendall

    def rfc2217_server(conn: socket.socket) -> None:
        pm = PortManager(serial.serial_for_url("loop://", timeout=0), Connection(conn))
        conn.sendall(b"".join(pm.escape(LOG)))  # the device's bytes, before any negotiation
        conn.settimeout(0.1)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                data = conn.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            for _ in pm.filter(data):  # answer the client's negotiation
                pass

    out = tmp_path / "rfc2217.rec"
    with server(rfc2217_server) as port:
        r = _capture(f"rfc2217://127.0.0.1:{port}", out)
    assert r.returncode == 0, r.stderr
    assert read_recording(str(out)).data == LOG
