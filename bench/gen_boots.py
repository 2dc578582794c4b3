#!/usr/bin/env python3
"""Write a console log of N boots, for bench/bench_boots.py and tests of many boots.

Shapes (``--shape``):

``line``
    One line a boot: ``[    0.000000] Booting Linux on physical CPU 0x0``, the kernel's first
    line (arch/arm64/kernel/setup.c). The boot splitter (timeline/boots.py) starts a new boot at
    every ``Booting Linux`` once the kernel was seen: N lines are N boots, each with nothing
    measured. The issue-29 worst case: as many boots as lines.
``small``
    ~20 lines a boot, in the shape of the reference boot ``qemu-arm64-uboot.console.log`` of the
    shared corpus (U-Boot banner, autoboot, ``Starting kernel ...``, the kernel's banner lines,
    ``Run /init as init process``, ``APP READY``, ``reboot: Power down``); the printk times of
    each boot move by a fixed-seed random few ms, so boots differ (the slowest is well defined).

Usage: ``python bench/gen_boots.py N [--shape line|small] [-o FILE]`` (default standard output).
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import TextIO

SEED = 20261129

_SMALL = """\
U-Boot 2023.01+dfsg-2+deb12u3 (Jun 22 2026 - 08:38:07 +0000)

DRAM:  512 MiB
Core:  47 devices, 13 uclasses, devicetree: board
Flash: 64 MiB
In:    pl011@9000000
Out:   pl011@9000000
Err:   pl011@9000000
Net:   eth0: virtio-net#32
Hit any key to stop autoboot:  0 
loading kernel to address 0000000040400000 size 1f6dfc0 initrd 0000000044000000 size f12c4
   Booting using the fdt blob at 0x5edb6db0

Starting kernel ...

{0} Booting Linux on physical CPU 0x0000000000 [0x411fd070]
{0} Linux version 6.1.0-56-arm64 (debian-kernel@lists.debian.org) #1 SMP Debian 6.1.192-2 (2026-11-16)
{0} Machine model: linux,dummy-virt
{0} Kernel command line: console=ttyAMA0 printk.time=1 panic=-1
{1} printk: console [ttyAMA0] enabled
{2} Freeing unused kernel memory: 6464K
{3} Run /init as init process
APP READY
{4} reboot: Power down
"""


def _stamp(ns: int) -> str:
    s, us = divmod(ns // 1000, 1_000_000)
    return f"[{s:5d}.{us:06d}]"


def write_boots(out: TextIO, n: int, shape: str, seed: int = SEED) -> None:
    """Write n boots of ``shape`` to ``out``."""
    if shape == "line":
        line = "[    0.000000] Booting Linux on physical CPU 0x0\n"
        chunk = line * 10_000
        for _ in range(n // 10_000):
            out.write(chunk)
        out.write(line * (n % 10_000))
        return
    rnd = random.Random(seed)
    for _ in range(n):
        # the reference boot's printk times, each moved by up to a few ms
        t = [0, 181_536_000 + rnd.randrange(5_000_000), 864_825_000 + rnd.randrange(20_000_000)]
        t.append(t[2] + 14_526_000 + rnd.randrange(2_000_000))
        t.append(t[3] + 132_409_000 + rnd.randrange(3_000_000))
        out.write(_SMALL.format(*(_stamp(x) for x in t)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", type=int, help="how many boots")
    p.add_argument("--shape", choices=("line", "small"), default="line")
    p.add_argument("-o", "--output", help="the file to write (default: standard output)")
    p.add_argument("--seed", type=int, default=SEED)
    a = p.parse_args()
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            write_boots(f, a.n, a.shape, a.seed)
    else:
        write_boots(sys.stdout, a.n, a.shape, a.seed)


if __name__ == "__main__":
    main()
