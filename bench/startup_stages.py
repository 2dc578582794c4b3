"""Where ``bootlens analyze LOG`` start-up goes: imports in cumulative stages, then the run.

    python3 bench/startup_stages.py [LOG] [--terminal] [--runs N]

Each run is a fresh interpreter (this script's python: use the venv's, as ``make install``
builds it) that imports the stack a stage at a time and then runs ``analyze LOG --json`` (or the
terminal output) in-process from an empty folder, with its output thrown away, as the
bootlens command (argv[0]: the collector paused from bootlens.cli on) through its console
script's entry, bootlens.cli.fastpath (no click); the table prints the
median of each stage over the runs, in ms: wall time and CPU time (user+sys of the process, the figure to
compare on a shared machine). ``-X importtime`` and cProfile distort (they slow the pure-Python
parts most), so this times plain imports with ``time.perf_counter``. bench/bench_anchors.py
gives the whole command's wall time beside bootgraph.pl's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import os, sys, time
t0 = time.perf_counter(); c0 = time.process_time(); marks = []
def mark(name): marks.append((name, time.perf_counter(), time.process_time()))
sys.argv[0] = "bootlens"  # bootlens.cli pauses the collector for the bootlens command only
import re, enum; mark("re, enum (stdlib, before bootlens; typing is not imported: step 23)")
import bootlens.cli; mark("bootlens.cli (no click: the group is bootlens.cli.group); gc paused")
import bootlens.cli.fastpath, bootlens.cli.analyze_options; mark("cli.fastpath + its option table")
import bootlens.core.config; mark("config (the bootlens.toml search; imports model: its NamedTuple)")
import bootlens.cli.analyzecmd; mark("cli.analyzecmd (exits, storeopts)")
import bootlens.core.model; mark("model (imported by config already)")
import bootlens._native, bootlens.core.lines; mark("_native (the native _scan), linecols")
import bootlens.read.reader; mark("lines (the reader)")
import bootlens.timeline.analyze; mark("analyze (align, boots, stages, parsers.base, banners)")
from bootlens.parsers import default_registry; default_registry(); mark("the console parsers (registry)")
import bootlens.read.framings, bootlens.read.journal, bootlens.read.quirks, bootlens.timeline.prekernel; mark("framings, journal, quirks, prekernel")
import bootlens.timeline.inputs; mark("inputs (kinds: the sniffs)")
import bootlens.render.jsonout; mark("render.jsonout (jsonbytes: the json module; orjson only for a big document)")
if TERMINAL:
    import bootlens.render.terminal; mark("render.terminal (rich)")
real = os.dup(1)
null = os.open(os.devnull, os.O_WRONLY); os.dup2(null, 1); os.dup2(null, 2)
def report():
    mark("run")
    prev, cprev = t0, c0
    for name, t, c in marks:
        os.write(real, f"{name}\t{(t - prev) * 1000:.3f}\t{(c - cprev) * 1000:.3f}\n".encode()); prev, cprev = t, c
_exit = os._exit
os._exit = lambda code: (report(), _exit(code))  # bootlens may end with os._exit
from bootlens.cli.fastpath import main  # the console script's entry: analyze without click
sys.argv[1:] = ["analyze", LOG] + ([] if TERMINAL else ["--json"])
try:
    main()
except SystemExit:
    pass
report()
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", nargs="?", default="/tmp/small2k.log")
    ap.add_argument("--terminal", action="store_true", help="the terminal output instead of --json")
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    code = CHILD.replace("TERMINAL", str(args.terminal)).replace("LOG", repr(os.path.abspath(args.log)))
    # byte-compiled modules as an installed bootlens has them (PYTHONDONTWRITEBYTECODE would
    # leave a changed module to be compiled again on every run)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "BOOTLENS_CONFIG")}
    rows: dict[str, list[tuple[float, float]]] = {}
    empty = tempfile.mkdtemp(prefix="bootlens-startup-")
    for _ in range(args.runs):
        # from an empty folder, as the command is timed: it looks for bootlens.toml there and
        # up to the filesystem root (or a repository's top)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                             cwd=empty).stdout
        seen: set[str] = set()
        for line in out.splitlines():
            name, ms, cpu = line.split("\t")
            if name not in seen:  # the os._exit path and the normal one may both report
                rows.setdefault(name, []).append((float(ms), float(cpu)))
                seen.add(name)
    # CPU (the process's user+sys, time.process_time) is the figure to compare on a shared machine;
    # wall time also counts the waits for a core
    print("   wall      CPU")
    total = ctotal = 0.0
    for name, values in rows.items():
        m, c = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
        total += m
        ctotal += c
        print(f"{m:7.1f} {c:7.1f} ms  {name}")
    os.rmdir(empty)
    print(f"{total:7.1f} {ctotal:7.1f} ms  in all, after the interpreter's own start ({args.runs} runs, medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
