"""bootlens.toml: found upward from the working directory up to a repository's top, read with
tomllib, its keys checked against the commands' options; the command line wins; a bad file
is a one-line error naming the file and the key. Real files in temporary folders, the real
command line in subprocesses, a real pty board for ``run board``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_exit_codes import Board

from bootlens.core.config import find_config, read_config

CLI = [sys.executable, "-m", "bootlens.cli"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "BOOTLENS_CONFIG")}
GRAB = Path(__file__).parent / "data" / "corpus" / "qemu-arm64-uboot-initcall.grabserial-t.log"


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env or ENV)


def test_found_upward_and_not_past_a_repository(tmp_path: Path) -> None:
    (tmp_path / "bootlens.toml").write_text("baud = 9600\n")
    deep = tmp_path / "proj" / "sub" / "dir"
    deep.mkdir(parents=True)
    assert find_config(deep) == tmp_path / "bootlens.toml"
    (tmp_path / "proj" / ".git").mkdir()  # the top of a checkout: the search stops there
    assert find_config(deep) is None
    (tmp_path / "proj" / "bootlens.toml").write_text("baud = 19200\n")
    assert find_config(deep) == tmp_path / "proj" / "bootlens.toml"
    cfg = read_config(tmp_path / "proj" / "bootlens.toml")
    assert cfg.shared == {"baud": 19200} and cfg.commands == {}


def test_a_board_written_once(tmp_path: Path) -> None:
    """Port, power-cycle command, ready pattern and timeout from the file: `run board` alone
    boots it; the command line wins over the file; the file used is said on standard error."""
    b = Board(tmp_path)
    try:
        cfg = tmp_path / "bootlens.toml"
        cfg.write_text(f'# the lab board\nport = "{b.port}"\npower_cycle = "touch {b.trigger}"\nready = "ready to '
                       f'serve"\n\n[run]\ntimeout = 5\n')
        r = run(tmp_path, "run", "board", "-o", "r1")
        assert r.returncode == 0, r.stderr
        assert f"bootlens: --port, --power-cycle, --ready, --timeout from {cfg}\n" in r.stderr
        assert '"ready": "ready to serve"' in (tmp_path / "r1" / "run.json").read_text()
        r = run(tmp_path, "run", "board", "-o", "r2", "--ready", "NEVER-PRINTED", "--timeout", "1")
        assert r.returncode == 3 and "never reached the ready marker 'NEVER-PRINTED'" in r.stderr
        assert f"bootlens: --port, --power-cycle from {cfg}\n" in r.stderr
        assert run(tmp_path, "--no-config", "run", "board", "-o", "r3").returncode == 2  # no port then
    finally:
        b.close()


def test_the_shared_ready_pattern_is_the_ready_marker_of_analyze(tmp_path: Path) -> None:
    (tmp_path / "bootlens.toml").write_text('ready = "APP READY"\n[analyze]\ntop = 3\n')
    r = run(tmp_path, "analyze", str(GRAB), "--json")
    assert r.returncode == 0, r.stderr
    assert '"end": "ready marker at line 2110"' in r.stdout
    assert f"bootlens: --top, --marker from {tmp_path / 'bootlens.toml'}\n" in r.stderr
    h = run(tmp_path, "run", "--help")
    assert f"Defaults shown include those of {tmp_path / 'bootlens.toml'}." in h.stdout


def test_explicit_file_environment_and_capture_table(tmp_path: Path) -> None:
    other = tmp_path / "lab.toml"
    other.write_text('port = "/dev/ttyNOPE"\n[capture]\nquit = "two"\nquiet = true\n')  # a command beats the port
    env = {**ENV, "BOOTLENS_CONFIG": str(other)}
    for extra, environ in ((["--config", str(other)], None), ([], env)):
        r = run(tmp_path, *extra, "capture", "--force", "-o", "c.rec", "--", "printf", "one\\ntwo\\nthree\\n",
                env=environ)
        assert r.returncode == 0 and r.stdout == "", r.stderr  # quiet, from the file
        assert f"bootlens: --quit, --quiet from {other}" in r.stderr
        assert "(quit pattern)" in r.stderr


@pytest.mark.parametrize("text, message", [
    ('port = "/dev/ttyUSB0"\nbaud = \n', "not valid TOML: Invalid value (at line 2, column 8)"),
    ("baud = 'fast'\n", "baud: expected a whole number from 50 to 20000000, got text ('fast')"),
    ("[run]\nrepeat = 0\n", "[run] repeat: expected a whole number from 1 to 1000, got 0"),
    ("[capture]\nquiet = 'yes'\n", "[capture] quiet: expected true or false, got text ('yes')"),
    ("[run]\nready = ['a', 'b']\n", "[run] ready: expected text, got a list of 2"),
    ("power-cycle = 'a'\npower_cycle = 'b'\n", "power_cycle: given twice (power-cycle and power_cycle are the same "
     "option)"),
])
def test_a_bad_file_is_a_one_line_error_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bootlens.toml").write_text(text)
    r = run(tmp_path, "analyze", str(GRAB))
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr == f"bootlens: error: {tmp_path / 'bootlens.toml'}: {message}\n"


# issue 29, item 5: every kind of wrong TOML value for keys of several tables and types, each a
# one-line error in every command (a TOML date or time was a TypeError traceback in all of them,
# even in a command that has not the key: the whole file is checked)
@pytest.mark.parametrize("text, message", [
    ("top = 1979-05-27\n", "top: expected a whole number from 1 to 10000, got a date (1979-05-27)"),
    ("[run]\nrepeat = 1979-05-27\n", "[run] repeat: expected a whole number from 1 to 1000, got a date (1979-05-27)"),
    ("[experiment]\nrepeat = 07:32:00\n", "[experiment] repeat: expected a whole number from 1 to 1000, or 'auto', "
     "got a time (07:32:00)"),
    ("[advise]\nbaud = 07:32:00\n", "[advise] baud: expected a whole number from 50 to 20000000, got a time (07:32:00)"),
    ("timeout = 1979-05-27T07:32:00Z\n", "timeout: expected a number >= 1, got a date and time "
     "(1979-05-27T07:32:00+00:00)"),
    ("[analyze]\nalign-bound = 1979-05-27T07:32:00\n", "[analyze] align-bound: expected a number >= 0, got a date "
     "and time (1979-05-27T07:32:00)"),
    ("[analyze]\ntop = 'ten'\n", "[analyze] top: expected a whole number from 1 to 10000, got text ('ten')"),
    ("align_bound = -0.5\n", "align-bound: expected a number >= 0, got -0.5"),
    ("[run]\ntimeout = nan\n", "[run] timeout: expected a number >= 1, got nan"),
    ("[report]\ntop = [3, 4]\n", "[report] top: expected a whole number from 1 to 10000, got a list of 2"),
    ("top = {a = 1}\n", "top: expected a whole number from 1 to 10000, got a table"),
    ("[compare.top]\na = 1\n", "[compare] top: expected a whole number from 1 to 10000, got a table"),
    ("[capture]\nbaud = true\n", "[capture] baud: expected a whole number from 50 to 20000000, got true"),
    ("[capture]\nbytesize = 9\n", "[capture] bytesize: expected one of 5, 6, 7, 8, got 9"),
    ("[run]\njson = 1\n", "[run] json: expected true or false, got 1"),
    ("marker = ['ready=x', 1979-05-27]\n", "marker: expected text, or a list of them, got a date (1979-05-27)"),
    ("port = 1979-05-27\n", "port: expected text, got a date (1979-05-27)"),
])
@pytest.mark.parametrize("command", ["analyze", "capture"])
def test_a_wrong_kind_of_value_is_one_line_in_every_command(tmp_path: Path, text: str, message: str,
                                                            command: str) -> None:
    (tmp_path / "bootlens.toml").write_text(text)
    r = run(tmp_path, command, str(GRAB))
    assert r.stderr == f"bootlens: error: {tmp_path / 'bootlens.toml'}: {message}\n"
    assert r.returncode == 2 and r.stdout == ""


def test_unknown_keys_are_one_warning_not_an_error(tmp_path: Path) -> None:
    """Keys no command has (a typo, or a file written for a newer bootlens) are listed once, in
    one line, each with its nearest key; the known ones still apply and the command runs."""
    (tmp_path / "bootlens.toml").write_text("prot = 'x'\nframble = 1\n[analyze]\ntop = 3\ntpo = 4\n"
                                            "[rnu]\nrepeat = 2\n[target.setup]\nforse = 1\n")
    r = run(tmp_path, "analyze", str(GRAB), "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        f"bootlens: warning: {tmp_path / 'bootlens.toml'}: unknown keys ignored: [rnu] (did you mean [run]?); "
        "prot (did you mean port?); framble; [analyze] tpo (did you mean top?); [target.setup] forse (did you mean "
        "force?)",
        f"bootlens: --top from {tmp_path / 'bootlens.toml'}"]
    assert r.stdout.count('"name": "') > 3  # it ran


def test_a_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    r = run(tmp_path, "--config", "nope.toml", "analyze", str(GRAB))
    assert r.returncode == 2 and r.stderr == "bootlens: error: nope.toml: cannot read: No such file or directory\n"
