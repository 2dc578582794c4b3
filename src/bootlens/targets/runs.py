"""Repeated boots of a reference target or a board, one recording per boot (``boot-N.rec``) in a
run folder, and which of them never reached the ready marker; the statistics over them are
:mod:`bootlens.stats.figures`.

A boot reached ready when the ready marker was seen in its recording. One that did not (the
timeout passed, the kernel panicked, the target powered off, the console stayed silent) keeps
its recording and is named with what the recording tells of why: the ``run``, ``experiment``
and ``optimize`` commands exit with 3 then (README, "Exit codes").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..timeline.analyze import Analysis, BootAnalysis, analyze_paths
from ..core.errors import BootlensError, InputError
from ..capture.run_folder import folder_files, run_markers, write_run_meta
from ..core.model import READY, Kind
from ..core.options import MarkerSpec, ParseOptions
from .cmdline import KernelCmdline
from .base import READY_MARKER
from .qemu import TargetFiles, boot, kernel_cmdline
from .tracerun import TracePlan
from ..sources.ftrace.attach import trace_supplement


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
    markers = run_markers(folder)
    ready = next((m.pattern.pattern for m in markers if m.name == READY), None)
    opts = ParseOptions(markers)
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


def run_target(tf: TargetFiles, folder: Path, repeat: int, cmdline: KernelCmdline | None = None,
               progress: Callable[[int, float], None] | None = None,
               uboot_env: dict[str, str] | None = None, overlay: Path | None = None, baud: int | None = None,
               ready: str = READY_MARKER, timeout_s: float = 300.0, trace: TracePlan | None = None) -> RunAnalysis:
    """Boot ``repeat`` times (a fresh QEMU each time), one recording per boot in ``folder``,
    each until its ready line, the target's power-off or ``timeout_s``; with ``trace``, each
    boot's ftrace buffer beside its recording (``boot-N.trace.txt``, :mod:`bootlens.targets.tracerun`)."""
    if cmdline is None:
        cmdline = kernel_cmdline(tf)
    folder.mkdir(parents=True, exist_ok=True)
    write_run_meta(folder, (MarkerSpec.parse(f"{READY}={ready}"),), target=tf.spec.name,
                   append=cmdline.appended, cmdline=cmdline.user_base, uboot_env=uboot_env or {},
                   overlay=str(overlay) if overlay else None, baud=baud, timeout_s=timeout_s,
                   **({"trace": trace.spec, "trace_args": trace.kernel_args} if trace else {}))
    for i in range(1, repeat + 1):
        t = time.monotonic()
        boot(tf, str(folder / f"boot-{i}.rec"), cmdline, timeout_s, uboot_env=uboot_env, overlay=overlay, baud=baud,
             ready=ready, trace=trace)
        if progress is not None:
            progress(i, time.monotonic() - t)
    return analyze_run(folder)


def board_boot(port: str, baud: int, argv: Sequence[str], out: Path, ready: str, timeout_s: float) -> None:
    """Boot a real board once: run the power-cycle command ``argv`` (a relay, uhubctl...), then
    capture its console from ``port`` into ``out`` until the ready pattern or the timeout. t=0
    is when the command returns, i.e. when power is back."""
    import subprocess

    from ..capture.loop import capture, stop_if_interrupted
    from ..capture.sources import CaptureError, SerialSource

    def cycle() -> None:
        try:
            p = subprocess.run(argv, capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CaptureError(f"--power-cycle {argv[0]}: {e}") from None
        if p.returncode != 0:
            last = (p.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise CaptureError(f"--power-cycle {argv[0]} exited with {p.returncode}: {last}")

    stop_if_interrupted(capture(SerialSource(port, baud), str(out), origin="power_on", quit_pattern=ready,
                                end_s=timeout_s, on_ready=cycle, t0_after_ready=True))


def power_cycle_argv(power_cycle: str) -> list[str]:
    """The power-cycle command as an argument list; an empty one is an error."""
    import shlex

    from ..capture.sources import CaptureError

    try:
        argv = shlex.split(power_cycle)
    except ValueError as e:
        raise CaptureError(f"--power-cycle {power_cycle!r}: {e}") from None
    if not argv:
        raise CaptureError("--power-cycle: empty command")
    return argv


def run_board(port: str, baud: int, power_cycle: str, folder: Path, repeat: int, ready: str,
              timeout_s: float = 300.0, progress: Callable[[int, float], None] | None = None) -> RunAnalysis:
    """Boot a real board ``repeat`` times (:func:`board_boot`), one recording per boot."""
    folder.mkdir(parents=True, exist_ok=True)
    write_run_meta(folder, (MarkerSpec.parse(f"{READY}={ready}"),), target="board", port=port, baud=baud,
                   power_cycle=power_cycle, timeout_s=timeout_s)
    argv = power_cycle_argv(power_cycle)
    for i in range(1, repeat + 1):
        t = time.monotonic()
        board_boot(port, baud, argv, folder / f"boot-{i}.rec", ready, timeout_s)
        if progress is not None:
            progress(i, time.monotonic() - t)
    return analyze_run(folder)
