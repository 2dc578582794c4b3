#!/usr/bin/env python3
"""bootlens side by side with the anchors: Linux's ``scripts/bootgraph.pl`` and pm-graph's
``bootgraph.py``, on the same generated logs, alternating, with ratios (issue 14, part 4).

Where the anchors come from
    Debian's ``linux-source-6.1`` package (the kernel tree as Debian ships it, ~139 MB). When
    ``~/.cache/bootlens/anchors/src/linux-source-6.1/`` does not hold them yet, the script runs
    ``apt-get download linux-source-6.1`` in ``~/.cache/bootlens/anchors/`` (no root needed), then
    streams ``dpkg-deb --fsys-tarfile`` -> ``./usr/src/linux-source-6.1.tar.xz`` -> ``tar -xvJ`` of
    exactly four members: ``scripts/bootgraph.pl`` and ``tools/power/pm-graph/{bootgraph.py,
    sleepgraph.py,config/cgskip.txt}`` (bootgraph.py imports sleepgraph.py from its own folder).
    tar's verbose list is checked against those four names (a member missing from the tarball is
    an error, not a silent skip). Decompressing the xz stream takes ~15-35 s of one core, once.
    ``XDG_CACHE_HOME`` moves the cache as it moves the target images (bootlens.targets.qemu.cache_root).

The logs
    initcall_debug console logs of ``--sizes`` lines (default 100k, 1M, 10M) from
    bench/bench_analyze.py's generator (fixed seed), rewritten for the anchors' limits: the
    printk stamps are scaled so the last one is below 95 s (bootgraph.pl's ``$firsttime`` starts
    at 99999 but its SVG header assumes small times; pm-graph's ``parseKernelLog`` stops at the
    first stamp past 120 s, which would make it read a fraction of the log), and the generator's
    filler lines that say ``Freeing unused kernel memory`` are renamed (bootgraph.pl stops
    graphing at the first one and pm-graph starts user space there; a real boot says it once,
    right before ``Run /init``, where one is added). Cached in ``~/.cache/bootlens/anchors/logs``
    by size and generator checksum (``--fresh`` makes them again). A 10M-line log is ~700 MB.
    A function_graph trace of the largest size from ``bench/gen_ftrace.py --lines N --out F``
    when that script exists (else its row says so): ``bootlens analyze --json`` on it, and
    ``bootgraph.py -dmesg LOG -ftrace TRACE -f`` (pm-graph reads a callgraph only next to a dmesg).

What runs
    Per size, ``--runs`` rounds (default 3); each round runs every tool once, in turn, so that
    a busy spell on the machine hits all of them alike:
      ``bootlens analyze LOG --json --marker ready='APP READY'`` (the console script next to the
      running Python, not a pyenv shim; ``--bootlens`` to choose),
      ``perl bootgraph.pl LOG`` (SVG on stdout) and
      ``python3 bootgraph.py -dmesg LOG`` (HTML into a scratch folder; same Python as bootlens).
    Every output goes to a file in a scratch folder and is checked (bootlens: JSON with as many
    initcalls as the log has ``returned`` lines; bootgraph.pl: an SVG; bootgraph.py: an HTML
    file; pm-graph's doError exits 0, so its output file is the test). A failed or timed-out
    anchor run is reported in its row, not fatal. A tool whose run takes longer than ``--slow``
    (default 60 s; pm-graph's bootgraph.py reads ~250-800 lines/s) is not run again on that input,
    and not at all on a larger one its rate says would pass ``--timeout``. Per tool: median wall s,
    median CPU s (user+sys from os.wait4's rusage), lines/s (lines / median wall), peak RSS (max
    over runs; GNU time's %M, as Linux's ru_maxrss of a child counts this script's size until the
    exec) and bytes of peak RSS per input line, and the ratio bootlens/anchor of wall time. Every
    tool runs without PYTHONDONTWRITEBYTECODE (so Python tools use their .pyc files).
    Then the start-up row: a 2,000-line log, ``--startup-runs`` rounds (default 20), alternating.
    Then the bars of the issue as PASS/FAIL lines:
      >= 2,000,000 lines/s at 1M and 10M lines (wall); linear: lines/s at the largest size within
      20 % of that at the smallest; <= 150 B/line peak RSS at the largest size;
      start-up <= 40 ms wall and <= 3x bootgraph.pl's.
    The machine's load (``/proc/loadavg``) is printed before and after: on a shared machine quote
    CPU time beside wall time.

Run by hand from the repository root (not part of ``make test``):

    python3 bench/bench_anchors.py                         # 100k, 1M, 10M; 3 runs each
    python3 bench/bench_anchors.py --sizes 100000,1000000 --runs 5
    /tmp/v/bin/python bench/bench_anchors.py --sizes 100000 --startup-runs 40   # a venv's bootlens
    python3 bench/bench_anchors.py --skip bootgraph.py     # leave an anchor out (slow at 10M)
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = "linux-source-6.1"
TOP = "linux-source-6.1"
MEMBERS = ("scripts/bootgraph.pl", "tools/power/pm-graph/bootgraph.py",
           "tools/power/pm-graph/sleepgraph.py", "tools/power/pm-graph/config/cgskip.txt")
MAX_STAMP_US = 95_000_000  # below bootgraph.pl's and pm-graph's limits (100 s, 120 s)
STARTUP_LINES = 2000
READY = "APP READY"

BAR_RATE = 2_000_000
BAR_LINEAR = 0.20
BAR_BYTES_PER_LINE = 150
BAR_STARTUP_S = 0.040
BAR_STARTUP_RATIO = 3.0


def cache_dir() -> Path:
    """~/.cache/bootlens/anchors (XDG_CACHE_HOME honoured, as for the target images)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bootlens" / "anchors"


def fetch_anchors(cache: Path) -> Path:
    """The extracted linux-source-6.1 tree holding the four members; download and extract once."""
    tree = cache / "src" / TOP
    if all((tree / m).is_file() for m in MEMBERS):
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob(f"{PACKAGE}_*_all.deb"))
    if not debs:
        print(f"downloading {PACKAGE} (~139 MB) into {cache} ...", flush=True)
        subprocess.run(["apt-get", "download", PACKAGE], cwd=cache, check=True)
        debs = sorted(cache.glob(f"{PACKAGE}_*_all.deb"))
        if not debs:
            sys.exit(f"FAIL: apt-get download left no {PACKAGE}_*_all.deb in {cache}")
    deb = debs[-1]
    print(f"extracting {len(MEMBERS)} files from {deb.name} (decompresses the whole tarball once) ...", flush=True)
    (cache / "src").mkdir(exist_ok=True)
    wanted = [f"{TOP}/{m}" for m in MEMBERS]
    # dpkg-deb | tar -xO (the inner tarball, streamed) | tar -xvJ (the members; -v lists them)
    fsys = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    inner = subprocess.Popen(["tar", "-xO", f"./usr/src/{PACKAGE}.tar.xz"], stdin=fsys.stdout, stdout=subprocess.PIPE)
    assert fsys.stdout is not None and inner.stdout is not None
    fsys.stdout.close()
    got = subprocess.run(["tar", "-xvJf", "-", "-C", str(cache / "src"), *wanted], stdin=inner.stdout,
                         stdout=subprocess.PIPE, text=True)
    inner.stdout.close()
    codes = (fsys.wait(), inner.wait(), got.returncode)
    listed = sorted(got.stdout.split())
    if any(codes) or listed != sorted(wanted):
        sys.exit(f"FAIL: extracting {wanted} from {deb}: exit codes {codes}, tar listed {listed}")
    return tree


def _generator() -> tuple[object, str]:
    """bench_analyze.generate and a checksum of its source (a changed generator makes new logs)."""
    src = HERE / "bench_analyze.py"
    spec = importlib.util.spec_from_file_location("bench_analyze", src)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate, hashlib.sha256(src.read_bytes()).hexdigest()[:10]


_STAMP = re.compile(r"^\[ *(\d+)\.(\d{6})\] ")


def make_log(cache: Path, n: int, fresh: bool) -> tuple[Path, int, int]:
    """A cached initcall log of ``n`` lines fit for the anchors: (path, lines, returned lines)."""
    generate, digest = _generator()
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"initcall-{n}-{digest}.log"
    meta = path.with_suffix(".count")
    if path.exists() and meta.exists() and not fresh:
        lines, returned = map(int, meta.read_text().split())
        return path, lines, returned
    t0 = time.perf_counter()
    raw = logs / f"raw-{n}-{os.getpid()}.log"  # two benches at once must not share a scratch file
    part = path.with_suffix(f".part{os.getpid()}")
    generate(raw, n)  # type: ignore[operator]
    last_us = 0
    with raw.open("rb") as f:
        f.seek(max(0, raw.stat().st_size - 4096))
        for line in f.read().decode("ascii").splitlines():
            m = _STAMP.match(line)
            if m:
                last_us = int(m[1]) * 1_000_000 + int(m[2])
    scale = min(1.0, MAX_STAMP_US / last_us) if last_us else 1.0
    lines = returned = 0
    with raw.open(encoding="ascii") as src, part.open("w", encoding="ascii") as out:
        for line in src:
            m = _STAMP.match(line)
            if m:
                us = int((int(m[1]) * 1_000_000 + int(m[2])) * scale)
                text = line[m.end():]
                if text.startswith("Freeing unused kernel memory"):  # only the real one, at the end
                    text = "Releasing" + text[len("Freeing"):]
                elif text.startswith("Run /init as init process"):
                    out.write(f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}] Freeing unused kernel memory: 2048K\n")
                    lines += 1
                elif text.startswith("initcall ") and " returned " in text:
                    returned += 1
                line = f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}] {text}"
            out.write(line)
            lines += 1
    raw.unlink()
    os.replace(part, path)  # whole or absent: a bench killed while writing leaves no half log
    meta.write_text(f"{lines} {returned}\n")
    print(f"generated {path.name}: {lines:,} lines, {path.stat().st_size / 1e6:.1f} MB, stamps x{scale:.3f}, "
          f"in {time.perf_counter() - t0:.1f} s", flush=True)
    return path, lines, returned


@dataclass
class Tool:
    """One program under test: how to run it on a log and how to tell its output is real."""

    name: str
    argv: list[str]  # the log's path is appended, or put where "{log}" is
    output: str  # "stdout" (a file in the scratch folder) or a file name the tool writes in its cwd
    check: str  # what the output must start with / contain

    def command(self, log: Path) -> list[str]:
        return [a.replace("{log}", str(log)) for a in self.argv] if any("{log}" in a for a in self.argv) \
            else [*self.argv, str(log)]


@dataclass
class Result:
    """The runs of one tool on one input."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    failure: str | None = None
    slow: bool = False  # one run took longer than --slow: not repeated

    def wall(self) -> float:
        return statistics.median(self.walls)

    def cpu(self) -> float:
        return statistics.median(self.cpus)


TIME = "/usr/bin/time"  # GNU time (Debian package ``time``): the tool's own peak RSS, see run_once


def child_env() -> dict[str, str]:
    """The environment for every tool: without PYTHONDONTWRITEBYTECODE, which would make Python
    (bootlens and bootgraph.py alike) compile every module from source on every run."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(tool: Tool, log: Path, scratch: Path, timeout: float) -> tuple[float, float, int, str | None]:
    """(wall s, CPU s, peak RSS KiB, failure or None) of one run, output checked.

    The peak RSS comes from GNU time's %M when /usr/bin/time exists: Linux's ru_maxrss of a
    child started from this process starts at this process's own size (the forked copy is
    counted before exec), which would bury perl's few MB under this script's tens."""
    for old in scratch.iterdir():
        old.unlink()
    out_path = scratch / ("stdout" if tool.output == "stdout" else tool.output)
    err_path = scratch / "stderr"
    rss_path = scratch / "rss"
    timed = os.access(TIME, os.X_OK)
    argv = [TIME, "-q", "-o", str(rss_path), "-f", "%M", *tool.command(log)] if timed else tool.command(log)
    with out_path.open("wb") if tool.output == "stdout" else open(os.devnull, "wb") as out, err_path.open("wb") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, cwd=scratch, env=child_env(), start_new_session=True)
        deadline = t0 + timeout
        while True:  # wait4 with a deadline: poll, as os.wait4 has no timeout
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(p.pid, signal.SIGKILL)  # the tool and GNU time: their own session
                _, status, ru = os.wait4(p.pid, 0)
                p.returncode = -9
                return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, f"timed out after {timeout:.0f} s"
            time.sleep(0.0005 if time.perf_counter() - t0 < 1 else 0.05)
        wall = time.perf_counter() - t0
    p.returncode = code = os.waitstatus_to_exitcode(status)
    cpu = ru.ru_utime + ru.ru_stime  # time's rusage includes the tool it waited for
    kib = ru.ru_maxrss
    if timed:
        try:
            kib = int(rss_path.read_text().split()[-1])
        except (OSError, ValueError, IndexError):
            pass
    failure = None
    if code != 0:
        failure = f"exit {code}"
    elif not out_path.exists() or tool.check not in out_path.read_bytes()[:4096].decode("utf-8", "replace"):
        failure = f"no {tool.output} with {tool.check!r}"
    if failure:
        last = err_path.read_text(errors="replace").strip().splitlines()[-1:] or \
            (out_path.read_text(errors="replace").strip().splitlines()[-1:] if out_path.exists() else [])
        failure += f": {last[0][:100]}" if last else ""
    return wall, cpu, kib, failure


def check_bootlens_json(cmd: list[str], expected: int) -> str | None:
    """One untimed run of bootlens on the log: None when its JSON counts every initcall."""
    import json

    p = subprocess.run(cmd, capture_output=True, env=child_env())
    if p.returncode != 0:
        return f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[-200:]}"
    try:
        got = json.loads(p.stdout)["boots"][0]["counts"]["initcalls"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        return f"JSON unusable: {e!r}"
    return None if got == expected else f"counts.initcalls {got}, expected {expected}"


def bench(tools: list[Tool], log: Path, runs: int, timeout: float, lines: int = 0,
          rates: dict[str, float] | None = None, slow: float = float("inf")) -> dict[str, Result]:
    """``runs`` rounds of every tool in turn (alternating); a tool that failed is not run again,
    nor one whose lines/s at a smaller size (``rates``) says a run would pass ``timeout``, and
    one whose run took more than ``slow`` seconds is not repeated (pm-graph: minutes per 100k lines)."""
    results = {t.name: Result() for t in tools}
    for t in tools:
        rate = (rates or {}).get(t.name)
        if rate and lines / rate > timeout:
            results[t.name].failure = (f"not run: at {rate:,.0f} lines/s (its rate on the smaller log) one run "
                                       f"would take ~{lines / rate:,.0f} s, past --timeout {timeout:.0f} s")
    with tempfile.TemporaryDirectory(prefix="bootlens-anchors-") as tmp:
        scratch = {t.name: Path(tmp) / re.sub(r"\W", "_", t.name) for t in tools}
        for d in scratch.values():
            d.mkdir()
        for _ in range(runs):
            for t in tools:
                r = results[t.name]
                if r.failure or r.slow:
                    continue
                wall, cpu, kib, failure = run_once(t, log, scratch[t.name], timeout)
                r.walls.append(wall)
                r.cpus.append(cpu)
                r.rss_kib.append(kib)
                r.failure = failure
                r.slow = wall > slow
    return results


def table(label: str, lines: int, results: dict[str, Result], base: str) -> None:
    """One block of rows: per tool, wall, CPU, lines/s, peak RSS, B/line, ratio to bootlens."""
    print(f"\n{label}: {lines:,} lines")
    print(f"  {'tool':<16}{'wall s':>9}{'CPU s':>9}{'lines/s':>13}{'peak RSS MB':>13}{'B/line':>9}  {'bootlens/tool (wall)':<20}")
    b = results[base]
    for name, r in results.items():
        if not r.walls or r.failure and len(r.walls) == 1:
            print(f"  {name:<16}{r.failure}" if (r.failure or "").startswith("not run") else
                  f"  {name:<16}FAILED: {r.failure}")
            continue
        walls = r.walls[:-1] if r.failure else r.walls
        wall, cpu = statistics.median(walls), statistics.median(r.cpus[:len(walls)])
        rss = max(r.rss_kib) * 1024
        ratio = "" if name == base or not b.walls or b.failure else f"{b.wall() / wall:.3f}"
        print(f"  {name:<16}{wall:9.3f}{cpu:9.3f}{lines / wall:13,.0f}{rss / 1e6:13.1f}{rss / lines:9.0f}  {ratio:<20}"
              + (f"  (then failed: {r.failure})" if r.failure else "")
              + (f"  ({len(walls)} run{'s' if len(walls) > 1 else ''}: slower than --slow)" if r.slow else ""))


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for what is measured.")
    ap.add_argument("--sizes", default="100000,1000000,10000000", help="comma-separated line counts")
    ap.add_argument("--runs", type=int, default=3, help="rounds per size (medians)")
    ap.add_argument("--startup-runs", type=int, default=20, help="rounds of the 2,000-line start-up row")
    ap.add_argument("--bootlens", help="bootlens command (shell-split); default: the console script next to this Python")
    ap.add_argument("--python", default=sys.executable, help="Python for bootgraph.py (default: this one)")
    ap.add_argument("--skip", action="append", default=[], choices=["bootgraph.pl", "bootgraph.py", "ftrace"],
                    help="leave a tool or the function_graph row out (repeatable)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before one run is killed")
    ap.add_argument("--slow", type=float, default=60, help="a tool whose run took longer is not run again on that input")
    ap.add_argument("--fresh", action="store_true", help="generate the logs again")
    a = ap.parse_args()
    sizes = [int(s.replace("_", "")) for s in a.sizes.split(",") if s]

    script = Path(sys.executable).parent / "bootlens"
    bootlens = shlex.split(a.bootlens) if a.bootlens else \
        [str(script)] if script.exists() else [sys.executable, "-m", "bootlens"]
    cache = cache_dir()
    tree = fetch_anchors(cache)
    pmg = tree / "tools/power/pm-graph"
    tools = [Tool("bootlens", [*bootlens, "analyze", "{log}", "--json", "--marker", f"ready={READY}"], "stdout", '"boots"')]
    if "bootgraph.pl" not in a.skip:
        tools.append(Tool("bootgraph.pl", ["perl", str(tree / "scripts/bootgraph.pl")], "stdout", "<svg"))
    if "bootgraph.py" not in a.skip:
        tools.append(Tool("bootgraph.py", [a.python, str(pmg / "bootgraph.py"), "-dmesg"], "bootgraph.html", "<html"))
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        print("note: PYTHONDONTWRITEBYTECODE is set here; the tools run without it (with .pyc files)")
    if not os.access(TIME, os.X_OK):
        print(f"note: no {TIME} (apt-get install time): peak RSS is wait4's, which counts this script's size too")

    print(f"bootlens: {shlex.join(bootlens)}; anchors from {tree}; python {a.python}")
    print(f"nproc {os.cpu_count()}, load average {loadavg()} at start")
    print("figures: wall = median of the runs (perf_counter), CPU = median user+sys (wait4 rusage), "
          "lines/s = lines / median wall, peak RSS = max over the runs")

    rates: dict[int, float] = {}
    walls: dict[int, float] = {}  # median wall per size (the linearity bar)
    bytes_per_line: dict[int, float] = {}
    tool_rates: dict[str, float] = {}  # lines/s of each tool at the last size it ran
    for n in sizes:
        log, lines, returned = make_log(cache, n, a.fresh)
        bad = check_bootlens_json(tools[0].command(log), returned)
        if bad:
            print(f"\n{n:,} lines: bootlens output wrong ({bad}); size skipped")
            continue
        res = bench(tools, log, a.runs, a.timeout, lines, tool_rates, a.slow)
        table(f"initcall log {log.name}", lines, res, "bootlens")
        for name, r in res.items():
            if r.walls and not r.failure:
                tool_rates[name] = lines / r.wall()
        b = res["bootlens"]
        if b.walls and not b.failure:
            rates[n] = lines / b.wall()
            walls[n] = b.wall()
            bytes_per_line[n] = max(b.rss_kib) * 1024 / lines

    # the function_graph row: only once bench/gen_ftrace.py exists (helper H-ftrace writes it)
    gen = HERE / "gen_ftrace.py"
    ft_rate: tuple[int, float] | None = None  # (lines, lines/s) of bootlens on the trace
    if "ftrace" in a.skip:
        pass
    elif not gen.exists():
        print("\nfunction_graph trace: skipped, bench/gen_ftrace.py does not exist yet")
    else:
        n = max(sizes)
        trace = cache / "logs" / f"ftrace-{n}-{hashlib.sha256(gen.read_bytes()).hexdigest()[:10]}.txt"
        if not trace.exists() or a.fresh:
            subprocess.run([sys.executable, str(gen), "--lines", str(n), "--out", str(trace)], check=True)
        lines = sum(1 for _ in trace.open("rb"))
        dmesg, _, _ = make_log(cache, min(sizes), False)
        ft = [Tool("bootlens", [*bootlens, "analyze", "{log}", "--json"], "stdout", '"boots"')]
        if "bootgraph.py" not in a.skip:
            ft.append(Tool("bootgraph.py -f", [a.python, str(pmg / "bootgraph.py"), "-dmesg", str(dmesg),
                                               "-ftrace", "{log}", "-f"], "bootgraph.html", "<html"))
        ft_runs = bench(ft, trace, a.runs, a.timeout, slow=a.slow)
        table(f"function_graph trace {trace.name} (bootgraph.py also reads a {min(sizes):,}-line dmesg)",
              lines, ft_runs, "bootlens")
        b = ft_runs["bootlens"]
        if b.walls and not b.failure:
            ft_rate = (lines, lines / b.wall())

    # start-up: a small log, many alternating rounds
    small, small_lines, small_returned = make_log(cache, STARTUP_LINES, a.fresh)
    bad = check_bootlens_json(tools[0].command(small), small_returned)
    startup = bench(tools, small, a.startup_runs, a.timeout)
    table(f"start-up ({a.startup_runs} rounds) {small.name}", small_lines, startup, "bootlens")
    if bad:
        print(f"  bootlens output on the small log is wrong: {bad}")

    print(f"\nload average {loadavg()} at end")
    print("bars (issue 14):")

    def bar(ok: bool | None, text: str) -> None:
        print(f"  {'n/a ' if ok is None else 'PASS' if ok else 'FAIL'}  {text}")

    for n in (1_000_000, 10_000_000):
        rate = rates.get(n)
        bar(None if rate is None else rate >= BAR_RATE, f"analyze --json >= {BAR_RATE:,} lines/s at {n:,} lines: "
            + ("not measured" if rate is None else f"{rate:,.0f}"))
    if ft_rate is not None:
        bar(ft_rate[1] >= BAR_RATE, f"analyze --json >= {BAR_RATE:,} lines/s on a {ft_rate[0]:,}-line function_graph "
            f"trace: {ft_rate[1]:,.0f}")
    if len(walls) >= 3:
        # linear = a constant cost per line once the fixed start-up is paid: the marginal cost between
        # consecutive sizes, (wall(n2) - wall(n1)) / (n2 - n1), may drift at most +-BAR_LINEAR from the
        # smallest pair to the largest. Lines/s itself cannot be constant while start-up is 10-100 ms
        # (it is most of a 100k-line run), so the raw rates are printed beside it, not judged.
        ns = sorted(walls)
        marg = [(walls[b] - walls[a]) / (b - a) for a, b in zip(ns, ns[1:])]
        drift = marg[-1] / marg[0] - 1
        steps = ", ".join(f"{a:,}->{b:,} {m * 1e9:.0f} ns/line" for (a, b), m in zip(zip(ns, ns[1:]), marg))
        raw = " -> ".join(f"{rates[n]:,.0f}" for n in ns)
        bar(abs(drift) <= BAR_LINEAR, f"linear {ns[0]:,} -> {ns[-1]:,} lines: marginal cost {steps} "
            f"({drift:+.0%}, bar +-{BAR_LINEAR:.0%}); raw lines/s {raw}")
    else:
        bar(None, "linear: needs three sizes")
    if bytes_per_line:
        n = max(bytes_per_line)
        bar(bytes_per_line[n] <= BAR_BYTES_PER_LINE, f"peak RSS <= {BAR_BYTES_PER_LINE} B/line at {n:,} lines: "
            f"{bytes_per_line[n]:.0f}")
    s = startup["bootlens"]
    if s.walls and not s.failure:
        bar(s.wall() <= BAR_STARTUP_S, f"start-up <= {BAR_STARTUP_S * 1000:.0f} ms: {s.wall() * 1000:.1f} ms wall "
            f"({s.cpu() * 1000:.1f} ms CPU)")
        pl = startup.get("bootgraph.pl")
        if pl and pl.walls and not pl.failure:
            bar(s.wall() <= BAR_STARTUP_RATIO * pl.wall(), f"start-up <= {BAR_STARTUP_RATIO:.0f}x bootgraph.pl: "
                f"{s.wall() / pl.wall():.2f}x ({pl.wall() * 1000:.1f} ms)")
    else:
        bar(False, f"start-up: bootlens failed ({s.failure})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
