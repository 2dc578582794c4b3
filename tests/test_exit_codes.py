"""Exit codes a CI script can trust (README, "Exit codes"): a boot that never reaches its ready
marker makes ``run``, ``experiment`` and ``optimize`` exit 3, names the boot and keeps its
recording, on a real pty board and on the real QEMU target; usage errors are one line;
``--help`` and errors into a closed pipe end quietly."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import needs_qemu
from test_experiment import FakeBoard

from bootlens.capture.recording import read_recording

CLI = [sys.executable, "-m", "bootlens.cli"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "BOOTLENS_CONFIG")}


def run(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=ENV)


def options_of(command: str) -> set[str]:
    """Every long option ``bootlens COMMAND`` takes."""
    from bootlens.cli import main

    cmd = main.commands[command]
    return {o for p in cmd.params for o in p.opts if o.startswith("--")} | {"--help"}


def assert_hints_exist(command: str, text: str) -> None:
    """Every option a message names is one the command has."""
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", text))
    assert named <= options_of(command), (named - options_of(command), text)


class Board:
    """A board on a pty: the power-cycle command drops a trigger file; the board then prints a
    short boot ending in a login prompt, or nothing at all when ``silent``."""

    def __init__(self, tmp: Path, silent: bool = False) -> None:
        self.master, self.slave = pty.openpty()
        self.trigger = tmp / "power-on"
        self.silent = silent
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def port(self) -> str:
        return os.ttyname(self.slave)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.trigger.exists():
                self.trigger.unlink()
                for line in (b"U-Boot 2023.01 (board)\n", b"Starting kernel ...\n",
                             b"[    0.000000] Linux version 6.1.0 (x)\n", b"[    0.300000] Run /init as init process\n",
                             b"app: ready to serve\n", b"buildroot login: \n"):
                    if not self.silent:
                        os.write(self.master, line)
                    time.sleep(0.03)
            time.sleep(0.005)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    b = Board(tmp_path)
    yield b
    b.close()


def test_run_board_that_never_prints_ready_exits_3_names_the_boot_and_keeps_it(tmp_path: Path, board: Board) -> None:
    """The issue's own command line: a login prompt is not the ready line asked for."""
    r = run("run", "board", "--port", board.port, "--power-cycle", f"touch {board.trigger}", "--ready",
            "NEVER-PRINTED", "--timeout", "1", "--repeat", "2", "-o", str(tmp_path / "run"))
    assert r.returncode == 3, r.stderr
    failing = [ln for ln in r.stderr.splitlines() if "never reached" in ln]
    assert failing == [f"bootlens: {tmp_path}/run/boot-{i}.rec: never reached the ready marker 'NEVER-PRINTED': "
                       "no ready line within the timeout (1.0 s)" for i in (1, 2)]
    assert "Statistics over 2 boots" in r.stdout and "recordings in" in r.stdout
    for i in (1, 2):  # the recordings are kept, whole
        assert b"buildroot login:" in read_recording(str(tmp_path / "run" / f"boot-{i}.rec")).data
    assert_hints_exist("run", r.stdout + r.stderr)
    # the same with --json: the document is still printed
    j = run("run", "board", "--port", board.port, "--power-cycle", f"touch {board.trigger}", "--ready",
            "NEVER-PRINTED", "--timeout", "1", "--json", "-o", str(tmp_path / "json"))
    assert j.returncode == 3 and "boot-1.rec: never reached" in j.stderr
    doc = json.loads(j.stdout)
    assert doc["boots"][0]["total"]["duration_s"] is None
    assert "the ready marker was not seen" in doc["boots"][0]["warnings"][-1]
    # and one that reaches its ready line exits 0
    good = run("run", "board", "--port", board.port, "--power-cycle", f"touch {board.trigger}", "--ready",
               "ready to serve", "--timeout", "5", "-o", str(tmp_path / "good"))
    assert good.returncode == 0 and "never reached" not in good.stderr, good.stderr


def test_a_silent_board_exits_3_not_2(tmp_path: Path) -> None:
    """Nothing on the console (wrong port, wrong baud, dead board) is a boot that never reached
    ready, not an unreadable input."""
    b = Board(tmp_path, silent=True)
    try:
        r = run("run", "board", "--port", b.port, "--power-cycle", f"touch {b.trigger}", "--timeout", "1",
                "-o", str(tmp_path / "run"))
    finally:
        b.close()
    assert r.returncode == 3, r.stderr
    assert r.stderr.splitlines()[-1] == (f"bootlens: {tmp_path}/run/boot-1.rec: never reached the ready marker "
                                         "'APP READY': nothing received on the console; no ready line within the "
                                         "timeout (1.0 s)")
    assert (tmp_path / "run" / "boot-1.rec").exists()


def test_experiment_exits_3_when_a_change_breaks_the_boot(tmp_path: Path) -> None:
    with FakeBoard(tmp_path) as fb:
        r = run("experiment", "board", "--port", fb.port, "--power-cycle", f"touch {fb.trigger}", "--ready",
                "ready to serve", "--hook", str(fb.hook), "--try", "broken=cmdline:breakme", "--repeat", "1",
                "--timeout", "1", "-o", str(tmp_path / "e"))
    assert r.returncode == 3, r.stderr
    failing = [ln for ln in r.stderr.splitlines() if "never reached" in ln]
    assert failing == [f"bootlens: {tmp_path}/e/broken/boot-1.rec: never reached the ready marker 'ready to "
                       "serve': no ready line within the timeout (1.0 s)"]
    assert "broken" in r.stdout  # the table is still printed
    assert_hints_exist("experiment", r.stdout + r.stderr)


def test_optimize_exits_3_when_the_baseline_never_reaches_ready(tmp_path: Path) -> None:
    with FakeBoard(tmp_path) as fb:
        r = run("optimize", "board", "--port", fb.port, "--power-cycle", f"touch {fb.trigger}", "--ready",
                "NEVER-PRINTED", "--hook", str(fb.hook), "--repeat", "1", "--timeout", "1", "--json",
                "-o", str(tmp_path / "o"))
    assert r.returncode == 3, r.stderr
    failing = [ln.split(": never reached")[0] for ln in r.stderr.splitlines() if "never reached" in ln]
    assert failing == [f"bootlens: {tmp_path}/o/advise/boot-1.rec", f"bootlens: {tmp_path}/o/baseline/boot-1.rec"]
    assert json.loads(r.stdout)["kind"] == "optimize"


def test_board_options_on_a_reference_target_and_bad_ready_are_one_line_errors(tmp_path: Path) -> None:
    for args, message in ((["run", "qemu-arm64", "--port", "/dev/ttyS0"], "--port is for TARGET board"),
                          (["experiment", "qemu-arm64", "--hook", "x", "--try", "a=cmdline:quiet"],
                           "--hook is for TARGET board"),
                          (["run", "board", "--ready", "(", "--port", "p", "--power-cycle", "true"],
                           "--ready '(': bad regular expression")):
        r = run(*args, "-o", str(tmp_path / "x"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr


@pytest.mark.slow
@needs_qemu
def test_qemu_ready_is_the_end_and_the_marker(tmp_path: Path) -> None:
    """--ready on a reference target: a line it never prints is a failing boot, after --timeout
    seconds; a line it does print ends the capture there and is the ready marker."""
    never = run("run", "qemu-arm64", "--ready", "NEVER-PRINTED", "--timeout", "3", "-o", str(tmp_path / "never"),
                timeout=300)
    assert never.returncode == 3, never.stderr[-2000:]
    assert never.stderr.splitlines()[-1] == (f"bootlens: {tmp_path}/never/boot-1.rec: never reached the ready marker "
                                             "'NEVER-PRINTED': no ready line within the timeout (3.0 s)")
    assert b"U-Boot" in read_recording(str(tmp_path / "never" / "boot-1.rec")).data  # kept
    mid = run("run", "qemu-arm64", "--ready", r"checks done \(", "--json", "-o", str(tmp_path / "mid"), timeout=300)
    assert mid.returncode == 0, mid.stderr[-2000:]
    rec = read_recording(str(tmp_path / "mid" / "boot-1.rec"))
    assert [n.detail for n in rec.notes if n.event == "end"] == ["quit pattern"]  # stopped at the ready line
    boot = json.loads(mid.stdout)["boots"][0]
    line = int(boot["total"]["end"].removeprefix("ready marker at line "))
    assert rec.data.decode().splitlines()[line - 1].startswith("checks done (")
    assert boot["total"]["duration_s"] > 2


# --- usage errors and pipes ----------------------------------------------------------------


def test_usage_errors_are_one_line_with_the_closest_match() -> None:
    for args, line in ((["capture", "--buad", "9600"], "capture: no such option --buad (did you mean --baud or "
                        "--baudrate?)"),
                       (["run", "qemu-arm64", "--marker", "ready=x"], "run: no such option --marker (did you mean --ready?)"),
                       (["analyse", "x"], "no such command 'analyse' (did you mean analyze?)"),
                       (["run"], "run: missing argument 'TARGET' (see bootlens run -h)")):
        r = run(*args)
        assert r.returncode == 2 and r.stdout == "" and r.stderr == f"bootlens: error: {line}\n", r.stderr


def _closed_pipe_run(args: list[str], which: str) -> subprocess.CompletedProcess[bytes]:
    """Run with standard output or error a pipe whose reader has already gone."""
    rd, wr = os.pipe()
    os.close(rd)
    try:
        kw = {"stdout": wr, "stderr": subprocess.PIPE} if which == "stdout" else {"stdout": subprocess.PIPE,
                                                                                  "stderr": wr}
        return subprocess.run([*CLI, *args], timeout=60, env=ENV, **kw)  # type: ignore[call-overload, no-any-return]
    finally:
        os.close(wr)


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["capture", "-h"], ["target", "--help"]])
def test_help_into_a_closed_pipe_ends_quietly(args: list[str]) -> None:
    r = _closed_pipe_run(args, "stdout")
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()


def test_help_piped_to_head_ends_quietly() -> None:
    """As a person types it: the shell's pipeline, pipefail on, nothing on standard error."""
    cmd = f"set -o pipefail; {sys.executable} -m bootlens.cli --help | head -3"
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60, env=ENV)
    assert r.returncode == 0 and r.stderr == "" and len(r.stdout.splitlines()) == 3, r.stderr


@pytest.mark.parametrize("args", [["analyze", "/no/such/log"], ["capture", "--buad", "1"]])
def test_errors_into_a_closed_pipe_keep_their_exit_code(args: list[str]) -> None:
    r = _closed_pipe_run(args, "stderr")
    assert r.returncode == 2 and r.stdout == b""
