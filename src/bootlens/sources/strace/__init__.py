"""Side format: strace and ltrace outputs of an application's start, and their place on a boot."""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat
from .sniff import sniff_strace


def _sniff(path: str, head: Head) -> str | None:
    return "strace" if sniff_strace(head.text) else None


# strace -ff writes one file per process: the files given are read as one trace
FORMAT = REGISTRY.register(SideFormat("strace", sniff_order=40, attach_order=40, sniff=_sniff, together=True))
