"""Side format: systemd-analyze's outputs (time, blame, critical-chain, dump, plot) and the units' ordering."""

from __future__ import annotations

from ..base import REGISTRY, Head, SideFormat, read_head
from .sniff import PLOT_HEAD, SYSTEMD_ANALYZE, detect


def _sniff(path: str, head: Head) -> str | None:
    return detect(read_head(path, PLOT_HEAD) if "<svg" in head.text else head.text)


def _sniff_dir(path: str) -> str | None:
    """A folder of its outputs (``target boot --collect``), unless it is a run folder of boots."""
    from pathlib import Path

    from .sniff import collection_files

    p = Path(path)
    return "collection" if collection_files(p) and not any(q.suffix in (".rec", ".log") for q in p.iterdir()) else None


# its parts join first: a dump names the console's units before anything else reads them
FORMAT = REGISTRY.register(SideFormat("systemd_analyze", sniff_order=60, attach_order=10, sniff=_sniff, sniff_dir=_sniff_dir,
                                      kinds=(*SYSTEMD_ANALYZE, "collection"), accumulates=("critical-chain",)))
