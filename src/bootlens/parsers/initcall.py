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
from ..lines import Lines, stamp_at
from ..model import (
    NS_PER_MS,
    NS_PER_US,
    Event,
    InitcallDetail,
    Kind,
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

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        hits = 0
        for t in lines.text:
            if t.startswith("calling  ") or ("initcall " in t and " returned " in t):
                hits += 1
                if hits >= 5:
                    return 1.0
        return hits / 5

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        warnings: list[str] = []
        pending: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
        fixups: dict[tuple[str, str], int] = {}
        not_understood = 0
        first_bad = 0
        call = _CALL.match
        ret_search = _RET.search
        no = lines.no

        def timed_line(i: int, t: str) -> None:
            """A PCI quirk's "took N usecs" or a probe's "returned R after N usecs"."""
            if " took " in t and (m := _FIXUP_TOOK.match(t)) is not None:
                dur = int(m[4]) * NS_PER_US
                fi = fixups.pop((m[1], m[2]), None)
                if fi is not None:
                    start, start_no = stamp_at(lines, fi), no(fi)
                else:
                    start, start_no = _earlier(stamp_at(lines, i), dur), no(i)
                events.append(Event(Kind.FIXUP, m[2], start, dur, start_no, no(i), ProbeDetail(m[1], None, 0)))
            elif "probe " in t:
                m = _PROBE.search(t)
                if m is not None:
                    dev, drv, ret, us = m[1], None, int(m[2]), int(m[3])
                elif (m := _PROBE_DRV.search(t)) is not None:
                    dev, drv, ret, us = m[2], m[3], int(m[4]), int(m[5])
                else:
                    return
                dur = us * NS_PER_US
                events.append(Event(Kind.PROBE, dev, _earlier(stamp_at(lines, i), dur), dur, no(i), no(i),
                                    ProbeDetail(dev, drv, ret)))

        for i, t in enumerate(lines.text):
            if "call" not in t:
                if "usecs" in t:
                    timed_line(i, t)
                continue
            if t.startswith("calling  "):
                m = call(t)
                if m is None:
                    not_understood += 1
                    first_bad = first_bad or no(i)
                    continue
                key = (m[1], m[2])
                stack = pending.get(key)
                if stack is None:
                    pending[key] = [(i, int(m[3]))]
                else:
                    stack.append((i, int(m[3])))
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
                        first_bad = first_bad or no(i)
                    continue
                stack = pending.get((fn, mod))
                if stack:
                    ci, pid = stack.pop()
                    start = stamp_at(lines, ci)
                    start_no = no(ci)
                else:
                    pid = None
                    start = _earlier(stamp_at(lines, i), dur)
                    start_no = no(i)
                events.append(Event(Kind.INITCALL, fn, start, dur, start_no, no(i), InitcallDetail(pid, mod, ret, True)))
            elif " calling  " in t and (m := _FIXUP_CALL.match(t)) is not None:
                fixups[(m[1], m[2])] = i
            elif "usecs" in t:
                timed_line(i, t)
        unfinished = 0
        for (fn, mod), stack in pending.items():
            for ci, pid in stack:
                unfinished += 1
                events.append(Event(Kind.INITCALL, fn, stamp_at(lines, ci), None, no(ci), None,
                                    InitcallDetail(pid, mod, None, False)))
        if unfinished:
            warnings.append(f"{unfinished} initcalls were called but had not returned when the log ended")
        if not_understood:
            warnings.append(f"{not_understood} initcall lines not understood (first at line {first_bad})")
        events.sort(key=lambda e: e.line_no)
        return ParseResult(tuple(events), (), tuple(warnings))
