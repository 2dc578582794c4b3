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
    ("[run]\ntimeoot = 20\n", "[run] timeoot: bootlens run has no --timeoot (did you mean timeout?)"),
    ("prot = 'x'\n", "prot: no command has the option --prot (did you mean port?)"),
    ("[rnu]\nrepeat = 2\n", "[rnu]: no such command (did you mean [run]?)"),
    ("baud = 'fast'\n", "baud: 'fast' is not a valid integer range."),
    ("[run]\nrepeat = 0\n", "[run] repeat: 0 is not in the range 1<=x<=1000."),
    ("[capture]\nquiet = 'yes'\n", "[capture] quiet: expected true or false"),
    ("[run]\nready = ['a', 'b']\n", "[run] ready: one value expected, not a list"),
    ("port = 'a'\n[target.setup]\nforce = true\nforse = 1\n", "[target.setup] forse: bootlens target setup has no "
     "--forse (did you mean force?)"),
    ("power-cycle = 'a'\npower_cycle = 'b'\n", "power_cycle: given twice (power-cycle and power_cycle are the same "
     "option)"),
])
def test_a_bad_file_is_a_one_line_error_naming_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bootlens.toml").write_text(text)
    r = run(tmp_path, "analyze", str(GRAB))
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr == f"bootlens: error: {tmp_path / 'bootlens.toml'}: {message}\n"


def test_a_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    r = run(tmp_path, "--config", "nope.toml", "analyze", str(GRAB))
    assert r.returncode == 2 and r.stderr == "bootlens: error: nope.toml: cannot read: No such file or directory\n"
