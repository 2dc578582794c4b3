"""``initcall_debug`` output and the driver core's probe timing lines.

    calling  pl011_init+0x0/0x60 @ 1
    initcall pl011_init+0x0/0x60 returned 0 after 0 usecs
    calling  init_sd+0x0/0x16b [sd_mod] @ 123           (module init, async thread 123)
    sdc:initcall init_sd+0x0/0x16b [sd_mod] returned 0 after 787 usecs   (text glued in front)
    initcall foo+0x0/0x20 returned 0 after 12 msecs      (kernels before 2.6.37)
    initcall 0xc0123456 ran for 12 msecs: foo+0x0/0x20   (2.6.2x)
    probe of 9000000.pl011 returned 0 after 88000 usecs
    pci 0000:00:01.3: calling  acpi_pm_check_blacklist+0x0/0x30 @ 1   (PCI quirk, initcall_debug)
    pci 0000:00:01.3: acpi_pm_check_blacklist+0x0/0x30 took 0 usecs

An initcall's duration is the kernel's own figure from the ``returned`` line (what a user greps);
its start is the ``calling`` line's timestamp, or end minus duration when that line is missing.
A ``calling`` line without a ``returned`` line is an initcall still running when the log ended.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..lines import stamp_of
from ..model import (
    NS_PER_MS,
    NS_PER_US,
    Event,
    InitcallDetail,
    Kind,
    Line,
    ParseResult,
    ProbeDetail,
    Stamp,
)
from . import REGISTRY
from .base import ParseOptions, Parser

_FN = r"(\S+?)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[([^\]\s]+)\])?"
_CALL = re.compile(r"calling  " + _FN + r" @ (\d+)")
_RET = re.compile(r"initcall " + _FN + r" returned (-?\d+) after (\d+) (usecs|msecs)")
_RAN = re.compile(r"initcall (?:0x[0-9a-f]+) ran for (\d+) msecs: " + _FN + r"\s*$")
_FIXUP_CALL = re.compile(r"(\S+ \S+): calling  " + _FN + r" @ (\d+)")
_FIXUP_TOOK = re.compile(r"(\S+ \S+): " + _FN + r" took (\d+) usecs")
_PROBE = re.compile(r"probe of (\S+) returned (-?\d+) after (\d+) usecs")
_PROBE_DRV = re.compile(r"(?:(\S+) )?(\S+): probe with driver (\S+) returned (-?\d+) after (\d+) usecs")


def _earlier(st: Stamp | None, ns: int) -> Stamp | None:
    return None if st is None else Stamp(st.clock, st.ns - ns, st.estimated, st.error_ns)


@REGISTRY.register
class InitcallParser(Parser):
    """initcall_debug ``calling``/``returned`` pairs and device probe times."""

    name = "initcall"
    description = "initcall_debug: calling/returned pairs, module inits, async threads, probes, PCI fixups"

    def sniff(self, lines: Sequence[Line], options: ParseOptions) -> float:
        hits = 0
        for line in lines:
            t = line.text
            if t.startswith("calling  ") or ("initcall " in t and " returned " in t):
                hits += 1
                if hits >= 5:
                    return 1.0
        return hits / 5

    def parse(self, lines: Sequence[Line], options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        warnings: list[str] = []
        pending: dict[tuple[str, str | None], list[tuple[Line, int]]] = {}
        fixups: dict[tuple[str, str], Line] = {}
        not_understood = 0
        first_bad = 0
        call = _CALL.match
        ret_search = _RET.search
        for line in lines:
            t = line.text
            if t.startswith("calling  "):
                m = call(t)
                if m is None:
                    not_understood += 1
                    first_bad = first_bad or line.no
                    continue
                pending.setdefault((m[1], m[2]), []).append((line, int(m[3])))
            elif "initcall " in t:
                m = ret_search(t)
                if m is not None:
                    fn, mod = m[1], m[2]
                    dur = int(m[4]) * (NS_PER_US if m[5] == "usecs" else NS_PER_MS)
                    ret = int(m[3])
                elif (m := _RAN.search(t)) is not None:
                    fn, mod = m[2], m[3]
                    dur = int(m[1]) * NS_PER_MS
                    ret = 0
                else:
                    if " returned " in t or " ran for " in t:
                        not_understood += 1
                        first_bad = first_bad or line.no
                    continue
                stack = pending.get((fn, mod))
                if stack:
                    cline, pid = stack.pop()
                    start = stamp_of(cline)
                    start_no = cline.no
                else:
                    pid = None
                    start = _earlier(stamp_of(line), dur)
                    start_no = line.no
                events.append(
                    Event(Kind.INITCALL, fn, start, dur, start_no, line.no,
                          InitcallDetail(pid, mod, ret, True))
                )
            elif " calling  " in t:
                m = _FIXUP_CALL.match(t)
                if m is not None:
                    fixups[(m[1], m[2])] = line
            elif " took " in t:
                m = _FIXUP_TOOK.match(t)
                if m is None:
                    continue
                dur = int(m[4]) * NS_PER_US
                fix_call = fixups.pop((m[1], m[2]), None)
                if fix_call is not None:
                    start, start_no = stamp_of(fix_call), fix_call.no
                else:
                    start, start_no = _earlier(stamp_of(line), dur), line.no
                events.append(Event(Kind.FIXUP, m[2], start, dur, start_no, line.no, ProbeDetail(m[1], None, 0)))
            elif "probe " in t:
                m = _PROBE.search(t)
                if m is not None:
                    dev, drv, ret, us = m[1], None, int(m[2]), int(m[3])
                elif (m := _PROBE_DRV.search(t)) is not None:
                    dev, drv, ret, us = m[2], m[3], int(m[4]), int(m[5])
                else:
                    continue
                dur = us * NS_PER_US
                events.append(
                    Event(Kind.PROBE, dev, _earlier(stamp_of(line), dur), dur, line.no, line.no,
                          ProbeDetail(dev, drv, ret))
                )
        unfinished = 0
        for (fn, mod), stack in pending.items():
            for cline, pid in stack:
                unfinished += 1
                events.append(
                    Event(Kind.INITCALL, fn, stamp_of(cline), None, cline.no, None,
                          InitcallDetail(pid, mod, None, False))
                )
        if unfinished:
            warnings.append(f"{unfinished} initcalls were called but had not returned when the log ended")
        if not_understood:
            warnings.append(
                f"{not_understood} initcall lines not understood (first at line {first_bad})"
            )
        events.sort(key=lambda e: e.line_no)
        return ParseResult(tuple(events), (), tuple(warnings))
