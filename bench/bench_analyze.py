#!/usr/bin/env python3
"""Throughput and memory benchmark for ``bootlens analyze`` on a large kernel console log.

What it measures
    1. Generates a reproducible (fixed seed) Linux console log of ``--lines`` lines (default
       1,000,000): the usual boot banner, about half initcall_debug ``calling``/``returned``
       pairs (built-ins on pid 1, module inits such as ``init_sd+0x0/0x16b [sd_mod]``, async
       threads with other pids), a few hundred ``probe of ... returned`` lines and ordinary
       printk text, with monotonically increasing ``[%5d.%06d]`` stamps, ending with
       ``Run /init as init process`` and an unstamped ``APP READY``.
    2. Runs ``bootlens analyze FILE --json --marker ready='APP READY'`` once to check the output
       (exit 0, JSON parses, ``boots[0].counts.initcalls`` == generated ``returned`` lines;
       this run also warms the page cache), then ``--runs`` timed runs with stdout to
       /dev/null: wall time (perf_counter), the child's CPU time (user + system, ``os.wait4``
       rusage: the figure to trust on a shared machine) and its peak RSS.
    3. Prints per-run seconds, median seconds, median lines/s (wall and CPU) and max peak RSS
       in bytes per input line against issue 14's bars (>= 2,000,000 lines/s, <= 150 bytes a
       line). Missing a target is reported, not fatal; the exit status is non-zero only for a
       failed run or wrong output.

Run from the repository root (bootlens installed, e.g. ``pip install -e .``):

    python bench/bench_analyze.py                      # 1M lines, 5 runs
    python bench/bench_analyze.py --lines 200000 --runs 3 --keep --out /tmp/big.log
    python bench/bench_analyze.py --bootlens "$(pyenv which bootlens)"   # skip a pyenv shim
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEED = 20240611
TARGET_LINES_PER_S = 2_000_000  # issue 14 part 4
TARGET_BYTES_PER_LINE = 150

_VERBS = ["init", "setup", "register", "probe", "start", "enable", "alloc", "create", "add"]
_SUBSYS = ["pci", "usb", "net", "tty", "serial", "crypto", "dma", "gpio", "i2c", "spi", "clk",
           "rtc", "watchdog", "thermal", "cpufreq", "audit", "sched", "mm", "vfs", "blk", "scsi",
           "ext4", "nfs", "ipv6", "tcp", "bpf", "kvm", "iommu", "acpi", "efi", "pmu", "perf"]
_NOUNS = ["driver", "core", "subsys", "bus", "class", "ops", "cache", "pool", "table", "hooks",
          "notifier", "sysfs", "debugfs", "proc", "workqueue", "timer", "irq", "device"]
_MODULES = ["sd_mod", "virtio_blk", "virtio_net", "ext4", "xhci_hcd", "usb_storage", "nvme",
            "e1000e", "snd_hda_intel", "drm", "mmc_block", "sdhci", "fuse", "loop", "dm_mod"]
_DEVICES = ["9000000.pl011", "9010000.pl031", "9030000.pl061", "a003e00.virtio_mmio",
            "4010000000.pcie", "fe200000.gpio", "fe201000.serial", "fe300000.mmcnr",
            "3f980000.usb", "fe804000.i2c", "7e215040.spi", "soc:firmware", "gpu", "leds"]
_HEX = "0123456789abcdef"


def _printk_messages(r: random.Random) -> list[str]:
    """A pool of ordinary printk message texts, 40-120 characters each."""
    pool: list[str] = []
    for _ in range(4000):
        bus, dev, fn = r.randrange(256), r.randrange(32), r.randrange(8)
        pci = f"pci 0000:{bus:02x}:{dev:02x}.{fn}"
        n = r.randrange(1, 64)
        addr = r.randrange(0x1000_0000, 0xffff_ffff) & ~0xfff
        size = 1 << r.randrange(12, 28)
        choice = r.randrange(12)
        if choice == 0:
            msg = f"{pci}: [{r.randrange(0x10000):04x}:{r.randrange(0x10000):04x}] type 00 class 0x{r.randrange(1 << 24):06x}"
        elif choice == 1:
            msg = f"{pci}: reg 0x{r.randrange(0x10, 0x30):02x}: [mem 0x{addr:08x}-0x{addr + size - 1:08x} 64bit pref]"
        elif choice == 2:
            msg = f"usb {r.randrange(1, 4)}-{n % 8 + 1}: new high-speed USB device number {n} using xhci_hcd"
        elif choice == 3:
            msg = f"audit: type=2000 audit({r.random():.3f}:{n}): state=initialized audit_enabled=0 res=1"
        elif choice == 4:
            msg = f"EXT4-fs (vda{n % 4 + 1}): mounted filesystem with ordered data mode. Quota mode: none."
        elif choice == 5:
            msg = f"Memory: {r.randrange(100000, 4000000)}K/{r.randrange(4000000, 8000000)}K available ({r.randrange(8000, 20000)}K kernel code)"
        elif choice == 6:
            msg = f"virtio_net virtio{n}: eth{n % 4}: link up, 1000Mbps, full-duplex, lpa 0x{r.randrange(1 << 16):04X}"
        elif choice == 7:
            msg = f"clocksource: {r.choice(['arch_sys_counter', 'jiffies', 'tsc-early'])}: mask: 0x{'f' * r.randrange(8, 17)} max_cycles: 0x{r.randrange(1 << 40):x}"
        elif choice == 8:
            msg = f"smp: Bringing up secondary CPUs ... CPU{n % 8}: Booted secondary processor 0x{n:010x} [0x411fd070]"
        elif choice == 9:
            msg = f"{r.choice(_SUBSYS)}: registered new interface driver {r.choice(_SUBSYS)}_{r.choice(_NOUNS)}{n}"
        elif choice == 10:
            msg = f"Freeing unused kernel memory: {r.randrange(512, 8192)}K, node {n % 2}, zone Normal, order {n % 11}"
        else:
            msg = f"NET: Registered PF_{r.choice(['INET6', 'PACKET', 'KEY', 'NETLINK', 'VSOCK'])} protocol family (slot {n})"
        if len(msg) < 40:
            msg += " " + "".join(r.choice(_HEX) for _ in range(40 - len(msg)))
        pool.append(msg[:120])
    pool.append("landlock: Up and running.  (LSM initialised, ruleset ABI version 3)")
    return pool


def _initcall_names(r: random.Random) -> list[tuple[str, str]]:
    """(function+offset/size, module suffix or '') pairs: built-ins and module inits."""
    names = [("spawn_ksoftirqd+0x0/0x58", ""), ("init_sd+0x0/0x16b", " [sd_mod]")]
    for _ in range(3000):
        fn = f"{r.choice(_SUBSYS)}_{r.choice(_NOUNS)}_{r.choice(_VERBS)}"
        sym = f"{fn}+0x0/0x{r.randrange(0x10, 0x400):x}"
        names.append((sym, f" [{r.choice(_MODULES)}]" if r.random() < 0.15 else ""))
    return names


def generate(path: Path, n_lines: int) -> tuple[int, int]:
    """Write the log; return (lines written, initcall ``returned`` lines)."""
    r = random.Random(SEED)
    msgs, names = _printk_messages(r), _initcall_names(r)
    out: list[str] = []
    us = 0  # printk clock, microseconds
    returned = 0
    # Async initcalls left open: (deadline in lines, symbol, module, start µs).
    open_async: list[tuple[int, str, str, int]] = []

    def emit(text: str, step: int) -> None:
        nonlocal us
        us += step
        out.append(f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}] {text}\n")

    out.append("[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x411fd070]\n")
    out.append("[    0.000000] Linux version 6.1.0-56-arm64 (debian-kernel@lists.debian.org) "
               "(gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) "
               "#1 SMP Debian 6.1.123-1 (2025-01-02)\n")
    out.append("[    0.000000] Kernel command line: BOOT_IMAGE=/vmlinuz-6.1.0-56-arm64 "
               "root=/dev/vda2 ro console=ttyAMA0,115200 initcall_debug printk.time=1\n")
    body = n_lines - 5  # banner (3) + "Run /init" + "APP READY"
    probes_left = 300
    while (room := body - (len(out) - 3)) > 0:
        free = room - len(open_async)  # lines not reserved for closing open async calls
        if open_async and (free <= 0 or min(open_async)[0] <= len(out)):
            due = min(open_async)
            open_async.remove(due)
            _, sym, mod, start = due
            emit(f"initcall {sym}{mod} returned 0 after {us + 7 - start} usecs", 7)
            returned += 1
            continue
        x = r.random()
        if x < 0.31 and free >= 2:  # synchronous pair on pid 1
            sym, mod = r.choice(names)
            dur = int(r.expovariate(1 / 150)) if r.random() < 0.998 else r.randrange(10_000, 200_000)
            emit(f"calling  {sym}{mod} @ 1", r.randrange(3, 40))
            ret = 0 if r.random() < 0.97 else r.choice([-19, -22, -12])
            emit(f"initcall {sym}{mod} returned {ret} after {dur} usecs", dur + r.randrange(1, 9))
            returned += 1
        elif x < 0.34 and free >= 2 and len(open_async) < 8:  # async thread, returns later
            sym, mod = r.choice(names)
            emit(f"calling  {sym}{mod} @ {r.randrange(60, 400)}", r.randrange(3, 40))
            open_async.append((len(out) + r.randrange(2, 50), sym, mod, us))
        elif probes_left and r.random() < 600 / body:
            probes_left -= 1
            dur = r.randrange(0, 120_000)
            emit(f"probe of {r.choice(_DEVICES)} returned 0 after {dur} usecs", r.randrange(5, 200))
        else:
            emit(r.choice(msgs), r.randrange(1, 60))
    emit("Run /init as init process", r.randrange(100, 5000))
    out.append("APP READY\n")
    with path.open("w", encoding="ascii") as f:
        f.writelines(out)
    return len(out), returned


def run_once(cmd: list[str], stdout: int) -> tuple[float, float, int, int]:
    """Run cmd; return (wall seconds, CPU seconds, exit code, peak RSS KiB of the child)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
    return wall, ru.ru_utime + ru.ru_stime, p.returncode, ru.ru_maxrss


def check_output(cmd: list[str], expected_initcalls: int) -> None:
    """One untimed run that captures stdout and validates the JSON (also a warm-up)."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"FAIL: check run exited {p.returncode}\n{p.stderr.decode(errors='replace')}")
    try:
        doc = json.loads(p.stdout)
        got = doc["boots"][0]["counts"]["initcalls"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        sys.exit(f"FAIL: JSON output unusable: {e!r}")
    print(f"check run: JSON {len(p.stdout):,} bytes, {len(doc['boots'])} boot(s), "
          f"counts={doc['boots'][0]['counts']}")
    if p.stderr:
        print(f"check run stderr: {p.stderr.decode(errors='replace').strip()}")
    if got != expected_initcalls:
        sys.exit(f"FAIL: boots[0].counts.initcalls = {got}, expected {expected_initcalls}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--out", type=Path, help="where to write the log (default: a temp dir)")
    ap.add_argument("--bootlens", default="bootlens", help="command to run (shell-split)")
    a = ap.parse_args()
    if a.lines < 10 or a.runs < 1:
        ap.error("--lines must be >= 10 and --runs >= 1")

    print(f"python {platform.python_version()} ({sys.executable}), nproc {os.cpu_count()}, "
          f"{platform.platform()}")
    tmp = None if a.out else tempfile.TemporaryDirectory(prefix="bootlens-bench-")
    path = a.out or Path(tmp.name) / "console.log"  # type: ignore[union-attr]
    try:
        t0 = time.perf_counter()
        n_lines, n_returned = generate(path, a.lines)
        size = path.stat().st_size
        print(f"generated {path}: {n_lines:,} lines, {size:,} bytes ({size / 1e6:.1f} MB), "
              f"{n_returned:,} initcall returned lines, in {time.perf_counter() - t0:.1f} s")

        cmd = shlex.split(a.bootlens) + ["analyze", str(path), "--json", "--marker", "ready=APP READY"]
        print("command:", shlex.join(cmd))
        check_output(cmd, n_returned)

        walls: list[float] = []
        cpus: list[float] = []
        rss: list[int] = []
        with open(os.devnull, "wb") as devnull:
            for i in range(a.runs):
                wall, cpu, code, kib = run_once(cmd, devnull.fileno())
                if code != 0:
                    sys.exit(f"FAIL: run {i + 1} exited {code}")
                walls.append(wall)
                cpus.append(cpu)
                rss.append(kib)
                print(f"run {i + 1}: {wall:.3f} s wall, {cpu:.3f} s CPU, peak RSS {kib / 1024:.1f} MB")

        med = statistics.median(walls)
        rate = n_lines / med
        cpu_rate = n_lines / statistics.median(cpus)
        peak_mb = max(rss) / 1024
        per_line = max(rss) * 1024 / n_lines
        print("\nsummary")
        print(f"  lines            {n_lines:,}")
        print(f"  bytes            {size:,}")
        print(f"  runs (s)         {', '.join(f'{w:.3f}' for w in walls)}")
        print(f"  median           {med:.3f} s")
        print(f"  CPU runs (s)     {', '.join(f'{c:.3f}' for c in cpus)}")
        print(f"  median lines/s   {rate:,.0f} wall, {cpu_rate:,.0f} CPU   target >= {TARGET_LINES_PER_S:,}: "
              f"{'PASS' if rate >= TARGET_LINES_PER_S else 'MISS'}")
        print(f"  max peak RSS     {peak_mb:.1f} MB = {per_line:.0f} bytes/line   target <= "
              f"{TARGET_BYTES_PER_LINE}: {'PASS' if per_line <= TARGET_BYTES_PER_LINE else 'MISS'}")
    finally:
        if a.keep:
            print(f"kept {path}")
        elif tmp is not None:
            tmp.cleanup()
        elif path.exists():
            path.unlink()


if __name__ == "__main__":
    main()
