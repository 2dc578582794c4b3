#!/usr/bin/env python3
"""The noise of power-on -> ready on qemu-arm64 with and without ``--deterministic`` (issue 27):
N boots per cell (``bootlens run qemu-arm64 --repeat N``), idle and with two CPU hogs (busy
shell loops, one per core of a 2-core machine), and the coefficient of variation of the total
(standard deviation / mean) in each. Without the mode the total is the host's clock (power-on is
when bootlens releases QEMU); with it, the guest's (power-on from the guest's counter).

    python3 bench/bench_deterministic.py            # 10 boots a cell: about 15 minutes idle
    python3 bench/bench_deterministic.py 5 /tmp/d   # 5 boots a cell, run folders kept in /tmp/d

State the machine's load when quoting the figures (the script prints the load average at the start).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from bootlens.targets.runs import analyze_run  # noqa: E402


def cell(folder: Path, n: int, deterministic: bool) -> tuple[list[float], float]:
    """N boots into ``folder``: the totals (s) and the host's wall time of the whole run (s)."""
    t = time.monotonic()
    cmd = [sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--repeat", str(n), "-o", str(folder)]
    subprocess.run(cmd + (["--deterministic"] if deterministic else []), check=True, capture_output=True)
    wall = time.monotonic() - t
    run = analyze_run(folder)
    if run.not_ready:
        raise SystemExit(f"{folder}: {len(run.not_ready)} boots did not reach ready")
    return [b.total.duration_ns / 1e9 for b in run.analysis.boots if b.total.duration_ns is not None], wall


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    root = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(tempfile.mkdtemp(prefix="bench-det-"))
    print(f"qemu-arm64, {n} boots a cell; load average at the start: {os.getloadavg()[0]:.2f}; "
          f"{os.cpu_count()} cores; run folders in {root}", flush=True)
    print(f"{'host':9s} {'mode':14s} {'mean s':>9s} {'std dev':>10s} {'CV':>9s} {'min–max s':>17s} "
          f"{'wall/boot':>9s}", flush=True)
    for load in ("idle", "two hogs"):
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 if load == "two hogs" else 0)]
        try:
            for det in (False, True):
                folder = root / f"{load.replace(' ', '-')}-{'det' if det else 'host'}"
                xs, wall = cell(folder, n, det)
                sd = statistics.stdev(xs)
                print(f"{load:9s} {'deterministic' if det else 'host clock':14s} {statistics.mean(xs):9.6f} "
                      f"{sd * 1e3:8.3f} ms {sd / statistics.mean(xs) * 100:8.4f}% "
                      f"{min(xs):8.3f}–{max(xs):.3f} {wall / n:8.1f} s", flush=True)
        finally:
            for h in hogs:
                h.kill()


if __name__ == "__main__":
    main()
