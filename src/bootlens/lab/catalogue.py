"""Every target bootlens boots, by name: TARGET of ``bootlens run``, ``experiment`` and
``optimize``. The reference targets (:class:`bootlens.targets.qemu.QemuTarget`, one name each
in :data:`bootlens.targets.qemu.TARGETS`), ``board`` (:class:`bootlens.targets.board.BoardTarget`)
and ``labgrid`` (:class:`bootlens.lab.labgrid.LabgridTarget`). The table is here, not in
targets/, because labgrid's target lives in lab/, after targets/ in the stage order. A new kind
of target is one module with its Target class, and one line here.
"""

from __future__ import annotations

from ..targets.base import Target, TargetOptions


def target_kinds() -> dict[str, type[Target]]:
    """Target name -> its kind, the reference targets first (a plain table: names are unique)."""
    from ..targets.board import BoardTarget
    from ..targets.qemu import TARGETS, QemuTarget
    from .labgrid import LabgridTarget

    kinds: dict[str, type[Target]] = {name: QemuTarget for name in TARGETS}
    kinds.update(board=BoardTarget, labgrid=LabgridTarget)
    return kinds


def open_target(opts: TargetOptions) -> Target:
    """The target ``opts.name`` names, opened from the options (:func:`bootlens.targets.base.open_target`)."""
    from ..targets.base import open_target as open_named

    return open_named(opts, target_kinds())
