"""The application waits for init scripts it does not need.

busybox init (like Buildroot's and most product images) runs every S-script through rcS as
``::sysinit:`` and starts the application (``::once:``) only when rcS has finished. If the
application needs only, say, /proc, everything rcS does after mounting /proc delays it.

What the application needs is read from the scripts' text: a script *provides* the mount points it
mounts and the directories it creates, the network when it configures an interface, syslog's
socket, device nodes when it runs coldplug; the application *needs* a script when it names a path
below something the script provides or uses a network or logging tool. A script whose text is not
known is assumed to be needed; an application whose text is not known (a binary) leaves the
question open, and the finding gives no figure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding
from ..evidence import evidence, secs
from ..userspace import (ProcessRule, FILE_MODE, NOT_MEASURED, SCRIPT_MODE, Proc, ProcTree, app_process, commands,
                         inittab_programs, proc_evidence, run_init_line, script_text)

MOUNT = re.compile(r"\bmount\b([^;&|<>\n]*)")
MKDIR = re.compile(r"\bmkdir\b([^;&|<>\n]*)")
PATH = re.compile(r"(?<![\w.$-])/[\w./-]+")
NET_SETUP = re.compile(r"(?<![\w-])(?:ifconfig|ip|udhcpc|dhcpcd|dhclient|ifup|wpa_supplicant)(?![\w-])")
NET_USE = re.compile(r"(?<![\w-])(?:wget|curl|ping|nc|ntpd|ntpdate|telnet|ssh|scp|tftp|ftpget|ftpput|mosquitto_pub"
                     r"|httpd)(?![\w-])")
LOG_SETUP = re.compile(r"(?<![\w-])(?:syslogd|rsyslogd|syslog-ng)(?![\w-])")
LOG_USE = re.compile(r"(?<![\w-])logger(?![\w-])|/dev/log")
DEV_SETUP = re.compile(r"(?<![\w-])(?:mdev|udevadm)(?![\w-])")
RCS_LOOP = re.compile(r"^([ \t]*)for (\w+) in (/etc/init\.d/S\?\?\*)[ \t]*;?[ \t]*(?:\n[ \t]*)?do\b.*?^[ \t]*done\b",
                      re.M | re.S)
TRADEOFF = ("the remaining scripts (and the services they start) come up after the application is ready and share "
            "the CPU with it while it starts; if the application does use one of them (a device node mdev "
            "would create, syslog's socket, the network) it must cope with it arriving later")


@dataclass(frozen=True, slots=True)
class Needs:
    """Which scripts the application needs, and why."""

    known: bool  # False when the application's text is not known
    needed: frozenset[str]  # script paths
    reasons: Mapping[str, str]  # script path -> what the application uses from it


def provides(text: str) -> tuple[set[str], set[str]]:
    """What a script makes available: (paths: mount points and created directories, facilities:
    "network", "syslog", "/dev nodes")."""
    paths: set[str] = set()
    facilities: set[str] = set()
    for c in commands(text):
        for m in MOUNT.finditer(c):
            args = [a for a in m[1].split() if a.startswith("/")]
            if args:
                paths.add(args[-1].rstrip("/") or "/")
        for m in MKDIR.finditer(c):
            paths.update(a.rstrip("/") for a in m[1].split() if a.startswith("/"))
        if NET_SETUP.search(c):
            facilities.add("network")
        if LOG_SETUP.search(c):
            facilities.add("syslog")
        if DEV_SETUP.search(c):
            facilities.add("/dev nodes")
    return paths, facilities


def needs(app_text: str | None, scripts: Sequence[tuple[str, str | None]]) -> Needs:
    """Which of ``scripts`` (path, text or None) the application needs."""
    if app_text is None:
        return Needs(False, frozenset(), {})
    used = commands(app_text)
    app_paths = {p.rstrip("/") for c in used for p in PATH.findall(c)}
    wants: set[str] = set()
    if any(NET_USE.search(c) for c in used):
        wants.add("network")
    if any(LOG_USE.search(c) for c in used):
        wants.add("syslog")
    if any(p.startswith("/dev/") for p in app_paths):
        wants.add("/dev nodes")
    reasons: dict[str, str] = {}
    for path, text in scripts:
        if text is None:
            reasons[path] = "its text is not known"
            continue
        made, facilities = provides(text)
        hits = sorted(p for p in app_paths for m in made if p == m or p.startswith(m + "/") and m != "/")
        why = [f"{p} (below {next(m for m in made if p == m or p.startswith(m + '/'))})" for p in hits[:2]]
        why += sorted(wants & facilities)
        if why:
            reasons[path] = ", ".join(why)
    return Needs(True, frozenset(reasons), reasons)


def reorder(files: Mapping[str, bytes], app: str, after: str | None, rule: str) -> Change | None:
    """Start ``app`` from rcS right after the script ``after`` (before the loop when None), in the
    background, instead of from inittab once rcS has finished; None when the files are not the
    busybox layout this edit knows (an rcS ``for s in /etc/init.d/S??*`` loop, an ``::once:`` entry)."""
    rcs = script_text(files, "etc/init.d/rcS")
    inittab = files.get("etc/inittab")
    if rcs is None or inittab is None:
        return None
    loop = RCS_LOOP.search(rcs)
    entries = [ln for ln in inittab.decode("utf-8", "replace").splitlines(keepends=True)
               if re.fullmatch(rf"::once:{re.escape(app)}\s*", ln.strip() + "\n")]
    if loop is None or len(entries) != 1:
        return None
    indent, var = loop[1], loop[2]
    note = f"# bootlens ({rule}): start the application as soon as what it needs is up"
    if after is None:
        new_rcs = rcs[:loop.start()] + f"{indent}{note}\n{indent}{app} &\n" + rcs[loop.start():]
    else:
        done = loop.end() - len("done")
        line_start = rcs.rfind("\n", 0, done) + 1
        body_indent = indent + "    "
        new_rcs = (rcs[:line_start] + f"{body_indent}{note}\n"
                   f"{body_indent}if [ \"${var}\" = {after} ]; then {app} & fi\n" + rcs[line_start:])
    new_tab = inittab.decode("utf-8", "replace").replace(
        entries[0], f"# bootlens ({rule}): started from rcS instead\n# {entries[0].lstrip()}", 1)
    where = f"right after {after}" if after else "before the S-scripts"
    return Change(ChangeKind.OVERLAY, f"start {app} {where}",
                  f"start {app} from /etc/init.d/rcS {where}, in the background, and drop its ::once: line from "
                  "/etc/inittab",
                  (("etc/init.d/rcS", new_rcs.encode(), SCRIPT_MODE), ("etc/inittab", new_tab.encode(), FILE_MODE)))


def _runner(tree: ProcTree, app: Proc) -> tuple[Proc, list[Proc]] | None:
    """The process that ran the init scripts before the application (rcS) and those scripts, when
    the application started only after it had finished."""
    best: tuple[Proc, list[Proc]] | None = None
    # the processes with two such scripts among their children: parents of scripts (fork order)
    for p in tree.parents_of(s for s in tree.scripts() if s.end_ns is not None):
        if p is app or p.end_ns is None or p.end_ns > app.start_ns:
            continue
        scripts = [c for c in tree.children(p) if c.script_path is not None and c.end_ns is not None]
        if len(scripts) >= 2 and (best is None or len(scripts) > len(best[1])):
            best = (p, scripts)
    return best


@REGISTRY.register
class AppOrder(ProcessRule):
    """The application starts after every init script, needed or not."""

    id = "userspace.app_order"
    title = "application started after services it does not need"


    def _measured(self, boot: BootAnalysis, ctx: Context, tree: ProcTree) -> Iterable[Finding]:
        files = ctx.rootfs_files
        app = app_process(tree, boot, files)
        if app is None or app.exe is None:
            return
        found = _runner(tree, app)
        if found is None:
            return
        runner, scripts = found
        paths = [s.script_path or s.name for s in scripts]
        nd = needs(script_text(files, app.exe), [(p, script_text(files, p)) for p in paths])
        needed = [s for s in scripts if (s.script_path or s.name) in nd.needed]
        base = max(needed, key=lambda s: s.end_ns or 0) if needed else None
        start_from = (base.end_ns or 0) if base is not None else scripts[0].start_ns
        saving = app.start_ns - start_from
        if nd.known and saving <= 0:
            return
        skipped = [s for s in scripts if s not in needed and s.start_ns >= start_from]
        listing = ", ".join(f"{s.script_path} {secs(s.duration_ns or 0)}" for s in skipped)
        ev = proc_evidence(boot, [app, runner, *([base] if base else []), *skipped[:1]])
        if not nd.known:
            yield Finding(
                rule=self.id, title=f"{app.exe} starts only after {len(scripts)} init scripts have run "
                                    f"({secs(app.start_ns - scripts[0].start_ns)})",
                stage="userspace", saving_ns=None,
                arithmetic=(f"{app.exe} forked at line {app.line_no}, {secs(app.start_ns - scripts[0].start_ns)} "
                            f"after the first script ({', '.join(paths)}); which of them it needs is not "
                            "known (its text is not known to bootlens): starting it right after the last one it "
                            "needs saves the time of the others, up to that figure"),
                confidence=Confidence.LOW, tradeoff=TRADEOFF,
                change=Change(ChangeKind.MANUAL, f"start {app.exe} earlier",
                              f"start {app.exe} right after the init scripts it needs (in the background from rcS, "
                              "or as an early S-script), and the rest after it"),
                evidence=ev)
            return
        why = "; ".join(f"{p} for {r}" for p, r in nd.reasons.items()) or "none of them"
        arithmetic = (f"{app.exe} forked at line {app.line_no} after {runner.script_path or runner.name} ran "
                      f"{len(scripts)} scripts; it needs {why}"
                      + (f" (done at line {base.end_line_no})" if base else "")
                      + f"; started right after {'that' if base else 'init starts rcS'} it would start "
                      f"{secs(saving)} earlier: app fork at line {app.line_no} - "
                      + (f"exit of {base.script_path} at line {base.end_line_no}" if base else
                         f"fork of {scripts[0].script_path} at line {scripts[0].line_no}")
                      + f" = {secs(saving)} (the time of {listing})")
        change = reorder(files, app.exe, base.script_path if base else None, self.id) or Change(
            ChangeKind.MANUAL, f"start {app.exe} earlier",
            f"start {app.exe} " + (f"right after {base.script_path}" if base else "before the init scripts")
            + " (in the background from rcS) instead of after all of them")
        yield Finding(
            rule=self.id,
            title=f"{app.exe} waits {secs(saving)} for init scripts it does not need",
            stage="userspace", saving_ns=saving, arithmetic=arithmetic,
            confidence=Confidence.MEDIUM, tradeoff=TRADEOFF, change=change, evidence=ev)

    def _from_scripts(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        """No process events: the inittab and scripts bootlens knows show the order."""
        files = ctx.rootfs_files
        apps = [path for action, path in inittab_programs(files) if action == "once"]
        app_text = script_text(files, apps[-1]) if apps else None
        scripts = sorted(k for k in files if re.fullmatch(r"etc/init\.d/S\d\d.*", k))
        if not apps or app_text is None or not scripts:
            return
        listed = [("/" + k, script_text(files, k)) for k in scripts]
        nd = needs(app_text, listed)
        needed = [p for p, _ in listed if p in nd.needed]
        if len(needed) == len(listed):
            return
        after = needed[-1] if needed else None
        change = reorder(files, apps[-1], after, self.id)
        if change is None:
            return
        paths = [p for p, _ in listed]
        skipped = [p for p in paths[paths.index(after) + 1 if after else 0:] if p not in nd.needed]
        yield Finding(
            rule=self.id,
            title=f"{apps[-1]} starts after init scripts it does not need ({', '.join(skipped)})",
            stage="userspace", saving_ns=None,
            arithmetic=f"{NOT_MEASURED}; it needs " + ("; ".join(f"{p} for {r}" for p, r in nd.reasons.items())
                                                      or "none of them"),
            confidence=Confidence.MEDIUM, tradeoff=TRADEOFF, change=change,
            evidence=evidence(boot.boot, [run_init_line(boot)]))
