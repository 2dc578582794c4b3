"""The advisor's model: rules read an analysed boot and return findings.

A :class:`Finding` says what to change, what it would save on *this* board, and how that
figure was computed from the boot's own data (``arithmetic``, with the log lines it rests on
in ``evidence``). Where the data cannot support a figure, ``saving_ns`` is None and the
arithmetic says why: a finding never guesses a number.

A :class:`Change` is concrete: a kernel command-line argument, a U-Boot variable, files laid
over the root filesystem, a Kconfig option, or an edit described in words. The first three can
be applied automatically to a target bootlens controls (``experiment``, ``optimize``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from ..timeline.analyze import BootAnalysis


class ChangeKind(StrEnum):
    """How a change is made."""

    CMDLINE = "cmdline"  # add ``value`` to the kernel command line (e.g. "quiet", "lpj=1250000")
    UBOOT_ENV = "uboot_env"  # set a U-Boot variable: ``value`` is "NAME=VALUE"
    OVERLAY = "overlay"  # lay ``files`` over the root filesystem (init scripts)
    KCONFIG = "kconfig"  # rebuild the kernel with ``value`` (e.g. "CONFIG_KERNEL_LZ4=y"), or ``kconfig``'s lines
    BOOTLOADER = "bootloader"  # ``value`` "direct": boot the kernel with no bootloader stage (falcon mode)
    MANUAL = "manual"  # anything else, described in ``description``


AUTOMATIC = frozenset({ChangeKind.CMDLINE, ChangeKind.UBOOT_ENV, ChangeKind.OVERLAY})


@dataclass(frozen=True, slots=True)
class Change:
    """One concrete change; ``files`` are (path in the root filesystem, new content, mode)."""

    kind: ChangeKind
    value: str  # the argument, NAME=VALUE, Kconfig line, or a short name for an overlay edit
    description: str  # what to do, in words a BSP engineer would write in a ticket
    files: tuple[tuple[str, bytes, int], ...] = ()
    # KCONFIG: the lines to build with when more than ``value`` (bootlens.kbuild.build: "allnoconfig"
    # first to start from nothing, then CONFIG_X=y lines); empty: ``value`` is the one line
    kconfig: tuple[str, ...] = ()

    @property
    def kconfig_lines(self) -> tuple[str, ...]:
        """A KCONFIG change's lines (``kconfig``, else ``value``); () for other kinds."""
        if self.kind is not ChangeKind.KCONFIG:
            return ()
        return self.kconfig or (self.value,)

    @property
    def automatic(self) -> bool:
        """True when bootlens can apply it to a target it controls."""
        return self.kind in AUTOMATIC


class Confidence(StrEnum):
    """How far the estimate can be trusted."""

    HIGH = "high"  # the time is measured directly and the change removes it (a delay, a sleep)
    MEDIUM = "medium"  # measured, but the change may not remove all of it
    LOW = "low"  # a model (a table of speeds, a typical ratio) stands between data and figure


@dataclass(frozen=True, slots=True)
class Evidence:
    """A log line a finding rests on."""

    line_no: int
    text: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One piece of advice for one boot."""

    rule: str  # the rule's id, e.g. "uboot.autoboot_delay"
    title: str  # one line, e.g. "U-Boot waits 2 s for a key press"
    stage: str  # the stage it saves time in: bootloader, kernel_load, kernel_init, userspace
    saving_ns: int | None  # estimated saving; None when the data cannot support a figure
    arithmetic: str  # how saving_ns was computed from this boot ("2.089 s measured at line 14 - 0")
    confidence: Confidence
    tradeoff: str  # what it costs or risks
    change: Change
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class Context:
    """What a rule may know beyond the log: the target's files when bootlens built them."""

    target: str | None = None  # a reference target's name, e.g. "qemu-arm64"
    rootfs_files: Mapping[str, bytes] = field(default_factory=dict)  # path -> content (init scripts)
    baud: int | None = None  # the console's line rate, when known (a recording's header)
    kconfig: Mapping[str, str] = field(default_factory=dict)  # CONFIG_X -> "y"/"m"/"n"/value (a boot-data file)
    # a kernel source tree matching the booted kernel (a target that rebuilds its kernel: optimize
    # --rebuild-kernel), and the first bytes of the initramfs it unpacks
    kernel_source: str | None = None
    initramfs_head: bytes = b""


class Rule(ABC):
    """One piece of boot-time know-how. Subclasses register with :meth:`RuleRegistry.register`."""

    id: ClassVar[str]  # "area.name", e.g. "kernel.serial_console"
    title: ClassVar[str]  # what it looks for
    # the substrings of log lines the rule greps for (Lines.grep caches each): advise() finds every
    # rule's in one pass over the lines before the rules run, instead of one pass per rule
    needles: ClassVar[tuple[str, ...]] = ()
    # the rule counts what the console printed (its bytes, its lines' order): it runs only on a
    # boot whose lines are a console's output (:func:`bootlens.advise.console.console_output`)
    console: ClassVar[bool] = False

    def needles_of(self, boot: BootAnalysis) -> Iterable[str]:
        """:attr:`needles` and any that depend on the boot (a device's name)."""
        return self.needles

    @abstractmethod
    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        """The findings for this boot; none when the rule does not apply. Never raises on odd
        data: a rule that cannot tell says nothing."""
