"""How an ftrace buffer joins a boot recorded by ``bootlens run --trace``: the trace split out of
the recording into ``boot-N.trace.txt`` (:mod:`bootlens.capture.trace_dump`) is read back as the
boot's supplement. (A trace given on the command line is an input like any other side file.)"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...core.errors import printable
from ...core.model import Boot, Event, InputStats, Kind

if TYPE_CHECKING:
    from pathlib import Path

    from ..supplements import Supplement
    from .reader import Trace


def read_one(kind: str, path: Path) -> tuple[Trace, tuple[str, ...]]:
    """An ftrace buffer as text (``trace``, ``trace-cmd report``), and its reader's warnings."""
    from .reader import read_trace

    trace = read_trace(str(path))
    return trace, trace.warnings


def add(boot: Boot, sup: Supplement, kinds: set[Kind]) -> tuple[list[Event], Supplement, str]:
    """The trace's initcalls and processes when the log has none of the kind; the trace's blocks
    named by the console's initcall_debug lines; a note when the trace's clock is not printk's."""
    if sup.ftrace is None:
        return [], sup, "ftrace"
    from .kft import clock_notes, name_blocks, trace_events

    trace_added = trace_events(sup.ftrace, kinds)
    named, naming = name_blocks(sup.ftrace, boot)  # the console's initcall_debug names untraced initcalls
    warnings = sup.warnings
    if naming:  # the reader's count of unnamed blocks, less those the console named
        from .reader import UNNAMED_NOTE

        warnings = tuple(w for w in warnings if UNNAMED_NOTE not in w) + tuple(
            f"{named.source}: {w}" for w in named.warnings if UNNAMED_NOTE in w)
    return trace_added, sup.with_parts(warnings + clock_notes(sup.ftrace, boot) + naming, ftrace=named), "ftrace"


def alone(name: str) -> tuple[Boot, Supplement, InputStats]:
    """A trace given without a console log: a boot of its events, the trace attached as its
    supplement (so the KFT table and the icicle show)."""
    from ..supplements import Supplement
    from .kft import trace_boot
    from .reader import read_trace

    tr = read_trace(name)
    src = printable(name)
    sup = Supplement((("ftrace", src),), {"ftrace": tr}, tr.warnings)  # the boot names its source
    try:
        size = os.path.getsize(name)
    except OSError:
        size = 0
    return trace_boot(tr), sup, InputStats(src, size, tr.lines, "ftrace")


def trace_supplement(recording: Path) -> Supplement | None:
    """The recording's trace file read as a supplement of its boot, when there is one and a
    reader knows its content (kinds.classify: by content, never by name)."""
    from ...capture.trace_dump import trace_path
    from ..kinds import classify
    from ..supplements import read_supplements

    p = trace_path(recording)
    if not p.is_file():
        return None
    kind = classify(str(p))
    if kind is None:
        return None
    return read_supplements([(kind, str(p))])
