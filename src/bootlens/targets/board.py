"""Real hardware as a target: a console, a power-cycle command, and the user's hook script that
changes the board (:class:`BoardTarget`, ``bootlens run|experiment|optimize board``).

bootlens cannot reach into a board; the hook does it (docs/experiment.md, "The hook protocol"):
before the first boot of a configuration, ``HOOK reset``, then ``HOOK apply KIND VALUE`` once per
change; after the last boot, ``HOOK reset`` again unless the board is in its baseline already.
:class:`HookedTarget` is that protocol for any target booted by power alone (a labgrid target
too, :mod:`bootlens.lab.labgrid`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path

from ..capture.sources import CaptureError
from ..core.errors import BootlensError, UsageError, printable
from .base import (
    CMDLINE, OVERLAY, READY_MARKER, REGISTRY, TRACE, UBOOT_ENV, BootConfig, Target, TargetError, TargetName,
    TargetOptions, check_uboot_var, control_char,
)
from .cmdline import check_args

# a board's kernel is not bootlens's to trace: its command line is the board's (through the hook)
NO_TRACE = ("--trace is for the busybox reference targets (qemu-arm64, qemu-x86_64): on a board, put the trace "
            "arguments in its command line and read the buffer yourself")


class Hook:
    """The user's script that changes a target (docs/experiment.md, "The hook protocol"), and
    the configuration it has put the target in."""

    def __init__(self, command: str, timeout_s: float = 300.0) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as e:
            raise UsageError(f"--hook {command!r}: {e}") from None
        if not self.argv:
            raise UsageError("--hook: empty command")
        self.timeout_s = timeout_s
        self.applied: str | None = None  # the configuration the target is in now (None: not known)

    @property
    def command(self) -> str:
        """The command as the user would type it (run.json)."""
        return shlex.join(self.argv)

    def run(self, args: Sequence[str], config: str) -> None:
        """Run ``HOOK ARGS...``; a failure is a one-line error with the hook's last stderr line."""
        env = {**os.environ, "BOOTLENS_CONFIG": config}
        what = f"--hook {shlex.join([self.argv[0], *args])}"
        for arg in (*args, config):  # an argv, never a shell line: only a NUL or a line break could break it
            if control_char(arg):
                raise TargetError(f"--hook {printable(shlex.join([self.argv[0], *args]))}: a control character "
                                  "(newline, NUL, ...) in an argument; refused")
        try:
            p = subprocess.run([*self.argv, *args], capture_output=True, timeout=self.timeout_s, env=env)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise TargetError(f"{what}: {e}") from None
        if p.returncode != 0:
            last = (p.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
            raise TargetError(f"{what} exited with {p.returncode}: {last}")

    def apply(self, config: BootConfig) -> None:
        """Put the target in ``config`` (reset, then one apply per step), unless it is in it already."""
        if self.applied != config.name:
            for kind, value in config.hook_steps():  # all checked before the target is touched
                check_step(kind, value)
            self.run(["reset"], config.name)
            self.applied = config.name  # even if an apply fails below: the target is reset then
            for kind, value in config.hook_steps():
                self.run(["apply", kind, value], config.name)

    def reset(self) -> None:
        """Put the target back in its baseline configuration, unless it is in it (or untouched)."""
        if self.applied is not None and self.applied != "baseline":
            self.run(["reset"], "baseline")
            self.applied = "baseline"


def check_step(kind: str, value: str) -> None:
    """Refuse (one-line TargetError) a hook step's value that the hook could not pass on as it is
    meant: kernel arguments as the kernel reads them (:func:`.cmdline.check_args`), a U-Boot
    variable as its environment holds one (:func:`.base.check_uboot_var`), no control character
    in any (a hook writes them into bootargs, fw_setenv, a file list)."""
    where = f"--hook apply {kind}"
    if kind == CMDLINE:
        check_args(value, where)
    elif kind == UBOOT_ENV:
        key, _, v = value.partition("=")
        check_uboot_var(key, v, where)
    elif control_char(value):
        raise TargetError(f"{where} '{printable(value)}': a control character (newline, NUL, ...); refused")


class HookedTarget(Target):
    """A target booted by switching its power, which only its hook can change: it changes kernel
    arguments, U-Boot variables and files when there is a hook, nothing without one."""

    hook: Hook | None
    rate_limited = True  # a real serial line, whatever its rate

    def __init__(self, hook: Hook | None) -> None:
        self.hook = hook
        self.can_change = frozenset((CMDLINE, UBOOT_ENV, OVERLAY) if hook is not None else ())

    def meta(self, config: BootConfig) -> dict[str, object]:
        m = super().meta(config)
        if self.hook is not None:
            m["hook"] = self.hook.command
        return m

    def cannot(self, what: str, config: BootConfig) -> BootlensError:
        if what == TRACE:
            return UsageError(NO_TRACE)
        return UsageError(f"{self.name}: only a hook script changes it (--hook of experiment and optimize); "
                          "--uboot-env and --rootfs-overlay are for the reference targets")

    def boot(self, config: BootConfig, out: Path) -> None:
        if self.hook is not None:
            self.hook.apply(config)
        self.power_boot(out)

    @abstractmethod
    def power_boot(self, out: Path) -> None:
        """Power-cycle it and record its console from power-on into ``out`` until the ready line
        or the timeout."""

    def close(self) -> None:
        if self.hook is not None:
            self.hook.reset()


class BoardTarget(HookedTarget):
    """Real hardware: its console (``port``, a serial device or pyserial URL, at ``baud``), a
    command that power-cycles it (``power_cycle``: a relay, uhubctl; t=0 when it returns) and,
    for experiments, the user's hook that changes it."""

    name = "board"
    takes = frozenset({"port", "power_cycle", "hook"})

    def __init__(self, port: str, power_cycle: str, baud: int = 115200, ready: str = READY_MARKER,
                 timeout_s: float = 300.0, hook: Hook | None = None) -> None:
        super().__init__(hook)
        self.port, self.power_cycle, self.baud = port, power_cycle, baud
        self.argv = power_cycle_argv(power_cycle)
        self.ready, self.timeout_s = ready, timeout_s

    @classmethod
    def from_options(cls, opts: TargetOptions) -> BoardTarget:
        if opts.changes and (not opts.port or not opts.power_cycle or not opts.hook):
            raise UsageError("board needs --port (its console), --power-cycle (a command) and --hook (a script "
                             "that applies changes; see docs/experiment.md)")
        if not opts.port or not opts.power_cycle:
            raise UsageError("run board needs --port (its console) and --power-cycle (a command)")
        if opts.append or opts.cmdline is not None:
            raise UsageError(f"--{'append' if opts.append else 'cmdline'} is for reference targets; on a board the "
                             "hook changes the command line")
        hook = Hook(opts.hook) if opts.hook else None
        return cls(opts.port, opts.power_cycle, opts.baud or 115200, opts.ready, opts.timeout_s, hook)

    def meta(self, config: BootConfig) -> dict[str, object]:
        m = super().meta(config)
        hook = m.pop("hook", None)
        m.update(port=self.port, power_cycle=self.power_cycle, **({"hook": hook} if hook is not None else {}))
        return m

    def power_boot(self, out: Path) -> None:
        board_boot(self.port, self.baud or 115200, self.argv, out, self.ready, self.timeout_s)


def board_boot(port: str, baud: int, argv: Sequence[str], out: Path, ready: str, timeout_s: float) -> None:
    """Boot a real board once: run the power-cycle command ``argv`` (a relay, uhubctl...), then
    capture its console from ``port`` into ``out`` until the ready pattern or the timeout. t=0
    is when the command returns, i.e. when power is back."""
    from ..capture.loop import capture, stop_if_interrupted
    from ..capture.sources import SerialSource

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
    try:
        argv = shlex.split(power_cycle)
    except ValueError as e:
        raise CaptureError(f"--power-cycle {power_cycle!r}: {e}") from None
    if not argv:
        raise CaptureError("--power-cycle: empty command")
    return argv


REGISTRY.register(TargetName("board", BoardTarget))
