"""Repeated boots of a reference target or a board, one recording per boot (``boot-N.rec``) in a
run folder; the statistics over them are :mod:`bootlens.stats`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .analyze import Analysis
from .inputs import analyze_folder, write_run_meta
from .model import READY
from .parsers import MarkerSpec
from .target import READY_MARKER, TargetFiles, boot

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
