"""Kernel milestones from printk: ``Linux version``, the command line, delay-loop calibration,
console registration, ``Freeing unused kernel ... memory``, ``VFS: Mounted root``,
``Run /init as init process``, panics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..lines import stamp_of
from ..model import Event, Fact, Kind, Line, Milestone, ParseResult
from . import REGISTRY
from .base import ParseOptions, Parser

# Dispatch on the first four characters: one dict lookup per line instead of a dozen searches.
_PREFIXES = frozenset({"Linu", "Boot", "Kern", "Comm", "Cali", "Free", "VFS:", "Run ", "prin", "cloc"})

_VERSION = re.compile(r"Linux version (\S+)")
_CALIBRATE = re.compile(
    r"Calibrating delay loop(?: \((skipped)\))?(?: preset value)?[^(]*?([\d.]+) BogoMIPS \(lpj=(\d+)\)"
)
_INITMEM = re.compile(r"Freeing (?:unused kernel (?:image \(initmem\) )?memory|init memory)")
_ROOT = re.compile(r"VFS: Mounted root \((\S+) filesystem\)( readonly)?(?: on device (\S+))?")
_RUN = re.compile(r"Run (\S+) as init process")
_CONSOLE = re.compile(r"printk: (?:console|legacy console) \[(\S+)\] enabled")
_CLOCKSOURCE = re.compile(r"clocksource: Switched to clocksource (\S+)")


@REGISTRY.register
class KernelParser(Parser):
    """Kernel boot milestones and facts (version, command line, lpj, root filesystem)."""

    name = "kernel"
    description = "kernel milestones: Linux version, command line, lpj, root mount, Run /init"

    def sniff(self, lines: Sequence[Line], options: ParseOptions) -> float:
        for line in lines:
            t = line.text
            if t.startswith("Linux version") or t.startswith("Booting Linux"):
                return 1.0
        return 0.5 if any(line.kernel_ns is not None for line in lines[:2000]) else 0.0

    def parse(self, lines: Sequence[Line], options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        warnings: list[str] = []
        seen: set[str] = set()

        def once(name: str, line: Line, duration: int | None = None) -> None:
            if name not in seen:
                seen.add(name)
                events.append(Event(Kind.MILESTONE, name, stamp_of(line), duration, line.no))

        prefixes = _PREFIXES
        for idx, line in enumerate(lines):
            t = line.text
            if t[:4] not in prefixes:
                continue
            if t.startswith("Booting Linux"):
                once(Milestone.KERNEL_START, line)
            elif t.startswith("Linux version"):
                once(Milestone.KERNEL_START, line)
                m = _VERSION.match(t)
                if m and "kernel_version" not in seen:
                    seen.add("kernel_version")
                    facts.append(Fact("kernel_version", m[1], line.no))
            elif t.startswith("Kernel command line:"):
                if "cmdline" not in seen:
                    seen.add("cmdline")
                    facts.append(Fact("cmdline", t[len("Kernel command line:"):].strip(), line.no))
            elif t.startswith("Command line:"):
                if "early_cmdline" not in seen:
                    seen.add("early_cmdline")
                    facts.append(Fact("early_cmdline", t[len("Command line:"):].strip(), line.no))
            elif t.startswith("Calibrating delay loop"):
                m = _CALIBRATE.match(t)
                if m is None:
                    continue
                if m[1]:
                    how = "preset" if "preset value" in t else "timer"
                else:
                    how = "calibrated"
                facts.append(Fact("lpj", m[3], line.no))
                facts.append(Fact("lpj_source", how, line.no))
                facts.append(Fact("bogomips", m[2], line.no))
                dur = None
                if how == "calibrated" and line.kernel_ns is not None:
                    # The calibration runs between this line's timestamp and the next line's.
                    for nxt in lines[idx + 1 : idx + 50]:
                        if nxt.kernel_ns is not None:
                            dur = max(0, nxt.kernel_ns - line.kernel_ns)
                            break
                once(Milestone.CALIBRATE_DELAY, line, dur)
            elif t.startswith("Freeing"):
                if t.startswith("Freeing initrd memory"):
                    once(Milestone.INITRD_FREED, line)
                elif _INITMEM.match(t):
                    once(Milestone.INITMEM_FREED, line)
            elif t.startswith("VFS: Mounted root"):
                m = _ROOT.match(t)
                once(Milestone.ROOT_MOUNTED, line)
                if m and "rootfs" not in seen:
                    seen.add("rootfs")
                    facts.append(Fact("rootfs_type", m[1], line.no))
                    if m[3]:
                        facts.append(Fact("root_device", m[3], line.no))
            elif t.startswith("Run "):
                m = _RUN.match(t)
                if m:
                    once(Milestone.RUN_INIT, line)
                    if "init" not in seen:
                        seen.add("init")
                        facts.append(Fact("init", m[1], line.no))
            elif t.startswith("printk:"):
                m = _CONSOLE.match(t)
                if m:
                    once(Milestone.CONSOLE_ENABLED, line)
                    facts.append(Fact("console", m[1], line.no))
            elif t.startswith("clocksource: Switched"):
                m = _CLOCKSOURCE.match(t)
                if m:
                    once(Milestone.CLOCKSOURCE, line)
                    facts.append(Fact("clocksource", m[1], line.no))
            elif t.startswith("Kernel panic"):
                once(Milestone.KERNEL_PANIC, line)
                warnings.append(f"kernel panic at line {line.no}: {t.strip()[:120]}")
        return ParseResult(tuple(events), tuple(facts), tuple(warnings))
