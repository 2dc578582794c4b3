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

from ..lines import Lines, native_module, stamp_at
from ..numbers import INT_MAX, INT_MIN, PID_MAX, to_int, to_ns
from ..model import (
    NS_PER_MS,
    NS_PER_US,
    Clock,
    Event,
    InitcallDetail,
    Kind,
    ParseResult,
    ProbeDetail,
    Stamp,
)
from . import REGISTRY

KERNEL = Clock.KERNEL
INITCALL = Kind.INITCALL
NATIVE_TYPES = (Event, Stamp, InitcallDetail, ProbeDetail, Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Clock.KERNEL,
                Clock.HOST)
from .base import ParseOptions, Parser

_FN = r"(\S+?)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[([^\]\s]+)\])?"
_A = re.ASCII  # ASCII \d \s \S, as the native scanner (native/src/lib.rs) uses
_CALL = re.compile(r"calling  " + _FN + r" @ (\d+)", _A)
_RET = re.compile(r"initcall " + _FN + r" returned (-?\d+) after (\d+) (usecs|msecs)", _A)
_RAN = re.compile(r"initcall (?:0x[0-9a-f]+) ran for (\d+) msecs: " + _FN + r"\s*$", _A)
_FIXUP_CALL = re.compile(r"(\S+ \S+): calling  " + _FN + r" @ (\d+)", _A)
_FIXUP_TOOK = re.compile(r"(\S+ \S+): " + _FN + r" took (\d+) usecs", _A)
# Fast paths for the common shape (a name without '+' or '['): greedy and backtrack-free, and
# when they match the lazy _FN patterns above match with the same captures (the name cannot end
# earlier: what follows it must be '+', ' [' or the tail). native/src/initcall.rs does the same.
_FAST_FN = r"([^\s+\[]+)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[([^\]\s]+)\])?"
_CALL_FAST = re.compile(r"calling  " + _FAST_FN + r" @ (\d+)", _A)
_RET_FAST = re.compile(r"initcall " + _FAST_FN + r" returned (-?\d+) after (\d+) (usecs|msecs)", _A)
_PROBE = re.compile(r"probe of (\S+) returned (-?\d+) after (\d+) usecs", _A)
_PROBE_DRV = re.compile(r"(?:(\S+) )?(\S+): probe with driver (\S+) returned (-?\d+) after (\d+) usecs", _A)

# (fn, module, call index | -1, return index | -1, duration ns | None, pid | None, ret | None)
CallRow = tuple[str, str | None, int, int, int | None, int | None, int | None]
# (device, fn or driver, start index | -1, end index, duration ns, ret)
DevRow = tuple[str, str | None, int, int, int, int]
# (calls, probes, fixups, lines not understood, first such index | -1, lines with a number out of range)
ScanResult = tuple[list[CallRow], list[DevRow], list[DevRow], int, int, int]

NEEDLES = ("call", "usecs")


def scan_initcalls_py(texts: Sequence[str], cands: list[int]) -> ScanResult:
    """Reference implementation of the native ``initcalls`` scan (same rows, same order).

    A line whose pid, return value or duration is out of range (numbers.py) is not used, only
    counted: the pairing goes on as if the line were not there."""
    calls: list[CallRow] = []
    probes: list[DevRow] = []
    fixups_out: list[DevRow] = []
    pending: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
    fixups: dict[tuple[str, str], int] = {}
    bad = oor = 0
    first_bad = -1
    for i in cands:
        t = texts[i]
        has_call = "call" in t
        if has_call and t.startswith("calling  "):
            m = _CALL_FAST.match(t) or _CALL.match(t)
            if m is None:
                bad += 1
                first_bad = i if first_bad < 0 else first_bad
                continue
            if (pid := to_int(m[3], PID_MAX)) is None:
                oor += 1
                continue
            key = (m[1], m[2])
            stack = pending.get(key)
            if stack is None:
                pending[key] = [(i, pid)]
            else:
                stack.append((i, pid))
            continue
        if has_call and "initcall " in t:
            dur: int | None
            ret: int | None
            if (m := _RET_FAST.match(t) or _RET.search(t)) is not None:
                fn, mod = m[1], m[2]
                dur, ret = to_ns(m[4], NS_PER_US if m[5] == "usecs" else NS_PER_MS), to_int(m[3], INT_MAX, INT_MIN)
            elif (m := _RAN.search(t)) is not None:
                fn, mod, dur, ret = m[2], m[3], to_ns(m[1], NS_PER_MS), 0
            else:
                if " returned " in t or " ran for " in t:
                    bad += 1
                    first_bad = i if first_bad < 0 else first_bad
                continue
            if dur is None or ret is None:
                oor += 1
                continue
            stack = pending.get((fn, mod))
            ci, pid = stack.pop() if stack else (-1, None)
            if stack is not None and not stack:
                del pending[(fn, mod)]
            calls.append((fn, mod, ci, i, dur, pid, ret))
            continue
        if has_call and " calling  " in t and (m := _FIXUP_CALL.match(t)) is not None:
            fixups[(m[1], m[2])] = i
            continue
        if "usecs" not in t:
            continue
        if " took " in t and (m := _FIXUP_TOOK.match(t)) is not None:
            start = fixups.pop((m[1], m[2]), -1)
            if (took := to_ns(m[4], NS_PER_US)) is None:
                oor += 1
            else:
                fixups_out.append((m[1], m[2], start, i, took, 0))
        elif "probe " in t:
            row: tuple[str, str | None, int | None, int | None]
            if (m := _PROBE.search(t)) is not None:
                row = (m[1], None, to_int(m[2], INT_MAX, INT_MIN), to_ns(m[3], NS_PER_US))
            elif (m := _PROBE_DRV.search(t)) is not None:
                row = (m[2], m[3], to_int(m[4], INT_MAX, INT_MIN), to_ns(m[5], NS_PER_US))
            else:
                continue
            dev, drv, pret, pdur = row
            if pret is None or pdur is None:
                oor += 1
            else:
                probes.append((dev, drv, -1, i, pdur, pret))
    for ci, pid, fn, mod in sorted((ci, pid, fn, mod) for (fn, mod), stack in pending.items() for ci, pid in stack):
        calls.append((fn, mod, ci, -1, None, pid, None))
    return calls, probes, fixups_out, bad, first_bad, oor


@REGISTRY.register
class InitcallParser(Parser):
    """initcall_debug ``calling``/``returned`` pairs and device probe times."""

    name = "initcall"
    description = "initcall_debug: calling/returned pairs, module inits, async threads, probes, PCI fixups"

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        hits = 0
        texts = lines.text
        for i in lines.grep("call"):
            t = texts[i]
            if t.startswith("calling  ") or ("initcall " in t and " returned " in t):
                hits += 1
                if hits >= 5:
                    return 1.0
        return hits / 5

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        native = native_module()
        if native is not None:
            # the same scan, with the Event objects built natively (tests/test_native.py)
            events, unfinished, bad, first_bad, oor = native.initcall_events(
                lines.text, lines.grep(*NEEDLES), lines.kernel, lines.host, lines.first, NATIVE_TYPES)
        else:
            events, unfinished, bad, first_bad, oor = self.events_py(lines)
        warnings: list[str] = []
        if unfinished:
            warnings.append(f"{unfinished} initcalls were called but had not returned when the log ended")
        if bad:
            warnings.append(f"{bad} initcall lines not understood (first at line {lines.first + first_bad})")
        if oor:
            warnings.append(f"{oor} initcall lines with a number out of range (pid, return value or duration) "
                            "were not used")
        return ParseResult(tuple(events), (), tuple(warnings))

    @staticmethod
    def events_py(lines: Lines) -> tuple[list[Event], int, int, int, int]:
        """Reference implementation of the native ``initcall_events`` (events in line order)."""
        calls, probes, fixups, bad, first_bad, oor = scan_initcalls_py(lines.text, lines.grep(*NEEDLES))
        kern, first = lines.kernel, lines.first
        events: list[Event] = []
        add = events.append

        def at(i: int, minus: int = 0) -> Stamp | None:
            k = kern[i]
            if k is not None:
                return Stamp(KERNEL, k - minus)
            st = stamp_at(lines, i)
            return None if st is None else Stamp(st.clock, st.ns - minus)

        unfinished = 0
        for fn, mod, ci, ri, dur, pid, ret in calls:
            if ri < 0:
                unfinished += 1
                add(Event(INITCALL, fn, at(ci), None, first + ci, None, InitcallDetail(pid, mod, None, False)))
            elif ci >= 0:
                k = kern[ci]  # the common case inline: a calling line with a printk time
                add(Event(INITCALL, fn, Stamp(KERNEL, k) if k is not None else at(ci), dur, first + ci,
                          first + ri, InitcallDetail(pid, mod, ret, True)))
            else:
                add(Event(INITCALL, fn, at(ri, dur or 0), dur, first + ri, first + ri,
                          InitcallDetail(None, mod, ret, True)))
        for dev, drv, _, ri, dur, ret in probes:
            add(Event(Kind.PROBE, dev, at(ri, dur), dur, first + ri, first + ri, ProbeDetail(dev, drv, ret)))
        for dev, quirk, si, ri, dur, _ in fixups:
            start = at(si) if si >= 0 else at(ri, dur)
            add(Event(Kind.FIXUP, quirk or "", start, dur, first + (si if si >= 0 else ri), first + ri,
                      ProbeDetail(dev, None, 0)))
        events.sort(key=lambda e: e.line_no)
        return events, unfinished, bad, first_bad, oor
