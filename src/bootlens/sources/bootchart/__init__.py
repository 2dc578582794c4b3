"""Side format: bootchart archives (bootchartd's header, ps and stat logs): its processes join a boot on the uptime clock."""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat
from .sniff import sniff_bootchart


def _sniff(path: str, head: Head | None = None) -> str | None:
    return "bootchart" if sniff_bootchart(path) else None  # a tar archive or a folder: by its members


FORMAT = REGISTRY.register(SideFormat("bootchart", sniff_order=10, attach_order=20, sniff=_sniff, sniff_dir=_sniff))
