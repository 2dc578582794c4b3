"""What a user sees in an 80x24 terminal: bootlens run in a real tmux pane, read back with
``tmux capture-pane``, for analyze, advise, compare and run (a board on a pty).

Wrapped lines are joined back (``capture-pane -J``), so a line the terminal had to wrap shows
as one longer than 80 columns. A key row (a headline, a stage, the total, a summary line of
advise) must be whole on one line, and the headline must come first. Also here: what goes to
standard output and what to standard error when the output is a pipe (warnings, progress), and
``analyze --summary``.
"""

from __future__ import annotations

import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CORPUS, WILD_LOGS, cli, needs_wild
from rich.cells import cell_len

HERE = Path(__file__).parent
RUN = HERE / "data" / "advise" / "qemu-arm64-run"  # two boots of qemu-arm64; run.json: ready=APP READY
TRACE = HERE / "data" / "advise" / "qemu-arm64-trace.console.log"  # 13 findings
BAUD_REC = HERE / "data" / "advise" / "qemu-arm64-baud115200.rec"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
READY = ("--marker", "ready=APP READY")
WIDTH, HEIGHT = 80, 24
DONE = "__bootlens_exit__"

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None and not os.environ.get("CI"),
                                reason="tmux is not installed (make test installs it)")


def in_pane(tmp: Path, *args: str, timeout: float = 120) -> tuple[list[str], int]:
    """``bootlens ARGS`` in a fresh 80x24 tmux pane: every line it left on the screen and in the
    scrollback (wrapped lines joined, trailing blanks dropped) and its exit status."""
    sock = str(tmp / "tmux.sock")
    argv = [sys.executable, "-m", "bootlens.cli", *args]
    # the pane stays open after the command, until the server is killed, so it can be read
    shell = f"{shlex.join(argv)}; echo {DONE}$?; exec sleep 600"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    tmux = ["tmux", "-S", sock, "-f", os.devnull]
    subprocess.run([*tmux, "start-server", ";", "set-option", "-g", "history-limit", "100000", ";",
                    "new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), "-c", str(HERE.parent), "-s", "t",
                    shell], check=True, env=env, timeout=30)
    try:
        deadline = time.monotonic() + timeout
        while True:
            out = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-", "-t", "t"], capture_output=True,
                                 text=True, check=True, timeout=30).stdout
            lines = [ln.rstrip() for ln in out.splitlines()]
            ends = [i for i, ln in enumerate(lines) if ln.startswith(DONE)]
            if ends:
                return lines[: ends[0]], int(lines[ends[0]][len(DONE):])
            if time.monotonic() > deadline:
                raise AssertionError("timed out; the pane shows:\n" + "\n".join(lines[-40:]))
            time.sleep(0.1)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30)


def assert_fits(lines: list[str]) -> None:
    """No line was wider than the terminal (the terminal would have wrapped it)."""
    wide = [ln for ln in lines if cell_len(ln) > WIDTH]
    assert not wide, "wider than 80 columns:\n" + "\n".join(wide)


def row(lines: list[str], pattern: str) -> str:
    """The one line that is the whole of ``pattern`` (around spaces allowed): a key row that
    the terminal or a table wrapped does not match."""
    found = [ln for ln in lines if re.fullmatch(r"\s*" + pattern + r"\s*", ln)]
    assert found, f"no line is /{pattern}/ whole; lines:\n" + "\n".join(lines)
    return found[0]


SEC = r"[\d.]+ (?:s|ms|µs|ns)"


@needs_tmux
def test_analyze_headline_first_and_whole_rows(tmp_path: Path) -> None:
    lines, status = in_pane(tmp_path, "analyze", str(GRAB), *READY)
    assert status == 0, lines
    assert_fits(lines)
    assert lines[0] == "Boot 1 · first byte → ready: 3.903 s · line 2110: APP READY"
    for stage in ("bootloader \\(U-Boot\\)", "kernel load / decompress", "kernel init", "initcalls",
                  "root mount, free init memory", "init and user space"):
        row(lines, rf"{stage}\s+\d+\.\d{{3}}\s+{SEC}(\s+[\d.]+%)?\s+\d+–\d+")
    total = lines.index(row(lines, rf"total \(first byte → ready\)\s+0\.000\s+3\.903 s\s+100\.0%\s+1–2110"))
    assert total < HEIGHT  # the headline and the whole stage table on the first screen
    # the longest initcall name whole, and no empty module column, no pid column of 1s
    row(lines, rf"of_platform_default_populate_init\s+\d+\.\d{{3}}\s+{SEC}\s+\d+–\d+")
    row(lines, r"name\s+start s\s+duration\s+lines")
    # jargon after the tables; the warning (standard error) after everything
    axis = lines.index(next(ln for ln in lines if ln.startswith("axis: host")))
    assert axis > total
    warned = [i for i, ln in enumerate(lines) if ln.startswith("bootlens: warning:")]
    assert len(warned) == 1 and warned[0] > axis and lines[-1].endswith("the capture was cut mid-line")


@needs_tmux
def test_analyze_of_a_run_folder_uses_its_markers(tmp_path: Path) -> None:
    lines, status = in_pane(tmp_path, "analyze", str(RUN))  # no --marker: run.json has ready=APP READY
    assert status == 0, lines
    assert_fits(lines)
    assert lines[0] == "Run folder, 2 boots · power-on → ready: median 9.195 s (8.850–9.540 s)"
    row(lines, r"Boot 1 of 2 · power-on → ready: 8\.850 s · line 255: APP READY")
    row(lines, r"Boot 2 of 2 · power-on → ready: 9\.540 s · line \d+: APP READY")
    assert len([ln for ln in lines if re.fullmatch(rf"total \(power-on → ready\)\s+0\.000\s+{SEC}\s+100\.0%\s+"
                                                   r"\d+–\d+", ln)]) == 2


@needs_tmux
@needs_wild
def test_analyze_of_every_corpus_log_fits(tmp_path: Path) -> None:
    """35 real boards' logs: every line within 80 columns, every boot's headline and total row whole."""
    lines, status = in_pane(tmp_path, "analyze", *map(str, WILD_LOGS))
    assert status == 0, lines[-20:]
    assert_fits(lines)
    heads = [ln for ln in lines if ln.startswith("Boot ")]
    assert len(heads) >= len(WILD_LOGS)
    for h in heads:
        assert re.match(r"Boot \d+( of \d+)? · (power-on|first byte|kernel start) → (ready|login prompt): "
                        rf"(not measured|~?{SEC}|[\d.]+(?: m?s)?–{SEC} \(estimated\)|≥ {SEC} \(estimated\))", h), h
    totals = [ln for ln in lines if ln.startswith("total (")]
    assert len(totals) == len(heads)
    assert all(re.search(rf"\)\s+(—|~?\d+\.\d{{3}})\s+(not measured|{SEC}|[\d.]+(?: m?s)?–{SEC}|≥ {SEC})", t)
               for t in totals), totals


@needs_tmux
def test_advise_opens_with_a_one_screen_summary(tmp_path: Path) -> None:
    lines, status = in_pane(tmp_path, "advise", str(TRACE), *READY)
    assert status == 0, lines
    assert_fits(lines)
    first = lines[:HEIGHT]
    assert "qemu-arm64-trace.console.log" in first[0]
    assert first[2] == "13 findings, largest saving first; 4 automatic"
    rows = [ln for ln in first if re.fullmatch(r"\s*\d+\s+(\S+ \S+|no estimate)\s+(high|medium|low)\s+\S.*", ln)]
    assert len(rows) == 13, first  # one line each, all on the first screen
    assert re.fullmatch(r"\s*1\s+2\.000 s\s+high\s+U-Boot: bootdelay=0", rows[0])
    assert re.fullmatch(r"\s*3\s+544\.0 ms\s+high\s+cmdline: cryptomgr\.notests", rows[2])
    assert any(re.search(r"cmdline: initcall_blackl.*….*_init", r) for r in rows)  # a long value keeps both ends
    details = lines.index("Each finding in full")
    assert details > lines.index(rows[-1])
    warned = [i for i, ln in enumerate(lines) if ln.startswith("bootlens: warning:")]
    assert warned and warned[0] > details  # standard error, after the listing


@needs_tmux
def test_advise_of_a_run_folder(tmp_path: Path) -> None:
    lines, status = in_pane(tmp_path, "advise", str(RUN))
    assert status == 0, lines
    assert_fits(lines)
    assert lines[2] == "10 findings, each in every boot, largest saving first; 7 automatic"
    assert re.fullmatch(r"\s*1\s+2\.000 s\s+high\s+U-Boot: bootdelay=0", lines[5])


@needs_tmux
def test_compare_fits(tmp_path: Path) -> None:
    lines, status = in_pane(tmp_path, "compare", str(RUN), str(BAUD_REC), *READY)
    assert status == 0, lines
    row(lines, rf"total \(power-on → ready\)\s+{SEC}\s+{SEC}\s+[+−]{SEC}\s+[+−][\d.]+%.*")
    for stage in ("firmware", "bootloader", "kernel_load", "kernel_init", "userspace"):
        row(lines, rf"{stage}\s+{SEC}\s+{SEC}\s+.*")
    assert_fits(lines)


# --- run: a board on a pty --------------------------------------------------------------------


class PtyBoard:
    """A board on a pty that boots (U-Boot, a kernel, an application) each time the power-cycle
    command drops its trigger file, in about a quarter of a second."""

    def __init__(self, tmp: Path) -> None:
        self.master, self.slave = pty.openpty()
        self.trigger = tmp / "power-on"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def port(self) -> str:
        return os.ttyname(self.slave)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.trigger.exists():
                self.trigger.unlink()
                for line, wait in ((b"U-Boot 2023.01 (board)\n", 0.02), (b"Hit any key to stop autoboot:  0 \n", 0.05),
                                   (b"Starting kernel ...\n", 0.02), (b"[    0.000000] Linux version 6.1.0 (x)\n", 0.1),
                                   (b"[    0.100000] Run /init as init process\n", 0.03), (b"app: ready to serve\n", 0)):
                    os.write(self.master, line)
                    time.sleep(wait)
            time.sleep(0.005)

    def __enter__(self) -> PtyBoard:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def board(tmp_path: Path) -> Iterator[PtyBoard]:
    with PtyBoard(tmp_path) as b:
        yield b


def run_args(board: PtyBoard, folder: Path, *extra: str) -> list[str]:
    return ["run", "board", "--port", board.port, "--power-cycle", f"touch {board.trigger}", "--ready",
            "ready to serve", "--timeout", "20", "-o", str(folder), *extra]


@needs_tmux
def test_run_one_boot(tmp_path: Path, board: PtyBoard) -> None:
    lines, status = in_pane(tmp_path, *run_args(board, tmp_path / "r"))
    assert status == 0, lines
    assert_fits(lines)
    # the progress bar (standard error) as it was left, then the headline
    assert re.fullmatch(r"board ━+ 1/1 boots · all done · \d:\d\d:\d\d", lines[0]), lines[0]
    assert re.fullmatch(rf"Boot 1 · power-on → ready: {SEC} · line 6: app: ready to serve", lines[1]), lines[1]
    row(lines, rf"total \(power-on → ready\)\s+0\.000\s+{SEC}\s+100\.0%\s+1–6")


@needs_tmux
def test_run_repeat_table_fits(tmp_path: Path, board: PtyBoard) -> None:
    lines, status = in_pane(tmp_path, *run_args(board, tmp_path / "r", "--repeat", "2"))
    assert status == 0, lines
    assert re.fullmatch(r"board ━+ 2/2 boots · all done · \d:\d\d:\d\d", lines[0]), lines[0]
    row(lines, rf"total \(power-on → ready\)\s+.*{SEC}.*")
    assert_fits(lines)


# --- pipes: standard output holds the result, standard error the rest --------------------------


def test_analyze_into_a_pipe_keeps_warnings_on_stderr() -> None:
    r = cli("analyze", str(GRAB), *READY)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stdout and r.stdout.startswith("Boot 1 · first byte → ready: 3.903 s")
    assert r.stderr.splitlines() == [f"bootlens: warning: {GRAB}: last line (2129) has no newline: the capture was "
                                     "cut mid-line"]  # one line, unwrapped, for grep


def test_summary_is_one_line_per_boot() -> None:
    r = cli("analyze", "--summary", str(GRAB), *READY)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("Startup finished in 2.260s (bootloader) + 0.211s (kernel_load) + 1.343s (kernel_init) "
                        "+ 0.088s (userspace) = 3.903s (first byte → ready)\n")
    assert r.stderr == "bootlens: 1 warning (without --summary: each one)\n"
    r = cli("analyze", "--summary", str(RUN), str(CORPUS / "qemu-x86_64-initcall.console.log"))
    out = r.stdout.splitlines()
    assert len(out) == 3, out
    assert re.fullmatch(r"Startup finished in 0\.115s \(firmware\) \+ 2\.498s \(bootloader\) \+ 0\.539s "
                        r"\(kernel_load\) \+ 2\.555s \(kernel_init\) \+ 3\.143s \(userspace\) = 8\.850s "
                        r"\(power-on → ready\) · .*boot-1\.rec boot 1", out[0]), out[0]
    assert out[2].startswith("Startup not finished: no ready marker (use --marker ready=REGEX); measured ")
    assert "1.629s (kernel_init)" in out[2]


def test_summary_and_json_exclude_each_other() -> None:
    r = cli("analyze", "--summary", "--json", str(GRAB))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1


def test_run_folder_json_is_its_boots() -> None:
    import json

    d = json.loads(cli("analyze", "--json", str(RUN)).stdout)
    assert len(d["boots"]) == 2
    assert all(any(e["kind"] == "marker" and e["name"] == "ready" for e in b["events"]) for b in d["boots"])


def test_progress_goes_to_stderr(tmp_path: Path, board: PtyBoard) -> None:
    r = cli(*run_args(board, tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Boot 1 · power-on → ready: ") and "done in" not in r.stdout
    assert re.match(r"boot 1/1 done in [\d.]+ s; all done\n", r.stderr), r.stderr
