"""The targets ``bootlens experiment`` and ``optimize`` configure and boot.

:class:`QemuBench`: a reference target, whose kernel command line, U-Boot environment image
and initramfs bootlens builds itself. :class:`BoardBench`: real hardware, changed by the user's
hook script (docs/experiment.md, "The hook protocol"): before a configuration's boot,
``HOOK reset``, then ``HOOK apply KIND VALUE`` once per change.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

from ..advise.base import ChangeKind, Context
from ..capture.run_folder import write_run_meta
from ..core.model import READY
from ..core.options import MarkerSpec
from .configs import HOOK_KIND, OVERLAY_DIR, ExperimentError, Setup, change_dict, write_overlay
from ..targets.cmdline import KernelCmdline
from ..targets.base import READY_MARKER, TargetError
from ..targets.qemu import TargetFiles, kernel_cmdline


class Bench(ABC):
    """A target that bootlens can configure and boot: a reference target or a board."""

    name: str
    ready: str  # the ready line's regular expression
    cmdline: KernelCmdline  # the kernel arguments every configuration gets (the product's own)
    baud: int | None
    rate_limited: bool  # the console costs what a serial line costs (False: QEMU unthrottled)

    def prepare(self, setup: Setup, folder: Path) -> None:
        """Create the configuration's folder: run.json saying what is applied, the overlay."""
        folder.mkdir(parents=True, exist_ok=True)
        overlay = folder / OVERLAY_DIR if setup.files else None
        if overlay is not None:
            write_overlay(setup.files, overlay)
        write_run_meta(folder, (MarkerSpec.parse(f"{READY}={self.ready}"),), **self.meta(setup, overlay))

    def meta(self, setup: Setup, overlay: Path | None) -> dict[str, object]:
        """What run.json records about a configuration on this target."""
        return {"target": self.name, "append": self.cmdline.append(setup.append).appended,
                "cmdline": None, "uboot_env": dict(setup.env_image),
                "overlay": str(overlay) if overlay else None, "baud": self.baud,
                "experiment": {"configuration": setup.name,
                               "changes": [change_dict(lb, c) for lb, c in setup.changes],
                               "uboot_env_equalised": setup.equalised, "notes": list(setup.all_notes())}}

    def context(self) -> Context:
        """What the advisor may know beyond the log."""
        return Context(baud=self.baud)

    def default_bootdelay(self) -> str | None:
        """U-Boot's default bootdelay, for :func:`equalise`; None: no image cost to equalise."""
        return None

    def check(self, setup: Setup) -> None:
        """Raise ExperimentError before any boot when the setup cannot be applied here."""

    @abstractmethod
    def boot(self, setup: Setup, folder: Path, index: int) -> None:
        """Boot once in this configuration; the recording goes to ``folder/boot-INDEX.rec``."""

    def finish(self) -> None:
        """Called once when every boot is done (a board is put back as it was)."""


class QemuBench(Bench):
    """A reference target (:mod:`bootlens.targets.qemu`): bootlens builds the kernel command line,
    the U-Boot environment image and the initramfs itself."""

    def __init__(self, tf: TargetFiles, append: str = "", baud: int | None = None, timeout_s: float = 300.0,
                 ready: str = READY_MARKER) -> None:
        self.tf = tf
        self.name = tf.spec.name
        self.ready = ready
        self.cmdline = kernel_cmdline(tf, append=append)
        self.baud = baud
        self.rate_limited = baud is not None
        self.timeout_s = timeout_s

    def context(self) -> Context:
        from ..targets.qemu import rootfs_files

        return Context(target=self.name, rootfs_files=rootfs_files(self.name), baud=self.baud)

    def default_bootdelay(self) -> str | None:
        from ..targets.qemu import default_uboot_env

        fw = self.tf.spec.firmware
        if not fw or not self.tf.spec.env_size:
            return None
        try:
            return default_uboot_env(Path(fw).read_bytes()).get("bootdelay", "2")
        except (OSError, TargetError):
            return "2"  # U-Boot's CONFIG_BOOTDELAY default

    def check(self, setup: Setup) -> None:
        if setup.env_image and not self.tf.spec.env_size:
            raise ExperimentError(f"{setup.name}: {self.name} has no U-Boot environment to change")

    def boot(self, setup: Setup, folder: Path, index: int) -> None:
        from ..targets.qemu import boot

        overlay = folder / OVERLAY_DIR if setup.files else None
        boot(self.tf, str(folder / f"boot-{index}.rec"), self.cmdline.append(setup.append), self.timeout_s,
             uboot_env=dict(setup.env_image) or None, overlay=overlay, baud=self.baud, ready=self.ready)


class BoardBench(Bench):
    """Real hardware: a power-cycle command, a console, and the user's hook script that
    changes the board (docs/experiment.md, "The hook protocol")."""

    def __init__(self, port: str, baud: int, power_cycle: str, ready: str, hook: str,
                 timeout_s: float = 300.0, hook_timeout_s: float = 300.0) -> None:
        self.name = "board"
        self.port, self.power_cycle, self.ready = port, power_cycle, ready
        self.cmdline = KernelCmdline()  # the hook changes the board's
        self.baud = self.line_rate = baud
        self.rate_limited = True
        self.timeout_s, self.hook_timeout_s = timeout_s, hook_timeout_s
        self.hook = shlex.split(hook)
        if not self.hook:
            raise ExperimentError("--hook: empty command")
        self._applied: str | None = None  # the configuration the board is in now

    def meta(self, setup: Setup, overlay: Path | None) -> dict[str, object]:
        m = super().meta(setup, overlay)
        m.update(port=self.port, power_cycle=self.power_cycle, hook=shlex.join(self.hook))
        return m

    def run_hook(self, args: Sequence[str], setup: str) -> None:
        """Run ``HOOK ARGS...``; a failure is a one-line error with the hook's last stderr line."""
        env = {**os.environ, "BOOTLENS_CONFIG": setup}
        what = f"--hook {shlex.join([self.hook[0], *args])}"
        try:
            p = subprocess.run([*self.hook, *args], capture_output=True, timeout=self.hook_timeout_s, env=env)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ExperimentError(f"{what}: {e}") from None
        if p.returncode != 0:
            last = (p.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise ExperimentError(f"{what} exited with {p.returncode}: {last}")

    def boot(self, setup: Setup, folder: Path, index: int) -> None:
        from ..targets.runs import board_boot, power_cycle_argv

        self.apply(setup, folder)
        board_boot(self.port, self.line_rate, power_cycle_argv(self.power_cycle), folder / f"boot-{index}.rec",
                   self.ready, self.timeout_s)

    def apply(self, setup: Setup, folder: Path) -> None:
        """Put the board in ``setup``'s configuration through the hook, unless it is in it already."""
        if self._applied != setup.name:
            self.run_hook(["reset"], setup.name)
            self._applied = setup.name  # even if an apply fails below: the board is reset then
            for _, c in setup.changes:
                if c.kind is not ChangeKind.OVERLAY:
                    self.run_hook(["apply", HOOK_KIND[c.kind], c.value], setup.name)
            if setup.files:  # the merged overlay, conflicts already settled
                self.run_hook(["apply", "overlay", str((folder / OVERLAY_DIR).resolve())], setup.name)

    def finish(self) -> None:
        if self._applied is not None and self._applied != "baseline":
            self.run_hook(["reset"], "baseline")
            self._applied = "baseline"
