"""A labgrid lab on loopback for the tests, built from labgrid's own programs.

* a labgrid coordinator and a labgrid exporter (``labgrid-coordinator``, ``labgrid-exporter``),
  the exporter publishing one NetworkSerialPort: the board's console on a TCP port;
* the serial cable behind that port (``cable``): it is always there, as a USB serial adapter
  behind ser2net is, whether the board is on or off; the board connects to its other end when
  it powers on. A plain TCP server of QEMU's would vanish with QEMU at every power-off;
* the board's power, switched by labgrid's ExternalPowerDriver with ``on`` and ``off`` of this
  module: ``on`` starts the board and returns once it runs, ``off`` stops it. The board is the
  QEMU reference target (its serial a TCP client of the cable, started paused, released through
  its monitor when everything is connected, as bootlens's own boot does) or, for the fast tests,
  a replay of a real recording of that target (``replay``), byte for byte at its own times;
* a place created with ``labgrid-client``, matching the exporter's port, acquired and released.

Run as a program it is the cable, the power switch and the replaying board (``python3
tests/labgrid_lab.py cable|on|off|replay ...``): the commands the exporter config and the
environment file name.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
EXPORTER = "bootlens-lab"
GROUP = "cable"


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} not listening on {port} after {limit_s} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Lab:
    """The lab: coordinator, exporter, cable and a place, in ``root`` (a temporary folder).
    ``board`` is the board's description for ``on`` (written to ``root/board.json``)."""

    def __init__(self, root: Path, place: str = "bootlens-qemu", serial: str = "raw") -> None:
        self.root = root
        self.place = place
        self.serial = serial  # "raw": a NetworkSerialPort on the cable's TCP port; "rfc2217": ser2net
        self.coordinator_port = free_port()
        self.lab_port = free_port()  # the exported console
        self.board_port = free_port()  # where the board plugs in
        self.address = f"127.0.0.1:{self.coordinator_port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.acquired = False

    def _spawn(self, argv: list[str], log: str) -> subprocess.Popen[bytes]:
        out = open(self.root / log, "wb")
        p = subprocess.Popen(argv, cwd=self.root, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()
        self.procs.append(p)
        return p

    def start(self) -> None:
        """Start the cable, the coordinator and the exporter; create and acquire the place."""
        if self.serial == "raw":
            cable = self._spawn([sys.executable, str(HERE), "cable", str(self.lab_port), str(self.board_port),
                                 str(self.root)], "cable.log")
            _wait_port(self.lab_port, cable, "the cable")
            resource = (f"  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {self.lab_port}\n"
                        "    speed: 115200\n    protocol: raw\n")
        else:
            cable = self._spawn([sys.executable, str(HERE), "cable", "pty", str(self.board_port), str(self.root)],
                                "cable.log")
            _wait_port(self.board_port, cable, "the cable")
            resource = f"  RawSerialPort:\n    port: {(self.root / 'pty.path').read_text()}\n    speed: 115200\n"
        coord = self._spawn([sys.executable, "-c", "from labgrid.remote.coordinator import main; main()",
                             "-l", self.address], "coordinator.log")
        _wait_port(self.coordinator_port, coord, "labgrid-coordinator")
        (self.root / "exporter.yaml").write_text(f"{GROUP}:\n{resource}")
        self._spawn([sys.executable, "-c", "from labgrid.remote.exporter import main; main()",
                     "-c", self.address, "-n", EXPORTER, "--hostname", "127.0.0.1", "exporter.yaml"], "exporter.log")
        deadline = time.monotonic() + 30
        while f"{EXPORTER}/{GROUP}/" not in self.client("resources", check=False).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError("the exporter's resource never reached the coordinator: "
                                   + (self.root / "exporter.log").read_text(errors="replace")[-2000:])
            time.sleep(0.2)
        self.client("-p", self.place, "create")
        self.client("-p", self.place, "add-match", f"{EXPORTER}/{GROUP}/*")
        self.client("-p", self.place, "acquire")
        self.acquired = True

    def client(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run labgrid-client against this lab's coordinator."""
        p = subprocess.run([sys.executable, "-c", "from labgrid.remote.client import main; main()",
                            "-x", self.address, *args], cwd=self.root, capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise RuntimeError(f"labgrid-client {' '.join(args)}: {p.returncode}: {p.stderr.strip()}")
        return p

    def env(self, board: dict[str, Any], delay_s: float = 0.3, name: str = "env.yaml") -> Path:
        """The labgrid environment file: role ``main`` on the place (through RemotePlace), its
        console through labgrid's SerialDriver, its power through ExternalPowerDriver."""
        (self.root / "board.json").write_text(json.dumps({**board, "port": self.board_port}))
        py, state = sys.executable, str(self.root)
        text = (f"targets:\n  main:\n    resources:\n      RemotePlace:\n        name: {self.place}\n"
                "    drivers:\n      SerialDriver: {}\n      ExternalPowerDriver:\n"
                f"        cmd_on: '{py} {HERE} on {state}'\n        cmd_off: '{py} {HERE} off {state}'\n"
                f"        delay: {delay_s}\n"
                f"options:\n  coordinator_address: {self.address}\n")
        path = self.root / name
        path.write_text(text)
        return path

    def release(self) -> None:
        """Release the place (labgrid-client release)."""
        if self.acquired:
            self.client("-p", self.place, "release")
            self.acquired = False

    def stop(self) -> None:
        """Power the board off, release the place, stop the lab's programs."""
        subprocess.run([sys.executable, str(HERE), "off", str(self.root)], timeout=60, check=False)
        try:
            if self.acquired:
                self.client("-p", self.place, "release", check=False)
        finally:
            for p in reversed(self.procs):
                _stop(p)


# --- the programs the lab runs --------------------------------------------------------------


PTY_BACKLOG = 1 << 20  # what the cable holds for a slow terminal reader before it loses bytes


def cable(lab_port: int | None, board_port: int, state: Path) -> None:
    """The serial cable: bytes from the board go to whoever has the console open, and back;
    with nobody at one end, bytes from the other are lost, as on a serial line. A new
    connection on either end replaces the old one (a board powered on again).

    The lab end is a TCP port (``lab_port``, exported as a raw NetworkSerialPort) or, with
    ``lab_port`` None, a pseudo-terminal whose device path goes to ``state/pty.path``: the
    exporter serves it as a RawSerialPort through ser2net (RFC 2217), as it serves a USB serial
    adapter. The cable keeps the terminal's own end open too, so that it never hangs up."""
    sel = selectors.DefaultSelector()
    ends: dict[str, Any] = {"lab": None, "board": None}
    listen = [("board", board_port)]
    pty_fd = -1
    if lab_port is None:
        import tty

        pty_fd, keep = os.openpty()
        tty.setraw(keep)  # bytes as they are: no echo, no line editing, no CR added
        os.set_blocking(pty_fd, False)
        (state / "pty.path").write_text(os.ttyname(keep))
        ends["lab"] = pty_fd
        sel.register(pty_fd, selectors.EVENT_READ, ("data", "lab"))
    else:
        listen.append(("lab", lab_port))
    for name, port in listen:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", port))
        srv.listen(4)
        sel.register(srv, selectors.EVENT_READ, ("listen", name))
    # Bytes for the terminal wait here while its reader (ser2net) is slow, as a UART with flow
    # control holds them; only past PTY_BACKLOG (nobody reading for long) are they lost, as a
    # UART loses them. Before, a full terminal buffer lost them at once, and on a loaded host
    # ser2net falls behind by a few kB: the recording missed bytes mid-line (issue 29 item 9).
    backlog = bytearray()

    def flush_pty() -> None:
        try:
            while backlog:
                del backlog[:os.write(pty_fd, backlog)]
        except BlockingIOError:
            pass
        except OSError:
            backlog.clear()
        if len(backlog) > PTY_BACKLOG:
            del backlog[:len(backlog) - PTY_BACKLOG]
        sel.modify(pty_fd, selectors.EVENT_READ | (selectors.EVENT_WRITE if backlog else 0), ("data", "lab"))

    while True:
        for key, events in sel.select():
            what, name = key.data
            if key.fileobj == pty_fd and events & selectors.EVENT_WRITE:
                flush_pty()
                if not events & selectors.EVENT_READ:
                    continue
            if what == "listen":
                conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                old = ends[name]
                if old is not None:
                    sel.unregister(old)
                    old.close()
                ends[name] = conn
                sel.register(conn, selectors.EVENT_READ, ("data", name))
                continue
            end = ends[name]
            try:
                data = os.read(end, 65536) if end == pty_fd else end.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                if end == pty_fd:
                    continue
                sel.unregister(end)
                end.close()
                ends[name] = None
                continue
            other = ends["board" if name == "lab" else "lab"]
            try:
                if other == pty_fd:
                    backlog += data
                    flush_pty()
                elif other is not None:
                    other.sendall(data)
            except OSError:
                pass


def _pid(state: Path) -> int | None:
    try:
        pid = int((state / "board.pid").read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def power_on(state: Path) -> None:
    """Start the board described in ``state/board.json``; return once it runs."""
    if _pid(state) is not None:
        return  # on already
    board = json.loads((state / "board.json").read_text())
    log = open(state / "board.log", "ab")
    if board["kind"] == "replay":
        # the board's recordings in turn, one per power-on: several real boots of one configuration
        count = int((state / "count").read_text()) if (state / "count").exists() else 0
        (state / "count").write_text(str(count + 1))
        recordings = board["recordings"]
        recording = recordings[count % len(recordings)]
        with open(state / "replayed.txt", "a") as f:
            f.write(recording + "\n")
        p = subprocess.Popen([sys.executable, str(HERE), "replay", recording, str(board["port"])],
                             stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        (state / "board.pid").write_text(str(p.pid))
        assert p.stdout is not None
        if p.stdout.readline().strip() != b"running":  # connected, replaying from now on
            sys.exit("the replaying board did not start")
        return
    from bootlens.targets.qemu import _monitor_command  # the reference target's own release, as target.boot does

    monitor = state / "monitor.sock"
    monitor.unlink(missing_ok=True)
    argv = [a.replace("@PORT@", str(board["port"])).replace("@MONITOR@", str(monitor)) for a in board["argv"]]
    argv = _configured(board, argv, state)
    p = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    (state / "board.pid").write_text(str(p.pid))
    before = time.monotonic_ns()
    _monitor_command(str(monitor), b"cont\n", 30.0)
    with open(state / "released.txt", "a") as f:  # when the guest began to run, give or take the command
        f.write(f"{before} {time.monotonic_ns()}\n")


def _configured(board: dict[str, Any], argv: list[str], state: Path) -> list[str]:
    """The reference target's QEMU command line with what the hook applied: kernel arguments
    added, U-Boot variables in an environment image in its flash, files over its initramfs; made
    with bootlens's own functions, as ``bootlens run qemu-arm64`` would boot it."""
    from bootlens.targets.initramfs import build_initramfs
    from bootlens.targets.qemu import files, flash_image

    if board.get("append"):
        i = argv.index("-append") + 1
        argv[i] = f"{argv[i]} {board['append']}"
    if board.get("env") or board.get("overlay"):
        tf = files(board["target"])
        if board.get("env"):
            flash_image(tf, board["env"], str(state / "flash1.img"))
            argv += ["-drive", f"if=pflash,format=raw,unit=1,file={state / 'flash1.img'}"]
        if board.get("overlay"):
            image = state / "initramfs.cpio.gz"
            image.write_bytes(build_initramfs((tf.kernel.parent / "busybox").read_bytes(), Path(board["overlay"])))
            argv[argv.index("-initrd") + 1] = str(image)
    return argv


def power_off(state: Path) -> None:
    """Stop the board (its whole process group) and wait until it is gone."""
    pid = _pid(state)
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 10
    while _pid(state) is not None and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # not our child: ECHILD; the board's parent (on) has exited
        except ChildProcessError:
            pass
        if _zombie_or_gone(pid):
            break
        time.sleep(0.02)
    else:
        if _pid(state) is not None:
            os.killpg(pid, signal.SIGKILL)
    (state / "board.pid").unlink(missing_ok=True)


def _zombie_or_gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def hook(state: Path, args: list[str]) -> None:
    """The user's hook of docs/experiment.md. The QEMU reference target takes every change
    (cmdline, uboot-env, overlay; see :func:`_configured`). The replaying board: ``reset`` puts
    back its ``base`` recordings, ``apply KIND VALUE`` selects ``variants["KIND VALUE"]``; any
    other change cannot be applied there (exit 1, as a real hook would fail)."""
    board = json.loads((state / "board.json").read_text())
    if board["kind"] == "qemu":  # the reference target: the changes bootlens applies to it itself
        if args == ["reset"]:
            board.update(append="", env={}, overlay=None)
        elif len(args) == 3 and args[:2] == ["apply", "cmdline"]:
            board["append"] = f"{board.get('append', '')} {args[2]}".strip()
        elif len(args) == 3 and args[:2] == ["apply", "uboot-env"] and "=" in args[2]:
            var, _, value = args[2].partition("=")
            board["env"] = {**board.get("env", {}), var: value}
        elif len(args) == 3 and args[:2] == ["apply", "overlay"]:
            board["overlay"] = args[2]
        else:
            sys.exit(f"cannot apply {' '.join(args)} on this board")
    elif args == ["reset"]:
        board["recordings"] = board["base"]
    elif len(args) == 3 and args[0] == "apply" and f"{args[1]} {args[2]}" in board.get("variants", {}):
        board["recordings"] = board["variants"][f"{args[1]} {args[2]}"]
    else:
        sys.exit(f"cannot apply {' '.join(args)} on this board")
    (state / "board.json").write_text(json.dumps(board))
    with open(state / "hook.txt", "a") as f:
        f.write(" ".join(args) + "\n")


def replay(recording: str, port: int) -> None:
    """The board as a replay of a real recording: connect to the cable, say ``running``, then
    send each chunk at its recorded time."""
    from bootlens.capture.recording import read_recording

    rec = read_recording(recording)
    sk = socket.create_connection(("127.0.0.1", port))
    sk.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.monotonic_ns()
    sys.stdout.write("running\n")
    sys.stdout.close()
    for c in rec.chunks:
        wait = (t0 + c.t_ns - time.monotonic_ns()) / 1e9
        if wait > 0:
            time.sleep(wait)
        sk.sendall(c.data)
    time.sleep(3600)  # a board stays on after it booted, until power-off


def main(argv: list[str]) -> None:
    cmd, *args = argv
    if cmd == "cable":
        cable(int(args[0]) if args[0] != "pty" else None, int(args[1]), Path(args[2]))
    elif cmd == "on":
        power_on(Path(args[0]))
    elif cmd == "off":
        power_off(Path(args[0]))
    elif cmd == "hook":
        hook(Path(args[0]), args[1:])
    elif cmd == "replay":
        replay(args[0], int(args[1]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
