"""Delay-loop calibration: the kernel measures loops_per_jiffy at every boot unless told."""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.model import Kind, Milestone
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..console import console_time
from ..evidence import evidence, first_event, secs


@REGISTRY.register
class DelayLoopCalibration(Rule):
    """``Calibrating delay loop... N BogoMIPS (lpj=N)`` is a busy loop of several jiffies that
    ``lpj=N`` on the command line skips; the value is read from this very log."""

    id = "kernel.lpj"
    title = "delay-loop calibration"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        b = boot.boot
        lpj, how = b.fact("lpj"), b.fact("lpj_source")
        if lpj is None or how is None or how.value != "calibrated":
            return  # skipped (timer frequency, preset lpj=): nothing to save
        i = first_event(boot, Kind.MILESTONE, Milestone.CALIBRATE_DELAY)
        ev = b.events[i] if i is not None else None
        dur = ev.duration_ns if ev is not None else None
        confidence = Confidence.HIGH
        if dur is not None:
            # the printk time of the line is the start of the calibration (the result is
            # pr_cont'ed after it), the next timestamped line comes once it is done; a serial
            # console printing as lines are logged writes the line itself in between
            con = console_time(boot, ctx, b.lines.index_of(lpj.line_no), b.lines.index_of(lpj.line_no))
            measured, dur = dur, dur - (con.ns or 0)
            if dur <= 0:
                return  # the console's share is all of it: nothing the log can attribute to the loop
            if con.assumed:
                confidence = Confidence.LOW
            arithmetic = (f"calibration measured from the printk time of line {lpj.line_no} to the next "
                          f"timestamped line: {secs(measured)}, less console time of the line ({con.text}) = "
                          f"{secs(dur)}; with lpj={lpj.value} the kernel skips it "
                          "(secondary CPUs calibrate silently and would save as much again)")
        else:
            arithmetic = (f"no estimate: line {lpj.line_no} and the line after it carry no printk timestamp, "
                          "so the calibration is not timed (boot with printk.time=1)")
        yield Finding(
            rule=self.id,
            title=f"the kernel calibrates its delay loop at every boot (lpj={lpj.value})",
            stage="kernel_init",
            saving_ns=dur,
            arithmetic=arithmetic,
            confidence=confidence,
            tradeoff="lpj is tied to the CPU clock at boot: a board that boots at another frequency "
                     "(another speed grade, a changed PLL setting) would get wrong udelay() timing; "
                     "keep the value per product variant",
            change=Change(ChangeKind.CMDLINE, f"lpj={lpj.value}",
                          f"add lpj={lpj.value} to the kernel command line (the value this boot measured)"),
            evidence=evidence(b, (lpj.line_no,)),
        )
