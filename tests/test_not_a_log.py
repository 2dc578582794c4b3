"""Inputs that are not what the command reads (issue 29, item 8): a device or a socket given as a
log (``analyze /dev/zero`` grew to 11 GB in 8 s, ``analyze /dev/pts/N`` waited forever, silently)
is refused in one line that points to ``bootlens capture``, while a pipe and standard input still
read; ``export`` of a console log says what export reads instead of Python's "Expecting value";
a damaged run.json is said once, naming the file and the key, and a bad marker pattern in it is
not called a ``--marker`` the user never typed. Real commands in subprocesses."""

from __future__ import annotations

import json
import os
import pty
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
RUN = HERE / "data" / "advise" / "qemu-arm64-run"  # 2 boots; run.json: ready = "APP READY" (line 255 of each)
LOG = HERE / "data" / "corpus" / "qemu-arm64-uboot.console.log"  # "[    0.879351] Run /init" on line 252
CLI = [sys.executable, "-m", "bootlens.cli"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "BOOTLENS_CONFIG")}
CAPTURE_HINT = "not a log file: to read a live console, record it with `bootlens capture -d DEVICE -o boot.rec`"


def run(*args: str, cwd: Path | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=ENV, cwd=cwd,
                          **kw)  # type: ignore[call-overload, no-any-return]


# --- devices and sockets ----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["analyze"], ["analyze", "--json"], ["advise"], ["report", "-o", "-"],
                                     ["export"]], ids=" ".join)
def test_dev_zero_is_refused_at_once(command: list[str]) -> None:
    """Before, analyze read /dev/zero until memory ran out (11 GB in 8 s); the 60 s timeout
    of run() is the bound here, and the answer comes long before it."""
    r = run(*command, "/dev/zero")
    assert r.stderr == f"bootlens: error: /dev/zero: a character device, {CAPTURE_HINT} and analyse the recording\n"
    assert r.returncode == 2 and r.stdout == ""


def test_a_live_console_is_refused_not_waited_for() -> None:
    """A pseudo-terminal nobody writes to (a board's console, /dev/pts/N): before, a silent wait
    without end."""
    master, slave = pty.openpty()
    try:
        name = os.ttyname(slave)
        r = run("analyze", name)
        assert r.stderr == f"bootlens: error: {name}: a character device, {CAPTURE_HINT} and analyse the recording\n"
        r = run("compare", str(LOG), name)
        assert r.returncode == 2 and "a character device" in r.stderr
    finally:
        os.close(master)
        os.close(slave)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "console.sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        r = run("analyze", str(path))
        assert r.stderr == f"bootlens: error: {path}: a socket, {CAPTURE_HINT} and analyse the recording\n"
        assert r.returncode == 2
    finally:
        s.close()


def test_a_pipe_and_standard_input_still_read() -> None:
    """A pipe ends when its writer does: ``analyze <(zcat boot.log.gz)`` (a /dev/fd path) and
    ``... | analyze -`` read the log as before."""
    r = subprocess.run(["bash", "-c", f"{' '.join(CLI)} analyze --json <(cat {LOG})"], capture_output=True, text=True,
                       timeout=60, env=ENV)
    assert r.returncode == 0, r.stderr
    (boot,) = json.loads(r.stdout)["boots"]
    assert "Run /init as init process" in json.dumps(boot) and boot["source"].startswith("/dev/fd/")
    with open(LOG, "rb") as f:
        r = run("analyze", "--json", "-", stdin=f)
    assert r.returncode == 0 and json.loads(r.stdout)["boots"][0]["source"] == "<stdin>", r.stderr


# --- export of what is not a recording ------------------------------------------------------------


def test_export_of_a_console_log_says_what_export_reads() -> None:
    r = run("export", str(LOG))
    assert r.stderr == (f"bootlens: error: {LOG}: not a bootlens recording: its first line is no recording header: "
                        "export reads a recording written by `bootlens capture -o FILE` (a console log is text "
                        "already)\n")
    assert r.returncode == 2 and "Expecting" not in r.stderr


def test_a_damaged_recording_header_says_where_not_pythons_words(tmp_path: Path) -> None:
    rec = tmp_path / "boot.rec"
    rec.write_bytes(b'{"format":"bootlens-recording", x\n{"t":1,"b64":"YQo="}\n')
    for cmd in ("export", "analyze"):
        r = run(cmd, str(rec))
        assert r.stderr == f"bootlens: error: {rec}: bad header line: not valid JSON (at column 33)\n", r.stderr
        assert r.returncode == 2


# --- a damaged run.json ---------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    return d


@pytest.mark.parametrize("text, reason", [
    ('{"markers": ', "not valid JSON (line 1, column 13): its markers and clock are not used"),
    ("[1, 2]", "not a JSON object: its markers and clock are not used"),
    ('{"markers": ["APP READY"]}', "markers: expected an object of NAME: REGEX; not used"),
    ('{"markers": {"ready": 5}}', "markers.ready: expected a pattern (text), got int; this marker is not used"),
    ('{"markers": {"ready": "APP (READY"}}', "markers.ready: bad regular expression: missing ), unterminated "
     "subpattern at position 4; this marker is not used"),
])
@pytest.mark.parametrize("command", ["analyze", "advise"])
def test_a_damaged_run_json_is_said_once_with_file_and_key(folder: Path, text: str, reason: str,
                                                          command: str) -> None:
    """Before: silently ignored (the boots just had no ready marker), and a bad pattern was
    ``error: --marker 'ready=APP (READY': bad regular expression`` though no --marker was given."""
    (folder / "run.json").write_text(text)
    r = run(command, str(folder))
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if "run.json" in line]
    assert said == [f"bootlens: warning: {folder}: 2 of 2 boots: {folder}/run.json: {reason}"], r.stderr
    assert "--marker 'ready" not in r.stderr
    j = run("analyze", "--json", str(folder))
    boots = json.loads(j.stdout)["boots"]
    assert [b["total"]["end"] for b in boots] != ["ready marker at line 255"] * 2  # not measured to ready
    assert all(f"{folder}/run.json: {reason}" in b["warnings"] for b in boots)


def test_a_bad_marker_in_run_json_leaves_the_good_ones(folder: Path) -> None:
    (folder / "run.json").write_text('{"markers": {"ready": "APP READY", "late": "[unclosed"}}')
    j = run("analyze", "--json", str(folder))
    boots = json.loads(j.stdout)["boots"]
    assert [b["total"]["end"] for b in boots] == ["ready marker at line 255"] * 2
    assert "markers.late: bad regular expression" in j.stdout


def test_the_users_markers_win_and_run_jsons_are_not_theirs_to_hear(folder: Path) -> None:
    (folder / "run.json").write_text('{"markers": {"ready": "APP (READY"}}')
    r = run("analyze", "--marker", "ready=APP READY", str(folder))
    assert r.returncode == 0 and "run.json" not in r.stderr, r.stderr
    (folder / "run.json").unlink()  # a folder of logs has none: nothing to say
    r = run("analyze", "--summary", str(folder))
    assert r.returncode == 0 and "run.json" not in r.stderr, r.stderr
