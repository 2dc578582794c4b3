"""A JFFS2 root file system: mounting it scans the whole partition.

JFFS2 keeps no index on flash: at mount, ``jffs2_scan_medium`` reads every eraseblock to rebuild
its node tree, so the mount time grows with the partition (and with dirty, partly written blocks:
"jffs2: Empty flash at 0x... ends at 0x..." lines come from that scan). The mount is the silence
before ``VFS: Mounted root (jffs2 filesystem)``: from the last line printed before the scan (other
than the scan's own "jffs2:" messages) to that line.

UBIFS on UBI with fastmap (``CONFIG_MTD_UBI_FASTMAP``, ``ubi.fm_autoconvert=1``) reads an on-flash
map instead of scanning, and a read-only SquashFS root reads its superblock only; either makes the
mount a matter of milliseconds, so nearly all of the scan goes. With no mount time of the
replacement on this flash in the log, the figure is an upper bound.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

MIN_NS = 20_000_000
_SCAN_WORDS = ("jffs2", "JFFS2", "Empty flash at", "Magic bitmask", "CLEANMARKER", "Further such events")


@REGISTRY.register
class Jffs2Mount(Rule):
    """The JFFS2 mount scan of the root file system."""

    id = "fs.jffs2"
    title = "JFFS2 mount scan"
    needles = ("VFS: Mounted root (jffs2",)

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        texts = boot.boot.lines.text
        mounted = [i for i in K.grep(boot, "VFS: Mounted root (jffs2") if texts[i].startswith("VFS:")]
        if not mounted:
            return
        v = mounted[0]
        j = v - 1
        scan_lines = 0
        while j >= 0 and (K.line_time(boot, j) is None or any(w in texts[j] for w in _SCAN_WORDS)):
            scan_lines += any(w in texts[j] for w in _SCAN_WORDS)
            j -= 1
        if j < 0:
            return
        took = K.span(boot, j, v)
        if took is None or took < MIN_NS:
            return
        part = K.root_disk(boot)
        yield Finding(
            rule=self.id,
            title=f"Mounting the JFFS2 root file system takes {K.ms(took)} (a scan of the whole partition)",
            stage="kernel_init",
            saving_ns=took,
            arithmetic=(f"from the last line before the mount (line {K.line_no(boot, j)}) to 'VFS: Mounted root "
                        f"(jffs2 filesystem)' (line {K.line_no(boot, v)}): {K.ms(took)}"
                        + (f", with {scan_lines} scan messages in between" if scan_lines else "")
                        + "; UBIFS with fastmap or SquashFS mount without a scan, so nearly all of it goes: an "
                        "upper bound, since their own mount time on this flash is not in the log"),
            confidence=Confidence.LOW,
            tradeoff=("a change of file system and flash layout: UBIFS needs UBI (ubinize the image, "
                      "ubi.mtd= and root=ubi0:rootfs rootfstype=ubifs); SquashFS is read-only and needs a "
                      "separate writable partition or an overlay for data. Meanwhile, JFFS2 erase-block "
                      "summaries (CONFIG_JFFS2_SUMMARY and sumtool on the image) shorten the scan"),
            change=Change(ChangeKind.MANUAL, "UBIFS+fastmap or SquashFS",
                          "move the root file system"
                          + (f" on {part[0]}" if part else "")
                          + " to UBIFS on UBI with fastmap (CONFIG_MTD_UBI_FASTMAP=y, ubi.fm_autoconvert=1), or "
                          "to a read-only SquashFS with a small writable partition for data"),
            evidence=evidence(boot.boot, [K.line_no(boot, j), *(K.line_no(boot, i) for i in range(j + 1, v)
                                                                if any(w in texts[i] for w in _SCAN_WORDS))][:4]
                                   + [K.line_no(boot, v)], K.EVIDENCE_MAX),
        )
