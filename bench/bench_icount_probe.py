#!/usr/bin/env python3
"""A probe for issue 27's deterministic mode: the noise of one reference boot's figures with and
without QEMU's ``-icount shift=0,sleep=off``, idle and with two CPU hogs, on the host's clock
(first byte to APP READY) and on the guest's (the printk time of ``Run /init``: kernel start to
init). No bootlens code is involved yet: QEMU is run directly on the cached qemu-arm64 files
(``bootlens target setup qemu-arm64`` makes them).

    python3 bench/bench_icount_probe.py 5        # boots per cell; about 5 minutes at 5
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time

K = os.path.expanduser("~/.cache/bootlens/targets/qemu-arm64")
BASE = ["qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a57", "-m", "512", "-display", "none", "-nographic",
        "-no-reboot", "-bios", "/usr/lib/u-boot/qemu_arm64/u-boot.bin", "-kernel", f"{K}/vmlinuz-6.1.0-56-arm64",
        "-initrd", f"{K}/initramfs.cpio.gz", "-append", "console=ttyAMA0 printk.time=1 panic=-1"]
INIT = re.compile(rb"\[\s*([\d.]+)\] Run /init")


def boot(icount: bool) -> tuple[float, float]:
    """One boot: (host seconds from the first byte to APP READY, printk time of 'Run /init')."""
    p = subprocess.Popen(BASE + (["-icount", "shift=0,sleep=off"] if icount else []), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdout is not None
    first: float | None = None
    init: float | None = None
    buf = b""
    while chunk := os.read(p.stdout.fileno(), 4096):
        first = first if first is not None else time.monotonic()
        buf += chunk
        if init is None and (m := INIT.search(buf)):
            init = float(m[1])
        if b"APP READY" in buf:
            break
    host = time.monotonic() - (first if first is not None else time.monotonic())
    p.kill()
    p.wait()
    if init is None:
        raise SystemExit("no 'Run /init' line: is qemu-arm64 set up (bootlens target setup qemu-arm64)?")
    return host, init


def cv(xs: list[float]) -> float:
    """Coefficient of variation, %."""
    return statistics.stdev(xs) / statistics.mean(xs) * 100


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for load in ("idle", "two hogs"):
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2 if load == "two hogs" else 0)]
        try:
            for icount in (False, True):
                r = [boot(icount) for _ in range(n)]
                host, guest = [a for a, _ in r], [b for _, b in r]
                print(f"{load:8s} icount={'on ' if icount else 'off'}: host first byte -> ready mean "
                      f"{statistics.mean(host):.3f} s CV {cv(host):.2f}%; printk 'Run /init' mean "
                      f"{statistics.mean(guest):.6f} s CV {cv(guest):.4f}%", flush=True)
        finally:
            for h in hogs:
                h.kill()


if __name__ == "__main__":
    main()
