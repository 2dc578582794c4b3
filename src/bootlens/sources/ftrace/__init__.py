"""Side format: ftrace buffers (function_graph, function, trace events), their KFT table, and a buffer dumped beside a recording."""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat
from .sniff import sniff_ftrace


def _sniff(path: str, head: Head) -> str | None:
    return "ftrace" if sniff_ftrace(head.text) else None


FORMAT = REGISTRY.register(SideFormat("ftrace", sniff_order=50, attach_order=50, sniff=_sniff))
