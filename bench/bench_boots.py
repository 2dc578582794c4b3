#!/usr/bin/env python3
"""Time and peak memory of bootlens's commands on logs of many boots (issue 29, item 6).

For each N of ``--boots`` (default 10^3 .. 10^6) and each shape of ``--shapes`` (bench/gen_boots.py:
``line``, one line a boot; ``small``, ~20 lines a boot, written only up to ``--small-max`` boots),
writes the log once (kept in ``--dir``), then runs each command once with standard output to
/dev/null and prints one row: N, shape, command, wall s, CPU s (user + system of the child,
``os.wait4``), peak RSS MB (its ``ru_maxrss``) and µs of wall a boot. A run over ``--timeout``
seconds, or whose RSS passes ``--max-mb``, is stopped and shown as ``>`` its figure at the time.

Commands: ``analyze``, ``analyze --json``, ``advise``, ``report -o FILE`` (html), each with
``--marker ready='APP READY'`` (the small shape's application line).

    python bench/bench_boots.py                                  # the issue's table
    python bench/bench_boots.py --boots 1000 10000 --shapes line --timeout 60
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_boots import write_boots  # noqa: E402

COMMANDS = {
    "analyze": ["analyze"],
    "analyze --json": ["analyze", "--json"],
    "advise": ["advise"],
    "report": ["report", "-o", "{html}"],
}


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(cmd: list[str], timeout: float, max_mb: float) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, status) of one run: status '' when it ended with exit 0."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    status = ""
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        wall = time.perf_counter() - t0
        if wall > timeout:
            status = "timeout"
        elif _rss_mb(p.pid) > max_mb:
            status = "memory"
        if status:
            os.killpg(p.pid, signal.SIGKILL)
            pid, st, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(st)
    if not status and p.returncode != 0:
        status = f"exit {p.returncode}: {err.strip().splitlines()[-1:] }"
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boots", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--shapes", nargs="+", default=["line", "small"], choices=["line", "small"])
    ap.add_argument("--small-max", type=int, default=100_000, help="largest N of the small shape (10^6 is 914 MB)")
    ap.add_argument("--commands", nargs="+", default=list(COMMANDS), choices=list(COMMANDS))
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--max-mb", type=float, default=2500.0)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "bootlens-bench-boots"))
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    html = os.path.join(a.dir, "x.html")
    print(f"# load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} at start; "
          f"timeout {a.timeout:.0f} s, cap {a.max_mb:.0f} MB", flush=True)
    print(f"{'N':>9} {'shape':6} {'command':15} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'us/boot':>8}", flush=True)
    for shape in a.shapes:
        for n in a.boots:
            if shape == "small" and n > a.small_max:
                continue
            log = os.path.join(a.dir, f"{shape}-{n}.log")
            if not os.path.exists(log):
                with open(log + ".tmp", "w", encoding="utf-8") as f:
                    write_boots(f, n, shape)
                os.replace(log + ".tmp", log)
            for name in a.commands:
                args = [x.replace("{html}", html) for x in COMMANDS[name]]
                cmd = [a.python, "-m", "bootlens.cli", *args, "--marker", "ready=APP READY", log]
                wall, cpu, mb, status = run(cmd, a.timeout, a.max_mb)
                more = ">" if status in ("timeout", "memory") else ""
                note = f"  ({status})" if status else ""
                print(f"{n:>9} {shape:6} {name:15} {more}{wall:>7.2f} {cpu:>8.2f} {more}{mb:>7.0f} "
                      f"{wall / n * 1e6:>8.1f}{note}", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} at end", flush=True)


if __name__ == "__main__":
    main()
