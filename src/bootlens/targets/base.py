"""The Target protocol: a thing that boots (:class:`Target`), the configuration it boots in
(:class:`BootConfig`), and how one is opened by name from the user's options
(:class:`TargetOptions`, :func:`open_target`).

A target boots once in a configuration and leaves a recording from power-on to its ready line
(:meth:`Target.boot`); ``bootlens run`` boots it N times (:func:`bootlens.targets.runs.run_target`),
``experiment`` and ``optimize`` boot it in one configuration after another. The kinds: the QEMU
reference targets (:class:`bootlens.targets.qemu.QemuTarget`: bootlens builds the kernel
command line, U-Boot's environment image and the root filesystem itself), a board
(:class:`bootlens.targets.board.BoardTarget`: a console, a power-cycle command and the user's
hook script that changes it) and a labgrid target (:class:`bootlens.lab.labgrid.LabgridTarget`).
What a target needs to know of a change is here, as plain values (kernel arguments, U-Boot
variables, an overlay directory, a trace plan): experiment/configs.py turns the advisor's
changes into a :class:`BootConfig`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..core.errors import BootlensError, UsageError, printable
from ..core.model import NamedTuple
from ..core.registry import Registry

if TYPE_CHECKING:
    from ..kbuild.build import Built
    from .trace_plan import TracePlan

READY_MARKER = "APP READY"

# What a configuration can set on a target (BootConfig.sets, Target.can_change); the first
# three are also the KINDs of the hook protocol's ``apply KIND VALUE`` (docs/experiment.md).
CMDLINE, UBOOT_ENV, OVERLAY, TRACE = "cmdline", "uboot-env", "overlay", "trace"
# a kernel built from Kconfig lines (bootlens.kbuild) and a boot with no bootloader stage in between
KERNEL, BOOTLOADER = "kernel", "bootloader"

# The options that belong to one kind of target or another (TargetOptions fields), in the order
# open_target checks them: typed on the command line for a kind that does not take them, they
# are a mistake (from bootlens.toml they are left alone: the file may serve several targets).
KIND_OPTIONS = ("env", "role", "place", "coordinator", "port", "power_cycle", "hook", "deterministic")


class TargetError(BootlensError):
    """A target could not be set up, configured or booted."""

    exit_code = 2


def control_char(text: str) -> bool:
    """``text`` holds a control character (a newline, NUL, tab, escape, DEL, ...)."""
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def check_uboot_var(key: str, value: str, where: str = "--uboot-env") -> None:
    """Refuse (one-line TargetError) a U-Boot variable that its environment cannot hold as given:
    the environment is ``name=value`` strings each ended by a NUL, so a NUL in either would end
    it and start a variable of the user's making, an '=' or a space in the name moves the split,
    and a newline ends a variable in U-Boot's text form (``env import -t``, ``fw_setenv -s``, what
    a hook may write); the image holds Latin-1 bytes."""
    item = f"{where} '{printable(key)}={printable(value)}'"
    if not key or "=" in key or any(c.isspace() for c in key) or control_char(key):
        raise TargetError(f"{item}: expected NAME=VALUE, e.g. bootdelay=0 (a NAME without '=', spaces or control "
                          "characters)")
    if control_char(value):
        raise TargetError(f"{item}: a control character (newline, NUL, ...) in the value; U-Boot would read it as "
                          "the end of the variable")
    try:
        (key + value).encode("latin-1")
    except UnicodeEncodeError:
        raise TargetError(f"{item}: a character U-Boot's environment image cannot hold here (Latin-1 only)") from None


@dataclass(frozen=True, slots=True)
class BootConfig:
    """What a target boots with beyond its own: kernel arguments appended, U-Boot variables
    set, a directory laid over its root filesystem, a boot-time trace. ``bootlens run`` makes
    one from its options, experiment/configs.py one per configuration from the advisor's
    changes. ``steps`` is how a hook script applies it (``HOOK apply KIND VALUE``, in order: one
    per change); None: one step per field. ``name`` is the configuration's (the hook's
    BOOTLENS_CONFIG; a target in it already is not changed again); "" for a run's."""

    name: str = ""
    kernel_args: str = ""
    uboot_env: tuple[tuple[str, str], ...] = ()
    overlay: Path | None = None
    trace: TracePlan | None = None
    steps: tuple[tuple[str, str], ...] | None = None
    kernel: Path | None = None  # a kernel image to boot instead of the target's (built: bootlens.kbuild)
    direct: bool = False  # the kernel is started with no bootloader stage (QEMU's direct kernel boot)

    def sets(self) -> tuple[str, ...]:
        """What this configuration changes: CMDLINE, UBOOT_ENV, OVERLAY, TRACE, KERNEL, BOOTLOADER."""
        return tuple(what for what, given in ((CMDLINE, self.kernel_args.strip()), (UBOOT_ENV, self.uboot_env),
                                              (OVERLAY, self.overlay), (TRACE, self.trace), (KERNEL, self.kernel),
                                              (BOOTLOADER, self.direct)) if given)

    def hook_steps(self) -> tuple[tuple[str, str], ...]:
        """The hook's ``apply KIND VALUE`` calls: the steps (else one per kernel argument string
        and U-Boot variable), then the overlay's absolute path."""
        steps = self.steps
        if steps is None:
            steps = (((CMDLINE, self.kernel_args),) if self.kernel_args.strip() else ()) + \
                tuple((UBOOT_ENV, f"{k}={v}") for k, v in self.uboot_env)
        return steps + (((OVERLAY, str(self.overlay.resolve())),) if self.overlay is not None else ())

    def meta(self) -> dict[str, object]:
        """What run.json records of it (the kernel arguments are the target's to record: it
        knows what else is on its command line)."""
        return {"uboot_env": dict(self.uboot_env), "overlay": str(self.overlay) if self.overlay else None,
                **({"trace": self.trace.spec, "trace_args": self.trace.kernel_args} if self.trace else {}),
                **({"kernel": str(self.kernel)} if self.kernel else {}), **({"direct": True} if self.direct else {})}


@dataclass(frozen=True, slots=True)
class TargetOptions:
    """What the user said about the target to boot: the options of ``bootlens run``,
    ``experiment`` and ``optimize`` (the pytest plugin's arguments). Each kind takes what
    applies to it (:meth:`Target.from_options`). ``changes``: the target must apply changes
    (experiment, optimize); ``typed``: the options typed on the command line."""

    name: str
    ready: str = READY_MARKER
    timeout_s: float = 300.0
    baud: int | None = None
    append: str = ""
    cmdline: str | None = None
    port: str | None = None
    power_cycle: str | None = None
    hook: str | None = None
    env: str | None = None
    role: str = "main"
    place: str | None = None
    coordinator: str | None = None
    changes: bool = False
    typed: frozenset[str] = frozenset()
    deterministic: bool = False  # reference targets: QEMU's -icount, read on the guest's clocks


class Target(ABC):
    """A thing that boots: :meth:`boot` boots it once in a configuration and records its console
    from power-on to the ready line. Opened from the user's options by :meth:`from_options`;
    :meth:`close` when done with it (a board is put back as it was, a lab's place let go)."""

    name: str  # as run.json and the tables name it: "qemu-arm64", "board", "labgrid"
    ready: str  # the ready line's regular expression: it ends each boot and the measurement
    timeout_s: float  # a boot not ready by then is over (and did not reach ready)
    baud: int | None  # the console's line rate when known (run.json; the advisor's console rules)
    rate_limited: bool  # the console costs what a serial line costs (False: QEMU's, unthrottled)
    can_change: frozenset[str]  # what a BootConfig may set here: CMDLINE, UBOOT_ENV, OVERLAY, TRACE, KERNEL, ...
    takes: ClassVar[frozenset[str]] = frozenset()  # the KIND_OPTIONS this kind takes

    @classmethod
    @abstractmethod
    def from_options(cls, opts: TargetOptions) -> Target:
        """The target the options name; a one-line UsageError when one it needs is missing or
        one it cannot honour is given."""

    @classmethod
    def refusal(cls, name: str) -> str:
        """Why a KIND_OPTIONS option it does not take makes no sense for target ``name`` ("" to say nothing)."""
        return ""

    def meta(self, config: BootConfig) -> dict[str, object]:
        """What run.json records about a boot of this target in ``config``."""
        return {"target": self.name, "append": config.kernel_args.strip(), "cmdline": None, **config.meta(),
                "baud": self.baud, "timeout_s": self.timeout_s}

    def check(self, config: BootConfig) -> None:
        """A one-line error, before anything is booted or written, when ``config`` asks for what
        this target cannot change (:meth:`cannot` says why)."""
        for what in config.sets():
            if what not in self.can_change:
                raise self.cannot(what, config)

    def cannot(self, what: str, config: BootConfig) -> BootlensError:
        """The error for a configuration that sets ``what``, which this target cannot change."""
        where = f"{config.name}: " if config.name else ""
        return TargetError(f"{where}{self.name} cannot change its {what}")

    def default_bootdelay(self) -> str | None:
        """U-Boot's default bootdelay when a configuration's U-Boot variables come as an
        environment image, whose attaching costs time of its own (experiment's ``equalise``);
        None: no such image (a board's hook changes its own environment)."""
        return None

    def known_files(self) -> dict[str, bytes] | None:
        """The root filesystem files bootlens knows this target boots (path -> content), which the
        advisor reads to propose edits; None when it cannot know them (a board)."""
        return None

    @abstractmethod
    def boot(self, config: BootConfig, out: Path) -> None:
        """Boot once in ``config``: the console from power-on into the recording ``out``, until
        the ready line or the timeout."""

    def build_kernel(self, lines: tuple[str, ...]) -> Built:
        """A kernel built for Kconfig ``lines`` (:mod:`bootlens.kbuild.build`), for a target that
        can boot one (KERNEL in :attr:`can_change`); KernelBuildError when it cannot be built."""
        raise TargetError(f"{self.name} cannot boot a kernel bootlens builds")

    def initramfs_head(self) -> bytes:
        """The first bytes of the initramfs the target boots (how it is compressed); b"" unknown."""
        return b""

    def kernel_config(self) -> Path | None:
        """The .config of the kernel the target boots as it is, when known (the base of a kernel
        diff)."""
        return None

    def host_clock(self) -> Target | None:
        """The same target read on the host's clock, when its boots are read on the guest's own
        (the deterministic mode: ``optimize`` decides there and gives its before/after figure
        in host time from boots of this one); None when its boots are host-timed already."""
        return None

    def close(self) -> None:
        """Done with it: put it back as it was found and let it go. Boots may open it again."""


class TargetName(NamedTuple):
    """A target's name (TARGET of run, experiment and optimize) and the kind that opens it."""

    name: str
    kind: type[Target]


# Every target by name, in the one registry class (a name twice is an error; listed by name):
# each module of targets/ that defines a kind registers its names (lab/labgrid.py too, from lab/);
# REGISTRY.load() imports every module of targets/ once (lab.catalogue.targets() asks it).
REGISTRY: Registry[TargetName] = Registry("target", package=__package__)


def open_target(opts: TargetOptions, kinds: Mapping[str, type[Target]]) -> Target:
    """The target ``opts.name`` names among ``kinds`` (name -> kind), opened from the options:
    an unknown name, an option typed for another kind of target and a bad ``--ready`` are
    one-line errors, before anything is set up or booted."""
    kind = kinds.get(opts.name)
    if kind is None:
        raise TargetError(f"unknown target {opts.name!r}; known: {', '.join(kinds)}")
    for option in KIND_OPTIONS:
        if option in opts.typed and option not in kind.takes:
            owners = " or ".join(dict.fromkeys(n for n, k in kinds.items() if option in k.takes))
            why = kind.refusal(opts.name)
            raise UsageError(f"--{option.replace('_', '-')} is for TARGET {owners}" + (f"; {why}" if why else ""))
    try:
        re.compile(opts.ready)
    except re.error as e:
        raise UsageError(f"--ready {opts.ready!r}: bad regular expression: {e}") from None
    return kind.from_options(opts)
