"""Side format: bootchart archives (bootchartd's header, ps and stat logs): its processes join a
boot on the uptime clock.

This module is the format's light part: its declaration (``FORMAT``) and its sniff,
:func:`sniff_bootchart` (a folder or tar archive holding bootchartd's logs). Every input of
``bootlens analyze`` is sniffed, so a plain console log must not pay for importing the reader
(:mod:`.reader`) and tarfile (with shutil, bz2, lzma) only to learn it is no archive.
"""

from __future__ import annotations

import os

from ..base import REGISTRY, Head, SideFormat

_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")  # gzip, bzip2, xz: what tarfile's "r:*" opens


def _may_be_tar(head: bytes) -> bool:
    """False only when tarfile.is_tarfile would say False too: no compression magic, and the
    first 512-byte header's checksum field (bytes 148-156) cannot be a number tarfile reads
    (octal digits and blanks up to a NUL, or base-256 when it starts with 0x80 or 0xff).
    A text log fails on its first non-octal byte there, without tarfile imported."""
    if head.startswith(_COMPRESSED):
        return True
    if len(head) < 512:
        return False  # tarfile needs a whole header block
    field = head[148:156]
    if field[:1] in (b"\x80", b"\xff"):
        return True
    digits = field.split(b"\0", 1)[0]
    return all(c in b"01234567" or c <= 0x20 or c in (0x85, 0xA0) for c in digits)


def sniff_bootchart(path: str | os.PathLike[str]) -> bool:
    """True for a directory or tar archive that holds a bootchart's proc_ps.log or proc_stat.log."""
    p = os.fspath(path)  # os.path, not pathlib: every input is sniffed (pathlib costs ~8 ms to import)
    try:
        if os.path.isdir(p):
            return os.path.isfile(os.path.join(p, "proc_ps.log")) or os.path.isfile(os.path.join(p, "proc_stat.log"))
        with open(p, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    if not _may_be_tar(head):
        return False  # every input is sniffed: a log must not pay for importing tarfile
    import tarfile

    try:
        if not tarfile.is_tarfile(p):
            return False
        with tarfile.open(p, "r:*") as tar:
            return any(n.rsplit("/", 1)[-1] in ("proc_ps.log", "proc_stat.log") for n in tar.getnames())
    except (OSError, tarfile.TarError, EOFError):
        return False


def _sniff(path: str, head: Head | None = None) -> str | None:
    return "bootchart" if sniff_bootchart(path) else None  # a tar archive or a folder: by its members


FORMAT = REGISTRY.register(SideFormat("bootchart", sniff_order=10, attach_order=20, sniff=_sniff, sniff_dir=_sniff))
