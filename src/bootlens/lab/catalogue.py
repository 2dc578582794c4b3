"""Every target bootlens boots, by name: TARGET of ``bootlens run``, ``experiment`` and
``optimize``. The reference targets (:class:`bootlens.targets.qemu.QemuTarget`, one name each
in :data:`bootlens.targets.qemu.TARGETS`), ``board`` (:class:`bootlens.targets.board.BoardTarget`)
and ``labgrid`` (:class:`bootlens.lab.labgrid.LabgridTarget`). Each registers its names in
:data:`bootlens.targets.base.REGISTRY` (the one registry class) when its module is imported: a
new kind of target is one module in targets/ and nothing else. The look-up is here, not in
targets/, because labgrid's target lives in lab/, after targets/ in the stage order.
"""

from __future__ import annotations

from ..core.registry import Registry
from ..targets.base import REGISTRY, Target, TargetName, TargetOptions


def targets() -> Registry[TargetName]:
    """Every target by name, in the one registry class (a name twice is an error; listed in name
    order): each module of targets/ that defines a kind registers its names when imported, the
    labgrid target's module of lab/ too."""
    from . import labgrid  # noqa: F401  (registers "labgrid")

    return REGISTRY.load()


def target_kinds() -> dict[str, type[Target]]:
    """Target name -> its kind, in name order."""
    return {t.name: t.kind for t in targets()}


def open_target(opts: TargetOptions) -> Target:
    """The target ``opts.name`` names, opened from the options (:func:`bootlens.targets.base.open_target`)."""
    from ..targets.base import open_target as open_named

    return open_named(opts, target_kinds())
