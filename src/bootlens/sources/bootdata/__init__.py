"""Side format: boot-data files (grab-boot-data.sh: the kernel log with the machine's facts,
systemd info and the kernel config); read as a log (timeline.inputs.analyze_bootdata), not
attached to another.

This module is the format's light part: its declaration (``FORMAT``) and its sniff,
:func:`sniff_bootdata`. The reader (:mod:`.reader`) imports the systemd-analyze readers: every
input of ``bootlens analyze`` is sniffed, and a plain console log must not pay for them.
"""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat

def sniff_bootdata(text: str) -> bool:
    """True when the text starts like a grab-boot-data.sh file."""
    head = text[:2048]
    return head.startswith("=== Machine Info") or "== GRAB-BOOT-DATA INFO ==" in head


def _sniff(path: str, head: Head) -> str | None:
    return "bootdata" if sniff_bootdata(head.text) else None


FORMAT = REGISTRY.register(SideFormat("bootdata", sniff_order=20, attach_order=90, sniff=_sniff, kinds=("kconfig",), attaches=False))
