"""Boots through labgrid (https://labgrid.readthedocs.io), the board-farm engine: the target is a
role of a labgrid environment file, often a place on a labgrid coordinator; bootlens switches
its power through labgrid's PowerProtocol (or a DigitalOutputProtocol relay; the QEMUDriver is
both) and reads its ConsoleProtocol into a recording with its own host timestamps, t=0 when
the power-on call returns.

A boot: power off, wait the driver's own ``delay`` (labgrid's pause in ``cycle()``), drop what
the console still holds from before, then power on with the console already open, so that
the first byte the board sends after power is back is in the recording. The recording is the
same as ``bootlens run board`` makes (:mod:`bootlens.capture.loop`), so analysis, reports and
comparisons never need labgrid. labgrid is imported only here and only when a boot is asked
for: it is the optional ``bootlens[labgrid]`` extra (docs/labgrid.md).

:class:`LabgridTarget` is the Target (:mod:`bootlens.targets.base`) that ``bootlens run``,
``experiment`` and ``optimize`` boot as TARGET ``labgrid``; :class:`LabgridDrivers` holds the
labgrid side of it, opened.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..capture.loop import CaptureResult, capture, stop_if_interrupted
from ..capture.sources import READ_MAX, CaptureError, Source, SourceGone
from ..core.errors import UsageError
from ..targets.base import READY_MARKER, REGISTRY, BootConfig, TargetName, TargetOptions
from ..targets.board import Hook, HookedTarget

# While a burst lasts, a read takes what comes within 1 ms: pyserial's rfc2217 port queues bytes
# one by one and, with no time to wait, hands out one per read
BURST_WAIT_S = 0.001
DRAIN_QUIET_S = 0.2  # the console counts as drained once it has been silent this long
DRAIN_MAX_S = 5.0  # a console that never falls silent (a board not really off) is left after this


class LabgridError(CaptureError):
    """labgrid could not give bootlens the target: no labgrid, a bad environment file, a place
    not acquired, a driver missing or failing. The message is labgrid's, with what was tried."""


@dataclass(frozen=True, slots=True)
class LabgridSpec:
    """Where the target is: a labgrid environment file and the role in it; ``place`` and
    ``coordinator`` override the environment's RemotePlace name and coordinator address."""

    env: str
    role: str = "main"
    place: str | None = None
    coordinator: str | None = None

    def meta(self) -> dict[str, object]:
        """What run.json records about it."""
        return {"labgrid": {"env": str(Path(self.env).resolve()), "role": self.role, "place": self.place,
                            "coordinator": self.coordinator}}


def _labgrid() -> Any:
    """The labgrid package, or a one-line error saying how to install it."""
    try:
        import labgrid  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError as e:
        raise LabgridError(f"labgrid is not installed ({e}): pip install 'bootlens[labgrid]'") from None
    return labgrid


def _say(e: BaseException) -> str:
    """A labgrid exception as one line: labgrid's classes carry their message in different
    fields (``msg``, ``args``), and some have none at all."""
    text = str(getattr(e, "msg", "") or e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _override(config: Any, spec: LabgridSpec) -> None:
    """Apply --coordinator and --place to the loaded environment before its targets are made."""
    if spec.coordinator:
        config.set_option("coordinator_address", spec.coordinator)
    if not spec.place:
        return
    targets = config.data.get("targets") or {}
    role = targets.get(spec.role)
    if not isinstance(role, dict):
        return  # get_target says the role is missing
    resources = role.setdefault("resources", {})
    if isinstance(resources, list):  # labgrid takes a list of {class: args} as well as a mapping
        entries = [r for r in resources if isinstance(r, dict) and "RemotePlace" in r]
        if entries:
            for r in entries:
                r["RemotePlace"] = {**(r["RemotePlace"] or {}), "name": spec.place}
        else:
            resources.insert(0, {"RemotePlace": {"name": spec.place}})
    elif isinstance(resources, dict):
        resources["RemotePlace"] = {**(resources.get("RemotePlace") or {}), "name": spec.place}


def _check_rfc2217(console: Any) -> None:
    """Refuse an RFC 2217 console (a NetworkSerialPort from ser2net, labgrid's usual one) when the
    installed ``serial`` package is pyserial's own rather than labgrid's fork pyserial-labgrid:
    both install ``serial/``, and the one installed last wins. pyserial's rfc2217 port
    renegotiates the line with the server each time a read timeout is set, which labgrid's
    SerialDriver does at every read: measured through ser2net here, lines came up to 7.8 s late
    and power-on -> ready read 12.8 s instead of 8.8 s."""
    port = getattr(console, "serial", None)
    if port is None or type(port).__module__ != "serial.rfc2217":
        return
    if "timeout" not in vars(type(port)):  # the fork's own setter, which leaves the line alone
        import serial  # type: ignore[import-untyped, unused-ignore]

        raise LabgridError(f"the installed 'serial' package is pyserial {serial.__version__}, not labgrid's fork "
                           "pyserial-labgrid: its RFC 2217 console would put the boot's lines seconds late; "
                           "pip install --force-reinstall --no-deps pyserial-labgrid (docs/labgrid.md)")


class LabgridDrivers:
    """A labgrid target opened for booting: its console driver and its power switch.

    Opened by :meth:`LabgridTarget.drivers`; every labgrid failure surfaces as :class:`LabgridError`."""

    def __init__(self, spec: LabgridSpec) -> None:
        self.spec = spec
        self.env: Any = None
        self.target: Any = None
        self.console: Any = None
        self._on: Callable[[], None] = lambda: None
        self._off: Callable[[], None] = lambda: None
        self.power: Any = None
        self.power_name = ""
        self.off_s = 0.0  # how long the target stays off before power-on
        self.baud: int | None = None  # the console's line rate when it is a local serial port

    def open(self) -> None:
        """Load the environment, make the role's target, find its console and power drivers."""
        lg = _labgrid()
        if not Path(self.spec.env).is_file():
            raise LabgridError(f"--env {self.spec.env}: no such file")
        try:
            self.env = lg.Environment(config_file=self.spec.env)
            _override(self.env.config, self.spec)
            self.target = self.env.get_target(self.spec.role)
        except Exception as e:  # labgrid raises many unrelated types (yaml, attrs, gRPC, its own)
            where = ""
            if "coordinator" in str(e) and self.env is not None:  # say which one
                import os

                default = os.environ.get("LG_COORDINATOR", "127.0.0.1:20408")
                where = f" ({self.env.config.get_option('coordinator_address', default)})"
            raise LabgridError(f"--env {self.spec.env}: {_say(e)}{where}") from None
        if self.target is None:
            roles = ", ".join(sorted(self.env.config.get_targets())) or "none"
            raise LabgridError(f"--env {self.spec.env}: no role {self.spec.role!r} (roles: {roles})")
        self._find_drivers()

    def _find_drivers(self) -> None:
        from labgrid.exceptions import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
            NoSupplierFoundError)
        from labgrid.protocol import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
            ConsoleProtocol, DigitalOutputProtocol, PowerProtocol)

        where = f"role {self.spec.role!r} of {self.spec.env}"
        try:
            self.console = self.target.get_driver(ConsoleProtocol, activate=False)
        except NoSupplierFoundError as e:
            raise LabgridError(f"{where}: no console (ConsoleProtocol driver): {_say(e)}") from None
        except Exception as e:
            raise LabgridError(f"{where}: {_say(e)}") from None
        try:
            power = self.target.get_driver(PowerProtocol, activate=False)
            self._on, self._off = power.on, power.off
        except NoSupplierFoundError:
            try:
                power = self.target.get_driver(DigitalOutputProtocol, activate=False)
            except NoSupplierFoundError:
                raise LabgridError(f"{where}: no power switch (a PowerProtocol driver such as "
                                   "ExternalPowerDriver or QEMUDriver, or a DigitalOutputProtocol relay)") from None
            except Exception as e:
                raise LabgridError(f"{where}: {_say(e)}") from None
            self._on, self._off = (lambda: power.set(True)), (lambda: power.set(False))
        except Exception as e:
            raise LabgridError(f"{where}: {_say(e)}") from None
        self.power = power
        self.power_name = type(power).__name__
        # labgrid's own pause between off and on in cycle() (ExternalPowerDriver: 2 s by default)
        self.off_s = float(getattr(power, "delay", 0.0) or 0.0)
        _check_rfc2217(self.console)
        port = getattr(self.console, "port", None)
        if port is not None and type(port).__name__ == "SerialPort":  # a network port's line rate is not ours
            self.baud = int(getattr(port, "speed", 0)) or None
        self._activate(power)

    def _activate(self, driver: Any) -> None:
        try:
            self.target.activate(driver)
        except Exception as e:  # a place not acquired, a resource unavailable, a port refused...
            raise LabgridError(f"{driver}: {_say(e)}") from None

    def activate_console(self) -> None:
        """Open the console (once; it stays open from boot to boot, as a board's UART does)."""
        self._activate(self.console)

    def power_on(self) -> None:
        """Power on; returns when labgrid's driver says power is back."""
        self._power(self._on, "on")

    def power_off(self) -> None:
        """Power off (nothing to do for a QEMU that ended by itself)."""
        if self._qemu_ended():
            return
        try:
            self._off()
        except Exception as e:  # ExecutionError of a command, a relay that refuses...
            if self._qemu_ended(wait_s=5.0):  # ... or a QEMU that was exiting meanwhile
                return
            raise LabgridError(f"power off ({self.power_name}): {_say(e)}") from None

    def _qemu_ended(self, wait_s: float = 0.0) -> bool:
        """labgrid's QEMUDriver does not notice a guest that powered itself off (QEMU exits with
        -no-reboot; the reference target does so after APP READY): its off() then writes to the
        closed monitor and fails, or not, depending on who is first. Such a QEMU is off: the
        driver is told so (its ``_child`` and ``status``, labgrid 23 to 26), so that the next
        on() starts a new one."""
        drv = self.power
        child = getattr(drv, "_child", None)
        if type(drv).__name__ != "QEMUDriver" or child is None:
            return False
        if wait_s:
            try:
                child.wait(wait_s)
            except subprocess.TimeoutExpired:
                return False
        if child.poll() is None:
            return False
        drv._child, drv.status = None, 0
        return True

    def _power(self, call: Callable[[], None], what: str) -> None:
        try:
            call()
        except Exception as e:  # ExecutionError of a command, a relay that refuses, QEMU that failed
            raise LabgridError(f"power {what} ({self.power_name}): {_say(e)}") from None

    def meta(self) -> dict[str, object]:
        """What run.json records: the spec, the console and power drivers, the off time."""
        m = self.spec.meta()
        lg = m["labgrid"]
        assert isinstance(lg, dict)
        lg.update(console=type(self.console).__name__ if self.console is not None else None,
                  power=self.power_name, off_s=self.off_s)
        return m

    def close(self) -> None:
        """Power off (a QEMU target would run on), deactivate every driver, end the session."""
        if self.target is None:
            return
        try:
            if self.power_name:
                self.power_off()
        except LabgridError:  # already off, or the switch is gone: nothing more to do about it here
            pass
        finally:
            try:
                self.env.cleanup()
            except Exception:  # a place released meanwhile: its drivers are gone already
                pass
            self.target = None


class ConsoleSource(Source):
    """A labgrid ConsoleProtocol as a capture source, read with the protocol's own ``read(size,
    timeout, max_size)``.

    After a silence, one byte is waited for (``size=1`` within the timeout; labgrid signals
    "nothing yet" with pexpect's TIMEOUT) and handed on alone, so the start of the burst is
    timed exactly; then, while the burst lasts, everything waiting is taken at once (``size``
    64 KiB, within BURST_WAIT_S). Asking for one byte each time would not do: labgrid's SerialDriver reads
    ``max(size, in_waiting)``, and pyserial's socket:// port (a raw NetworkSerialPort) counts 1
    waiting byte at most, so a kernel's burst of 15 KB came one byte per call, each call through
    labgrid's step machinery: the recording fell 1.5 s behind the console."""

    def __init__(self, lt: LabgridDrivers) -> None:
        self.lt = lt
        self.name = f"labgrid:{lt.spec.role}:{type(lt.console).__name__}"
        self.baud = lt.baud
        self._burst = False  # the last read returned data: the next takes whatever is waiting

    def open(self) -> None:
        self.lt.activate_console()
        self._burst = False

    def drain(self) -> int:
        """Drop what the console still holds from before (the end of the last boot, the
        power-off): until it has been quiet for DRAIN_QUIET_S. Returns the bytes dropped."""
        dropped = 0
        deadline = time.monotonic() + DRAIN_MAX_S
        while time.monotonic() < deadline:
            try:
                data = self.read(DRAIN_QUIET_S)
            except SourceGone:  # a console that exists only while powered (QEMUDriver's socket)
                break
            if not data:
                break
            dropped += len(data)
        self._burst = False
        return dropped

    def read(self, timeout: float) -> bytes:
        if self._burst:
            data = self._read(READ_MAX, BURST_WAIT_S)
            if data:
                return data
        data = self._read(1, timeout)
        self._burst = bool(data)
        return data

    def _read(self, size: int, timeout: float) -> bytes:
        # labgrid's dependency: its drivers signal "no data" with pexpect's TIMEOUT
        from pexpect import TIMEOUT  # type: ignore[import-untyped, import-not-found, unused-ignore]

        try:
            data: bytes = self.lt.console.read(size=size, timeout=timeout, max_size=READ_MAX)
        except TIMEOUT:
            return b""
        except Exception as e:  # the port closed under us (the exporter went away, a cable pulled)
            raise SourceGone(f"{self.name}: {_say(e)}") from None
        return data

    def close(self) -> None:
        pass  # the console stays open for the next boot; LabgridDrivers.close ends it


def labgrid_boot(lt: LabgridDrivers, out: Path, ready: str, timeout_s: float) -> CaptureResult:
    """Boot once: power off, wait ``lt.off_s``, drop the console's leftovers, then capture
    into ``out`` with t=0 when the power-on call returns, until the ready pattern or
    ``timeout_s``."""
    source = ConsoleSource(lt)
    source.open()  # first, so that a console that cannot be opened fails before any power switching
    lt.power_off()
    time.sleep(lt.off_s)
    source.drain()
    return stop_if_interrupted(capture(source, str(out), origin="power_on", quit_pattern=ready, end_s=timeout_s,
                                       on_ready=lt.power_on, t0_after_ready=True))


class LabgridTarget(HookedTarget):
    """A labgrid target: booted by labgrid's power switch and read through its console
    (:func:`labgrid_boot`); for ``experiment`` and ``optimize``, changed by the user's hook
    exactly as a board is (docs/experiment.md, "The hook protocol"; the hook can itself call
    labgrid, e.g. a strategy's state, or labgrid-client). The target is opened at first use
    (run.json, the first boot) and closed (powered off) by :meth:`close`. ``baud``: the
    console's line rate as the user gives it, else as labgrid's serial port says."""

    name = "labgrid"
    takes = frozenset({"env", "role", "place", "coordinator", "hook"})

    def __init__(self, spec: LabgridSpec, ready: str = READY_MARKER, timeout_s: float = 300.0,
                 baud: int | None = None, hook: Hook | None = None) -> None:
        super().__init__(hook)
        self.spec = spec
        self.ready, self.timeout_s, self.baud = ready, timeout_s, baud
        self._drivers: LabgridDrivers | None = None

    @classmethod
    def from_options(cls, opts: TargetOptions) -> LabgridTarget:
        if not opts.env:
            raise UsageError("TARGET labgrid needs --env (a labgrid environment file; docs/labgrid.md)")
        if opts.changes and (not opts.hook or opts.append):
            raise UsageError("labgrid needs --hook (a script that applies changes; see docs/experiment.md), and takes "
                             "no --append (the hook changes the command line)")
        if opts.append or opts.cmdline is not None:
            raise UsageError(f"--{'append' if opts.append else 'cmdline'} is for reference targets; labgrid's target "
                             "boots its own command line")
        import logging

        # labgrid's client logs through the root logger with logging.error(), which installs a stderr
        # handler when there is none: its failures reach us as exceptions, said in one line by the CLI
        if not logging.getLogger().handlers:
            logging.getLogger().addHandler(logging.NullHandler())
        spec = LabgridSpec(opts.env, opts.role, opts.place, opts.coordinator)
        return cls(spec, opts.ready, opts.timeout_s, opts.baud, Hook(opts.hook) if opts.hook else None)

    @classmethod
    def refusal(cls, name: str) -> str:
        return "labgrid's environment file names the console and the power switch"

    def drivers(self) -> LabgridDrivers:
        """The labgrid target's drivers, opened on first use."""
        if self._drivers is None:
            lt = LabgridDrivers(self.spec)
            try:
                lt.open()
            except BaseException:
                lt.close()
                raise
            self._drivers = lt
            self.baud = self.baud or lt.baud
        return self._drivers

    def meta(self, config: BootConfig) -> dict[str, object]:
        lt = self.drivers()
        m = super().meta(config)
        m.update(lt.meta())
        return m

    def power_boot(self, out: Path) -> None:
        labgrid_boot(self.drivers(), out, self.ready, self.timeout_s)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._drivers is not None:
                self._drivers.close()
                self._drivers = None


REGISTRY.register(TargetName("labgrid", LabgridTarget))  # a target kind of lab/, in targets/' registry
