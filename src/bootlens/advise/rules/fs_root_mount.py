"""Slow root mounts: fixed delays, waits for the root device, file system types tried in turn.

What ``prepare_namespace`` (init/do_mounts.c) prints and does:

- ``rootdelay=N``: "Waiting %d sec before mounting root device..." then ``ssleep(N)``, whatever the
  device is doing. ``rootwait`` instead polls every 5 ms until the device exists, so it waits only
  as long as needed: the saving is the part of the delay after the root device appeared.
- ``rootwait``: "Waiting for root device %s..." then the poll: the wait is the storage driver's
  probe latency. For a USB stick or disk, ``usb-storage`` sleeps ``delay_use`` seconds (1 by
  default) after the device is detected before scanning it; ``usb-storage.delay_use=0`` skips it.
- Without ``rootfstype=`` the kernel tries every registered block file system in turn; the ext4
  driver says so for each type it refuses ("couldn't mount as ext3 due to feature
  incompatibilities"). ``rootfstype=`` goes straight to the right one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.numbers import to_ns
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

MIN_NS = 5_000_000
_DELAY = re.compile(r"Waiting (\d+) sec before mounting root device")
_REFUSED = re.compile(r"couldn't mount as (\S+) due to feature incompatibilities")
_USB_HOST = re.compile(r"scsi host(\d+): usb-storage")
NS = 1_000_000_000


@REGISTRY.register
class RootMount(Rule):
    """Time between the kernel deciding to mount the root file system and mounting it."""

    id = "fs.root_mount"
    title = "Slow root mount"
    needles = ("VFS: Mounted root", "before mounting root device", "Waiting for root device", "usb-storage",
               "couldn't mount as")

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        mounted = [i for i in K.grep(boot, "VFS: Mounted root") if boot.boot.lines.text[i].startswith("VFS:")]
        if not mounted:
            return
        v = mounted[0]
        yield from self._rootdelay(boot, v)
        yield from self._rootwait(boot, v)
        yield from self._fstypes(boot, v)

    def _rootdelay(self, boot: BootAnalysis, v: int) -> Iterable[Finding]:
        texts = boot.boot.lines.text
        waits = [i for i in K.grep(boot, "before mounting root device") if i < v and _DELAY.match(texts[i])]
        if not waits:
            return
        w = waits[-1]
        m = _DELAY.match(texts[w])
        assert m is not None
        delay = to_ns(m[1], NS)
        if delay is None:
            return
        t_wait = K.line_time(boot, w)
        root = K.root_disk(boot)
        seen = None
        if root is not None:
            seen = K.device_seen(boot, *root)
        nos = [K.line_no(boot, w), K.line_no(boot, v)]
        saving: int | None = None
        if t_wait is not None and seen is not None and (t_seen := K.line_time(boot, seen)) is not None:
            saving = max(0, t_wait + delay - max(t_wait, t_seen))
            nos.append(K.line_no(boot, seen))
            arithmetic = (f"rootdelay sleeps {m[1]} s from line {K.line_no(boot, w)}; the root device "
                          f"{root[0] if root else ''} was there at line {K.line_no(boot, seen)} "
                          f"({'before the delay began' if t_seen <= t_wait else K.ms(t_seen - t_wait) + ' into it'}), "
                          f"so rootwait would have waited {K.ms(delay - saving)} instead of {K.ms(delay)}: "
                          f"saving {K.ms(saving)}")
            confidence = Confidence.HIGH
        else:
            arithmetic = (f"rootdelay sleeps {m[1]} s (line {K.line_no(boot, w)}); not estimated: the log does "
                          "not show when the root device appeared (root= is not a /dev name, or no partition "
                          "scan line names it), and rootwait waits exactly until then")
            confidence = Confidence.MEDIUM
        if saving is not None and saving < MIN_NS:
            return
        yield Finding(
            rule=self.id,
            title=f"rootdelay={m[1]} makes the kernel sleep {m[1]} s before mounting the root file system",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=confidence,
            tradeoff=("none for a device that does appear: rootwait waits for it, however long; a root= "
                      "that never appears hangs the boot instead of panicking after the delay"),
            change=Change(ChangeKind.CMDLINE, "rootdelay=0 rootwait",
                          "replace rootdelay= by rootwait on the kernel command line"),
            evidence=evidence(boot.boot, nos, K.EVIDENCE_MAX),
        )

    def _rootwait(self, boot: BootAnalysis, v: int) -> Iterable[Finding]:
        texts = boot.boot.lines.text
        waits = [i for i in K.grep(boot, "Waiting for root device") if i < v and texts[i].startswith("Waiting for")]
        if not waits:
            return
        w = waits[-1]
        hosts = [i for i in K.grep(boot, "usb-storage") if _USB_HOST.search(texts[i])]
        for h in hosts:
            m = _USB_HOST.search(texts[h])
            assert m is not None
            scans = [i for i in K.grep(boot, f"scsi {m[1]}:0:0:0: Direct-Access") if i > h]
            if not scans:
                continue
            gap = K.span(boot, h, scans[0])
            if gap is None or gap < MIN_NS:
                continue
            yield Finding(
                rule=self.id,
                title=f"usb-storage waits {K.ms(gap)} before scanning the USB disk the root file system is on",
                stage="kernel_init",
                saving_ns=gap,
                arithmetic=(f"from 'scsi host{m[1]}: usb-storage' (line {K.line_no(boot, h)}) to the disk "
                            f"answering (line {K.line_no(boot, scans[0])}): {K.ms(gap)}, the delay_use sleep "
                            "(1 s by default) and the scan; with usb-storage.delay_use=0 only the scan remains"),
                confidence=Confidence.MEDIUM,
                tradeoff=("delay_use gives slow devices time to settle after they appear; most answer at once, "
                          "some need a few hundred ms"),
                change=Change(ChangeKind.CMDLINE, "usb-storage.delay_use=0",
                              "add usb-storage.delay_use=0 to the kernel command line"),
                evidence=evidence(boot.boot, [K.line_no(boot, w), K.line_no(boot, h), K.line_no(boot, scans[0])],
                                  K.EVIDENCE_MAX),
            )
            return
        root = K.root_disk(boot)
        seen = K.device_seen(boot, *root, after=w) if root is not None else None
        end = seen if seen is not None else v
        waited = K.span(boot, w, end)
        if waited is None or waited < MIN_NS:
            return
        what = (f"the root device {root[0]} appeared at line {K.line_no(boot, seen)}" if seen is not None and root
                else "the root file system was mounted")
        yield Finding(
            rule=self.id,
            title=f"The kernel waits {K.ms(waited)} for the root device",
            stage="kernel_init",
            saving_ns=None,
            arithmetic=(f"from 'Waiting for root device' (line {K.line_no(boot, w)}) until {what}: "
                        f"{K.ms(waited)}. Not estimated: the wait is the storage driver's probe (card "
                        "detection, bus scan), and what can be cut depends on the driver"),
            confidence=Confidence.LOW,
            tradeoff="depends on the change: a driver built in instead of a module, or a card-detect poll removed",
            change=Change(ChangeKind.MANUAL, "probe the root device sooner",
                          "make the root device's controller driver built-in and probed early (not a module, "
                          "no deferred probe), and for SD/eMMC mark the slot non-removable in the device tree "
                          "so the card is not found by polling"),
            evidence=evidence(boot.boot, [K.line_no(boot, w), K.line_no(boot, end)], K.EVIDENCE_MAX),
        )

    def _fstypes(self, boot: BootAnalysis, v: int) -> Iterable[Finding]:
        if K.arg(boot, "rootfstype") is not None:
            return
        texts = boot.boot.lines.text
        refused = [i for i in K.grep(boot, "couldn't mount as") if i < v and _REFUSED.search(texts[i])]
        if not refused:
            return
        fstype = boot.boot.fact("rootfs_type")
        if fstype is None:
            return
        span = K.span(boot, refused[0], refused[-1]) if len(refused) > 1 else None
        types = [m[1] for i in refused if (m := _REFUSED.search(texts[i])) is not None]
        yield Finding(
            rule=self.id,
            title=f"The kernel tries {', '.join(types)} before mounting the root file system as {fstype.value}",
            stage="kernel_init",
            saving_ns=span if span is not None and span > 0 else None,
            arithmetic=(f"{len(refused)} refused attempts (lines {K.line_no(boot, refused[0])}-"
                        f"{K.line_no(boot, refused[-1])})"
                        + (f"; from the first refusal to the last: {K.ms(span)}, a lower bound (the first "
                           "attempt's own time is not in the log)" if span is not None else
                           "; not estimated: one refusal, whose start is not in the log")),
            confidence=Confidence.LOW,
            tradeoff="none, as long as the root file system keeps this type",
            change=Change(ChangeKind.CMDLINE, f"rootfstype={fstype.value}",
                          f"add rootfstype={fstype.value} to the kernel command line"),
            evidence=evidence(boot.boot, [*(K.line_no(boot, i) for i in refused[:3]), K.line_no(boot, v)],
                              K.EVIDENCE_MAX),
        )
