"""Coldplug at boot (``mdev -s``, ``udevadm trigger`` + ``settle``) where the kernel's devtmpfs
already provides the device nodes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding
from ..evidence import evidence, secs
from ..userspace import (ProcessRule, FILE_MODE, NOT_MEASURED, SCRIPT_MODE, Proc, ProcTree, commands,
                         known_scripts, proc_evidence, rcs_skips_non_executable, ready_marker, replace_commands,
                         rootfs_key, run_init_line, script_text, sharing_note, union_ns)

MDEV_SCAN = re.compile(r"(?<![\w-])(?:/s?bin/)?mdev\s+-s(?![\w-])")
UDEV_COLDPLUG = re.compile(r"(?<![\w-])(?:/s?bin/)?udevadm\s+(?:trigger|settle)\b[^;&|\n]*")
DEVTMPFS_MOUNT = re.compile(r"\bmount\b[^\n;|&]*-t\s+devtmpfs\b")
COLDPLUG_NAMES = ("mdev", "udevadm")
MDEV_TRADEOFF = ("device nodes are the kernel's devtmpfs defaults (owner root, the driver's mode): what "
                 "/etc/mdev.conf would do for the devices present at boot (owners and permissions, renamed "
                 "nodes and symlinks, firmware loading, per-device commands) no longer happens; devices that "
                 "appear later are still handled by the hotplug helper if one is set")
UDEV_TRADEOFF = ("without the coldplug pass, udev rules and modalias module loading do not run for devices "
                 "present at boot: drivers built as modules must be loaded another way (built in, or "
                 "/etc/modules), and rule-made symlinks and permissions are missing")


class Devtmpfs(Enum):
    """What the boot shows about devtmpfs."""

    MOUNTED = "mounted"  # the kernel mounts it (CONFIG_DEVTMPFS_MOUNT) or a script does
    AVAILABLE = "available"  # the kernel has it ("devtmpfs: initialized") but nothing mounts it
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class DevState:
    """devtmpfs in this boot, and the line or script that shows it."""

    state: Devtmpfs
    why: str
    line_no: int | None = None


def devtmpfs_state(boot: BootAnalysis, files: Mapping[str, bytes], exclude: str | None) -> DevState:
    """Whether /dev is a devtmpfs before coldplug would run (a mount in a script other than
    ``exclude``, or the kernel's own automount), or could be."""
    lines = boot.boot.lines
    for i in lines.grep("devtmpfs: mounted"):
        return DevState(Devtmpfs.MOUNTED, f"the kernel mounts devtmpfs on /dev (line {lines.no(i)})", lines.no(i))
    for path, text in known_scripts(files):
        if path != exclude and any(DEVTMPFS_MOUNT.search(c) for c in commands(text)):
            return DevState(Devtmpfs.MOUNTED, f"{path} mounts devtmpfs on /dev")
    for i in lines.grep("devtmpfs: initialized"):
        return DevState(Devtmpfs.AVAILABLE, f"the kernel has devtmpfs (line {lines.no(i)}) but nothing known "
                        "mounts it", lines.no(i))
    return DevState(Devtmpfs.UNKNOWN, "the log does not show whether the kernel has devtmpfs")


@dataclass(frozen=True, slots=True)
class Plan:
    """The edit for one coldplug script, and how much of the measured time it removes."""

    change: Change
    whole_script: bool  # the script is no longer run at all
    confidence: Confidence


def plan(path: str, kind: str, files: Mapping[str, bytes], dev: DevState, rule: str) -> Plan:
    """The change for the coldplug in script ``path`` (``kind``: "mdev" or "udev")."""
    text = script_text(files, path)
    if kind == "udev":
        return Plan(Change(ChangeKind.MANUAL, f"{path}: drop udevadm trigger/settle",
                           f"drop `udevadm trigger` / `udevadm settle` from {path}: mount devtmpfs (or "
                           "CONFIG_DEVTMPFS_MOUNT=y), build the drivers the product needs into the kernel or "
                           "load them from /etc/modules, and let udevd handle only later hotplug events"),
                    False, Confidence.MEDIUM)
    if text is None:
        what = ("the kernel's devtmpfs is already mounted" if dev.state is Devtmpfs.MOUNTED else
                "mount devtmpfs on /dev instead (CONFIG_DEVTMPFS=y, CONFIG_DEVTMPFS_MOUNT=y, or `mount -t "
                "devtmpfs devtmpfs /dev`), or ship static nodes for the few devices the product uses")
        return Plan(Change(ChangeKind.MANUAL, f"{path}: drop mdev -s", f"drop `mdev -s` from {path}: {what}"),
                    False, Confidence.MEDIUM if dev.state is not Devtmpfs.UNKNOWN else Confidence.LOW)
    if dev.state is Devtmpfs.MOUNTED:
        only_coldplug = all(MDEV_SCAN.fullmatch(c) for c in commands(text))
        if only_coldplug and rcs_skips_non_executable(files):
            return Plan(Change(ChangeKind.OVERLAY, f"{path}: not executable",
                               f"clear the execute bit of {path} (chmod -x): rcS runs only executable "
                               "S-scripts, so it is not even started; `chmod +x` brings it back",
                               ((rootfs_key(path), text.encode(), FILE_MODE),)),
                        True, Confidence.HIGH)
        edited, removed = replace_commands(text, MDEV_SCAN, rule)
        return Plan(Change(ChangeKind.OVERLAY, f"{path}: remove mdev -s", f"remove `mdev -s` from {path}",
                           ((rootfs_key(path), edited.encode(), SCRIPT_MODE),)), False, Confidence.HIGH)
    if dev.state is Devtmpfs.AVAILABLE:
        edited = MDEV_SCAN.sub("mount -t devtmpfs devtmpfs /dev", text)
        return Plan(Change(ChangeKind.OVERLAY, f"{path}: mount devtmpfs instead of mdev -s",
                           f"in {path}, replace `mdev -s` by `mount -t devtmpfs devtmpfs /dev`",
                           ((rootfs_key(path), edited.encode(), SCRIPT_MODE),)), False, Confidence.MEDIUM)
    return Plan(Change(ChangeKind.MANUAL, f"{path}: drop mdev -s",
                       f"enable CONFIG_DEVTMPFS and CONFIG_DEVTMPFS_MOUNT (or ship static device nodes) and drop "
                       f"`mdev -s` from {path}"), False, Confidence.LOW)


@REGISTRY.register
class Coldplug(ProcessRule):
    """A boot-time walk of /sys to create device nodes that devtmpfs already created."""

    id = "userspace.coldplug"
    title = "coldplug (mdev -s, udevadm trigger/settle) at boot"
    needles = ("devtmpfs: mounted", "devtmpfs: initialized")


    def _measured(self, boot: BootAnalysis, ctx: Context, tree: ProcTree) -> Iterable[Finding]:
        ready = ready_marker(boot)
        by_script: dict[int, tuple[Proc, list[Proc]]] = {}
        for p in tree.named(COLDPLUG_NAMES):
            # mdev forked by a kernel thread is the hotplug helper, not the coldplug walk: the
            # tree holds user processes only, so its parent is not found
            if p.end_ns is None or not tree.waited_for(p):
                continue
            if ready is not None and p.end_ns > ready[1]:
                continue
            script = tree.script_of(p)
            if script is not None:
                by_script.setdefault(id(script), (script, []))[1].append(p)
        for script, procs in by_script.values():
            yield self._finding(boot, ctx, tree, script, procs)

    def _finding(self, boot: BootAnalysis, ctx: Context, tree: ProcTree, script: Proc, procs: list[Proc]) -> Finding:
        path = script.script_path or script.name
        kind = "udev" if any(p.name == "udevadm" for p in procs) else "mdev"
        dev = devtmpfs_state(boot, ctx.rootfs_files, path)
        pl = plan(path, kind, ctx.rootfs_files, dev, self.id)
        spans = union_ns((p.start_ns, p.end_ns or p.start_ns) for p in procs)
        parts = "; ".join(f"{p.name} (pid {p.pid}) forked at line {p.line_no}, exited at line {p.end_line_no}: "
                          f"{secs(p.duration_ns or 0)}" for p in procs)
        saving = spans
        how = f"{parts}; {path} waited for it, so the coldplug costs its fork -> exit span: {secs(spans)}"
        if pl.whole_script and script.duration_ns is not None:
            saving = script.duration_ns
            how = (f"{parts}; with the script no longer run, its whole span goes, from its fork at line "
                   f"{script.line_no} (shell start-up included) to its exit at line {script.end_line_no}: "
                   f"{secs(saving)}")
        elif dev.state is Devtmpfs.AVAILABLE and pl.change.kind is ChangeKind.OVERLAY:
            mounts = sorted(p.duration_ns or 0 for p in tree.named(("mount",)) if p.end_ns)
            cost = mounts[len(mounts) // 2] if mounts else 0
            saving = max(0, spans - cost)
            how += (f" - one mount instead ({secs(cost)}, the median mount process of this boot)" if mounts
                    else " (the mount that replaces it is not measured here: a few ms)") + f" = {secs(saving)}"
        note = sharing_note(boot, tree, script)
        if note is not None:
            how += "; " + note
        mdev_conf = "etc/mdev.conf" in ctx.rootfs_files
        note = ""
        if kind == "mdev" and ctx.rootfs_files and not mdev_conf:
            note = " (this root filesystem has no /etc/mdev.conf: mdev -s only recreates what devtmpfs made)"
        tradeoff = (UDEV_TRADEOFF if kind == "udev" else MDEV_TRADEOFF) + note
        return Finding(
            rule=self.id,
            title=f"{path} spends {secs(spans)} on coldplug "
                  f"({'udevadm trigger/settle' if kind == 'udev' else 'mdev -s'}); {dev.why}",
            stage="userspace",
            saving_ns=saving,
            arithmetic=how,
            confidence=pl.confidence,
            tradeoff=tradeoff,
            change=pl.change,
            evidence=proc_evidence(boot, [script, *procs]) + evidence(boot.boot, [dev.line_no]),
        )

    def _from_scripts(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        """No process events: a known script that runs ``mdev -s`` or ``udevadm trigger``."""
        for path, text in known_scripts(ctx.rootfs_files):
            cmds = commands(text)
            kind = ("mdev" if any(MDEV_SCAN.search(c) for c in cmds) else
                    "udev" if any(UDEV_COLDPLUG.search(c) for c in cmds) else None)
            if kind is None:
                continue
            dev = devtmpfs_state(boot, ctx.rootfs_files, path)
            pl = plan(path, kind, ctx.rootfs_files, dev, self.id)
            yield Finding(
                rule=self.id,
                title=f"{path} runs coldplug ({'udevadm trigger' if kind == 'udev' else 'mdev -s'}); {dev.why}",
                stage="userspace",
                saving_ns=None,
                arithmetic=NOT_MEASURED,
                confidence=pl.confidence,
                tradeoff=UDEV_TRADEOFF if kind == "udev" else MDEV_TRADEOFF,
                change=pl.change,
                evidence=evidence(boot.boot, [run_init_line(boot), dev.line_no]),
            )
            return  # one finding at most without measurements
