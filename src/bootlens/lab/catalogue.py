"""Every target bootlens boots, by name: TARGET of ``bootlens run``, ``experiment`` and
``optimize``. The reference targets (:class:`bootlens.targets.qemu.QemuTarget`, one name each
in :data:`bootlens.targets.qemu.TARGETS`), ``board`` (:class:`bootlens.targets.board.BoardTarget`)
and ``labgrid`` (:class:`bootlens.lab.labgrid.LabgridTarget`). The table is here, not in
targets/, because labgrid's target lives in lab/, after targets/ in the stage order. A new kind
of target is one module with its Target class, and one line here.
"""

from __future__ import annotations

from ..core.model import NamedTuple
from ..core.registry import Registry
from ..targets.base import Target, TargetOptions


class TargetName(NamedTuple):
    """A target's name and the kind of target it is (the class that opens it)."""

    name: str
    kind: type[Target]


_TARGETS: Registry[TargetName] | None = None


def targets() -> Registry[TargetName]:
    """Every target by name, in the one registry class (a name twice is an error; listed in
    name order): the reference targets, ``board`` and ``labgrid``."""
    global _TARGETS
    if _TARGETS is None:
        from ..targets.board import BoardTarget
        from ..targets.qemu import TARGETS, QemuTarget
        from .labgrid import LabgridTarget

        reg: Registry[TargetName] = Registry("target")
        for name in TARGETS:
            reg.register(TargetName(name, QemuTarget))
        reg.register(TargetName("board", BoardTarget))
        reg.register(TargetName("labgrid", LabgridTarget))
        _TARGETS = reg
    return _TARGETS


def target_kinds() -> dict[str, type[Target]]:
    """Target name -> its kind, in name order."""
    return {t.name: t.kind for t in targets()}


def open_target(opts: TargetOptions) -> Target:
    """The target ``opts.name`` names, opened from the options (:func:`bootlens.targets.base.open_target`)."""
    from ..targets.base import open_target as open_named

    return open_named(opts, target_kinds())
