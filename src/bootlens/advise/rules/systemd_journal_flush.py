"""The journal is flushed to persistent storage during boot.

``systemd-journal-flush.service`` moves the journal from /run to /var/log/journal once /var is
writable, and ``systemd-tmpfiles-setup.service`` (so ``sysinit.target``, so every ordinary
service) is ordered after it: on a slow disk, or a CPU shared with the boot's other units, the
copy lies on the chain. With ``Storage=volatile`` journald keeps the journal in /run only and
the flush has nothing to do. The saving is the boot replayed without the flush's time
(:meth:`Model.saving`); when that moves nothing, the flush ran beside the chain and no figure
is given (it still shares the CPU and the disk).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import conf_value, dropin, fmt_at, model, unit_evidence

FLUSH = "systemd-journal-flush.service"
DROPIN = "etc/systemd/journald.conf.d/50-bootlens-volatile.conf"
TRADEOFF = ("the journal lives in RAM (/run/log/journal) and is lost at every reboot or power cut: forward it "
            "to a log host (systemd-journal-upload, ForwardToSyslog=) or keep persistent logs on a product that "
            "must keep them; RuntimeMaxUse= bounds the RAM it takes")


def storage(files: Mapping[str, bytes]) -> str | None:
    """journald's Storage= from journald.conf and its drop-ins (the last one wins)."""
    return conf_value(files, "journald.conf", "Journal", "Storage")


@REGISTRY.register
class JournalFlush(Rule):
    """systemd-journal-flush copies the journal to disk before the ready line."""

    id = "systemd.journal_flush"
    title = "journal flush to persistent storage at boot"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None:
            return
        r = m.started_before_ready(FLUSH)
        if r is None:
            return
        st = storage(ctx.rootfs_files)
        if st is not None and st.lower() in ("volatile", "none"):
            return  # nothing to flush: what the flush took was its own start
        saving = m.saving(drop=[FLUSH])
        ran = (f"{FLUSH} ran {fmt_at(r.start_ns)} -> {fmt_at(r.active_ns)} ({secs(r.duration_ns)}, lines "
               f"{r.line_no}-{r.end_line_no}) with Storage={st or 'auto (default: persistent once /var/log/journal '}"
               f"{'' if st else 'exists)'}")
        if saving is not None and saving > 0:
            arithmetic = (f"{ran}; the boot replayed over the After= map without it puts the ready line "
                          f"{secs(saving)} earlier, every other unit keeping its measured duration; {m.chain_text()}")
            title = f"the journal flush holds the ready line for {secs(saving)}"
        else:
            arithmetic = (f"no estimate: {ran}, beside the chain to ready ({m.unmoved()}): it shares the CPU and the disk for its {secs(r.duration_ns)}; "
                          f"{m.chain_text()}")
            title = f"the journal is flushed to disk during boot ({secs(r.duration_ns)})"
            saving = None
        yield Finding(
            rule=self.id, title=title, stage="userspace", saving_ns=saving, arithmetic=arithmetic,
            confidence=Confidence.MEDIUM if saving else Confidence.LOW, tradeoff=TRADEOFF,
            change=dropin(DROPIN, "# bootlens (systemd.journal_flush): keep the journal in RAM, no flush at boot\n"
                                  "[Journal]\nStorage=volatile\n", "journald Storage=volatile",
                          f"lay /{DROPIN} with [Journal] Storage=volatile: journald keeps the journal in /run "
                          f"and {FLUSH} has nothing to copy"),
            evidence=unit_evidence(m.boot, [r], [m.ready[1]]))
