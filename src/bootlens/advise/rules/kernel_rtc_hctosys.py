"""Reading the RTC to set the system clock at boot (``CONFIG_RTC_HCTOSYS``).

Since Linux 5.6 the RTC core reads the clock as the RTC registers (``rtc_hctosys`` in
``__devm_rtc_register_device``): ``DEV: registered as rtcN`` is printed, the kernel reads the RTC
(an I2C/SPI transfer, or the MC146818's wait for an update in progress: ``mdelay(20)`` before
5.18, 1 ms polls after) and prints ``DEV: setting system clock to ...``. Only when the second
line comes right after the first is the span between them the RTC driver's own: a line in
between is other work (another CPU's probe, or before 5.6 the rest of the boot up to the
late_initcall ``rtc_hctosys``), and the rule says nothing. Older kernels are timed only by
initcall_debug's line for ``rtc_hctosys``.

Both spans also hold console output (printk writes to a synchronous console before returning):
of the ``registered`` line, or of the lines the initcall printed; :mod:`..console` takes it off
where a serial console was printing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..console import console_time
from ..evidence import evidence
from . import _kernel as K

MIN_NS = 1_000_000
_SETTING = re.compile(r"(\S+ \S+): setting system clock to ")
TRADEOFF = ("the system clock starts at the epoch (or the kernel's build time) until user space sets it: "
            "log timestamps, file times, TLS certificate checks and fsck's 'last mount time in the future' "
            "see a wrong date until then; set it from an init script right after the application is "
            "ready (hwclock -s in the background), or from NTP")


@REGISTRY.register
class RtcHctosys(Rule):
    """The RTC read that sets the system clock, on the probe path."""

    id = "kernel.rtc_hctosys"
    title = "RTC read at boot (hctosys)"
    needles = (": setting system clock to ",)

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        change = Change(ChangeKind.KCONFIG, "CONFIG_RTC_HCTOSYS=n",
                        "rebuild without CONFIG_RTC_HCTOSYS and set the clock from user space after the "
                        "application is ready (hwclock -s &, or NTP)")
        old = K.first_initcall(boot, "rtc_hctosys")
        if old is not None:
            yield from self._initcall(boot, ctx, old, change)
            return
        texts = boot.boot.lines.text
        for i in K.grep(boot, ": setting system clock to "):
            m = _SETTING.match(texts[i])
            if m is None or i == 0:
                continue
            prefix = m[1]
            j = i - 1
            if not texts[j].startswith(f"{prefix}: registered as rtc"):
                continue  # not right after its registration: the span is not the RTC's alone
            span = K.span(boot, j, i)
            if span is None:
                continue
            con = console_time(boot, ctx, j, j)
            wire = con.ns or 0
            saving = span - wire
            if saving < MIN_NS:
                return
            yield Finding(
                rule=self.id,
                title=f"{prefix.split()[0]} reads the RTC for {K.ms(saving)} to set the system clock",
                stage="kernel_init",
                saving_ns=saving,
                arithmetic=(f"'registered as rtc' (line {K.line_no(boot, j)}) is followed at once by 'setting "
                            f"system clock' (line {K.line_no(boot, i)}): {K.ms(span)} in the RTC core's "
                            f"registration, less console time of the first line ({con.text}) = {K.ms(saving)}"),
                confidence=Confidence.LOW if con.assumed else Confidence.MEDIUM,
                tradeoff=TRADEOFF,
                change=change,
                evidence=evidence(boot.boot, [K.line_no(boot, j), K.line_no(boot, i)], K.EVIDENCE_MAX),
            )
            return

    def _initcall(self, boot: BootAnalysis, ctx: Context, old: K.Timed, change: Change) -> Iterable[Finding]:
        """rtc_hctosys timed by initcall_debug: its time less the console output of what it printed."""
        lines = boot.boot.lines
        a = lines.index_of(old.event.line_no)
        z = lines.index_of(old.event.end_line_no) if old.event.end_line_no is not None else a
        con = console_time(boot, ctx, a + 1, z - 1) if z - 1 >= a + 1 else None
        wire = (con.ns or 0) if con is not None else 0
        saving = old.duration - wire
        if saving < MIN_NS:
            return
        less = f", less console time of the lines it printed ({con.text})" if con is not None and wire else ""
        yield Finding(
            rule=self.id,
            title=f"Setting the system clock from the RTC takes {K.ms(saving)}",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=(f"the rtc_hctosys initcall measured {K.ms(old.duration)} (line {old.event.end_line_no})"
                        f"{less} = {K.ms(saving)}"),
            confidence=Confidence.LOW if con is not None and con.assumed and wire else Confidence.MEDIUM,
            tradeoff=TRADEOFF,
            change=change,
            evidence=K.event_evidence(boot, [old]),
        )
