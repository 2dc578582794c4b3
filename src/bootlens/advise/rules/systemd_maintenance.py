"""Maintenance units that run at boot, before the application is ready.

e2scrub_reap (ext4 snapshot clean-up), fsck of the root or other file systems, and the services
of maintenance timers (man-db, apt-daily, fstrim, logrotate, updatedb, ...) whose timer fires at
boot when a run was missed (``Persistent=true``, or ``OnBootSec=``): none of them is needed to
bring the product up. The saving is the boot replayed without the unit (:meth:`Model.saving`):
on the chain, the time it holds the ready line. Off the chain it still shares the CPU (on the
one-CPU QEMU target, really); the log does not say how much CPU it used, so no figure is given
for that, and the measurement (``bootlens experiment``/``optimize``) decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import Model, UnitRun, fmt_at, mask_change, model, overlap_ns, unit_evidence

FSCK = re.compile(r"systemd-fsck(?:-root|@[\w.\\-]*)\.service")
MAINTENANCE = re.compile(
    r"(?:e2scrub_reap|e2scrub_all|e2scrub@[\w.\\-]*|e2scrub_fail@[\w.\\-]*|man-db|apt-daily|apt-daily-upgrade|fstrim"
    r"|logrotate|dpkg-db-backup|systemd-tmpfiles-clean|plocate-updatedb|mlocate|updatedb|sysstat-collect"
    r"|sysstat-summary|anacron|unattended-upgrades|packagekit|apt-news|motd-news|fwupd-refresh)\.service")
TRADEOFF = {
    "fsck": ("the root file system is no longer checked at boot: after a power cut the kernel's journal replay "
             "still runs, but silent corruption is found later (run fsck in a maintenance window, or keep "
             "fsck.mode=auto on boards that lose power unsafely)"),
    "timer": ("the maintenance job no longer runs at boot: run it at a quiet time (OnCalendar= without "
              "Persistent=, or by hand) or not at all on a product (man pages, apt caches)"),
    "unit": "the clean-up it does is not done at boot: run it later, from a timer, when the product is idle",
}


def kind_of(name: str) -> str:
    return "fsck" if FSCK.fullmatch(name) else "unit"


@REGISTRY.register
class Maintenance(Rule):
    """A maintenance unit runs at boot before the ready line."""

    id = "systemd.maintenance"
    title = "maintenance units at boot"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None:
            return
        for r in m.before_ready():
            if r.span and (FSCK.fullmatch(r.name) or MAINTENANCE.fullmatch(r.name)):
                yield self._finding(m, r)

    def _finding(self, m: Model, r: UnitRun) -> Finding:
        assert m.ready is not None
        kind = kind_of(r.name)
        timer = r.name.removesuffix(".service") + ".timer"
        if kind == "fsck":
            change = Change(ChangeKind.CMDLINE, "fsck.mode=skip",
                            "add fsck.mode=skip to the kernel command line (systemd-fsck reads it), or set the "
                            "file system's pass to 0 in /etc/fstab")
        elif m.uf.get(timer) is not None:
            kind = "timer"
            change = mask_change([timer], f"its job ran at boot, {r.name}")
        else:
            change = mask_change([r.name], "maintenance at boot")
        saving = m.saving(drop=[r.name])
        ran = (f"{r.name} ran {fmt_at(r.start_ns)} -> {fmt_at(r.active_ns)} ({secs(r.duration_ns)}, lines "
               f"{r.line_no}-{r.end_line_no}), before the ready line at {fmt_at(m.ready[0])} (line {m.ready[1]})")
        if saving is not None and saving > 0:
            arithmetic = (f"{ran}; the boot replayed over the After= map without it puts the ready line "
                          f"{secs(saving)} earlier, every other unit keeping its measured duration (the CPU it "
                          f"used beside the chain is not counted); {m.chain_text()}")
            title = f"{r.name} holds the ready line for {secs(saving)}"
            conf = Confidence.MEDIUM
        else:
            shared = overlap_ns((r.start_ns, r.active_ns), (r.start_ns, m.ready[0]))
            arithmetic = (f"no estimate: {ran}; it is not on the chain to ready ({m.unmoved()}), but it ran for {secs(shared)} of that time beside the chain, "
                          f"sharing the CPU and the disk: the log does not say how much of them it used; "
                          f"{m.chain_text()}")
            title = f"{r.name} runs at boot for {secs(r.duration_ns)}, beside the chain to ready"
            saving = None
            conf = Confidence.LOW
        return Finding(rule=self.id, title=title, stage="userspace", saving_ns=saving, arithmetic=arithmetic,
                       confidence=conf, tradeoff=TRADEOFF[kind], change=change,
                       evidence=unit_evidence(m.boot, [r], [m.ready[1]]))
