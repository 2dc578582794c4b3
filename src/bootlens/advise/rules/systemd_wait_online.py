"""``*-wait-online.service`` or ``systemd-udev-settle.service`` on the chain to ready.

systemd-networkd-wait-online (NetworkManager-wait-online, ifupdown-wait-online) holds
``network-online.target`` until a link is configured (a DHCP lease: seconds); udev-settle waits
for every queued device event. Whatever is ordered after them waits too. The saving is the
boot replayed without the unit (:meth:`Model.saving`): the chain time it holds the ready line.
Masking it is safe when the application does not use the network (read from its program,
:func:`app_needs`); when it does, the change is to wait for less (``--any``, a timeout), by hand.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import app_needs, fmt_at, mask_change, model, unit_evidence

WAITS = re.compile(r"(?:[\w-]+-wait-online(?:@[\w.-]*)?|systemd-udev-settle)\.service")
TRADEOFF = {
    "online": ("units ordered after network-online.target no longer wait for a configured link: anything that "
               "must reach the network at start (NFS mounts, a time sync, a cloud agent) has to retry or wait for "
               "the link itself; the link still comes up, in parallel"),
    "settle": ("units that wanted every device probed first (old LVM, ZFS, multipath setups) may start before "
               "their devices exist: order them after the device units they need instead"),
}


def settle_name(name: str) -> bool:
    return name == "systemd-udev-settle.service"


@REGISTRY.register
class WaitOnline(Rule):
    """A unit that waits for the network or for udev to settle holds the chain to ready."""

    id = "systemd.wait_online"
    title = "wait-online or udev-settle on the chain to ready"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None:
            return
        for r in m.before_ready():
            if not WAITS.fullmatch(r.name) or not r.span:
                continue
            saving = m.saving(drop=[r.name])
            app_after = m.after.get(m.app.name, ()) if m.app is not None else ()
            behind = [u for u in app_after if u in m.by and m.app is not None
                      and m.by[u].active_ns <= m.app.start_ns]
            gate = max(behind, key=lambda u: m.by[u].active_ns) if behind else None
            if saving is None or saving <= 0:
                if "network-online.target" not in app_after or settle_name(r.name):
                    continue  # neither on the chain nor before the app: systemd.off_path's
                saving = None
            settle = settle_name(r.name)
            needs = app_needs(m.uf, ctx.rootfs_files, m.app.name) if m.app is not None else None
            uses_net = needs is None or not needs.known or needs.network
            app = m.app.name if m.app is not None else "the application"
            if settle or not uses_net:
                why = ("nothing should wait for every device event" if settle else
                       f"{app} does not use the network ({'; '.join(needs.reasons) if needs else ''})")
                change = mask_change([r.name], why)
            else:
                change = Change(ChangeKind.MANUAL, f"{r.name}: wait for less",
                                f"{app} may use the network: keep {r.name} but make it wait for one link "
                                "(systemd-networkd-wait-online --any, or --interface=IF) with a --timeout, or "
                                f"order {app} after network.target and let it retry")
            ran = (f"{r.name} ran {fmt_at(r.start_ns)} -> {fmt_at(r.active_ns)} ({secs(r.duration_ns)}, "
                   f"lines {r.line_no}-{r.end_line_no})")
            if saving is None:
                arithmetic = (f"no estimate: {ran}; {app} is ordered after network-online.target, which it holds, "
                              f"but in this boot {app} waited longer for {gate}: replayed without {r.name} the "
                              f"ready line does not move (it would once {gate} no longer holds it); "
                              f"{m.chain_text()}")
                title = f"{r.name} holds network-online.target for {secs(r.duration_ns)} before {app}"
            else:
                arithmetic = (f"{ran}; the boot replayed over the After= map without it puts the ready line "
                              f"{secs(saving)} earlier (every other unit keeping its measured duration); "
                              f"{m.chain_text()}")
                title = f"{r.name} holds the ready line for {secs(saving)}"
            yield Finding(
                rule=self.id, title=title, stage="userspace",
                saving_ns=saving, arithmetic=arithmetic,
                confidence=Confidence.MEDIUM if change.automatic else Confidence.LOW,
                tradeoff=TRADEOFF["settle" if settle else "online"], change=change,
                evidence=unit_evidence(m.boot, [r], [m.ready[1]]))
