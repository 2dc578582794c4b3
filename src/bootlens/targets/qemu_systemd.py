"""The systemd reference target ``qemu-x86_64-systemd``: Debian 12 as a product would ship it.

``build`` makes, with mmdebstrap from Debian 12 packages (``systemd-sysv udev linux-image-amd64``
and friends), a root filesystem as an ext4 image (``mkfs.ext4 -d``, no loop mount), takes the
kernel out of its /boot and writes a small initramfs of its own (static busybox, the root's
modules, mount, switch_root: Debian's initramfs-tools initrd, also in the image, starts udev and
costs 7-14 s under TCG before systemd starts, time no systemd change can remove). The image
is deliberately unoptimised, with the delays the advisor's systemd rules name: the application
``app.service`` is ordered after ``multi-user.target`` and ``network-online.target`` (which
systemd-networkd-wait-online holds until QEMU's DHCP server answered), the journal is
persistent (the flush costs time), a getty runs on the console before the app, fsck checks the
root, e2scrub_reap, systemd-random-seed and the usual timers run.

``overlay_image`` lays an overlay directory (files and symlinks, e.g. a mask ``-> /dev/null``
or a drop-in) over a copy of the image with ``debugfs -w``; each distinct overlay is built
once and cached. ``read_collection`` unpacks what the guest's collector (``bootlens.collect=1``
on the kernel command line) wrote to the second disk: ``systemd-analyze`` and ``journalctl``
outputs of that boot.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import posixpath
import shlex
import shutil
import stat as st
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from ..core.errors import printable
from . import qemu as target
from .base import TargetError, control_char
from .initramfs import cpio_entry, overlay_files
from .qemu import TargetFiles, TargetSpec

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
PACKAGES = ("systemd-sysv", "udev", "linux-image-amd64", "initramfs-tools", "kmod", "dbus", "man-db",
            "busybox-static")  # busybox: the shell of the small initramfs bootlens boots (small_initramfs)
ROOT_ARGS = "root=/dev/vda ro"  # kept like console=: without them there is no boot to measure
COLLECT_ARG = "bootlens.collect=1"
COLLECT_DISK_SIZE = 128 << 20
IMAGE = "rootfs.ext4"
INITRAMFS = "initramfs.cpio.gz"
ROOT_MODULES = ("crc32c_generic", "virtio_pci", "virtio_blk", "ext4")  # crc32c: ext4's metadata checksums
UNITS_TAR = "rootfs-files.tar"  # the unit and config files, for the advisor (rootfs_files)
# bootlens's own collector is not the product: the advisor leaves it alone (its poll's sleep
# is no boot delay: it runs after the app, only when collecting)
TOOLING = frozenset({"usr/local/sbin/bootlens-collect"})
KEEP_IMAGES = 8  # overlay images kept in the cache, newest first (about 0.5 GB each)

# Kernel modules no QEMU product needs; dropping them halves the image (and each overlay copy).
PRUNE_MODULES = ("sound", "drivers/media", "drivers/net/wireless", "drivers/infiniband", "drivers/staging",
                 "drivers/gpu/drm/amd", "drivers/gpu/drm/nouveau", "drivers/gpu/drm/i915",
                 "drivers/gpu/drm/radeon", "net/wireless", "net/mac80211", "net/bluetooth", "drivers/bluetooth",
                 "drivers/isdn", "drivers/net/ethernet")

APP_SERVICE = """\
[Unit]
Description=Product application
# As products often write it: after everything, and after the network is "online".
After=multi-user.target network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/bin/app
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""

APP = """\
#!/bin/sh
# The product's application: it reports ready, then keeps running.
echo "APP READY"
exec sleep infinity
"""

COLLECT_SERVICE = """\
[Unit]
Description=bootlens: collect systemd-analyze and journal outputs of this boot
ConditionKernelCommandLine=bootlens.collect=1
After=app.service
DefaultDependencies=no

[Service]
# exec: its start job ends at once, so that it does not delay "Startup finished"
Type=exec
ExecStart=/usr/local/sbin/bootlens-collect

[Install]
WantedBy=multi-user.target
"""

COLLECT = """\
#!/bin/sh
# Waits until systemd-analyze can tell the boot's times, writes its views and the journal's as a
# tar onto the second disk (the host reads it with tarfile), then powers off.
until systemd-analyze time >/dev/null 2>&1; do sleep 0.5; done
out=/run/bootlens-collect
mkdir -p $out && cd $out || exit 1
systemd-analyze time >analyze-time.txt 2>&1
systemd-analyze blame >analyze-blame.txt 2>&1
systemd-analyze critical-chain >analyze-critical-chain.txt 2>&1
systemd-analyze critical-chain app.service >analyze-critical-chain-app.txt 2>&1
systemd-analyze plot >analyze-plot.svg 2>&1
systemd-analyze dump >analyze-dump.txt 2>&1
journalctl -b -o json >journal.json 2>&1
journalctl -b -o export >journal.export 2>&1
journalctl -b -o short-monotonic >journal-short-monotonic.txt 2>&1
journalctl -b -o short-precise >journal-short-precise.txt 2>&1
systemctl list-units --all --no-pager --plain --no-legend >units.txt 2>&1
cat /proc/cmdline >cmdline.txt
uname -r >uname.txt
systemd --version >systemd-version.txt 2>&1
tar -cf /dev/vdb . && sync
systemctl poweroff
"""

NETWORK = """\
[Match]
Name=en*

[Network]
DHCP=ipv4
"""

# path in the image -> (content, mode); symlinks are made by the customize hook. /etc/machine-id
# stays empty, as mmdebstrap leaves it and machine-id(5) advises for an image: systemd makes a
# transient ID on each boot (the image is attached with snapshot=on, nothing is kept anyway).
FILES: dict[str, tuple[str, int]] = {
    "etc/systemd/system/app.service": (APP_SERVICE, 0o644),
    "usr/local/bin/app": (APP, 0o755),
    "etc/systemd/system/bootlens-collect.service": (COLLECT_SERVICE, 0o644),
    "usr/local/sbin/bootlens-collect": (COLLECT, 0o755),
    "etc/systemd/network/20-wired.network": (NETWORK, 0o644),
    "etc/fstab": ("# fsck checks the root at boot (pass 1), as an installer writes it\n"
                  "/dev/vda / ext4 defaults 0 1\n", 0o644),
    "etc/hostname": ("bootlens-systemd\n", 0o644),
    "etc/initramfs-tools/modules": ("virtio_pci\nvirtio_blk\next4\n", 0o644),
}
INITRAMFS_CONF = "MODULES=list\n"  # Debian's own initrd, made once at kernel install: small (not booted)

# What the customize hook runs in the tree: units enabled as a product would, nothing that goes
# to the internet at boot (apt's timers masked; no NTP installed), a persistent journal.
CUSTOMIZE = """\
set -e
root="$1"
kver=$(ls "$root/usr/lib/modules")
cd "$root/usr/lib/modules/$kver/kernel" && rm -rf {prune}
chroot "$root" depmod -a "$kver"
chroot "$root" systemctl enable app.service bootlens-collect.service systemd-networkd.service \
    systemd-networkd-wait-online.service
for u in apt-daily.service apt-daily.timer apt-daily-upgrade.service apt-daily-upgrade.timer; do
    ln -sf /dev/null "$root/etc/systemd/system/$u"
done
mkdir -p "$root/var/log/journal"
echo 'root:bootlens' | chroot "$root" chpasswd
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*_Packages
"""


def files(s: TargetSpec, d: Path) -> TargetFiles:
    """The files of the systemd target set up in ``d``, or an error saying how to set it up."""
    kernels = sorted(d.glob("vmlinuz-*"))
    if not kernels or not (d / IMAGE).exists() or not (d / UNITS_TAR).exists():
        raise TargetError(f"{s.name} is not set up: run `bootlens target setup {s.name}`")
    version = kernels[-1].name.removeprefix("vmlinuz-")
    initrd = d / INITRAMFS
    if not initrd.exists():
        raise TargetError(f"{s.name}: {initrd} is missing: run `bootlens target setup --force {s.name}`")
    return TargetFiles(s, kernels[-1], initrd, version, d / IMAGE)


def _run(cmd: list[str], what: str, timeout_s: float = 1800, stderr_only: bool = False) -> str:
    return target._run(cmd, what, timeout_s=timeout_s, hint=" (apt-get install mmdebstrap e2fsprogs)",
                       stderr_only=stderr_only)


def essential_hook(stage: Path) -> str:
    """mmdebstrap's essential hook copying ``stage`` into the tree: a shell command (mmdebstrap
    runs it with ``sh -c``, the tree as $1), so the path is quoted for the shell (the cache
    folder is the user's, $XDG_CACHE_HOME, any name)."""
    return f'cp -a {shlex.quote(str(stage) + "/.")} "$1"/'


def build(s: TargetSpec, d: Path, log: bool = True) -> TargetFiles:
    """Build the root filesystem image, kernel and initrd into ``d`` (minutes; needs root for
    mmdebstrap's root mode and for the image's file ownership)."""
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=d, prefix="build-") as tmp:
        stage = Path(tmp) / "stage"
        for rel, (text, mode) in FILES.items():
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            p.chmod(mode)
        (stage / "etc/initramfs-tools/conf.d").mkdir(parents=True)
        (stage / "etc/initramfs-tools/conf.d/bootlens.conf").write_text(INITRAMFS_CONF)
        tree = Path(tmp) / "root"
        if log:
            print(f"bootlens: building a Debian {SUITE} systemd root filesystem with mmdebstrap (minutes)",
                  file=sys.stderr, flush=True)
        # essential hook: the initramfs config and the files are there before the kernel's
        # postinst makes the initrd, so it is made once, with MODULES=list
        _run(["mmdebstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
              "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
              f"--essential-hook={essential_hook(stage)}",
              "--customize-hook=" + CUSTOMIZE.format(prune=" ".join(PRUNE_MODULES)),
              SUITE, str(tree), MIRROR], "mmdebstrap")
        kernels = sorted((tree / "boot").glob("vmlinuz-*"))
        if not kernels:
            raise TargetError("mmdebstrap made a tree with no kernel in /boot")
        version = kernels[-1].name.removeprefix("vmlinuz-")
        initrd = tree / "boot" / f"initrd.img-{version}"
        if not initrd.exists():
            raise TargetError(f"mmdebstrap made a tree with no {initrd.name} in /boot")
        for old in [*d.glob("vmlinuz-*"), *d.glob("initrd.img-*")]:
            old.unlink()
        shutil.copy(kernels[-1], d / kernels[-1].name)
        (d / INITRAMFS).write_bytes(small_initramfs(tree, version))
        _save_unit_files(tree, d / UNITS_TAR)
        used = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file() and not f.is_symlink())
        size_mb = int(used * 1.3 / 2**20) + 256  # room for the journal, the random seed, an overlay
        image = Path(tmp) / IMAGE
        if log:
            print(f"bootlens: making a {size_mb} MiB ext4 image", file=sys.stderr, flush=True)
        _run(["mkfs.ext4", "-q", "-L", "rootfs", "-d", str(tree), "-F", str(image), f"{size_mb}M"], "mkfs.ext4")
        os.replace(image, d / IMAGE)
    return files(s, d)


SMALL_INIT = """\
#!/bin/sh
# bootlens's small initramfs: load the root's drivers, mount it read-only, hand over to systemd
# (Debian's initramfs-tools starts udev and spends seconds under TCG before systemd even starts)
b=/bin/busybox
$b mount -t devtmpfs devtmpfs /dev
for m in $($b cat /modules); do $b insmod /lib/modules/$m; done
n=0
while [ ! -b /dev/vda ] && [ $n -lt 500 ]; do $b sleep 0.01; n=$((n + 1)); done
$b mount -t ext4 -o ro /dev/vda /root || { echo "bootlens initramfs: cannot mount /dev/vda"; $b sh; }
$b mount --move /dev /root/dev
exec $b switch_root /root /sbin/init
"""


def small_initramfs(tree: Path, version: str) -> bytes:
    """A gzipped newc archive: static busybox, the root's modules (ROOT_MODULES and what
    modules.dep says they need, dependencies first) and SMALL_INIT."""
    moddir = tree / "usr/lib/modules" / version
    deps: dict[str, list[str]] = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
    by_name = {PurePosixPath(m).name.removesuffix(".ko"): m for m in deps}
    order: list[str] = []

    def add(mod: str) -> None:
        if mod not in order:
            for dep in deps.get(mod, []):
                add(dep)
            order.append(mod)

    for name in ROOT_MODULES:
        if name not in by_name:
            raise TargetError(f"kernel {version} has no module {name} (built in? then drop it from ROOT_MODULES)")
        add(by_name[name])
    busybox = (tree / "usr/bin/busybox").read_bytes() if (tree / "usr/bin/busybox").exists() \
        else (tree / "bin/busybox").read_bytes()
    entries: list[tuple[str, int, bytes]] = [(n, 0o040755, b"") for n in ("bin", "dev", "proc", "sys", "root", "lib",
                                                                          "lib/modules")]
    entries += [("bin/busybox", 0o100755, busybox), ("bin/sh", 0o120777, b"busybox"),
                ("init", 0o100755, SMALL_INIT.encode()),
                ("modules", 0o100644, "".join(PurePosixPath(m).name + "\n" for m in order).encode())]
    entries += [(f"lib/modules/{PurePosixPath(m).name}", 0o100644, (moddir / m).read_bytes()) for m in order]
    raw = io.BytesIO()
    for ino, (path, mode, data) in enumerate(entries, 1):
        cpio_entry(raw, ino, path, mode, data)
    cpio_entry(raw, 0, "TRAILER!!!", 0, b"")
    return gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)


def _save_unit_files(tree: Path, out: Path) -> None:
    """The tree's unit files and the configuration they read, as a tar (symlinks kept)."""
    with tarfile.open(out, "w") as tar:
        for rel in ("etc/systemd", "usr/lib/systemd/system", "etc/fstab", "etc/initramfs-tools",
                    "usr/local/bin/app", "usr/local/sbin/bootlens-collect"):
            if (tree / rel).exists():
                tar.add(tree / rel, arcname=rel)


def rootfs_files(d: Path) -> dict[str, bytes]:
    """The unit files and configuration of the set-up image (path without leading /, content);
    regular files only. Empty when the target is not set up."""
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(d / UNITS_TAR) as tar:
            for m in tar.getmembers():
                f = tar.extractfile(m) if m.isfile() and m.name not in TOOLING else None
                if f is not None:
                    out[m.name] = f.read()
    except (OSError, tarfile.TarError):
        return {}
    return out


def rootfs_links(d: Path) -> dict[str, str]:
    """The symlinks among the image's unit files (path -> link target): the ``.wants/``
    directories that enable units and the masks (-> /dev/null). Empty when not set up."""
    try:
        with tarfile.open(d / UNITS_TAR) as tar:
            return {m.name: m.linkname for m in tar.getmembers() if m.issym()}
    except (OSError, tarfile.TarError):
        return {}


# --- overlays ------------------------------------------------------------------------------


def overlay_entries(root: Path) -> list[tuple[str, bytes, int]]:
    """The overlay directory's files and symlinks as (path, content or link target, mode)."""
    if not root.is_dir():
        raise TargetError(f"overlay {root}: not a directory")

    return sorted(overlay_files(root))


# How debugfs reads its -f script (e2fsprogs debugfs/debugfs.c source_file, lib/ss/parse.c and
# execute_cmd.c): a line at a time, through fgets into a BUFSIZ (8192-byte) buffer, so a longer
# line goes on as a second command; a line that starts with "!" is run by the host's shell (as
# root, when bootlens is); a line is split at spaces and tabs, and inside "..." a doubled "" is
# one quote, nothing else is special. So every name and link target is quoted, none may hold a
# control character (a newline would end the line and start a command of its own), and no line
# may reach the buffer's end. A name of the form <N> is an inode number to the commands that
# take a file (sif, cd), so those get absolute paths, which start with "/".
DEBUGFS_LINE_MAX = 8190  # BUFSIZ - 1 for the newline, - 1 for the NUL


def debugfs_quoted(text: str) -> str:
    """``text`` as one argument of a debugfs command: in double quotes, a quote doubled."""
    return '"' + text.replace('"', '""') + '"'


def _debugfs_script(entries: list[tuple[str, bytes, int]], tmp: Path, where: str = "overlay") -> str:
    """debugfs commands laying the entries over the image: parents made, old entries removed,
    files written root-owned with the overlay's permissions, symlinks made. An entry whose path
    leaves the root or whose path or link target holds a control character is refused
    (TargetError naming ``where`` and the entry): it would be a command of its own."""
    q = debugfs_quoted
    lines: list[str] = []
    made: set[PurePosixPath] = set()
    for i, (path, data, mode) in enumerate(entries):
        first = len(lines)
        p = PurePosixPath("/" + path.lstrip("/"))
        target = data.decode("utf-8", "surrogateescape") if st.S_ISLNK(mode) else ""
        name = f"{where}: '{printable(path)}'"
        if ".." in p.parts or not p.name:
            raise TargetError(f"{name}: not a path inside the root filesystem")
        if control_char(path):
            raise TargetError(f"{name}: a control character (newline, NUL, ...) in the name; refused, it would "
                              "reach debugfs as a command of its own")
        if control_char(target):
            raise TargetError(f"{name}: a control character (newline, NUL, ...) in the link target; refused, "
                              "it would reach debugfs as a command of its own")
        for parent in reversed(p.parents[:-1]):
            if parent not in made:  # "already exists" when it does: harmless
                lines += [f"cd {q(str(parent.parent))}", f"mkdir {q(parent.name)}"]
                made.add(parent)
        lines += [f"cd {q(str(p.parent))}", f"rm {q(p.name)}"]
        if st.S_ISLNK(mode):
            lines.append(f"symlink {q(p.name)} {q(target)}")
        else:
            src = tmp / f"f{i}"
            src.write_bytes(data)
            lines += [f"write {q(str(src))} {q(p.name)}",
                      f"sif {q(str(p))} mode 0{st.S_IFREG | (mode & 0o7777 or 0o644):o}",
                      f"sif {q(str(p))} uid 0", f"sif {q(str(p))} gid 0"]
        if any(len(ln.encode("utf-8", "surrogateescape")) > DEBUGFS_LINE_MAX for ln in lines[first:]):
            raise TargetError(f"{name}: path or link target too long for a debugfs command line "
                              f"({DEBUGFS_LINE_MAX} bytes)")
    return "\n".join(lines) + "\n"


# debugfs's messages for the mkdir of a directory that exists and the rm of a file that does not
_HARMLESS = ("directory already exists", "File not found by ext2_lookup", "debugfs 1.")


def overlay_image(tf: TargetFiles, overlay: Path) -> Path:
    """A copy of the target's image with ``overlay`` laid over it, made once per distinct overlay
    (content hash) and kept in the cache with the newest few others."""
    assert tf.rootfs is not None
    entries = overlay_entries(overlay)
    base = tf.rootfs.stat()
    h = hashlib.sha256(f"{base.st_size}:{base.st_mtime_ns}".encode())
    for path, data, mode in entries:
        h.update(f"\0{path}\0{mode}\0{len(data)}\0".encode("utf-8", "surrogateescape") + data)
    cache = tf.rootfs.parent / "overlays"
    cache.mkdir(exist_ok=True)
    image = cache / f"{h.hexdigest()[:20]}.ext4"
    if image.exists():
        os.utime(image)  # newest: kept by the pruning below
        return image
    with tempfile.TemporaryDirectory(dir=cache, prefix="make-") as tmp:
        work = Path(tmp) / "image.ext4"
        _run(["cp", "--sparse=always", "--reflink=auto", str(tf.rootfs), str(work)], "copying the image")
        if entries:
            script = Path(tmp) / "debugfs.cmd"
            # bytes as named (a non-UTF-8 name stays its bytes)
            script.write_bytes(_debugfs_script(entries, Path(tmp), f"overlay {printable(str(overlay))}")
                               .encode("utf-8", "surrogateescape"))
            # debugfs carries on past a failed command and exits 0: its errors are on stderr
            err = _run(["debugfs", "-w", "-f", str(script), str(work)], "debugfs", stderr_only=True)
            bad = [ln for ln in err.splitlines() if ln.strip() and not any(x in ln for x in _HARMLESS)]
            if bad:
                raise TargetError(f"laying {printable(str(overlay))} over the image: debugfs: {printable(bad[0])}")
        os.replace(work, image)
    for old in sorted(cache.glob("*.ext4"), key=lambda p: p.stat().st_mtime, reverse=True)[KEEP_IMAGES:]:
        old.unlink(missing_ok=True)
    return image


# --- collection ----------------------------------------------------------------------------


def collect_disk(path: Path) -> None:
    """An empty (sparse) raw disk for the guest's collector to write its tar onto."""
    with open(path, "wb") as f:
        f.truncate(COLLECT_DISK_SIZE)


def read_collection(disk: Path, dest: Path) -> list[str]:
    """Unpack the tar the guest wrote onto ``disk`` into ``dest``; the names of the files, as
    written inside ``dest``. Its regular files only, each through Python's ``data`` extraction
    filter (:func:`tarfile.data_filter`: a leading / dropped, modes made safe, nothing outside
    ``dest``); a member that would leave ``dest`` refuses the whole collection, before anything is
    written (the tar is what a guest wrote, so untrusted)."""
    try:
        with tarfile.open(disk, "r:") as tar:
            if not tar.getmembers():  # the disk as made: zeros read as an empty tar
                raise tarfile.ReadError("the disk is blank")
            try:
                # normpath: a '..' the filter lets through (it stays inside dest) makes tarfile's
                # own os.makedirs fail (FileExistsError on 'a/..', Python 3.11)
                members = [m.replace(name=posixpath.normpath(m.name), deep=False)
                           for m in (tarfile.data_filter(m, str(dest)) for m in tar.getmembers() if m.isfile())]
            except tarfile.FilterError as e:
                raise TargetError(f"the collection the guest wrote onto its second disk holds an unsafe member, "
                                  f"refused (nothing extracted): {printable(str(e))}") from None
            dest.mkdir(parents=True, exist_ok=True)
            tar.extractall(dest, members=members, filter="data")
    except OSError as e:
        raise TargetError(f"unpacking the guest's collection into {printable(str(dest))}: {printable(str(e))}") \
            from None
    except tarfile.TarError as e:
        raise TargetError(f"the guest wrote no collection onto its second disk ({printable(str(e))}); is "
                          f"bootlens-collect.service in the image and {COLLECT_ARG} on the command line?") from None
    return sorted(m.name for m in members)


def image_sizes(tf: TargetFiles) -> dict[str, int]:
    """Bytes of each file of the target (apparent size; the image is sparse)."""
    out = {tf.kernel.name: tf.kernel.stat().st_size, tf.initramfs.name: tf.initramfs.stat().st_size}
    if tf.rootfs is not None:
        out[tf.rootfs.name] = tf.rootfs.stat().st_size
        out[tf.rootfs.name + " (allocated)"] = tf.rootfs.stat().st_blocks * 512
    return out


__all__ = ["COLLECT_ARG", "ROOT_ARGS", "build", "collect_disk", "files", "image_sizes", "overlay_entries",
           "overlay_image", "read_collection", "rootfs_files", "rootfs_links"]
