"""What a boot-data file looks like: :func:`sniff_bootdata`, apart from the reader in
:mod:`bootlens.sources.bootdata.reader`, which imports the systemd-analyze readers: every input of
``bootlens analyze`` is sniffed, and a plain console log should not pay for them (start-up).
"""

from __future__ import annotations


def sniff_bootdata(text: str) -> bool:
    """True when the text starts like a grab-boot-data.sh file."""
    head = text[:2048]
    return head.startswith("=== Machine Info") or "== GRAB-BOOT-DATA INFO ==" in head
