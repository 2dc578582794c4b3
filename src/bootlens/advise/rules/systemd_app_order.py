"""The application's unit is ordered after ``multi-user.target`` but needs little of it.

Products often write ``After=multi-user.target network-online.target``: the application then
starts when everything else has, logins and maintenance units included. What it really needs
is read from its program's text (:func:`bootlens.advise.systemd.app_needs`); the change orders
it after only that, with ``DefaultDependencies=no`` (no implicit ``After=basic.target``).

The saving is the chain's time between what the application needs and when it started: the
boot is replayed over the unit files' After= map (:meth:`Model.saving`) with the application
ordered after only what it needs, every unit keeping its measured duration. Its console line
goes through journald (``StandardOutput=journal+console``), so the replay waits for
``systemd-journald.service`` too: the ready line cannot appear before journald forwards it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import ASSUMED, FILE_MODE, AppNeeds, Model, app_needs, fmt_at, model, unit_evidence

LATE_TARGETS = ("multi-user.target", "graphical.target", "default.target")
NETWORK = ("network-online.target", "network.target")
TRADEOFF = ("the application starts while the rest of the boot still runs (and shares the CPU with it); with "
            "DefaultDependencies=no it may run before sysinit.target and basic.target: /tmp, /var and the "
            "sockets of basic.target are not guaranteed, nor the network or logins: if it does use one of them, "
            "add that unit to its After=; Conflicts=/Before=shutdown.target keep a clean shutdown")


def rewrite_unit(text: str, needs: AppNeeds, rule: str) -> str:
    """The unit file with its [Unit] ordering replaced: the late targets (and the network
    targets when the program does not use the network) dropped from After=/Wants=/Requires=,
    and DefaultDependencies=no, After= what it needs, Conflicts=/Before=shutdown.target added."""
    drop = set(LATE_TARGETS) | (set() if needs.network else set(NETWORK))
    out: list[str] = []
    section = ""
    for ln in text.splitlines():
        s = ln.strip()
        if s.startswith("[") and s.endswith("]"):
            section = s[1:-1]
            out.append(ln)
            if section == "Unit":
                out.append(f"# bootlens ({rule}): start as soon as what the application needs is up "
                           f"({'; '.join(needs.reasons)})")
                out.append("DefaultDependencies=no")
                if needs.units:
                    out.append("After=" + " ".join(needs.units))
                out += ["Conflicts=shutdown.target", "Before=shutdown.target"]
            continue
        m = re.match(r"(After|Wants|Requires|DefaultDependencies)\s*=(.*)", s)
        if section == "Unit" and m:
            if m[1] == "DefaultDependencies":
                continue
            kept = [w for w in m[2].split() if w not in drop]
            if kept != m[2].split():
                out.append(f"# bootlens ({rule}): was {s}")
                if kept:
                    out.append(f"{m[1]}={' '.join(kept)}")
                continue
        out.append(ln)
    return "\n".join(out) + "\n"


@REGISTRY.register
class SystemdAppOrder(Rule):
    """The unit that prints the ready line waits for targets it does not need."""

    id = "systemd.app_order"
    title = "application ordered after multi-user.target"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.app is None or m.ready is None:
            return
        app = m.app.name
        ordered = m.uf.values(app, "Unit", "After")
        late = [t for t in LATE_TARGETS if t in ordered]
        if not late or app not in m.uf.paths:
            return
        needs = app_needs(m.uf, ctx.rootfs_files, app)
        yield self._finding(m, ctx, app, late, needs)

    def _finding(self, m: Model, ctx: Context, app: str, late: Sequence[str], needs: AppNeeds) -> Finding:
        assert m.ready is not None and m.app is not None
        gate = [u for u in m.after.get(app, ()) if u in m.by and m.by[u].active_ns <= m.app.start_ns]
        waited = max(gate, key=lambda u: m.by[u].active_ns) if gate else late[0]
        if m.app.result == ASSUMED:
            waited = late[0]  # the log ends before the targets it waited for were reached
        ev = unit_evidence(m.boot, [m.app, *([m.by[waited]] if waited in m.by else [])], [m.ready[1]])
        path = m.uf.paths[app]
        if not needs.known:
            return Finding(
                rule=self.id, title=f"{app} waits for {', '.join(late)}; what it needs is not known",
                stage="userspace", saving_ns=None,
                arithmetic=(f"no estimate: {'; '.join(needs.reasons)}, so what it needs of the boot is not known; "
                            f"it started at {fmt_at(m.app.start_ns)} after {waited}"),
                confidence=Confidence.LOW, tradeoff=TRADEOFF,
                change=Change(ChangeKind.MANUAL, f"order {app} after what it needs",
                              f"in {path}: DefaultDependencies=no, After= only the units the application uses, "
                              "Conflicts=/Before=shutdown.target"),
                evidence=ev)
        # the journald that writes its console line is a need of the ready line, not of ordering
        replay_deps = [*needs.units, "systemd-journald.socket", "systemd-journald.service"]
        new_ready = m.ready_without(reorder={app: replay_deps})
        base = [u for u in replay_deps if u in m.by]
        base_t = max((m.by[u].active_ns for u in base), default=None)
        if new_ready is not None and base_t is not None:
            new_ready = max(new_ready, base_t)  # not before journald can write the line
        saving = m.ready[0] - new_ready if new_ready is not None else None
        base_u = max(base, key=lambda u: m.by[u].active_ns) if base else None
        text = ctx.rootfs_files[path].decode("utf-8", "replace")
        change = Change(ChangeKind.OVERLAY, f"{app}: order after what it needs",
                        f"replace {path} with a copy ordered after only what the application needs "
                        f"(DefaultDependencies=no{', After=' + ' '.join(needs.units) if needs.units else ''}, "
                        f"Conflicts=/Before=shutdown.target; {', '.join(late)} dropped from After=): a drop-in "
                        "cannot remove an After= dependency",
                        ((path, rewrite_unit(text, needs, self.id).encode(), FILE_MODE),))
        if saving is None or saving <= 0:
            return Finding(
                rule=self.id, title=f"{app} is ordered after {', '.join(late)}", stage="userspace",
                saving_ns=None, arithmetic=f"no estimate: replaying the boot without that order moves nothing "
                                           f"({m.chain_text()})",
                confidence=Confidence.LOW, tradeoff=TRADEOFF, change=change, evidence=ev)
        started = (f"{app} started at {fmt_at(m.app.start_ns)} (line {m.app.line_no}), after {waited}"
                   if m.app.result != ASSUMED else
                   f"{app} printed the ready line at {fmt_at(m.app.start_ns)} (line {m.app.line_no}; the capture "
                   f"ends there, before systemd's line for its start), ordered after {', '.join(late)}")
        arithmetic = (f"{started}; "
                      f"{'; '.join(needs.reasons)}; ordered after only "
                      f"{', '.join(needs.units) or 'the journal socket'} (and its console line written by "
                      f"systemd-journald, active at {fmt_at(base_t) if base_t is not None else '?'}"
                      f"{' (' + base_u + ')' if base_u else ''}), the boot replayed over the unit files' After= "
                      f"map with every unit's measured duration puts the ready line at {fmt_at(new_ready or 0)} "
                      f"instead of {fmt_at(m.ready[0])} (line {m.ready[1]}): {secs(saving)}; "
                      f"{m.chain_text()}")
        return Finding(
            rule=self.id, title=f"{app} waits {secs(saving)} for {', '.join(late)} it does not need",
            stage="userspace", saving_ns=saving, arithmetic=arithmetic,
            confidence=Confidence.MEDIUM, tradeoff=TRADEOFF, change=change, evidence=ev)
