"""The initramfs of the busybox reference targets (qemu-arm64, qemu-x86_64), written by bootlens:
an unoptimised product's init (busybox init, an rcS running S-scripts: mounts, mdev coldplug,
syslogd/klogd, loopback, a needless ``sleep 1``, fork-heavy checks, then an application that
prints ``APP READY`` and powers off), as a newc cpio archive that needs no root to write, with
an overlay directory laid over it when asked (an edited script, the --trace dump hook).
"""

from __future__ import annotations

import gzip
import io
import os
import stat as st
from pathlib import Path

from ..core.errors import printable
from .base import TargetError

APPLETS = ("sh", "ash", "init", "mount", "umount", "mdev", "syslogd", "klogd", "ifconfig", "sleep", "cat",
           "grep", "echo", "expr", "test", "[", "poweroff", "mkdir", "ls", "sed", "cut", "head", "true",
           "uname", "hostname", "ln", "seq")

INITTAB = """\
::sysinit:/etc/init.d/rcS
::once:/usr/bin/app
::shutdown:/bin/umount -a -r
"""

RCS = """\
#!/bin/sh
# Runs the S-scripts in order, like a stock busybox or Buildroot image.
for s in /etc/init.d/S??*; do
    [ -x "$s" ] && "$s" start
done
"""

SCRIPTS = {
    "S01mount": """\
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
mkdir -p /dev/pts /run /tmp /var/log
""",
    "S10mdev": """\
#!/bin/sh
# coldplug: walk /sys and create device nodes (slow on real hardware)
mdev -s
""",
    "S20syslog": """\
#!/bin/sh
syslogd
klogd
""",
    "S30network": """\
#!/bin/sh
ifconfig lo 127.0.0.1 up
hostname bootlens-ref
""",
    "S40settle": """\
#!/bin/sh
# "wait for things to settle": a needless fixed delay
sleep 1
""",
    "S50checks": """\
#!/bin/sh
# fork-heavy checks, the way init scripts are often written
if cat /proc/cmdline | grep -q quiet; then echo "quiet boot"; fi
n=0
for f in /etc/init.d/*; do
    n=$(expr $n + 1)
    [ -f "$f" ] && echo "$f" | grep -q S && true
done
kernel=$(uname -r | cut -d- -f1)
echo "checks done ($n scripts, kernel $kernel)"
""",
}

APP = """\
#!/bin/sh
# The product's application: report ready, then power off so that QEMU exits.
echo "uptime: $(cat /proc/uptime)"
echo "APP READY"
poweroff -f
"""


def init_files() -> dict[str, bytes]:
    """The init files of the initramfs (path without leading /, content): what the advisor reads
    to propose script edits, and what an overlay replaces."""
    files = {"etc/inittab": INITTAB.encode(), "etc/init.d/rcS": RCS.encode(), "usr/bin/app": APP.encode()}
    files.update({f"etc/init.d/{n}": body.encode() for n, body in SCRIPTS.items()})
    return files


def build_initramfs(busybox: bytes, overlay: Path | None = None) -> bytes:
    """A gzip-compressed newc cpio archive, written here so that no root (or fakeroot) is needed
    for root-owned device-less entries; the kernel creates /dev through devtmpfs.

    ``overlay``: a directory whose files, directories and symlinks are laid over the image
    (same path: the overlay's wins), e.g. an edited ``etc/init.d/S40settle``.
    """
    entries: list[tuple[str, int, bytes]] = []  # (path, mode, data or link target)
    for dname in ("bin", "sbin", "usr", "usr/bin", "etc", "etc/init.d", "proc", "sys", "dev", "tmp", "run",
                  "var", "var/log", "root"):
        entries.append((dname, 0o040755, b""))
    entries.append(("bin/busybox", 0o100755, busybox))
    for applet in APPLETS:
        entries.append((f"bin/{applet}", 0o120777, b"busybox"))
    entries.append(("sbin/init", 0o120777, b"../bin/busybox"))
    entries.append(("sbin/mdev", 0o120777, b"../bin/busybox"))
    entries.append(("init", 0o120777, b"sbin/init"))
    entries.append(("etc/inittab", 0o100644, INITTAB.encode()))
    entries.append(("etc/init.d/rcS", 0o100755, RCS.encode()))
    for name, text in SCRIPTS.items():
        entries.append((f"etc/init.d/{name}", 0o100755, text.encode()))
    entries.append(("usr/bin/app", 0o100755, APP.encode()))
    if overlay is not None:
        entries = _overlay(entries, overlay)
    raw = io.BytesIO()
    for ino, (path, mode, data) in enumerate(entries, 1):
        cpio_entry(raw, ino, path, mode, data)
    cpio_entry(raw, 0, "TRAILER!!!", 0, b"")
    return gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)


def _overlay(entries: list[tuple[str, int, bytes]], root: Path) -> list[tuple[str, int, bytes]]:
    """Entries with the overlay directory's contents laid over them (same path: replaced)."""
    if not root.is_dir():
        raise TargetError(f"--rootfs-overlay {root}: not a directory")
    extra: dict[str, tuple[int, bytes]] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            extra[rel] = (0o120777, os.fsencode(os.readlink(p)))
        elif p.is_dir():
            extra[rel] = (0o040755, b"")
        elif p.is_file():
            mode = 0o100755 if os.access(p, os.X_OK) else 0o100644
            extra[rel] = (mode, p.read_bytes())
    # Replace in place, so that every directory still comes before what it holds (the kernel's
    # unpacker cannot create a file whose directory does not exist yet); new paths go last,
    # in sorted order, parents first.
    out = [(path, *extra.pop(path)) if path in extra else (path, mode, data) for path, mode, data in entries]
    return out + [(path, mode, data) for path, (mode, data) in extra.items()]


def copy_overlay(into: Path, user_overlay: Path | None) -> None:
    """The user's ``--rootfs-overlay`` copied into ``into`` (links kept), the base a generated
    overlay (a traced boot's, the deterministic mode's) adds its files to."""
    import shutil

    if user_overlay is not None:
        if not user_overlay.is_dir():
            raise TargetError(f"--rootfs-overlay {user_overlay}: not a directory")
        shutil.copytree(user_overlay, into, symlinks=True, dirs_exist_ok=True)


def write_executables(into: Path, files: dict[str, bytes]) -> Path:
    """Each file (path under ``into`` -> content) written executable, replacing what is there (a
    link too, not followed); returns ``into``."""
    for rel, data in files.items():
        path = into / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_bytes(data)
        path.chmod(0o755)
    return into


def overlay_files(root: Path) -> list[tuple[str, bytes, int]]:
    """The files and symlinks under ``root`` as (path below it, content or link target, mode),
    in walk order; a symlink to a directory is a link, not followed."""
    files: list[tuple[str, bytes, int]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in sorted(dirnames + filenames):
            p = Path(dirpath) / n
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                files.append((rel, os.fsencode(os.readlink(p)), st.S_IFLNK | 0o777))
            elif p.is_file():
                files.append((rel, p.read_bytes(), st.S_IFREG | (p.stat().st_mode & 0o777)))
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
    return files


def cpio_entry(out: io.BytesIO, ino: int, name: str, mode: int, data: bytes) -> None:
    """One newc entry (header, NUL-ended name, data, each padded to 4 bytes) written to ``out``.

    newc carries a name and a link target as data (a length, the bytes): a newline, a quote or
    a ';' is part of the name. What it cannot carry is refused (TargetError): a NUL (the name's
    end; a link target is read up to one), and a name the kernel's unpacker would create outside
    the root (absolute, or with a '..')."""
    where = f"initramfs entry '{printable(name)}'"
    if not name or name.startswith("/") or ".." in name.split("/") or "\0" in name:
        raise TargetError(f"{where}: not a path inside the root filesystem (empty, absolute, '..' or a NUL)")
    if st.S_ISLNK(mode) and b"\0" in data:
        raise TargetError(f"{where}: a NUL in the link target")
    nb = name.encode("utf-8", "surrogateescape") + b"\0"
    fields = (ino, mode, 0, 0, 2 if mode & 0o040000 else 1, 0, len(data), 0, 0, 0, 0, len(nb), 0)
    out.write(b"070701" + b"".join(b"%08X" % f for f in fields))
    out.write(nb)
    out.write(b"\0" * (-(110 + len(nb)) % 4))
    out.write(data)
    out.write(b"\0" * (-len(data) % 4))
