"""Repeated boots of a target (:class:`~bootlens.targets.base.Target`: a reference target, a board,
a labgrid target), one recording per boot (``boot-N.rec``) in a run folder with its run.json
(:func:`run_target`), and which of them never reached the ready marker (:func:`analyze_run`);
the statistics over them are :mod:`bootlens.stats.figures`.

A boot reached ready when the ready marker was seen in its recording. One that did not (the
timeout passed, the kernel panicked, the target powered off, the console stayed silent) keeps
its recording and is named with what the recording tells of why: the ``run``, ``experiment``
and ``optimize`` commands exit with 3 then (README, "Exit codes").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..timeline.analyze import Analysis, BootAnalysis, analyze_paths
from ..core.errors import BootlensError, InputError
from ..capture.run_folder import claim_folder, folder_files, run_options, write_run_meta
from ..core.model import READY, Kind
from ..core.options import MarkerSpec
from ..sources.ftrace.attach import trace_supplement
from .base import BootConfig, Target


@dataclass(frozen=True, slots=True)
class NotReady:
    """A boot (one recording) that never reached its ready marker, and what its recording
    tells of why."""

    path: str
    why: str


@dataclass(frozen=True, slots=True)
class RunAnalysis:
    """A run folder analysed: its boots (recordings with no boot in them left out) and the
    recordings that never reached the ready marker."""

    analysis: Analysis
    recordings: int
    not_ready: tuple[NotReady, ...]
    ready: str | None  # the ready marker's pattern, from run.json

    @property
    def ready_count(self) -> int:
        """Recordings that reached the ready marker."""
        return self.recordings - len(self.not_ready)


def reached_ready(b: BootAnalysis) -> bool:
    """The ready marker was seen in this boot."""
    return any(e.kind is Kind.MARKER and e.name == READY for e in b.boot.events)


def analyze_run(folder: Path, top: int = 10) -> RunAnalysis:
    """Analyse every recording of a run folder with its run.json markers; a recording with no
    boot in it (a silent console, noise) is not an error here but a boot that never reached
    ready, as is every recording in which the ready marker is not seen."""
    files = folder_files(folder)
    if not files:
        raise InputError(str(folder), "no recordings (boot-N.rec) or logs in this folder")
    opts = run_options(folder)
    ready = next((m.pattern.pattern for m in opts.markers if m.name == READY), None)
    parts: list[Analysis] = []
    not_ready: list[NotReady] = []
    for f in files:
        try:
            a = analyze_paths([str(f)], opts, top, supplement=trace_supplement(f))
        except InputError as e:
            not_ready.append(NotReady(str(f), _why(str(f), None, e.reason)))
            continue
        parts.append(a)
        if not any(reached_ready(b) for b in a.boots):
            not_ready.append(NotReady(str(f), _why(str(f), a.boots[-1] if a.boots else None, None)))
    whole = Analysis(tuple(s for a in parts for s in a.inputs), tuple(b for a in parts for b in a.boots))
    return RunAnalysis(whole, len(files), tuple(not_ready), ready)


def _why(path: str, b: BootAnalysis | None, unusable: str | None) -> str:
    """Why a recording holds no ready line, from its analysis and its end note."""
    from ..capture.recording import read_recording

    parts: list[str] = []
    if unusable is not None:
        parts.append("nothing received on the console" if unusable == "empty input" else unusable)
    if b is not None and "kernel panic" in b.partial_reasons:
        parts.append("kernel panic")
    try:
        end = next((n for n in read_recording(path).notes if n.event == "end"), None)
    except BootlensError:  # a log, not a recording: no end note
        end = None
    if end is not None:
        if end.detail == "end time":
            parts.append(f"no ready line within the timeout ({end.t_ns / 1e9:.1f} s)")
        elif end.detail.startswith("source ended: "):
            parts.append(f"the console ended first ({end.detail.removeprefix('source ended: ')})")
        elif end.detail == "quit pattern":
            parts.append("the ready pattern stopped the capture, but no whole ready line was found")
        else:
            parts.append(f"the capture ended: {end.detail}")
    return "; ".join(parts) or "the ready marker is not in the log"


def write_meta(folder: Path, target: Target, config: BootConfig, **extra: object) -> None:
    """A run folder's run.json: the ready marker, what the target records about a boot in
    ``config`` (:meth:`Target.meta`), and ``extra`` (an experiment's configuration)."""
    write_run_meta(folder, (MarkerSpec.parse(f"{READY}={target.ready}"),), **target.meta(config), **extra)


def run_target(target: Target, folder: Path, repeat: int, config: BootConfig = BootConfig(),
               progress: Callable[[int, float], None] | None = None) -> RunAnalysis:
    """Boot ``target`` ``repeat`` times in ``config``, one recording per boot in ``folder``
    (``boot-N.rec``; with a trace, each boot's ftrace buffer beside it, :mod:`.tracerun`), each
    until its ready line or the target's timeout; then close the target and analyse the run.
    A configuration the target cannot boot is an error before the folder is made. The folder
    must be new or empty, and is held for this run alone while it boots (:func:`claim_folder`)."""
    try:
        target.check(config)
        claim = claim_folder(folder)
    except BaseException:
        target.close()
        raise
    with claim:
        try:
            write_meta(folder, target, config)
            for i in range(1, repeat + 1):
                t = time.monotonic()
                target.boot(config, folder / f"boot-{i}.rec")
                if progress is not None:
                    progress(i, time.monotonic() - t)
        finally:
            target.close()
    return analyze_run(folder)
