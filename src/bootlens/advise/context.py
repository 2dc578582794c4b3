"""What the advisor knows about an input beyond its log: :func:`context_for_group`.

- ``baud``: ``--baud`` if given; else the line rate a recording's header remembers (for a run
  folder, the first of its recordings that has one; else its ``run.json``); else None, and the
  console rules give no number.
- ``kconfig``: the kernel configuration a boot-data file (grab-boot-data.sh) carries in its
  CONFIG section, as CONFIG_X -> value ("n" for "is not set"); empty for other inputs.
- ``target`` and ``rootfs_files``: for a run folder whose ``run.json`` names a reference target
  (qemu-arm64, qemu-x86_64), the target's name and the init files of its initramfs; for a single
  recording, the same when its header's source is the QEMU command bootlens ran for a target.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..timeline.analyze import BootAnalysis
from ..timeline.inputs import Group
from ..capture.run_folder import folder_files, read_run_meta
from ..capture.recording import Header, header_of
from ..targets.qemu import TARGETS, rootfs_files
from .base import Context


def recording_header(path: Path) -> Header | None:
    """A recording's header (only its first line is read), or None for anything else."""
    return header_of(str(path))


def recording_baud(path: Path) -> int | None:
    """The line rate in a recording's header, or None (not a recording, unreadable, not known)."""
    h = recording_header(path)
    baud = h.baud if h is not None else None
    return baud if isinstance(baud, int) and baud > 0 else None


def recording_target(path: Path) -> str | None:
    """The reference target a recording was captured from, when its header's source is the
    QEMU command bootlens ran (it boots files from the target's cache folder)."""
    h = recording_header(path)
    if h is None or not h.source.startswith("qemu-system-"):
        return None
    return next((name for name in TARGETS if f"/bootlens/targets/{name}/" in h.source), None)


def run_meta(folder: Path) -> dict[str, object]:
    """A run folder's run.json as a dict (empty when missing or unreadable)."""
    try:
        return read_run_meta(folder)
    except (OSError, ValueError):
        return {}


def context_for_group(group: Group, baud: int | None = None) -> Context:
    """The rule context of one INPUT (see the module docstring for where each field comes from)."""
    return context_of(group.name, group.folder, group.analysis.boots, baud)


def context_of(name: str, folder: bool, boots: Sequence[BootAnalysis], baud: int | None = None) -> Context:
    """:func:`context_for_group` of an input named ``name`` (a run folder when ``folder``) whose
    boots, for a boot-data file's kernel configuration, are ``boots`` (none for a log whose boots
    stream: only side files carry a configuration, and those are analysed whole)."""
    path = Path(name)
    target: str | None = None
    meta: dict[str, object] = {}
    if folder:
        meta = run_meta(path)
        t = meta.get("target")
        target = t if isinstance(t, str) and t in TARGETS else None
    elif name != "-":
        target = recording_target(path)
    if baud is None:
        files = folder_files(path) if folder else ([path] if name != "-" else [])
        for f in files:
            if (baud := recording_baud(f)) is not None:
                break
    if baud is None:
        b = meta.get("baud")
        baud = b if isinstance(b, int) and b > 0 else None
    kconfig = next((dict(b.supplement.kconfig) for b in boots
                    if b.supplement is not None and b.supplement.kconfig), {})
    if target is None:
        return Context(baud=baud, kconfig=kconfig)
    init_files = rootfs_files(target)
    overlay = meta.get("overlay")
    if isinstance(overlay, str) and overlay:
        init_files.update(overlay_files(Path(overlay)))  # what the run booted, not the stock scripts
    return Context(target=target, rootfs_files=init_files, baud=baud, kconfig=kconfig)


def overlay_files(folder: Path) -> dict[str, bytes]:
    """The regular files of a --rootfs-overlay folder (path relative to it, content); empty when
    the folder is gone (a temporary overlay of an experiment)."""
    out: dict[str, bytes] = {}
    try:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not p.is_symlink():
                out[p.relative_to(folder).as_posix()] = p.read_bytes()
    except OSError:
        return {}
    return out
