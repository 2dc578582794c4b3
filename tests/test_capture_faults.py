"""Faults in capture, for real (issue 10): a full disk (a 64 KiB tmpfs), SIGKILL with a command
that spawns a grandchild (and with QEMU), and readers that close their pipe early."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import needs_qemu

from bootlens.capture.recording import Header, RecordingWriteError, RecordingWriter, read_recording
from bootlens.core.errors import InputError

CLI = [sys.executable, "-m", "bootlens.cli"]
UBOOT_ARM64 = "/usr/lib/u-boot/qemu_arm64/u-boot.bin"


def alive(pid: int) -> bool:
    """Running (a zombie has ended: only its exit status is left to collect)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def wait_gone(pids: list[int], limit: float = 5.0) -> list[int]:
    """The pids still running after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def pids_with(marker: str) -> list[int]:
    """Running processes whose command line holds ``marker``."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker.encode() in (d / "cmdline").read_bytes() and alive(int(d.name)):
                found.append(int(d.name))
        except OSError:
            pass
    return found


def recorded(path: Path) -> bytes:
    """What a recording being written holds so far: nothing until its header line is there (the
    writer creates the file, then writes the header: a loaded host can look in between)."""
    try:
        return read_recording(str(path)).data
    except (OSError, InputError):
        return b""


def wait_for(cond: object, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


# --- disk full -------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a disk that fills up after a few seconds of console output."""
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"a 64 KiB tmpfs cannot be mounted here (needs root or CAP_SYS_ADMIN): "
                    f"{r.stderr.decode().strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _printer(n: int, pidfile: Path | None = None) -> list[str]:
    """A command that prints n numbered 60-byte lines, then sleeps (so it must be ended)."""
    pid = f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n" if pidfile else ""
    return [sys.executable, "-c", f"import os, sys, time\n{pid}"
            f"for i in range({n}):\n    print(f'line {{i:06d}} ' + 'x' * 48, flush=True)\ntime.sleep(600)\n"]


def _expected(n: int) -> bytes:
    return b"".join(f"line {i:06d} {'x' * 48}\n".encode() for i in range(n))


def test_disk_full_is_a_one_line_error_keeping_every_record_and_the_end_note(small_disk: Path) -> None:
    out = small_disk / "full.rec"
    pidfile = small_disk.parent / "printer.pid"
    r = subprocess.run([*CLI, "capture", "-q", "-o", str(out), "--", *_printer(5000, pidfile)],
                       capture_output=True, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    m = re.fullmatch(rf"bootlens: error: {re.escape(str(out))}: cannot write the recording: No space left on device; "
                     r"it keeps the first ([\d,]+) bytes read\n", err)
    assert m, err
    rec = read_recording(str(out))
    assert rec.bad_records == 0  # the record torn by the full disk was cut off
    assert len(rec.data) == int(m[1].replace(",", ""))
    # everything read, in order, up to what 64 KiB hold as base64 (4/3) after the header and the end note
    assert 40_000 < len(rec.data) and rec.data == _expected(5000)[:len(rec.data)]
    assert [n.event for n in rec.notes] == ["end"]
    assert rec.notes[0].detail == "write failed: No space left on device"
    assert wait_gone([int(pidfile.read_text())]) == []  # and the command was ended


def test_disk_full_before_the_header_is_a_one_line_error_and_ends_the_command(small_disk: Path) -> None:
    filler = small_disk / "filler"
    with filler.open("wb") as f:
        try:
            f.write(b"\0" * (1 << 20))
        except OSError:
            pass
    marker = f"bootlens-test-{uuid.uuid4().hex[:12]}"
    r = subprocess.run([*CLI, "capture", "-q", "-o", str(small_disk / "x.rec"), "--", *_printer(10), marker],
                       capture_output=True, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count("\n") == 1, err
    assert err.startswith("bootlens: error: ") and "No space left on device" in err
    assert wait_gone(pids_with(marker)) == []


def test_writer_on_a_full_disk_keeps_whole_records_and_releases_its_reserve(small_disk: Path) -> None:
    path = small_disk / "w.rec"
    w = RecordingWriter(str(path), Header("x", None, "start", "", 0))
    n = 0
    with pytest.raises(RecordingWriteError) as e:
        while True:
            w.chunk(n, b"%06d\n" % n + b"y" * 1000)
            n += 1
    assert "No space left on device" in str(e.value)
    assert w.end(n, "write failed") is True  # the reserve held room for it
    w.close()
    rec = read_recording(str(path))
    assert rec.bad_records == 0 and len(rec.chunks) == w.chunks and rec.notes[-1].event == "end"
    # every read whole, then as much of the last as fitted (in pieces, each with the read's time)
    sent = b"".join(b"%06d\n" % i + b"y" * 1000 for i in range(n + 1))
    assert len(rec.data) == w.bytes > n * 1007 and rec.data == sent[:len(rec.data)]
    assert {c.t_ns for c in rec.chunks[n:]} <= {n}
    assert not _reserved_beyond_end(path)  # released by close()


def _reserved_beyond_end(path: Path) -> bool:
    st = path.stat()
    return st.st_blocks * 512 > -(-st.st_size // 4096) * 4096


def test_writer_reserves_room_for_the_end_note_and_releases_it(tmp_path: Path) -> None:
    path = tmp_path / "r.rec"
    w = RecordingWriter(str(path), Header("x", None, "start", "", 0))
    w.chunk(1, b"a\n")
    assert _reserved_beyond_end(path)  # held while capturing (fallocate, FALLOC_FL_KEEP_SIZE)
    assert path.stat().st_size == w.size  # and invisible in the file
    w.end(2, "quit pattern")
    w.close()
    assert not _reserved_beyond_end(path)
    assert read_recording(str(path)).data == b"a\n"


# --- the captured command ends with bootlens -------------------------------------------------

SPAWNER = """
import os, subprocess, sys, time
out = sys.argv[1]
def grandchild(escape):
    code = ("import os, sys, time\\n" + ("os.setsid()\\n" if escape else "")
            + "open(sys.argv[1], 'w').write(str(os.getpid()))\\ntime.sleep(600)\\n")
    subprocess.Popen([sys.executable, "-c", code, f"{out}.{'escaped' if escape else 'grandchild'}"])
grandchild(False)
grandchild(True)  # left the process group: only the subreaper still knows it
open(out + ".child", "w").write(str(os.getpid()))
print("spawned", flush=True)
time.sleep(600)
"""


def _spawn_capture(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], Path, list[int]]:
    out = tmp_path / "cap.rec"
    pids = tmp_path / "pid"
    proc = subprocess.Popen([*CLI, "capture", "-q", "-o", str(out), *extra, "--", sys.executable, "-c", SPAWNER,
                             str(pids)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    names = [Path(f"{pids}.{k}") for k in ("child", "grandchild", "escaped")]
    wait_for(lambda: all(p.exists() and p.read_text() for p in names))
    return proc, out, [int(p.read_text()) for p in names]


def test_sigkill_of_bootlens_ends_the_command_and_its_grandchildren(tmp_path: Path) -> None:
    proc, out, pids = _spawn_capture(tmp_path)
    assert all(alive(p) for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert wait_gone(pids) == [], "left running after bootlens was killed"


def test_normal_end_ends_the_command_and_its_grandchildren(tmp_path: Path) -> None:
    proc, out, pids = _spawn_capture(tmp_path, "--end", "2")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and b"(end time)" in err, err
    assert wait_gone(pids, 1.0) == []


def test_the_commands_status_and_start_failures_come_through_the_keeper(tmp_path: Path) -> None:
    out = str(tmp_path / "s.rec")
    r = subprocess.run([*CLI, "capture", "-q", "-o", out, "--", "sh", "-c", "echo hi; exit 3"], capture_output=True)
    assert r.returncode == 0 and b"(source ended: the command exited with status 3)" in r.stderr, r.stderr
    assert read_recording(out).data == b"hi\n"
    # --force: each capture below fails at once, and the recording of the first stays (issue 29)
    r = subprocess.run([*CLI, "capture", "-q", "--force", "-o", out, "--", "sh", "-c", "kill -9 $$"],
                       capture_output=True)
    assert b"the command exited with status -9" in r.stderr, r.stderr
    exe = tmp_path / "not-executable"
    exe.write_text("#!/bin/sh\n")
    for argv, reason in (([str(exe)], "Permission denied"), (["/no/such/thing"], "No such file or directory")):
        r = subprocess.run([*CLI, "capture", "-q", "--force", "-o", out, "--", *argv], capture_output=True)
        assert r.returncode == 2 and r.stderr.decode() == f"bootlens: error: {argv[0]}: cannot run: {reason}\n"
    assert read_recording(out).data == b"hi\n"


@pytest.mark.slow
@needs_qemu
def test_sigkill_of_bootlens_ends_qemu(tmp_path: Path) -> None:
    """QEMU as the captured command (U-Boot, no kernel: it sits at U-Boot's autoboot and then
    its prompt): killing bootlens with SIGKILL ends QEMU."""
    name = f"bootlens-test-{uuid.uuid4().hex[:12]}"
    out = tmp_path / "qemu.rec"
    proc = subprocess.Popen([*CLI, "capture", "-q", "-o", str(out), "--", "qemu-system-aarch64", "-M", "virt",
                             "-cpu", "cortex-a57", "-m", "256", "-nographic", "-bios", UBOOT_ARM64, "-name", name],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    try:
        wait_for(lambda: b"U-Boot" in recorded(out), 60)
        pids = pids_with(name)
        assert pids, "QEMU not found"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_gone(pids) == [], "QEMU left running after bootlens was killed"
    finally:
        for p in pids_with(name):
            os.kill(p, signal.SIGKILL)


# --- a reader that goes away -----------------------------------------------------------------

def run_into_closed_pipe(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run bootlens with standard output a pipe whose reader has already gone."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([*CLI, *args], stdout=w, stderr=subprocess.PIPE, input=stdin, timeout=120)
    finally:
        os.close(w)


def _big_recording(path: Path, lines: int = 200_000) -> Path:
    w = RecordingWriter(str(path), Header("x", 115200, "start", "", 0))
    for i in range(0, lines, 1000):
        w.chunk(i * 1000, b"".join(b"[%5d.%06d] line %d\n" % (k // 1000, k % 1000, k) for k in range(i, i + 1000)))
    w.end(lines * 1000, "quit pattern")
    w.close()
    return path


def test_capture_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    out = tmp_path / "c.rec"
    pidfile = tmp_path / "printer.pid"
    r = run_into_closed_pipe("capture", "-o", str(out), "--", *_printer(100, pidfile))
    err = r.stderr.decode()
    assert r.returncode == 0 and "Traceback" not in err and "Broken pipe" not in err, err
    assert err.count("\n") == 1 and "(output closed)" in err
    rec = read_recording(str(out))
    assert rec.notes[-1].event == "end" and rec.notes[-1].detail == "output closed"
    assert rec.data and _expected(100).startswith(rec.data)
    assert wait_gone([int(pidfile.read_text())]) == []


@pytest.mark.parametrize("args", [["export", "{rec}"], ["export", "{rec}", "--format", "grabserial"],
                                  ["analyze", "{log}"], ["analyze", "{log}", "--json"], ["advise", "{log}"],
                                  ["report", "{log}", "-o", "-"]])
def test_commands_into_a_closed_pipe_end_quietly_with_exit_0(tmp_path: Path, args: list[str]) -> None:
    rec = _big_recording(tmp_path / "big.rec", 20_000)
    log = tmp_path / "big.log"
    log.write_bytes(subprocess.run([*CLI, "export", str(rec), "--format", "grabserial"], capture_output=True).stdout)
    r = run_into_closed_pipe(*[a.format(rec=rec, log=log) for a in args])
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err and "Exception ignored" not in err, err


def test_head_1_of_big_outputs(tmp_path: Path) -> None:
    """The shell's way: the reader takes one line and leaves while bootlens is still writing."""
    rec = _big_recording(tmp_path / "big.rec")
    log = tmp_path / "big.log"
    bl = " ".join([sys.executable, "-m", "bootlens.cli"])
    for cmd in (f"{bl} export {rec}", f"{bl} export {rec} --format grabserial > {log}; {bl} analyze {log}",
                f"{bl} capture -o {tmp_path}/c.rec -- cat {log}"):
        r = subprocess.run(["bash", "-c", f"set -o pipefail; {{ {cmd}; }} | head -1"], capture_output=True,
                           timeout=120)
        assert r.returncode == 0 and r.stdout.count(b"\n") == 1, (cmd, r.stderr)
        assert b"Traceback" not in r.stderr and b"Broken pipe" not in r.stderr, (cmd, r.stderr)
    assert json.loads(Path(f"{tmp_path}/c.rec").read_text().splitlines()[-1])["detail"] == "output closed"
