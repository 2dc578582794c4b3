"""Reading the RTC to set the system clock at boot (``CONFIG_RTC_HCTOSYS``).

Since Linux 5.6 the RTC core reads the clock as the RTC registers (``rtc_hctosys`` in
``__devm_rtc_register_device``): between ``DEV: registered as rtcN`` and ``DEV: setting system
clock to ...`` the kernel reads the RTC (an I2C/SPI transfer, or the MC146818's wait for an update
in progress: ``mdelay(20)`` before 5.18, 1 ms polls after) and sets the time. Older kernels did the
same from the late_initcall ``rtc_hctosys``, whose initcall_debug time is the cost.

The span between the two lines also holds the console output of the first one (printk writes to
the console before returning), which the arithmetic takes off at the console's line rate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import LINE_END_BYTES, PRINTK_PREFIX_BYTES, wire_ns
from . import _kernel as K

MIN_NS = 1_000_000
DEFAULT_BAUD = 115200
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

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        old = K.first_initcall(boot, "rtc_hctosys")
        change = Change(ChangeKind.KCONFIG, "CONFIG_RTC_HCTOSYS=n",
                        "rebuild without CONFIG_RTC_HCTOSYS and set the clock from user space after the "
                        "application is ready (hwclock -s &, or NTP)")
        if old is not None and old.duration >= MIN_NS:
            yield Finding(
                rule=self.id,
                title=f"Setting the system clock from the RTC takes {K.ms(old.duration)}",
                stage="kernel_init",
                saving_ns=old.duration,
                arithmetic=f"the rtc_hctosys initcall measured {K.ms(old.duration)} (line {old.event.end_line_no})",
                confidence=Confidence.MEDIUM,
                tradeoff=TRADEOFF,
                change=change,
                evidence=K.event_evidence(boot, [old]),
            )
            return
        texts = boot.boot.lines.text
        for i in K.grep(boot, ": setting system clock to "):
            m = _SETTING.match(texts[i])
            if m is None:
                continue
            prefix = m[1]
            reg = [j for j in K.grep(boot, f"{prefix}: registered as rtc") if j < i]
            if not reg:
                continue
            j = reg[-1]
            span = K.span(boot, j, i)
            if span is None:
                continue
            baud = ctx.baud or DEFAULT_BAUD
            nbytes = len(texts[j].encode("utf-8", "replace")) + LINE_END_BYTES
            if boot.boot.lines.kernel[j] is not None:
                nbytes += PRINTK_PREFIX_BYTES
            wire = wire_ns(nbytes, baud)
            saving = max(0, span - wire)
            if saving < MIN_NS:
                return
            yield Finding(
                rule=self.id,
                title=f"{prefix.split()[0]} reads the RTC for {K.ms(saving)} to set the system clock",
                stage="kernel_init",
                saving_ns=saving,
                arithmetic=(f"from 'registered as rtc' (line {K.line_no(boot, j)}) to 'setting system clock' "
                            f"(line {K.line_no(boot, i)}): {K.ms(span)}, less the console output of the first "
                            f"line ({nbytes} bytes x 10 bits / {baud} baud"
                            f"{'' if ctx.baud else ', assumed'} = {K.ms(wire)}) = {K.ms(saving)}"),
                confidence=Confidence.MEDIUM,
                tradeoff=TRADEOFF,
                change=change,
                evidence=K.evidence(boot, [K.line_no(boot, j), K.line_no(boot, i)]),
            )
            return
