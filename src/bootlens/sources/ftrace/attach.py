"""How an ftrace buffer joins a boot recorded by ``bootlens run --trace``: the trace split out of
the recording into ``boot-N.trace.txt`` (:mod:`bootlens.capture.trace_dump`) is read back as the
boot's supplement. (A trace given on the command line is an input like any other side file.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from ..supplements import Supplement


def trace_supplement(recording: Path) -> Supplement | None:
    """The recording's trace file read as a supplement of its boot, when there is one and a
    reader knows its content (supplements.classify: by content, never by name)."""
    from ...capture.trace_dump import trace_path
    from ..supplements import classify, read_supplements

    p = trace_path(recording)
    if not p.is_file():
        return None
    kind = classify(str(p))
    if kind is None:
        return None
    return read_supplements([(kind, str(p))])
