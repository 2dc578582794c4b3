"""Side format: logic analyzer captures (sigrok, Saleae CSV) and their alignment with the console."""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat
from .sniff import sniff_logic


def _sniff(path: str, head: Head) -> str | None:
    return "logic" if sniff_logic(head.text) else None


FORMAT = REGISTRY.register(SideFormat("logic", sniff_order=30, attach_order=30, sniff=_sniff))
