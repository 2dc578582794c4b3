#!/usr/bin/env python3
"""Capture accuracy and CPU cost: bootlens capture against grabserial, through a real pty.

What it measures
    An emitter writes boot-log-like lines into a pseudo-terminal, pacing the bytes at the line
    rate (10 bits per byte, 8N1; it sleeps until 0.3 ms before each piece is due, then spins),
    and notes when each line's first byte went out. The capture tool reads the other side of the pty. For each line, the error is
    (captured time - first line's captured time) - (emitted time - first line's emitted time):
    both tools are judged the same way, relative to their own first line (grabserial's -t
    clock starts at its first byte). Reported: p50 and p99 of |error| and the tool's CPU seconds
    (user + system, from wait4), at 115200 and 3,000,000 baud.

    bootlens line times come from its recording with the wire correction (the time a line's
    first byte left the target); grabserial's from its "-t" prefixes. "floor" is the least any
    reader can do on this machine: a loop that only waits for the pty, reads and stamps, timed
    like bootlens; what error it shows is the machine's (scheduling, the pty's kernel worker).

Run (needs the grabserial script, e.g. `pip install grabserial`; not a bootlens dependency):

    python bench/bench_capture.py                 # both tools, both rates
    python bench/bench_capture.py --lines 300 --tools bootlens
"""

from __future__ import annotations

import argparse
import ctypes
import os
import pty
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tty
from pathlib import Path

BITS = 10


def make_lines(n: int, seed: int = 3) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    t = 0.0
    for i in range(n):
        t += rnd.uniform(0.0001, 0.003)
        msg = "x" * rnd.randint(20, 100)
        out.append(f"[{t:12.6f}] line {i} {msg}\n".encode())
    return out


def _fine_timer_slack() -> None:
    """Ask the kernel to wake this process on time (PR_SET_TIMERSLACK = 1 ns, default 50 us)."""
    try:
        ctypes.CDLL(None).prctl(29, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _wait_until(deadline: float) -> None:
    """Sleep until 0.3 ms before the deadline, then spin: on time without holding a core."""
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return
        if left > 0.0004:
            time.sleep(left - 0.0003)


def emit(master: int, lines: list[bytes], baud: int, gap_s: float) -> list[int]:
    """Write the lines paced at `baud`; return the monotonic ns each line's first byte went out.

    The emitter sleeps between pieces instead of busy-waiting for the whole run: on a 2-core
    machine a spinning emitter takes a core from the reader and from the kernel worker that
    moves pty data, and the measurement then shows the machine, not the capture.
    """
    _fine_timer_slack()
    byte_s = BITS / baud
    piece = max(1, int(0.0005 / byte_s))  # pace in pieces of about 0.5 ms of line time
    sent = []
    t_next = time.perf_counter() + 0.2
    for data in lines:
        _wait_until(t_next)
        sent.append(time.monotonic_ns())
        # the line's first byte alone, as a UART sends it, then pieces of about 0.5 ms: a reader
        # that places a chunk's first byte (n - 1) byte times before the chunk arrived is then
        # exact at line starts, which is what is measured (a whole piece written at once would
        # look like bytes that arrived faster than the line can carry them)
        for k0, k1 in [(0, 1), *((k, k + piece) for k in range(1, len(data), piece))]:
            os.write(master, data[k0:k1])
            t_next += len(data[k0:k1]) * byte_s
            _wait_until(t_next)
        t_next += gap_s
    return sent


# The floor: the least any reader can do here. A loop that only waits for the pty, reads what is
# there and stamps it, writing a bootlens-format recording so its lines are timed exactly as
# bootlens's are. What is left of its error is the machine (scheduling, the pty's kernel worker).
FLOOR_READER = r"""
import base64, json, os, select, sys, time, ctypes
ctypes.CDLL(None).prctl(29, 1, 0, 0, 0)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)
import tty; tty.setraw(fd)
out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
t0 = time.monotonic_ns()
os.write(out, (json.dumps({"format": "bootlens-recording", "format_version": 1, "source": sys.argv[1],
    "baud": int(sys.argv[3]), "bits_per_byte": 10, "origin": "start", "t0_monotonic_ns": t0}) + "\n").encode())
buf = b""
while True:
    select.select([fd], [], [])
    data = os.read(fd, 65536)
    t = time.monotonic_ns() - t0
    os.write(out, (json.dumps({"t": t, "b64": base64.b64encode(data).decode()}) + "\n").encode())
    buf = (buf + data)[-8:]
    if b"END\n" in buf:
        break
"""


QOS = True  # hold the PM QoS wake-up request for every tool (see main)


def run_tool(tool: str, baud: int, lines: list[bytes], workdir: Path, gap_s: float) -> tuple[list[int], list[int], float]:
    master, slave = pty.openpty()
    tty.setraw(master)
    name = os.ttyname(slave)
    out = workdir / f"{tool}-{baud}.out"
    if tool == "floor":
        cmd = [sys.executable, "-c", FLOOR_READER, name, str(out), str(baud)]
        stdout = subprocess.DEVNULL
    elif tool == "bootlens":
        cmd = [shutil.which("bootlens") or "bootlens", "capture", "-q", "--port", name, "--baud", str(baud),
               "-o", str(out), "--quit", "^END", *([] if QOS else ["--no-low-latency"])]
        stdout = subprocess.DEVNULL
    else:
        cmd = [shutil.which("grabserial") or "grabserial", "-S", "-d", name, "-b", str(baud), "-t", "-q", "^END",
               "-o", str(out)]
        stdout = subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    time.sleep(1.5)  # let the tool open and configure the port
    sent = emit(master, lines, baud, gap_s)
    os.write(master, b"END\n")
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    os.close(master)
    os.close(slave)
    if status != 0:
        raise SystemExit(f"{tool} failed ({status}): {err[-500:]}")
    cpu = usage.ru_utime + usage.ru_stime
    if tool in ("bootlens", "floor"):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
        from bootlens.capture.recording import line_times, read_recording

        rec = read_recording(str(out))
        got, times = line_times(rec, wire=True)
        got_times = [t for data, t in zip(got, times) if data.startswith(b"[")]
    else:
        rx = re.compile(rb"^\[(\d+)\.(\d{6}) +[-\d.]+\] \[")
        got_times = []
        for raw in out.read_bytes().split(b"\n"):
            m = rx.match(raw)
            if m:
                got_times.append(int(m[1] + m[2]) * 1000)
    return sent, got_times, cpu


def errors_ms(sent: list[int], got: list[int]) -> list[float]:
    if len(got) != len(sent):
        raise SystemExit(f"captured {len(got)} lines of {len(sent)}")
    return [abs((g - got[0]) - (s - sent[0])) / 1e6 for s, g in zip(sent, got)]


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=0, help="lines per run (default: ~8 s of traffic per rate)")
    ap.add_argument("--tools", default="floor,bootlens,grabserial",
                    help="floor: a minimal read-and-stamp loop, the best any reader does on this machine")
    ap.add_argument("--bauds", default="115200,3000000")
    ap.add_argument("--no-qos", action="store_true",
                    help="measure without the PM QoS request (/dev/cpu_dma_latency = 0) for every tool")
    args = ap.parse_args()
    global QOS
    QOS = not args.no_qos
    print(f"python {sys.version.split()[0]}, nproc {os.cpu_count()}")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from bootlens.capture.loop import low_wakeup_latency

    with low_wakeup_latency(QOS) as held:
        print("CPU wake-up latency request (PM QoS 0 us) for all tools: " + ("held" if held else "not held"))
        _runs(args)


def _runs(args: argparse.Namespace) -> None:
    tools = args.tools.split(",")
    if "grabserial" in tools and shutil.which("grabserial") is None:
        raise SystemExit("grabserial not found: pip install grabserial (or --tools bootlens)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for baud in map(int, args.bauds.split(",")):
            n = args.lines or (1000 if baud < 1_000_000 else 20000)
            lines = make_lines(n)
            gap = 0.0005 if baud < 1_000_000 else 0.0
            for tool in tools:
                sent, got, cpu = run_tool(tool, baud, lines, Path(tmp), gap)
                errs = errors_ms(sent, got)
                nbytes = sum(map(len, lines))
                rows.append((tool, baud, n, nbytes, pct(errs, 50), pct(errs, 99), max(errs), cpu))
                print(f"{tool:10s} {baud:>8d} baud  {n:6d} lines {nbytes / 1e6:5.2f} MB  "
                      f"p50 {pct(errs, 50):7.3f} ms  p99 {pct(errs, 99):7.3f} ms  max {max(errs):7.3f} ms  "
                      f"CPU {cpu:6.2f} s", flush=True)
    print("\ntargets: p99 error <= 0.5 ms; bootlens CPU <= 1/5 of grabserial's at 3 Mbaud")
    by = {(r[0], r[1]): r for r in rows}
    for baud in map(int, args.bauds.split(",")):
        b, g = by.get(("bootlens", baud)), by.get(("grabserial", baud))
        if b:
            print(f"  {baud:>8d} baud: bootlens p99 {b[5]:.3f} ms: {'PASS' if b[5] <= 0.5 else 'MISS'}", end="")
            if g:
                ratio = b[7] / g[7] if g[7] else float("inf")
                ok = "PASS" if baud < 1_000_000 or ratio <= 0.2 else "MISS"
                print(f"; CPU {b[7]:.2f} s vs grabserial {g[7]:.2f} s = {ratio:.2f}x"
                      f"{': ' + ok if baud >= 1_000_000 else ''}", end="")
            print()


if __name__ == "__main__":
    main()
