"""grabserial's command lines run unchanged as ``bootlens capture`` command lines (README,
"grabserial users"): the four examples of grabserial's README (tbird20d/grabserial, README.md)
word for word, on a real pseudo-terminal standing in for the board's serial port; grabserial's
options in grabserial's meaning; the command to capture only after ``--``; unknown options
and missing devices as one-line errors."""

from __future__ import annotations

import os
import pty
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootlens.capture.recording import read_recording

CLI = [sys.executable, "-m", "bootlens.cli"]
# Ctrl-C at a terminal reaches a foreground command with SIGINT's default action. A shell without
# job control starts `make test &` (or nohup, cron) with SIGINT ignored, every child inherits that,
# and Python then installs no KeyboardInterrupt handler: the capture rightly keeps ignoring the
# signal, as nohup and the shell mean it to, and never ends. So the capture these tests Ctrl-C
# starts as a foreground command would: SIGINT back to its default, then exec (no preexec_fn: the
# console's thread is running when the test forks).
CTRL_C_ARMED = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                "os.execv(sys.argv[1], sys.argv[1:])"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "BOOTLENS_CONFIG")}

# grabserial's README, "Examples", as printed there (the program's name aside)
README = [
    '-d /dev/ttyUSB0 -e 30 -t -m "^Linux version.*"',
    '-d COM4 -T -b 115200 -e 3600 -Q -o "%" -a',
    '-d /dev/ttyUSB2 -C -q "nsh>" -c free',
    r'-v -d COM10 -B 9600 -T -R 1h -o "c:\log\%Y-%m-%dT%H-%M-%S.txt"',
]
DEVICE = {"/dev/ttyUSB0", "COM4", "/dev/ttyUSB2", "COM10"}

STAMP_T = re.compile(r"^\[(\d+\.\d{6}) (\d+\.\d{6})\] (.*)$")  # grabserial -t: "[%4.6f %2.6f] "
STAMP_BIG_T = re.compile(r"^\[(\d\d:\d\d:\d\d\.\d{6}) (-?\d+\.\d{6})\] (.*)$")  # -T: "[%H:%M:%S.%f %2.6f] "


class Console:
    """A board's console on a pty: a short boot log, one line every 50 ms, over and over."""

    LINES = (b"U-Boot 2023.01 (board)\n", b"Starting kernel ...\n", b"Linux version 6.1.0 (x)\n",
             b"[    0.100000] probe: done\n", b"Run /init as init process\n", b"buildroot login: \n")

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def device(self) -> str:
        return os.ttyname(self.slave)

    def _run(self) -> None:
        while not self._stop.is_set():
            for line in self.LINES:
                if self._stop.is_set():
                    return
                os.write(self.master, line)
                time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def console() -> Iterator[Console]:
    c = Console()
    yield c
    c.close()


def grab(line: str, cwd: Path, device: str | None = None, stop_after: float | None = None, files: int = 1,
         **replace: str) -> subprocess.CompletedProcess[str]:
    """``bootlens capture`` with a grabserial command line; the device replaced by ``device``,
    other words by ``replace``; SIGINT (Ctrl-C) ``stop_after`` seconds after ``files`` files
    have appeared in ``cwd``."""
    args = [device if device is not None and w in DEVICE else replace.get(w, w) for w in shlex.split(line)]
    # faulthandler: a capture that does not end is made to print where every thread is (SIGABRT)
    p = subprocess.Popen([*CTRL_C_ARMED, *CLI, "capture", *args], cwd=cwd, env={**ENV, "PYTHONFAULTHANDLER": "1"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if stop_after is not None:
            deadline = time.monotonic() + 30
            while len(list(cwd.iterdir())) < files and time.monotonic() < deadline and p.poll() is None:
                time.sleep(0.02)
            time.sleep(stop_after)
            p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGABRT)
            out, err = p.communicate(timeout=30)
            pytest.fail(f"capture did not end 60 s after Ctrl-C; where it was:\n{err[-4000:]}")
    finally:
        # never left running: a capture with -a reopens its device path, which a later test's
        # pseudo-terminal may have by then, and takes that test's bytes (the likely way a fresh
        # clone's make test lost test_history's and test_labgrid's boots after one of these hung)
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def test_readme_lines_word_for_word_reach_the_device(tmp_path: Path) -> None:
    """Unchanged, every line is understood: three stop at the port (absent here), one-line; the
    command mode (-C, -c) is named as grabserial's, not taken for a command to run."""
    if any(os.path.exists(d) for d in ("/dev/ttyUSB0", "/dev/ttyUSB2")):
        pytest.skip("a USB serial adapter is plugged in")
    errors = {}
    for line in README:
        r = grab(line, tmp_path)
        *verbose, last = r.stderr.splitlines()
        assert r.returncode == 2 and r.stdout == "" and len(verbose) == line.startswith("-v"), (line, r.stderr)
        errors[line] = last.removeprefix("bootlens: error: ")
    assert errors[README[0]].startswith("/dev/ttyUSB0: no such serial device")
    assert errors[README[1]].startswith("COM4: no such serial device (COMn is Windows' name for a port")
    assert errors[README[2]] == "capture: -C: grabserial's -C/--command-mode: bootlens capture only reads the console"
    assert errors[README[3]].startswith("COM10: no such serial device")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_readme_line_1_time_per_line_and_match(tmp_path: Path, console: Console) -> None:
    """-e 30 -t -m "^Linux version.*" (30 s made 1.5): grabserial's [elapsed delta] per line,
    from the first byte, the base reset after each Linux version line; a recording too."""
    r = grab(README[0], tmp_path, console.device, **{"30": "1.5"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    stamped = [STAMP_T.match(x) for x in lines]
    assert len(lines) >= 15 and all(stamped), lines
    got = [(float(m.group(1)), float(m.group(2)), m.group(3)) for m in stamped if m]
    assert got[0][0] < 0.01 and got[0][1] == got[0][0]  # elapsed from the first byte; delta from 0
    resets = [i for i, (_, _, text) in enumerate(got) if text.startswith("Linux version")]
    assert resets
    for i in resets:
        if i + 1 < len(got):
            elapsed, delta, _ = got[i + 1]
            assert elapsed == delta and 0.02 < elapsed < 0.5, got[i:i + 2]  # counted from the match
        if i > 0:
            assert got[i][0] > got[i - 1][0]  # the matching line itself still on the old base
    (rec,) = tmp_path.glob("capture-*.rec")  # no -o: a recording named by the time anyway
    data = read_recording(str(rec)).data.decode()
    assert [t for _, _, t in got] == data.splitlines()[:len(got)]
    assert [n.detail for n in read_recording(str(rec)).notes if n.event == "start"] == ["^Linux version.*"] * len(resets)


def test_readme_line_2_systime_quiet_strftime_name_again(tmp_path: Path, console: Console) -> None:
    """-T -b 115200 -e 3600 -Q -o "%" -a, word for word: quiet, a recording named by the date
    and time (grabserial's '%'), until Ctrl-C."""
    r = grab(README[1], tmp_path, console.device, stop_after=1.0)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""  # -Q
    (rec,) = tmp_path.iterdir()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", rec.name), rec.name
    assert read_recording(str(rec)).header.baud == 115200 and b"Linux version" in read_recording(str(rec)).data
    # -a starts over in a new recording when -e has passed (here every 0.6 s); never one over another
    (tmp_path / "again").mkdir()
    r = grab(README[1], tmp_path / "again", console.device, stop_after=0.3, files=3, **{"3600": "0.6"})
    assert r.returncode == 0, r.stderr
    recs = sorted((tmp_path / "again").iterdir(), key=lambda p: p.stat().st_mtime)
    assert len(recs) >= 3 and len(set(recs)) == len(recs), recs
    assert all(read_recording(str(p)).data for p in recs)
    ends = [n.detail for p in recs for n in read_recording(str(p)).notes if n.event == "end"]
    assert ends == ["end time"] * (len(recs) - 1) + ["interrupted"]


def test_readme_line_4_verbose_force_baud_systime_rotate(tmp_path: Path, console: Console) -> None:
    r"""-v -B 9600 -T -R 1h -o "c:\log\%Y-%m-%dT%H-%M-%S.txt", word for word: the settings on
    standard error, [HH:MM:SS.ffffff delta] per line, the file named as grabserial names it on
    Linux (backslashes are not separators there)."""
    r = grab(README[3], tmp_path, console.device, stop_after=1.0)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(f"bootlens: reading {console.device} at 9600 8N1 xonxoff=0 rtscts=0; a new recording "
                               "every 1h\n"), r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(STAMP_BIG_T.match(x) for x in lines), lines
    (rec,) = tmp_path.iterdir()
    assert re.fullmatch(r"c:\\log\\\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.txt", rec.name), rec.name
    assert read_recording(str(rec)).header.baud == 9600
    # -R with a unit rotates on the clock's multiples: a new recording each second
    (tmp_path / "rot").mkdir()
    r = grab("-d DEV -R 1s -e 2.5 -Q -o rot-%H%M%S.rec", tmp_path / "rot", console.device, DEV=console.device)
    assert r.returncode == 0, r.stderr
    recs = sorted((tmp_path / "rot").iterdir())
    assert 3 <= len(recs) <= 4, recs
    ends = [read_recording(str(p)).notes[-1].detail for p in recs]
    assert ends == ["end time"] * len(recs)


def test_command_only_after_double_dash_and_unknown_options(tmp_path: Path) -> None:
    out = str(tmp_path / "x.rec")
    for args, message in (
        (["--buad", "115200", "-o", out], "capture: no such option --buad (did you mean --baud or --baudrate?)"),
        (["-o", out, "echo", "hi"], "capture: unexpected argument 'echo': the command to capture goes after --, "
                                    "e.g. bootlens capture -o boot.rec -- echo ..."),
        (["-o", out, "qemu-system-aarch64", "-M", "virt"], "capture: unexpected argument 'qemu-system-aarch64': "
         "the command to capture goes after --, e.g. bootlens capture -o boot.rec -- qemu-system-aarch64 ..."),
        (["-o", out, "-q", "nsh>"], "capture: unexpected argument 'nsh>': -q is --quiet here (grabserial's -Q); "
                                    "grabserial's -q PATTERN is --quitpat PATTERN"),
        (["-o", out, "-A"], "capture: -A: grabserial's -A/--append: a recording is not appended to; give each "
                            "capture its own -o (strftime codes such as %H%M%S in the name do that)"),
        (["-o", out, "-R", "soon", "-d", "/dev/null"], "-R/--rotate 'soon': expected seconds, or a number with s, "
                                                       "m or h (e.g. 30m)"),
        (["-o", out, "-a", "--", "true"], "-a/--again and -R/--rotate need a serial port (-d/--port)"),
    ):
        r = subprocess.run([*CLI, "capture", *args], capture_output=True, text=True, timeout=60, env=ENV)
        assert r.returncode == 2 and r.stderr == f"bootlens: error: {message}\n", r.stderr
    assert not (tmp_path / "x.rec").exists()
    r = subprocess.run([*CLI, "capture", "-q", "-o", out, "--quitpat", "hi", "--", "echo", "hi"], capture_output=True,
                       text=True, timeout=60, env=ENV)
    assert r.returncode == 0 and read_recording(out).data == b"hi\n"


def test_the_issues_line_says_the_device_is_missing(tmp_path: Path) -> None:
    if os.path.exists("/dev/ttyUSB0"):
        pytest.skip("a USB serial adapter is plugged in")
    r = subprocess.run([*CLI, "capture", "-o", "x.rec", "-d", "/dev/ttyUSB0", "-b", "115200"], capture_output=True,
                       text=True, timeout=60, env=ENV, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("bootlens: error: /dev/ttyUSB0: no such serial device; "), r.stderr
