"""Changes and the configurations made of them, for ``bootlens experiment`` and ``optimize``.

A ``--try NAME=KIND:VALUE`` becomes a :class:`TrySpec`; one or more changes make a
:class:`Setup` (:func:`combine`): kernel arguments joined, U-Boot variables merged, overlay
files merged, and where two changes set the same thing the later one wins, which the setup's
notes say. :func:`equalise` gives every configuration a U-Boot environment image when one of
them needs one, since attaching the image costs time of its own.
"""

from __future__ import annotations

import os
import stat as st
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath


from ..advise.base import Change, ChangeKind
from ..core.errors import BootlensError, printable
from ..capture.run_folder import RUN_META, read_run_meta
from ..kbuild.build import ALLNOCONFIG
from ..targets.base import BOOTLOADER, CMDLINE, KERNEL, OVERLAY, UBOOT_ENV, BootConfig
from ..targets.cmdline import param_name
from ..targets.initramfs import overlay_files

SPEC_KINDS = ("cmdline", "uboot-env", "overlay", "rule")
RESERVED = frozenset({"baseline", "all", "advise", "final", "final-overlay"})  # folder names bootlens uses
OVERLAY_DIR = "overlay"  # in each configuration's folder: the files laid over the root filesystem
HOOK_KIND = {ChangeKind.CMDLINE: CMDLINE, ChangeKind.UBOOT_ENV: UBOOT_ENV, ChangeKind.OVERLAY: OVERLAY,
             ChangeKind.KCONFIG: KERNEL, ChangeKind.BOOTLOADER: BOOTLOADER}
NOT_AUTOMATIC = {ChangeKind.KCONFIG: "needs a kernel rebuild", ChangeKind.MANUAL: "needs a manual edit",
                 ChangeKind.BOOTLOADER: "needs a change of the boot path"}
# what a target must be able to change (Target.can_change) for bootlens to apply a change of this kind
NEEDS = {ChangeKind.KCONFIG: KERNEL, ChangeKind.BOOTLOADER: BOOTLOADER}
# ALLNOCONFIG: a KCONFIG change's first line, build from nothing (bootlens.kbuild.build)


class ExperimentError(BootlensError):
    """A change that cannot be applied, a bad --try, a hook that failed."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class TrySpec:
    """One ``--try NAME=CHANGE``; ``change`` is None for ``rule:RULE_ID`` until resolved."""

    name: str
    spec: str  # what followed NAME=
    change: Change | None
    rule: str | None = None


def valid_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and all(c.isalnum() or c in "._-" for c in name) \
        and name.isascii()


def parse_try(text: str) -> TrySpec:
    """Parse ``NAME=KIND:VALUE`` (kinds: cmdline, uboot-env, overlay, rule); one-line errors."""
    name, sep, spec = text.partition("=")
    where = f"--try {printable(text)!r}"
    if not sep or not name or not spec:
        raise ExperimentError(f"{where}: expected NAME=CHANGE, e.g. nodelay=uboot-env:bootdelay=0")
    if not valid_name(name):
        raise ExperimentError(f"{where}: NAME names a folder: use letters, digits, '.', '_' or '-'")
    if name in RESERVED:
        raise ExperimentError(f"{where}: {name!r} is reserved ({', '.join(sorted(RESERVED))})")
    kind, sep, value = spec.partition(":")
    if kind in ("kconfig", "manual"):
        why = NOT_AUTOMATIC[ChangeKind(kind)]
        raise ExperimentError(f"{where}: a {kind} change {why}; experiment applies cmdline, uboot-env, "
                              "overlay and rule changes")
    if not sep or kind not in SPEC_KINDS:
        raise ExperimentError(f"{where}: CHANGE is KIND:VALUE with KIND one of {', '.join(SPEC_KINDS)}")
    if not value or any(c in value for c in "\0\n\r"):
        raise ExperimentError(f"{where}: empty or multi-line value")
    if kind == "cmdline":
        return TrySpec(name, spec, Change(ChangeKind.CMDLINE, value, f"add '{value}' to the kernel command line"))
    if kind == "uboot-env":
        key, eq, _ = value.partition("=")
        if not eq or not key or any(c in key for c in " ="):
            raise ExperimentError(f"{where}: uboot-env takes NAME=VALUE, e.g. uboot-env:bootdelay=0")
        return TrySpec(name, spec, Change(ChangeKind.UBOOT_ENV, value, f"set the U-Boot variable {value}"))
    if kind == "overlay":
        return TrySpec(name, spec, overlay_change(Path(value), where))
    return TrySpec(name, spec, None, rule=value)


def overlay_change(root: Path, where: str = "overlay") -> Change:
    """A change laying the files (and symlinks) under ``root`` over the root filesystem."""
    if not root.is_dir():
        raise ExperimentError(f"{where}: {printable(str(root))} is not a directory")
    files = overlay_files(root)
    if not files:
        raise ExperimentError(f"{where}: {printable(str(root))} holds no files")
    files.sort()
    shown = ", ".join(f[0] for f in files[:3]) + (", ..." if len(files) > 3 else "")
    return Change(ChangeKind.OVERLAY, root.name or str(root),
                  f"lay {root} over the root filesystem ({shown})", tuple(files))


def _rel(path: str) -> str:
    """A root filesystem path as an overlay-relative one; refuses anything leaving the tree."""
    p = PurePosixPath(path.lstrip("/"))
    if not p.parts or ".." in p.parts:
        raise ExperimentError(f"overlay file {printable(path)!r}: not a path inside the root filesystem")
    return p.as_posix()


@dataclass(frozen=True, slots=True)
class Setup:
    """One configuration of the target: its changes (label, change) and what applying them
    means. ``env_image`` is what the U-Boot environment image holds: the changes' variables, or
    only U-Boot's default ``bootdelay`` when it is there to keep conditions equal; empty: no image."""

    name: str
    changes: tuple[tuple[str, Change], ...]
    append: str  # kernel arguments the changes add
    uboot_env: tuple[tuple[str, str], ...]  # U-Boot variables the changes set
    files: tuple[tuple[str, bytes, int], ...]  # (path, content, mode) laid over the root filesystem
    env_image: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    kconfig: tuple[str, ...] = ()  # the Kconfig lines of a kernel to build and boot (bootlens.kbuild.build)
    direct: bool = False  # no bootloader stage: the kernel is started directly

    @property
    def equalised(self) -> bool:
        """It boots with an environment image only to keep conditions equal (:func:`equalise`)."""
        return bool(self.env_image) and not self.uboot_env

    def all_notes(self) -> tuple[str, ...]:
        """The notes, with the environment image's when it is only there for equal conditions."""
        return self.notes + ((EQUALISED.format(dict(self.env_image).get("bootdelay")),) if self.equalised else ())

    def boot_config(self, folder: Path) -> BootConfig:
        """What the target boots with in this configuration, whose folder is ``folder``: the
        kernel arguments, the environment image's variables, ``folder/overlay`` when files are
        laid over the root filesystem, and for a hook one step per change, in order (the
        overlay's files are one step, after them: merged, conflicts settled)."""
        steps = tuple((HOOK_KIND[c.kind], c.value) for _, c in self.changes if c.kind is not ChangeKind.OVERLAY)
        return BootConfig(self.name, self.append, self.env_image, folder / OVERLAY_DIR if self.files else None,
                          steps=steps, direct=self.direct)


def combine(name: str, changes: Sequence[tuple[str, Change]]) -> Setup:
    """One configuration from labelled changes: kernel arguments joined, U-Boot variables
    merged, overlay files merged; where two changes set the same thing the later wins (noted)."""
    args: list[str] = []
    argkeys: dict[str, tuple[str, str]] = {}
    env: dict[str, tuple[str, str]] = {}
    files: dict[str, tuple[bytes, int, str]] = {}
    notes: list[str] = []
    kconfig: dict[str, tuple[str, str]] = {}  # symbol -> (line, label)
    base = False
    direct = False
    for label, c in changes:
        if not c.automatic and c.kind not in NEEDS:
            raise ExperimentError(f"{label}: {c.kind.value} change {c.value!r} {NOT_AUTOMATIC[c.kind]}; "
                                  "only cmdline, uboot-env, overlay, kconfig and bootloader changes are applied")
        if c.kind is ChangeKind.KCONFIG:
            for line in c.kconfig_lines:
                if line == ALLNOCONFIG:
                    base = True
                    continue
                key = line.removeprefix("# ").split("=")[0].split(" ")[0]
                if key in kconfig and kconfig[key][0] != line:
                    notes.append(f"{key}: {kconfig[key][1]} sets {kconfig[key][0]!r}, {label} sets {line!r}; "
                                 f"{label}'s is used")
                kconfig.pop(key, None)
                kconfig[key] = (line, label)
        elif c.kind is ChangeKind.BOOTLOADER:
            direct = True
        elif c.kind is ChangeKind.CMDLINE:
            for arg in c.value.split():
                key = param_name(arg)
                if key in argkeys and argkeys[key][0] != arg:
                    notes.append(f"kernel argument {key}: {argkeys[key][1]} adds {argkeys[key][0]}, {label} adds "
                                 f"{arg}; both are passed and the kernel takes the last one ({label}'s)")
                argkeys[key] = (arg, label)
                if arg not in args:
                    args.append(arg)
        elif c.kind is ChangeKind.UBOOT_ENV:
            key, _, value = c.value.partition("=")
            if key in env and env[key][0] != value:
                notes.append(f"U-Boot variable {key}: {env[key][1]} sets {env[key][0]!r}, {label} sets "
                             f"{value!r}; {label}'s value is used")
            env[key] = (value, label)
        else:
            for path, data, mode in c.files:
                rel = _rel(path)
                if rel in files and files[rel][:2] != (data, mode):
                    notes.append(f"{rel}: set by both {files[rel][2]} and {label}; {label}'s version is used")
                files[rel] = (data, mode, label)
    uenv = tuple((k, v) for k, (v, _) in env.items())
    lines = ((ALLNOCONFIG,) if base else ()) + tuple(line for line, _ in kconfig.values())
    return Setup(name, tuple(changes), " ".join(args), uenv,
                 tuple((p, d, m) for p, (d, m, _) in sorted(files.items())), uenv, tuple(notes), lines, direct)


EQUALISED = ("boots with a U-Boot environment image holding only bootdelay={} (U-Boot's default), so that it "
             "pays the same cost of attaching the image as the configurations that set U-Boot variables")


def equalise(setups: Sequence[Setup], bootdelay: str | None) -> list[Setup]:
    """When one configuration boots with a U-Boot environment image, give the others one too,
    holding U-Boot's default ``bootdelay``: attaching the image has a cost of its own.
    ``bootdelay`` None: the target has no such cost (a board whose hook changes the variables)."""
    if bootdelay is None or not any(s.env_image for s in setups):
        return list(setups)
    return [s if s.env_image else replace(s, env_image=(("bootdelay", bootdelay),)) for s in setups]


def write_overlay(files: Sequence[tuple[str, bytes, int]], root: Path) -> None:
    """Write overlay files (regular files with their permission bits, symlinks) under ``root``."""
    for path, data, mode in files:
        dest = root / _rel(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        if st.S_ISLNK(mode):
            os.symlink(data.decode("utf-8", "surrogateescape"), dest)
        else:
            dest.write_bytes(data)
            dest.chmod(mode & 0o7777 or 0o644)


def change_key(c: Change) -> tuple[str, str, tuple[str, ...]]:
    """What makes two changes the same for matching a finding: kind and value; for an overlay,
    the set of files it edits (a user's overlay matches a rule editing the same scripts)."""
    if c.kind is ChangeKind.OVERLAY:
        return (c.kind.value, "", tuple(sorted(PurePosixPath(p.lstrip("/")).as_posix() for p, _, _ in c.files)))
    return (c.kind.value, c.value, ())


def change_dict(label: str, c: Change) -> dict[str, object]:
    """A change as JSON (run.json, --json): overlay contents are not repeated, only paths."""
    return {"label": label, "kind": c.kind.value, "value": c.value, "description": c.description,
            "automatic": c.automatic, "overlay_files": [p.lstrip("/") for p, _, _ in c.files],
            **({"kconfig": list(c.kconfig)} if c.kconfig else {})}


def read_applied(folder: Path) -> dict[str, object]:
    """What a configuration folder's run.json says was applied (for tests and tools)."""
    try:
        return read_run_meta(folder)
    except (OSError, ValueError) as e:
        raise ExperimentError(f"{printable(str(folder))}: no readable {RUN_META}: {e}") from None
