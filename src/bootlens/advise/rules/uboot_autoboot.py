"""U-Boot's autoboot delay: the bootloader waits for a key press before booting.

The delay is the countdown's first figure (``Hit any key to stop autoboot:  2``, ``Autoboot in 2
seconds``, ``Autobooting in 1 seconds``; backspace countdowns ``1 \\b\\b\\b 0`` read as their first
figure), or the time to the next line where the capture has host timestamps, capped at it.

A countdown someone interrupted (a lab, a person: the parser's ``autoboot_interrupted`` fact,
the prompt right after it) cost this boot only the time until the key press, which is the
lab's, not the board's: no saving is claimed from it. Where the log shows how long an
uninterrupted countdown would be (``bootdelay=1`` printed at the prompt, or the countdown's
first figure), the finding says so without a figure. A countdown longer than any time bootlens
measures (``autoboot: 2147403648``, 68 years: U-Boot's bootdelay is a C int) is no figure
either: without timestamps such a boot gets no finding.
"""

from __future__ import annotations

import re

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.kindpos import located
from ...core.model import Fact, Kind
from ...core.numbers import INT_MAX, NS_PER_S, TIME_NS_MAX, to_int
from ...core.units import duration
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Evidence, Finding, Rule
from ..evidence import evidence

TRADEOFF = ("no time to interrupt autoboot from the console; keep a way in for the lab "
            "(bootdelay=-2 still checks for a key without waiting, or CONFIG_AUTOBOOT_KEYED)")
# barebox (its own countdown, "Hit m for menu or any key to stop autoboot: 3"): the timeout is
# the global.autoboot_timeout variable, kept in the non-volatile store as nv.autoboot_timeout
CHANGE_BAREBOX = Change(ChangeKind.MANUAL, "nv autoboot_timeout=0",
                        "set barebox's autoboot timeout to 0: nv autoboot_timeout=0 then saveenv at the barebox "
                        "prompt, or global.autoboot_timeout=0 in the board's default environment")
TRADEOFF_BAREBOX = ("no time to stop barebox from the console; global.autoboot=abort or a key held at reset "
                    "still gets to the prompt")
_COUNT = re.compile(r"autoboot:\s*(\d+)")


def _seconds_ns(text: str) -> int | None:
    """A countdown's seconds (a C int, as U-Boot's bootdelay) in ns, or None past what a time can be."""
    s = to_int(text, INT_MAX)
    return None if s is None or s * NS_PER_S > TIME_NS_MAX else s * NS_PER_S
CHANGE = Change(ChangeKind.UBOOT_ENV, "bootdelay=0", "set the U-Boot variable bootdelay=0 "
                "(setenv bootdelay 0; saveenv), or CONFIG_BOOTDELAY=0 in the U-Boot build")


@REGISTRY.register
class AutobootDelay(Rule):
    """The measured autoboot countdown is time the board spends doing nothing."""

    id = "uboot.autoboot_delay"
    title = "U-Boot autoboot delay"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        b = boot.boot
        stopped = b.fact("autoboot_interrupted")
        if stopped is not None:
            yield from self._interrupted(boot, stopped)
            return
        for _, e in located(b.events, Kind.BOOTLOADER):
            if e.name.startswith("autoboot delay") and e.duration_ns != 0:
                text = b.lines.text[b.lines.index_of(e.line_no)].strip()
                if text.startswith("Hit m for menu"):
                    yield from self._barebox(e.line_no, text, e.duration_ns)
                    return
                fact = b.fact("bootdelay")
                setting = f" (bootdelay={fact.value}, line {fact.line_no})" if fact else ""
                delay_ns = _seconds_ns(fact.value) if fact is not None else None
                if delay_ns == 0:
                    return  # already 0: the time to the next line is the boot command's, not a wait
                if e.duration_ns is None:
                    if delay_ns is None:
                        return
                    # no timestamps: the countdown lasts bootdelay seconds, as the prompt says
                    saving = delay_ns
                    arithmetic = (f"the prompt at line {e.line_no} counts down from {fact.value if fact else ''}: "
                                  f"bootdelay = {delay_ns // 1_000_000_000} s (the log has no timestamps to "
                                  "measure it); with bootdelay=0 it is 0")
                else:
                    saving = e.duration_ns
                    arithmetic = (f"countdown measured at line {e.line_no}: {duration(e.duration_ns, {'s': 6})}; "
                                  "with bootdelay=0 it is 0 (U-Boot still checks once for a key)")
                if e.duration_ns is not None and delay_ns is not None and saving > delay_ns:
                    # the next line comes after the countdown *and* the first work of the boot
                    # command (e.g. qfw load prints only once the images are read)
                    arithmetic = (f"line {e.line_no} to the next line: {duration(e.duration_ns, {'s': 6})}, "
                                  f"of which the countdown is bootdelay = {delay_ns // 1_000_000_000} s (the rest "
                                  "is the boot command's work before its first line); with bootdelay=0 the "
                                  "countdown is 0 (U-Boot still checks once for a key)")
                    saving = delay_ns
                yield Finding(
                    rule=self.id,
                    title=f"U-Boot waits {duration(saving, {'s': 3})} for a key press before booting{setting}",
                    stage="bootloader",
                    saving_ns=saving,
                    arithmetic=arithmetic,
                    confidence=Confidence.HIGH,
                    tradeoff=TRADEOFF,
                    change=CHANGE,
                    evidence=(Evidence(e.line_no, text),),
                )
                return

    def _barebox(self, line_no: int, text: str, measured_ns: int | None) -> Iterable[Finding]:
        """barebox's countdown: its own variable, not U-Boot's bootdelay, and nothing bootlens sets."""
        m = _COUNT.search(text)
        delay_ns = _seconds_ns(m[1]) if m is not None else None
        if m is None or not delay_ns:
            return
        saving = delay_ns if measured_ns is None else min(measured_ns, delay_ns)
        how = (f"the prompt at line {line_no} counts down from {m[1]} s (the log has no timestamps to measure it)"
               if measured_ns is None else f"countdown measured at line {line_no}: {duration(measured_ns, {'s': 6})}, "
               f"at most the {m[1]} s it counts down from")
        yield Finding(
            rule=self.id,
            title=f"barebox waits {duration(saving, {'s': 3})} for a key press before booting",
            stage="bootloader",
            saving_ns=saving,
            arithmetic=how + "; with a timeout of 0 it is 0",
            confidence=Confidence.HIGH,
            tradeoff=TRADEOFF_BAREBOX,
            change=CHANGE_BAREBOX,
            evidence=(Evidence(line_no, text),),
        )

    def _interrupted(self, boot: BootAnalysis, stopped: Fact) -> Iterable[Finding]:
        """The countdown ended at a key press: say what an uninterrupted one waits, if the log tells."""
        b = boot.boot
        env, shown = b.fact("bootdelay_env"), b.fact("bootdelay")
        source = next((f for f in (env, shown) if f is not None and to_int(f.value, INT_MAX)), None)
        if source is None:
            return  # bootdelay 0 or unknown: nothing to say
        delay = to_int(source.value, INT_MAX) or 0
        how = (f"bootdelay={delay} printed at the prompt (line {source.line_no})" if source is env
               else f"the countdown started from {delay} (line {source.line_no})")
        lines = [f.line_no for f in (shown, stopped, env) if f is not None]
        barebox = shown is not None and b.lines.text[b.lines.index_of(shown.line_no)].lstrip().startswith(
            "Hit m for menu")
        who, setting = ("barebox", "a timeout of 0") if barebox else ("U-Boot", "bootdelay=0")
        yield Finding(
            rule=self.id,
            title=f"{who}'s countdown was interrupted at the prompt; a boot nobody interrupts waits {delay} s",
            stage="bootloader",
            saving_ns=None,
            arithmetic=(f"no estimate: the countdown was stopped by a key press and the prompt followed at line "
                        f"{stopped.line_no} ('{stopped.value}'), so this capture waited only until the key "
                        f"(the lab's time, not the board's); {how}: a boot nobody interrupts waits {delay} s, "
                        f"which {setting} removes"),
            confidence=Confidence.MEDIUM,
            tradeoff=TRADEOFF_BAREBOX if barebox else TRADEOFF,
            change=CHANGE_BAREBOX if barebox else CHANGE,
            evidence=evidence(b, lines),
        )
