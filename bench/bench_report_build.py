#!/usr/bin/env python3
"""Time to build the HTML and SVG reports against time to analyse, on inputs made to be hard
for the reports' layout: many events that overlap in time, many markers at one time.

What it measures
    Generates reproducible (fixed seed) kernel console logs, one per case:

    ``overlap``   ``--initcalls`` (default 40,000) initcalls that overlap: initcall i starts
                  10 µs after initcall i-1 and runs 0.2-0.3 s, so some 25,000 run at once, and
                  their ``returned`` lines come in the order they end, interleaved. Only the
                  ``returned`` lines are in the log (what ``dmesg | grep initcall`` leaves of an
                  ``initcall_debug`` boot), so no pid is known: every initcall is in one row and
                  the HTML report packs them into lanes (about 25,000).
    ``async``     the same initcalls with their ``calling ... @ PID`` lines, on 64 async threads
                  (pids 2-65), calling and returned lines interleaved: one row per pid.
    ``marks``     ``--marks`` (default 4,000) lines matched by a ``--marker`` at one printk time,
                  so that every marker label (always drawn) needs its own label row in the SVG.
    ``spread``    the same number of markers at random times over 3 s: labels that share rows.

    For each case, ``--runs`` times (default 5): the analysis (``analyze_inputs``: read, frame,
    parse, align, analyse), ``render_html`` and ``render_svg`` on that analysis, each timed with
    perf_counter in this process (start-up and imports excluded; one warm-up run first). Prints
    the medians and the ratio report/analysis, and what the reports hold (events, HTML lanes,
    SVG marker label rows) so a wrong layout does not pass as a fast one.
    Then, unless ``--no-cli``, the same through the command line, start-up included (what a user
    waits for): ``bootlens analyze LOG``, ``bootlens report LOG`` and ``bootlens report LOG
    --format svg``, median wall time of ``--runs`` runs each (output to /dev/null or a file).
    Target (issue 10): on the initcall cases, each report within a few times the analysis
    (reported, not fatal); the marker cases take milliseconds to analyse, their figure is the
    time itself (it was quadratic: 4,000 markers at one time took 6 s to draw).

Run from the repository root (bootlens installed, e.g. ``pip install -e .``):

    python bench/bench_report_build.py                       # all cases, 5 runs
    python bench/bench_report_build.py --cases overlap --runs 3
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

SEED = 20261210
TARGET_RATIO = 5.0  # "a few times" the analysis
HEAD = "[    0.000000] Linux version 6.1.0-bench (bench@bootlens) #1 SMP PREEMPT\n"


def _write(path: Path, lines: list[tuple[float, str]], end: float) -> None:
    lines.sort(key=lambda x: x[0])
    with path.open("w") as f:
        f.write(HEAD)
        f.writelines(f"[{t:12.6f}] {msg}\n" for t, msg in lines)
        f.write(f"[{end + 0.001:12.6f}] Run /init as init process\n")
        f.write(f"[{end + 0.002:12.6f}] APP READY\n")


def make_initcalls(path: Path, n: int, calls: bool) -> None:
    """``n`` overlapping initcalls; with ``calls``, their ``calling`` lines on 64 pids."""
    r = random.Random(SEED)
    out: list[tuple[float, str]] = []
    for i in range(n):
        start = 0.5 + i * 0.00001
        dur = 200_000 + r.randrange(100_000)  # µs
        name = f"drv{i}_init+0x0/0x{r.randrange(0x40, 0x400):x}"
        if calls:
            out.append((start, f"calling  {name} @ {2 + i % 64}"))
        out.append((start + dur / 1e6, f"initcall {name} returned 0 after {dur} usecs"))
    _write(path, out, max(t for t, _ in out))


def make_marks(path: Path, n: int, spread: bool) -> None:
    """``n`` lines for the marker ``mark=BENCH MARK`` at one time, or spread over 3 s."""
    r = random.Random(SEED)
    out = [(0.5 + (r.random() * 3.0 if spread else 1.0), f"BENCH MARK {i}") for i in range(n)]
    _write(path, out, 3.6)


T = TypeVar("T")


def _timed(f: Callable[[], T]) -> tuple[float, T]:
    t = time.perf_counter()
    v = f()
    return time.perf_counter() - t, v


def run_case(name: str, log: Path, markers: tuple[str, ...], runs: int) -> dict[str, float]:
    from bootlens.timeline.inputs import Group, analyze_inputs
    from bootlens.parsers import MarkerSpec, ParseOptions
    from bootlens.render.html import report_data, render_html
    from bootlens.render.svg import render_svg

    opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
    times: dict[str, list[float]] = {"analyse": [], "html": [], "svg": []}
    html = svg = b""
    groups: list[Group] = []
    for k in range(runs + 1):  # the first run warms imports and caches: not counted
        ta, groups = _timed(lambda: analyze_inputs([str(log)], opts))
        th, html = _timed(lambda: render_html(groups))
        ts, svg = _timed(lambda: render_svg(groups))
        if k:
            for key, t in (("analyse", ta), ("html", th), ("svg", ts)):
                times[key].append(t)
    data = report_data(groups)
    boot = data["boots"][0]
    lanes = max((len(r["lanes"]) for r in boot["rows"]), default=0)
    # marker labels: texts after the first mark line; count their distinct baselines
    mark_rows = len({m for m in re.findall(rb'<text x="[^"]+" y="([^"]+)" font-size="10" class="halo">mark ', svg)})
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{name:8} {len(boot['ev']['s']):>6} events {len(boot['marks']):>5} marks | analyse {med['analyse']:6.3f} s"
          f" | html {med['html']:6.3f} s ({med['html'] / med['analyse']:4.1f}x, {len(html) / 1e6:5.1f} MB, "
          f"widest row {lanes} lanes) | svg {med['svg']:6.3f} s ({med['svg'] / med['analyse']:4.1f}x, "
          f"{len(svg) / 1e6:5.1f} MB, {mark_rows} marker label rows)")
    return med


def run_cli(log: Path, markers: tuple[str, ...], runs: int, out: Path) -> dict[str, float]:
    """Median wall times of analyze, report (HTML) and report --format svg on ``log``."""
    marks = [a for m in markers for a in ("--marker", m)]
    cmds = {"analyze": ["analyze", str(log), *marks],
            "html": ["report", str(log), *marks, "-o", str(out.with_suffix(".html"))],
            "svg": ["report", str(log), *marks, "--format", "svg", "-o", str(out.with_suffix(".svg"))]}
    med = {}
    for key, args in cmds.items():
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "bootlens.cli", *args], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
        med[key] = statistics.median(times)
    print(f"{'':8} command line, start-up included: analyze {med['analyze']:6.3f} s"
          f" | report {med['html']:6.3f} s ({med['html'] / med['analyze']:4.1f}x)"
          f" | report --format svg {med['svg']:6.3f} s ({med['svg'] / med['analyze']:4.1f}x)")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--initcalls", type=int, default=40_000)
    ap.add_argument("--marks", type=int, default=4_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cases", default="overlap,async,marks,spread")
    ap.add_argument("--no-cli", action="store_true", help="skip the command-line timings")
    args = ap.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    ready = "ready=APP READY"
    worst: dict[str, float] = {}  # over the initcall cases: in process, command line
    print(f"median of {args.runs} runs; report time as a multiple of the analysis time (target <= {TARGET_RATIO:g}x)")
    with tempfile.TemporaryDirectory(prefix="bootlens-bench-build-") as tmp:
        for case in cases:
            log = Path(tmp) / f"{case}.log"
            if case in ("overlap", "async"):
                make_initcalls(log, args.initcalls, calls=case == "async")
                markers: tuple[str, ...] = (ready,)
            elif case in ("marks", "spread"):
                make_marks(log, args.marks, spread=case == "spread")
                markers = (ready, "mark=BENCH MARK")
            else:
                ap.error(f"unknown case {case!r}")
            med = run_case(case, log, markers, args.runs)
            cli = {} if args.no_cli else run_cli(log, markers, args.runs, Path(tmp) / case)
            if case in ("overlap", "async"):  # a few markers take no time to analyse: no ratio there
                worst["in process"] = max(worst.get("in process", 0), med["html"] / med["analyse"],
                                          med["svg"] / med["analyse"])
                if cli:
                    worst["command line"] = max(worst.get("command line", 0), cli["html"] / cli["analyze"],
                                                cli["svg"] / cli["analyze"])
    for how, ratio in worst.items():
        print(f"initcalls, {how}: worst report/analysis ratio {ratio:.1f}x: "
              f"{'PASS' if ratio <= TARGET_RATIO else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
