"""How an strace (or ltrace) joins a boot: every file given read as one trace (``strace -ff``
writes one per process), placed on the console through a line both show (or the wall clock),
then its processes added as events (:func:`bootlens.sources.strace.summary.attach`). Given
without a log, the trace is a boot of its own (:func:`alone_boot`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from ...core.model import Boot
    from ..supplements import Supplement
    from .summary import Summary


def read_together(paths: list[Path]) -> tuple[Summary, tuple[str, ...]]:
    """The files of one trace, summarised, and the summary's warnings."""
    from .summary import read_summary

    summary = read_summary(paths)
    return summary, summary.warnings


def place(boot: Boot, sup: Supplement) -> tuple[Boot, Supplement]:
    """The trace placed on the console, then its processes as the boot's events."""
    from .summary import attach

    return attach(boot, sup)


def alone_boot(source: str, sup: Supplement) -> Boot:
    """A trace given without a console log: a boot of its processes on the trace's own clock, t=0
    at its first line (:func:`bootlens.sources.strace.summary.attach` places them so); the strace
    section says when each process first wrote to a terminal."""
    from .summary import trace_boot

    return trace_boot(source, sup.strace)
