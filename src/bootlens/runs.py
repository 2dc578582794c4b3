"""Repeated boots of a reference target and statistics over them.

A run folder holds one recording per boot (``boot-N.rec``); statistics are per stage and per
marker over the boots that measured them: min, median, max and standard deviation, with a
warning when the spread (max - min) exceeds 5% of the median.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .analyze import Analysis, BootAnalysis
from .inputs import analyze_folder, write_run_meta
from .model import READY, Kind
from .parsers import MarkerSpec
from .target import READY_MARKER, TargetFiles, boot

SPREAD_WARN = 0.05


@dataclass(frozen=True, slots=True)
class Stat:
    """One quantity over repeated boots, in ns; ``n`` boots measured it."""

    name: str
    n: int
    min: int
    median: float
    max: int
    stdev: float

    @property
    def range_ns(self) -> int:
        """max - min: the run-to-run spread in ns (0 for a single value)."""
        return self.max - self.min

    @property
    def spread(self) -> float:
        """(max - min) / median; 0 for fewer than two values."""
        return 0.0 if self.n < 2 or not self.median else (self.max - self.min) / self.median


def stat(name: str, values: Sequence[int]) -> Stat | None:
    """Statistics of the values, or None when there are none."""
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return Stat(name, len(values), min(values), statistics.median(values), max(values), sd)


def boot_figures(b: BootAnalysis) -> dict[str, int]:
    """The quantities compared across boots: total, each measured stage, each marker's time."""
    out: dict[str, int] = {}
    if b.total.duration_ns is not None:
        out["total (power-on → ready)" if b.total.origin == "power-on" else f"total ({b.total.origin} → ready)"] = \
            b.total.duration_ns
    for s in b.stages:
        if s.duration_ns is not None:
            out[("  " if s.parent else "") + s.name] = s.duration_ns
    seen = set()
    for e, t in zip(b.boot.events, b.times):
        if e.kind is Kind.MARKER and t is not None and e.name not in seen and e.name != "uptime":
            seen.add(e.name)
            out[f"marker {e.name}"] = t
    return out


def statistics_of(boots: Sequence[BootAnalysis]) -> list[Stat]:
    """Per-quantity statistics, in the order quantities first appear."""
    names: list[str] = []
    values: dict[str, list[int]] = {}
    for b in boots:
        for k, v in boot_figures(b).items():
            if k not in values:
                names.append(k)
                values[k] = []
            values[k].append(v)
    return [s for k in names if (s := stat(k, values[k])) is not None]


def run_target(tf: TargetFiles, folder: Path, repeat: int, append: str = "",
               progress: Callable[[int, float], None] | None = None,
               uboot_env: dict[str, str] | None = None, cmdline: str | None = None,
               overlay: Path | None = None, baud: int | None = None) -> Analysis:
    """Boot ``repeat`` times (a fresh QEMU each time), one recording per boot in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_run_meta(folder, (MarkerSpec.parse(f"{READY}={READY_MARKER}"),), target=tf.spec.name,
                   append=append, cmdline=cmdline, uboot_env=uboot_env or {},
                   overlay=str(overlay) if overlay else None, baud=baud)
    paths = []
    for i in range(1, repeat + 1):
        t = time.monotonic()
        path = folder / f"boot-{i}.rec"
        boot(tf, str(path), append, uboot_env=uboot_env, cmdline=cmdline, overlay=overlay, baud=baud)
        paths.append(str(path))
        if progress is not None:
            progress(i, time.monotonic() - t)
    return analyze_folder(folder)


def run_board(port: str, baud: int, power_cycle: str, folder: Path, repeat: int, ready: str,
              timeout_s: float = 300.0, progress: Callable[[int, float], None] | None = None) -> Analysis:
    """Boot a real board ``repeat`` times: run the power-cycle command (a relay, uhubctl...),
    then capture its console from ``port`` until the ready pattern or the timeout. t=0 is when
    the command returns, i.e. when power is back."""
    import shlex
    import subprocess

    from .capture import CaptureError, SerialSource, capture

    folder.mkdir(parents=True, exist_ok=True)
    write_run_meta(folder, (MarkerSpec.parse(f"{READY}={ready}"),), target="board", port=port, baud=baud,
                   power_cycle=power_cycle)
    argv = shlex.split(power_cycle)
    if not argv:
        raise CaptureError("--power-cycle: empty command")

    def cycle() -> None:
        try:
            p = subprocess.run(argv, capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CaptureError(f"--power-cycle {argv[0]}: {e}") from None
        if p.returncode != 0:
            last = (p.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise CaptureError(f"--power-cycle {argv[0]} exited with {p.returncode}: {last}")

    for i in range(1, repeat + 1):
        t = time.monotonic()
        capture(SerialSource(port, baud), str(folder / f"boot-{i}.rec"), origin="power_on",
                quit_pattern=ready, end_s=timeout_s, on_ready=cycle, t0_after_ready=True)
        if progress is not None:
            progress(i, time.monotonic() - t)
    return analyze_folder(folder)
