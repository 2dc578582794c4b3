#!/usr/bin/env python3
"""A big synthetic function_graph boot trace for the benches: N lines, fixed seed.

The shape of a real boot-time trace taken with pm-graph's options (``ftrace=function_graph
ftrace_graph_filter=do_one_initcall trace_options=funcgraph-abstime,funcgraph-cpu,
funcgraph-proc,funcgraph-duration,funcgraph-tail``): one graph per initcall under
``do_one_initcall``, nested calls up to 9 deep from a pool of a few thousand kernel-like names,
absolute times that only go forward, duration flags (+ ! # * @ $) as the kernel prints them,
the closing ``} /* name */`` tails, a context-switch banner now and then.

    python3 bench/gen_ftrace.py --lines 10000000 --out /tmp/fg-10M.txt
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys

HEADER = ("# tracer: function_graph\n#\n"
          "#     TIME        CPU  TASK/PID         DURATION                  FUNCTION CALLS\n"
          "#      |          |     |    |           |   |                     |   |   |   |\n")
PREFIXES = ("of_", "clk_", "regmap_", "dev_", "kmem_", "mutex_", "_raw_spin_", "pci_", "usb_", "sysfs_", "kernfs_",
            "device_", "driver_", "bus_", "irq_", "platform_", "gpio_", "pinctrl_", "i2c_", "spi_")
VERBS = ("init", "add", "find", "get", "put", "lock", "unlock", "alloc", "free", "register", "probe", "match",
         "create", "lookup", "read", "write", "set", "update", "attach", "bind")


def _flag(us: float) -> str:
    """The kernel's duration mark (trace_functions_graph.c trace_find_mark)."""
    for limit, mark in ((1e6, "$"), (1e5, "@"), (1e4, "*"), (1e3, "#"), (1e2, "!"), (1e1, "+")):
        if us > limit:
            return mark
    return " "


def _dur(ns: int) -> str:
    us = ns / 1000
    text = f"{us:.3f} us" if us < 1e6 else f"{int(us)} us"
    return f"{_flag(us)} {text:>11} "


class Gen:
    """Writes lines until ``limit``; times in ns advance with every line."""

    def __init__(self, out: object, limit: int, seed: int) -> None:
        self.w = out.write  # type: ignore[attr-defined]
        self.limit = limit
        self.n = 0
        self.rng = random.Random(seed)
        self.t = 500_000_000  # 0.5 s: initcalls start after the early boot
        self.funcs = [f"{self.rng.choice(PREFIXES)}{self.rng.choice(VERBS)}_{i:x}" for i in range(3000)]
        # how often a kernel calls each function is skewed (a few locking and allocation helpers
        # are most calls): Zipf weights over the pool, the first names the most called
        self.cum = list(itertools.accumulate(1 / (r + 1) ** 1.1 for r in range(len(self.funcs))))
        self.procs = ["swapper/0-1", "kworker/0:1-23", "kworker/u4:0-7", "modprobe-81"]
        self.cpu = 0
        self.proc = self.procs[0]

    def line(self, ts: int, dur: str, depth: int, body: str) -> None:
        s, ns = divmod(ts, 1_000_000_000)
        self.w(f"{s:6d}.{ns // 1000:06d} | {self.cpu:3d})  {self.proc:^14} | {dur:>14}|  {'  ' * depth}{body}\n")
        self.n += 1

    def call(self, name: str, depth: int) -> None:
        rng = self.rng
        start = self.t
        self.t += rng.randint(200, 900)
        kids = 0 if depth >= 9 or self.n >= self.limit - 2 * depth - 2 else rng.choice((0, 0, 0, 1, 2, 3, 4, 6))
        if kids == 0 and depth > 1:
            self.t += int(rng.expovariate(1 / 400))
            self.line(start, _dur(self.t - start), depth, f"{name}();")
            return
        self.line(start, "", depth, f"{name}() {{")
        for _ in range(kids):
            self.call(rng.choices(self.funcs, cum_weights=self.cum)[0], depth + 1)
        if depth == 1 and rng.random() < 0.01:
            self.t += rng.randint(1_000_000, 30_000_000)  # an initcall that sleeps (msleep, a firmware wait)
        self.t += rng.randint(50, 300)
        self.line(self.t, _dur(self.t - start), depth, f"}} /* {name} */")

    def run(self) -> None:
        self.w(HEADER)
        ic = 0
        while self.n < self.limit - 4:
            if self.rng.random() < 0.02:  # a context switch on this CPU
                new = self.rng.choice(self.procs)
                self.w(f" ------------------------------------------\n {self.cpu})  {self.proc}  =>  {new}\n"
                       " ------------------------------------------\n\n")
                self.n += 4
                self.proc = new
            self._initcall(ic)
            ic += 1

    def _initcall(self, ic: int) -> None:
        start = self.t
        self.line(start, "", 0, "do_one_initcall() {")
        self.t += 300
        self.call(f"initcall_{ic % 1200}_init", 1)
        self.t += 200
        self.line(self.t, _dur(self.t - start), 0, "} /* do_one_initcall */")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, required=True, help="about this many lines (a graph is not cut)")
    ap.add_argument("--out", required=True, help="file to write ('-' for standard output)")
    ap.add_argument("--seed", type=int, default=14)
    a = ap.parse_args(argv)
    out = sys.stdout if a.out == "-" else open(a.out, "w", buffering=1 << 20)
    try:
        Gen(out, a.lines, a.seed).run()
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
