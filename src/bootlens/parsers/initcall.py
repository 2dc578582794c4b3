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

from ..core.lines import Lines
from .._native import native_module
from ..core.model import BLOCK_TYPES, Events, ParseResult
from . import REGISTRY
from .base import Parser
from ..core.options import ParseOptions

# The formats above are parsed in Rust only (native/src/initcall.rs: the one implementation, see
# docs/performance.md); the native block builds Event objects from these types on demand.
NATIVE_TYPES = BLOCK_TYPES
NEEDLES = ("call", "usecs")  # the keyword index entries (InitcallParser.needles) the candidate lines come from


@REGISTRY.register
class InitcallParser(Parser):
    """initcall_debug ``calling``/``returned`` pairs and device probe times."""

    name = "initcall"
    description = "initcall_debug: calling/returned pairs, module inits, async threads, probes, PCI fixups"
    needles = NEEDLES

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
        # the scan and the pairing: native/src/initcall.rs, the one implementation; the rows stay
        # columns (native/src/events.rs), Event objects are built only when asked for
        block, unfinished, bad, first_bad, oor = native_module().initcall_block(
            lines.text, lines.grep(*NEEDLES), lines.kernel, lines.host, lines.first, NATIVE_TYPES)
        warnings: list[str] = []
        if unfinished:
            warnings.append(f"{unfinished} initcalls were called but had not returned when the log ended")
        if bad:
            warnings.append(f"{bad} initcall lines not understood (first at line {lines.first + first_bad})")
        if oor:
            warnings.append(f"{oor} initcall lines with a number out of range (pid, return value or duration) "
                            "were not used")
        return ParseResult(Events(block) if len(block) else (), (), tuple(warnings))
