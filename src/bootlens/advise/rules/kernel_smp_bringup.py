"""Bringing up secondary CPUs on a product that uses one core -> ``maxcpus=1``.

``smp_init`` prints ``smp: Bringing up secondary CPUs ...``, starts each CPU (firmware call, per-CPU
kernel threads, calibration) and prints ``smp: Brought up N nodes, M CPUs``; the init thread waits
throughout. With ``maxcpus=1`` the kernel starts only the boot CPU; the others stay present and
can be brought online later from user space (``echo 1 > /sys/devices/system/cpu/cpuN/online``),
which keeps them available to a product that needs them after it is ready.

The span between the two lines also holds the console's printing of the lines in between where a
serial console prints as lines are logged (a boot console, or the real console once enabled):
at 115200 baud ten lines of 60 bytes take 52 ms, more than bringing up four cores. That time
(:mod:`..console`, an upper bound: lines the secondary CPUs log are often printed later) is taken
off; what is left is at least the bring-up's own time. Where the console's rate is not known
either, 115200 baud is assumed and said.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..console import console_time
from ..evidence import evidence
from . import _kernel as K

MIN_NS = 1_000_000


@REGISTRY.register
class SmpBringup(Rule):
    """Time the init thread spends starting the other CPUs."""

    id = "kernel.smp_bringup"
    title = "SMP bring-up"
    needles = ("smp: Bringing up secondary CPUs",)

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        if K.arg(boot, "maxcpus") is not None or K.arg(boot, "nosmp") is not None:
            return
        ncpu, done_no = K.cpus(boot)
        starts = [i for i in K.grep(boot, "smp: Bringing up secondary CPUs")]
        if ncpu is None or ncpu < 2 or not starts or done_no is None:
            return
        a, b = starts[0], boot.boot.lines.index_of(done_no)
        span = K.span(boot, a, b)
        if span is None or b <= a:
            return
        con = console_time(boot, ctx, a, b - 1)
        saving = span - (con.ns or 0)
        if saving < MIN_NS:
            return  # what is left once the console's share is off is too small to be sure of
        yield Finding(
            rule=self.id,
            title=f"Starting {ncpu - 1} secondary CPU{'s' if ncpu > 2 else ''} takes {K.ms(saving)}",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=(f"from 'smp: Bringing up secondary CPUs' (line {K.line_no(boot, a)}) to 'smp: Brought "
                        f"up ... {ncpu} CPUs' (line {done_no}): {K.ms(span)}, less console time ({con.text}) "
                        f"= {K.ms(saving)}, which maxcpus=1 skips; the rest of the boot then runs on one CPU, "
                        "which can cost more than this if it had work to run in parallel (async probes, the "
                        "initramfs unpack, the crypto tests)"),
            confidence=Confidence.LOW if con.assumed else Confidence.MEDIUM,
            tradeoff=("only for a product that runs on one core until it is ready: everything after this "
                      "runs on one CPU; bring the others online from user space after the application "
                      "is ready if they are needed (echo 1 > /sys/devices/system/cpu/cpuN/online)"),
            change=Change(ChangeKind.CMDLINE, "maxcpus=1",
                          "add maxcpus=1 to the kernel command line (nosmp removes SMP altogether and "
                          "cannot be undone at run time)"),
            evidence=evidence(boot.boot, [K.line_no(boot, a), done_no], K.EVIDENCE_MAX),
        )
