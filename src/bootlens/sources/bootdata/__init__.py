"""Side format: boot-data files (grab-boot-data.sh: the kernel log with the machine's facts, systemd info and the kernel config); read as a log (timeline.inputs.analyze_bootdata), not attached to another."""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat
from .sniff import sniff_bootdata


def _sniff(path: str, head: Head) -> str | None:
    return "bootdata" if sniff_bootdata(head.text) else None


FORMAT = REGISTRY.register(SideFormat("bootdata", sniff_order=20, attach_order=90, sniff=_sniff, kinds=("kconfig",), attaches=False))
