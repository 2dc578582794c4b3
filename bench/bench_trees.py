"""Two source trees of bootlens side by side: CPU and wall time of ``bootlens analyze --json LOG``,
alternating run by run (so a busy minute of a shared machine hits both alike), medians.

For a refactor that must not make start-up or a big log slower: check the old commit out in a
worktree, build its native core there, and run each tree's code through the same virtualenv:

    git worktree add /tmp/before <commit> && (cd /tmp/before/native && cargo build --release) \\
        && cp /tmp/before/native/target/release/lib_scan.so /tmp/before/src/bootlens/_scan.abi3.so
    python3 bench/bench_trees.py ~/.cache/bootlens/anchors/logs/initcall-2000-*.log --runs 60 \\
        before=/tmp/before/src after=src

(bench/bench_anchors.py makes the anchor logs.) PYTHONDONTWRITEBYTECODE is unset for the runs:
no user compiles every module on each start.

``--instructions`` also counts the instructions of one run of each tree under valgrind's
callgrind (after a run that writes the bytecode caches): unlike times on a shared 2-core
machine, the count is the same from run to run (within ~0.05%), so a start-up difference of
0.1 ms (~0.4 million instructions here) shows, where the times' medians swing by 3 ms.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("trees", nargs="+", help="NAME=SRC: a name and the tree's src/ folder")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bootlens", default=str(Path(sys.executable).with_name("bootlens")),
                    help="the console script (its virtualenv runs every tree)")
    ap.add_argument("--instructions", action="store_true", help="count each tree's instructions under callgrind")
    a = ap.parse_args()
    trees = dict(t.split("=", 1) for t in a.trees)
    if a.instructions:
        _instructions(a.bootlens, a.log, trees)
    cpu: dict[str, list[float]] = {k: [] for k in trees}
    wall: dict[str, list[float]] = {k: [] for k in trees}
    for _ in range(a.runs):
        for name, src in trees.items():
            env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run([a.bootlens, "--no-config", "analyze", "--json", a.log], env=env,
                           stdout=subprocess.DEVNULL, check=True)
            t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            wall[name].append(t1 - t0)
    if not a.runs:
        return
    print(f"{a.log}: medians of {a.runs} alternating runs, load {os.getloadavg()[0]:.2f}")
    for name in trees:
        print(f"  {name:>8}: CPU {statistics.median(cpu[name]) * 1e3:8.1f} ms   wall {statistics.median(wall[name]) * 1e3:8.1f} ms")


def _instructions(bootlens: str, log: str, trees: dict[str, str]) -> None:
    """Instructions of one ``analyze --json LOG`` per tree (valgrind --tool=callgrind)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    cmd = [sys.executable, bootlens, "--no-config", "analyze", "--json", log]
    for name, src in trees.items():
        env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)  # the bytecode caches written
        err = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True).stderr
        m = re.search(r"Collected : (\d+)", err)
        print(f"  {name:>8}: {int(m[1]) / 1e6:8.2f} million instructions" if m else f"  {name}: no count ({err[-200:]})")


if __name__ == "__main__":
    main()
