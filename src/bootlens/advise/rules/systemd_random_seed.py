"""systemd-random-seed (or another unit) waits for the kernel's entropy pool.

systemd-random-seed.service loads the saved seed and, since systemd 250, waits until the
kernel's random pool is initialised before it saves a new one ("Kernel entropy pool is not
initialized yet, waiting until it is."); ``sysinit.target`` is ordered after it, so every
ordinary service waits as well. On a board or VM without a hardware RNG the kernel's
``crng init done`` comes late. The saving is the boot replayed without the unit's time
(:meth:`Model.saving`); the wait itself, when the journal shows it, is quoted as evidence.
The change is manual: crediting the seed (SYSTEMD_RANDOM_SEED_CREDIT=1) is only safe when each
device has its own seed, which an image booted with the same seed every time does not have.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import secs
from ..systemd import fmt_at, model, unit_evidence

UNIT = "systemd-random-seed.service"
WAIT_TEXT = ("entropy pool is not initialized yet", "crng init done", "random: crng init",
             "waiting for entropy", "uninitialized urandom read")
TRADEOFF = ("a hardware RNG (virtio-rng in QEMU: -device virtio-rng-pci; the SoC's TRNG driver built in) costs "
            "nothing; crediting the seed file (SYSTEMD_RANDOM_SEED_CREDIT=1, random.trust_bootloader=on with a "
            "seed from the bootloader) is only safe when every device has its own seed, never on a cloned "
            "image booted with the same one")


@REGISTRY.register
class RandomSeed(Rule):
    """The boot waits for the random seed or for entropy."""

    id = "systemd.random_seed"
    title = "random seed / entropy wait at boot"
    needles = WAIT_TEXT

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        m = model(boot, ctx)
        if m is None or m.ready is None:
            return
        r = m.started_before_ready(UNIT)
        if r is None:
            return
        lines = boot.boot.lines
        waits = [i + lines.first for i in lines.grep(*WAIT_TEXT) if r.line_no <= i + lines.first <= r.end_line_no]
        waits = waits[:3]
        saving = m.saving(drop=[UNIT])
        waited = (f"; while it ran the log shows the kernel's entropy pool being waited for or initialised (line "
                  f"{', '.join(map(str, waits))})" if waits else "")
        ran = (f"{UNIT} ran {fmt_at(r.start_ns)} -> {fmt_at(r.active_ns)} ({secs(r.duration_ns)}, lines "
               f"{r.line_no}-{r.end_line_no}){waited}")
        if saving is not None and saving > 0:
            arithmetic = (f"{ran}; the boot replayed over the After= map without its time puts the ready line "
                          f"{secs(saving)} earlier, every other unit keeping its measured duration; {m.chain_text()}")
            title = f"{UNIT} holds the ready line for {secs(saving)}"
        else:
            arithmetic = f"no estimate: {ran}, beside the chain to ready ({m.unmoved()}); {m.chain_text()}"
            title = f"{UNIT} takes {secs(r.duration_ns)} at boot" + (" around an entropy wait" if waits else "")
            saving = None
        yield Finding(
            rule=self.id, title=title, stage="userspace", saving_ns=saving, arithmetic=arithmetic,
            confidence=Confidence.MEDIUM if saving else Confidence.LOW, tradeoff=TRADEOFF,
            change=Change(ChangeKind.MANUAL, "a hardware RNG for the kernel",
                          "give the kernel a hardware entropy source (virtio-rng-pci in QEMU, the SoC's TRNG "
                          "driver built in) so that its pool is ready at once; only with a per-device seed: "
                          f"Environment=SYSTEMD_RANDOM_SEED_CREDIT=1 in a {UNIT} drop-in"),
            evidence=unit_evidence(m.boot, [r], [*waits, m.ready[1]]))
