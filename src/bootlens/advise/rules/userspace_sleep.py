"""A fixed ``sleep`` in an init script: time spent waiting for nothing in particular."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding
from ..evidence import evidence, secs
from ..userspace import (ProcessRule, NOT_MEASURED, SCRIPT_MODE, Proc, ProcTree, known_scripts,
                         proc_evidence, ready_marker, replace_commands, rootfs_key, run_init_line, script_text,
                         sharing_note)

# ``sleep 1``, ``sleep 0.5``, ``usleep 200000``, ``sleep 2s``: a literal delay (``sleep $T`` is
# left alone: the edit would have to know what T is for)
SLEEP_CMD = re.compile(r"(?<![\w./-])(?:sleep\s+\d+(?:\.\d+)?[smhd]?|usleep\s+\d+)(?![\w.])")
SLEEP_NAMES = ("sleep", "usleep")
TRADEOFF = ("whatever the sleep waited for (a device node, a network link, a daemon's socket) is no longer "
            "waited for: if something does depend on it, wait for that condition itself (poll for the file "
            "or the link state with a timeout) instead of a fixed delay")


def literal_seconds(cmd: str) -> float:
    """What a literal ``sleep N`` / ``usleep N`` asks for, in seconds."""
    word, arg = cmd.split(None, 1)
    if word == "usleep":
        return int(arg) / 1e6
    unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}.get(arg[-1], 1)
    return float(arg.rstrip("smhd")) * unit


@REGISTRY.register
class NeedlessSleep(ProcessRule):
    """A script that forks ``sleep`` and waits for it delays everything after it by the sleep."""

    id = "userspace.needless_sleep"
    title = "sleep in an init script"


    def _measured(self, boot: BootAnalysis, ctx: Context, tree: ProcTree) -> Iterable[Finding]:
        ready = ready_marker(boot)
        by_script: dict[int, tuple[Proc, list[Proc]]] = {}
        for p in tree.named(SLEEP_NAMES):
            if p.end_ns is None or not tree.waited_for(p):
                continue
            if ready is not None and p.end_ns > ready[1]:
                continue  # it ended after the application was ready: it delayed nothing measured
            script = tree.script_of(p)
            if script is None:
                continue
            by_script.setdefault(id(script), (script, []))[1].append(p)
        for script, sleeps in by_script.values():
            yield self._finding(boot, ctx, tree, script, sleeps)

    def _finding(self, boot: BootAnalysis, ctx: Context, tree: ProcTree, script: Proc, sleeps: list[Proc]) -> Finding:
        path = script.script_path or script.name
        total = sum(p.duration_ns or 0 for p in sleeps)
        parts = [f"{p.name} (pid {p.pid}) forked at line {p.line_no}, exited at line {p.end_line_no}: "
                 f"{secs(p.duration_ns or 0)}" for p in sleeps]
        sums = f"{' + '.join(secs(p.duration_ns or 0) for p in sleeps)} = " if len(sleeps) > 1 else ""
        arithmetic = (f"{'; '.join(parts)}; {path} waited for {'it' if len(sleeps) == 1 else 'each'} (it forked "
                      f"nothing else meanwhile), so removing the sleep removes its whole fork -> exit span: "
                      f"{sums}{secs(total)}")
        notes = [n for p in sleeps if (n := sharing_note(boot, tree, p)) is not None]
        if notes:
            arithmetic += "; " + notes[0]
        text = script_text(ctx.rootfs_files, path)
        edited, removed = replace_commands(text, SLEEP_CMD, self.id) if text is not None else ("", [])
        if removed:
            change = Change(ChangeKind.OVERLAY, f"{path}: remove {', '.join(removed)}",
                            f"remove `{'`, `'.join(removed)}` from {path}",
                            ((rootfs_key(path), edited.encode(), SCRIPT_MODE),))
        else:
            change = Change(ChangeKind.MANUAL, f"{path}: remove sleep",
                            f"remove the sleep from {path} (or replace it by a wait for the condition it "
                            "stands for)")
        return Finding(
            rule=self.id,
            title=f"{path} sleeps {secs(total)} before the boot can go on",
            stage="userspace",
            saving_ns=total,
            arithmetic=arithmetic,
            # a sleep alone costs exactly its span; with daemons alongside, part of it was their time
            confidence=Confidence.MEDIUM if notes else Confidence.HIGH,
            tradeoff=TRADEOFF,
            change=change,
            evidence=proc_evidence(boot, [script, *sleeps]),
        )

    def _from_scripts(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        """No process events: the scripts bootlens knows can still show a literal sleep."""
        files: list[tuple[str, bytes, int]] = []
        found: list[str] = []
        asked = 0.0
        for path, text in known_scripts(ctx.rootfs_files):
            edited, removed = replace_commands(text, SLEEP_CMD, self.id)
            if removed:
                files.append((rootfs_key(path), edited.encode(), SCRIPT_MODE))
                found += [f"{path}: {r}" for r in removed]
                asked += sum(literal_seconds(r) for r in removed)
        if not files:
            return
        yield Finding(
            rule=self.id,
            title=f"init scripts sleep ({'; '.join(found)})",
            stage="userspace",
            saving_ns=None,
            arithmetic=f"{NOT_MEASURED}; the scripts ask for {asked:g} s of sleep in all, at least that much "
                       "if they run in the foreground before the application",
            confidence=Confidence.HIGH,
            tradeoff=TRADEOFF,
            change=Change(ChangeKind.OVERLAY, "remove " + ", ".join(found), "remove " + "; ".join(found), tuple(files)),
            evidence=evidence(boot.boot, [run_init_line(boot)]),
        )
