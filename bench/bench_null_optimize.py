#!/usr/bin/env python3
"""``optimize`` with no real change: does it keep nothing?

A rule that proposes a change doing nothing (``bootlens.noop=1`` on the kernel command line: an
unknown argument the kernel hands to init, which ignores it) in one stage, run through the real
``optimize`` on a real reference target, as many times as asked. Every run boots the baseline
and the no-op configuration interleaved, and judges the no-op as any change: on the stage it
names (``--stage``), the total not worse, else on the total. A kept no-op is a false positive;
bench/bench_significance.py measures their rate on thousands of comparisons of recorded boots,
this shows it on fresh ones.

    python3 bench/bench_null_optimize.py --runs 3 --stage kernel_init        # about 2 min a run
    python3 bench/bench_null_optimize.py --runs 3 --hogs 2                   # beside two CPU hogs
    python3 bench/bench_null_optimize.py --runs 3 --deterministic            # on the guest's clock
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from bootlens.advise import RuleRegistry
from bootlens.advise.base import Change, ChangeKind, Confidence, Context, Finding, Rule
from bootlens.experiment.optimize import optimize
from bootlens.targets.qemu import QemuTarget, setup
from bootlens.timeline.analyze import BootAnalysis

STAGE = "kernel_init"


class NoOp(Rule):
    """Proposes a kernel argument that changes nothing, as if it saved 100 ms in a stage."""

    id = "bench.noop"
    title = "a change that does nothing"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        yield Finding(self.id, "bootlens.noop=1 changes nothing", STAGE, 100_000_000, "made up for the bench",
                      Confidence.LOW, "none", Change(ChangeKind.CMDLINE, "bootlens.noop=1", "add bootlens.noop=1"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="qemu-arm64")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="boots a side first (then --repeat auto, up to 6)")
    ap.add_argument("--stage", default=STAGE, help="the stage the no-op claims to act on")
    ap.add_argument("--hogs", type=int, default=0, help="busy shell loops to run beside it (two on 2 cores)")
    ap.add_argument("--deterministic", action="store_true", help="QEMU -icount, read on the guest's clocks")
    a = ap.parse_args()
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.hogs)]
    try:
        _runs(a)
    finally:
        for h in hogs:
            h.kill()


def _runs(a: argparse.Namespace) -> None:
    global STAGE
    STAGE = a.stage
    reg = RuleRegistry()
    reg.register(NoOp)
    kept = 0
    for i in range(a.runs):
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="bootlens-null-") as tmp:
            r = optimize(QemuTarget(setup(a.target), deterministic=a.deterministic), Path(tmp) / "o", a.repeat, reg,
                         max_repeat=6)
        (t,) = r.tried
        kept += t.kept
        print(f"run {i + 1}: {'KEPT' if t.kept else 'not kept'} after {t.outcome.measured.boots} boots a side "
              f"({time.monotonic() - t0:.0f} s): {t.decision}")
    print(f"{a.target}{' --deterministic' if a.deterministic else ''}, {a.hogs} hogs (load average now "
          f"{os.getloadavg()[0]:.2f}), a no-op judged on {a.stage}: kept in {kept} of {a.runs} optimize runs")


if __name__ == "__main__":
    main()
