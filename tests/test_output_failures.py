"""Standard output or an output file that cannot be written (issue 29, item 4): ``> /dev/full``,
a full disk, a hung-up terminal end every command in one line on standard error and exit 2,
never a traceback nor Python's "Exception ignored" at exit; a reader that went away (EPIPE)
stays a quiet exit 0. Each command runs in a subprocess with the real /dev/full."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent
RUN = ROOT / "data" / "advise" / "qemu-arm64-run"  # a run folder of 2 boots: no warning of any kind
REC = RUN / "boot-1.rec"
CLI = [sys.executable, "-m", "bootlens.cli"]
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "BOOTLENS_CONFIG")}
NO_SPACE = "bootlens: error: cannot write to standard output: No space left on device"

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a history of two stored runs and a budget file."""
    d = tmp_path_factory.mktemp("out")
    r = subprocess.run([*CLI, "store", "--db", str(d / "h.db"), str(REC), str(RUN / "boot-2.rec")],
                       capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    (d / "budget.toml").write_text('[total]\nmax = "100 s"\n')
    return d


def _run(args: list[str], cwd: Path, stdout: object, unbuffered: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "PYTHONUNBUFFERED": "1"} if unbuffered else {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([*CLI, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                          timeout=180)


# every command that writes to standard output, each of its ways of writing there
TO_STDOUT = [
    ["analyze", str(RUN)],
    ["analyze", "--json", str(RUN)],
    ["analyze", "--summary", str(RUN)],
    ["analyze", "--critical-chain", str(RUN)],
    ["advise", str(RUN)],
    ["advise", "--json", str(RUN)],
    ["report", "-o", "-", str(RUN)],
    ["report", "--format", "svg", "-o", "-", str(RUN)],
    ["report", "--format", "perfetto", "-o", "-", str(RUN)],
    ["compare", str(RUN), str(RUN)],
    ["compare", "--json", str(RUN), str(RUN)],
    ["compare", "--html", "-", str(RUN), str(RUN)],
    ["export", str(REC)],
    ["export", "--format", "grabserial", str(REC)],
    ["history", "--db", "h.db"],
    ["history", "--db", "h.db", "--json"],
    ["regress", "--db", "h.db", "--reference", "1", str(REC)],
    ["store", "--db", "h.db", str(REC)],
    ["check", str(RUN), "--budget", "budget.toml"],
    ["check", str(RUN), "--budget", "budget.toml", "--json"],
    ["check", str(RUN), "--budget", "budget.toml", "--junit", "-"],
    ["--help"],
    ["--version"],
    ["analyze", "--help"],
    ["target", "--help"],
]


@pytest.mark.parametrize("args", TO_STDOUT, ids=" ".join)
def test_standard_output_on_dev_full_is_one_line(args: list[str], work: Path) -> None:
    with open("/dev/full", "w") as full:
        r = _run(args, work, full)
    assert r.stderr.splitlines() == [NO_SPACE], r.stderr
    assert r.returncode == 2


@pytest.mark.parametrize("args", [["analyze", str(RUN)], ["analyze", "--json", str(RUN)], ["advise", str(RUN)],
                                  ["export", str(REC)], ["report", "-o", "-", str(RUN)]], ids=" ".join)
def test_unbuffered_standard_output_on_dev_full_is_one_line(args: list[str], work: Path) -> None:
    """PYTHONUNBUFFERED=1 gives standard output no buffer of its own: the same one line."""
    with open("/dev/full", "w") as full:
        r = _run(args, work, full, unbuffered=True)
    assert r.stderr.splitlines() == [NO_SPACE] and r.returncode == 2, r.stderr


@pytest.mark.parametrize("args", [["report", str(RUN)], ["report", "--format", "svg", str(RUN)],
                                  ["report", "--format", "perfetto", str(RUN)], ["export", str(REC)],
                                  ["compare", "--html", str(RUN), str(RUN)]], ids=" ".join)
def test_an_output_file_on_dev_full_is_one_line(args: list[str], work: Path) -> None:
    out = ["--html", "/dev/full"] if args[0] == "compare" else ["-o", "/dev/full"]
    r = _run([*args[:1], *out, *[a for a in args[1:] if a != "--html"]], work, subprocess.PIPE)
    assert r.stderr.splitlines() == ["bootlens: error: /dev/full: cannot write: No space left on device"], r.stderr
    assert r.returncode == 2


@pytest.mark.parametrize("args", [["analyze", str(RUN)], ["analyze", "--json", str(RUN)], ["advise", str(RUN)],
                                  ["compare", str(RUN), str(RUN)], ["report", "-o", "-", str(RUN)],
                                  ["export", str(REC)], ["history", "--db", "h.db"]], ids=" ".join)
def test_a_reader_that_went_away_is_still_a_quiet_exit_0(args: list[str], work: Path) -> None:
    rd, wr = os.pipe()
    os.close(rd)
    try:
        r = _run(args, work, wr)
    finally:
        os.close(wr)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_what_only_pythons_final_flush_would_write_is_one_line_too(tmp_path: Path) -> None:
    """Output left in the buffer when the command returns is flushed inside the guard, not by
    Python at exit (which prints "Exception ignored ... OSError" and exits 120)."""
    code = ("import sys\nfrom bootlens.cli.exits import guarded\n"
            "guarded(lambda: sys.stdout.write('a short line, never flushed by the command\\n'))\n")
    env = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True, env=env)
    assert r.stderr.splitlines() == [NO_SPACE] and r.returncode == 2, r.stderr


def test_a_full_disk_elsewhere_is_one_line_not_called_standard_outputs(tmp_path: Path) -> None:
    """Only standard output's own failures are said to be its; a full disk under any other file the
    command writes (a run folder's, a store's) is one line too (issue 29: "ENOSPC/EIO on standard
    output or any output file"), naming the file when Python knows it, exit 2."""
    code = ("import sys; import bootlens.cli.analyzecmd as a\n"
            "def full(**kw): raise OSError(28, 'No space left on device', '/x/run/boot-1.rec')\n"
            "a.run_analyze = full\n"
            f"sys.argv = ['bootlens', 'analyze', {str(REC)!r}]\n"
            "from bootlens.cli.fastpath import main; main()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV)
    assert r.returncode == 2 and "standard output" not in r.stderr, r.stderr
    assert r.stderr.splitlines() == ["bootlens: error: /x/run/boot-1.rec: cannot write: No space left on device"]


def test_another_oserror_is_still_a_bug(tmp_path: Path) -> None:
    """An OSError that is no full disk and not standard output's stays a bug's traceback, exit 1."""
    code = ("import sys; import bootlens.cli.analyzecmd as a\n"
            "def bad(**kw): raise OSError(9, 'Bad file descriptor')\n"
            "a.run_analyze = bad\n"
            f"sys.argv = ['bootlens', 'analyze', {str(REC)!r}]\n"
            "from bootlens.cli.fastpath import main; main()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV)
    assert r.returncode == 1 and "Traceback" in r.stderr, r.stderr
