"""Units off the critical chain that still run before the ready line.

A unit beside the chain holds no dependency of the application, but it shares the CPU (and the
disk) with the units on the chain: on a one- or two-CPU board or VM, a dozen units starting
at once slow each other down. How much CPU each used the log does not say, so this rule gives
no figure ("no estimate"); it lists the units, their time before ready and the CPUs the kernel
brought up. Where some are kernel interfaces the application does not name (debug and tracing
file systems, configfs, FUSE, huge pages, modules loaded for DRM, loop, device mapper, EFI
pstore), masking them is offered as an automatic change, for the measurement to decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import exec_paths, fmt_at, mask_change, model, overlap_ns, unit_evidence
from ..userspace import cpu_count
from .systemd_getty import GETTY
from .systemd_maintenance import FSCK, MAINTENANCE
from .systemd_wait_online import WAITS

OTHER_RULES = re.compile(r"systemd-journal-flush\.service|systemd-random-seed\.service")
# kernel interfaces a product application rarely uses: unit -> what would notice it missing
OPTIONAL = {
    "sys-kernel-debug.mount": "/sys/kernel/debug", "sys-kernel-tracing.mount": "/sys/kernel/tracing",
    "sys-kernel-config.mount": "/sys/kernel/config", "sys-fs-fuse-connections.mount": "/sys/fs/fuse",
    "dev-hugepages.mount": "/dev/hugepages", "modprobe@drm.service": "drm", "modprobe@fuse.service": "fuse",
    "modprobe@loop.service": "/dev/loop", "modprobe@dm_mod.service": "dmsetup",
    "modprobe@efi_pstore.service": "pstore", "modprobe@configfs.service": "/sys/kernel/config",
    "systemd-pstore.service": "pstore",
}
MIN_NS = 100_000_000  # units under 100 ms are not worth a line
TRADEOFF = ("masked, those interfaces are missing until someone starts them: debugfs/tracefs for tracing, "
            "configfs for USB gadgets, FUSE and loop devices for mounting images, device mapper for LVM, "
            "pstore for crash logs; load or mount the ones the product does use from the application's unit")


@REGISTRY.register
class OffPath(Rule):
    """Units beside the chain that run before ready and share the CPU with it."""

    id = "systemd.off_path"
    title = "units off the critical path before ready"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None or m.app is None:
            return
        ready_t = m.ready[0]
        beside: list[tuple[str, int]] = []
        runs = {}
        for r in m.before_ready():
            if not r.span or r.duration_ns < MIN_NS or r.name == m.app.name or \
                    any(p.fullmatch(r.name) for p in (GETTY, FSCK, MAINTENANCE, WAITS, OTHER_RULES)):
                continue
            if not r.name.endswith((".service", ".mount", ".swap")):
                continue  # devices are waits, not work
            if (m.saving(drop=[r.name]) or 0) > 0:
                continue  # on the chain
            beside.append((r.name, overlap_ns((r.start_ns, r.active_ns), (r.start_ns, ready_t))))
            runs[r.name] = r
        if not beside:
            return
        beside.sort(key=lambda x: -x[1])
        cpus = cpu_count(boot)
        app_text = " ".join(ctx.rootfs_files.get(p.lstrip("/"), b"").decode("utf-8", "replace")
                            for p in exec_paths(m.uf, m.app.name))
        optional = [n for n, _ in beside if n in OPTIONAL and OPTIONAL[n] not in app_text]
        listing = ", ".join(f"{n} {secs(t)}" for n, t in beside[:8]) + (f", and {len(beside) - 8} more"
                                                                         if len(beside) > 8 else "")
        total = sum(t for _, t in beside)
        arithmetic = (f"no estimate: {len(beside)} units ran beside the chain before the ready line at "
                      f"{fmt_at(ready_t)} ({listing}; {secs(total)} of unit time in all) on "
                      f"{f'{cpus} CPU' + ('s' if cpus != 1 else '') if cpus else 'an unknown number of CPUs'}: "
                      f"{m.unmoved('any one of them')}, but they share the CPU and the disk with the chain, and "
                      f"how much of them each used the log does not say; {m.chain_text()}")
        if optional:
            change = mask_change(optional, f"kernel interfaces {m.app.name} does not name")
        else:
            change = Change(ChangeKind.MANUAL, "start them after the application",
                            f"disable the units the product does not need, and order the others after "
                            f"{m.app.name} (a drop-in with After={m.app.name}) so that they start once it is ready")
        yield Finding(
            rule=self.id, title=f"{len(beside)} units beside the chain run before ready ({secs(total)})",
            stage="userspace", saving_ns=None, arithmetic=arithmetic, confidence=Confidence.LOW,
            tradeoff=TRADEOFF if optional else "the units start later: whatever uses them must wait for them",
            change=change, evidence=unit_evidence(boot, [runs[n] for n, _ in beside[:3]], [m.ready[1]]))
