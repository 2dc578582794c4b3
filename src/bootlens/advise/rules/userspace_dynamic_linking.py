"""A dynamically linked application: the loader maps and relocates its libraries between exec and
the program's first action.

Whether a program is dynamically linked is read from its ELF program headers (a PT_INTERP entry
names the loader) when bootlens knows the file (:attr:`Context.rootfs_files`); a script is judged by
its interpreter. When the file is not known, a long time from exec to the application's first action
(its first child or its first console line) is the hint, and the finding asks to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...timeline.analyze import BootAnalysis
from ...core.model import NS_PER_MS, Kind
from ...core.kindpos import located
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence, secs
from ..userspace import (proc_tree, Proc, ProcTree, app_process, elf_interpreter, has_process_events,
                         inittab_programs, reached_userspace, rootfs_key)

SLOW_START_NS = 100 * NS_PER_MS  # exec -> first action beyond this, with the file unknown, is worth a look
TRADEOFF = ("a static binary carries its own copy of the libraries (larger, and a library fix needs a relink; "
            "LGPL libraries need their object files shipped for relinking); prelinking must be redone whenever "
            "a library changes")


def linkage(files: Mapping[str, bytes], path: str) -> tuple[str, str | None] | None:
    """How the program at ``path`` is linked, following a script to its interpreter:
    (the file judged, its loader or None for a static binary), or None when it is not known."""
    for _ in range(3):  # a script's interpreter may itself be a script (rarely deeper)
        data = files.get(rootfs_key(path))
        if data is None:
            return None
        if data.startswith(b"#!"):
            words = data[2:].split(b"\n", 1)[0].split()
            if not words:
                return None
            path = words[0].decode("latin-1")
            continue
        interp = elf_interpreter(data)
        if interp is None:
            return None
        return path, (interp or None)
    return None


def first_action(boot: BootAnalysis, tree: ProcTree, app: Proc, exec_at: int) -> tuple[int, int] | None:
    """The application's first sign of life after its exec: its first child's fork or its first
    marker line, as (axis time, line number)."""
    cands: list[tuple[int, int]] = [(c.start_ns, c.line_no) for c in tree.children(app) if c.start_ns >= exec_at]
    times = boot.times
    for i, e in located(boot.boot.events, Kind.MARKER):  # the markers' rows only
        t = times[i] if i < len(times) else None
        if t is not None and t >= exec_at and e.line_no > app.line_no:
            cands.append((t, e.line_no))
    return min(cands) if cands else None


@REGISTRY.register
class DynamicLinking(Rule):
    """Time from the application's exec to its first action, spent in the dynamic loader."""

    id = "userspace.dynamic_linking"
    title = "dynamically linked application"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        if not reached_userspace(boot):
            return
        files = ctx.rootfs_files
        tree = proc_tree(boot)
        app = app_process(tree, boot, files) if has_process_events(boot) else None
        path = app.exe if app is not None else None
        if path is None:  # no process events: the program inittab starts once user space is up
            path = next((p for action, p in reversed(inittab_programs(files)) if action in ("once", "respawn")),
                        None)
        known = linkage(files, path) if path is not None else None
        if known is not None and known[1] is None:
            return  # statically linked (busybox-static and its applets): nothing to load
        startup: tuple[int, int] | None = None
        if app is not None and app.detail.exec_ns is not None:
            exec_at = app.start_ns + app.detail.exec_ns
            first = first_action(boot, tree, app, exec_at)
            if first is not None:
                startup = (first[0] - exec_at, first[1])
        if known is None and (startup is None or startup[0] < SLOW_START_NS):
            return  # not known to be dynamic, and nothing in the log says its start is slow
        name = path or "the application"
        measured = (f"{secs(startup[0])} from its exec (fork at line {app.line_no} + {secs(app.detail.exec_ns or 0)}) "
                    f"to its first action (line {startup[1]})" if startup is not None and app is not None else
                    "exec -> first action not measured (no process events)")
        if known is not None:
            judged, loader = known
            title = f"{name} is dynamically linked ({judged} loads through {loader})"
            confidence = Confidence.MEDIUM
            why = f"{judged} has a PT_INTERP program header naming {loader}"
        else:
            title = f"{name} takes {secs(startup[0] if startup else 0)} from exec to its first action"
            confidence = Confidence.LOW
            why = ("whether it is dynamically linked is not known (its file is not known to bootlens: check with "
                   f"`readelf -l {name} | grep interpreter`)")
        yield Finding(
            rule=self.id,
            title=title,
            stage="userspace",
            saving_ns=None,
            arithmetic=(f"{measured}; {why}; the loader's share of that time is not in the log (no event marks "
                        "the jump to main), so no figure: at most the whole exec -> first action time"),
            confidence=confidence,
            tradeoff=TRADEOFF,
            change=Change(ChangeKind.MANUAL, f"link {name} statically",
                          f"link {name} statically (-static; with musl or uClibc-ng the binary stays small), or "
                          "prelink it; with glibc, at least link with -Wl,-z,now -Wl,--hash-style=gnu and fewer "
                          "libraries"),
            evidence=evidence(boot.boot, [app.line_no if app else None, startup[1] if startup else None]),
        )
