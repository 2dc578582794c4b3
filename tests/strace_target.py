"""Build an overlay for qemu-arm64 that runs the reference app under Debian's arm64 strace.

The .debs are fetched the way :func:`bootlens.targets.qemu.setup` fetches busybox (a private apt state
for arm64, ``apt-get download``, ``dpkg-deb -x``) and cached under
``~/.cache/bootlens/strace-arm64/``. strace is a dynamic binary (libc6, libunwind8 and what
libunwind8 needs), so the overlay carries the loader and those libraries too.

The trace goes to /tmp/strace.txt in the guest (``-o``: on the console it would interleave with
the app's own output, the very lines the alignment matches) and is printed between two marker
lines after the app has said ``APP READY``; the capture stops at the end marker.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bootlens.targets.initramfs import APP
from bootlens.targets.qemu import cache_root

PACKAGES = ("strace", "libc6", "libunwind8", "liblzma5", "libgcc-s1")
BEGIN = "=== STRACE BEGIN ==="
END = "=== STRACE END ==="
STRACE_CMD = "strace -f -tt -T -o /tmp/strace.txt"

# the init script that starts the product's app, wrapped in strace (what a user does on a board)
START = f"""\
#!/bin/sh
# start the product's application under strace, then bring the trace out on the console
/usr/bin/{STRACE_CMD} /etc/rc.app
echo "{BEGIN}"
cat /tmp/strace.txt
echo "{END}"
poweroff -f
"""

S90APP = """\
#!/bin/sh
# the init script of the app: a library path with directories that do not exist, a dynamic
# tool's version check (strace is the one dynamic program here), a needless shell in between
export LD_LIBRARY_PATH=/opt/app/lib:/usr/local/lib
/usr/bin/strace -V >/dev/null
sh -c /usr/bin/app
"""

INITTAB = """\
::sysinit:/etc/init.d/rcS
::once:/usr/bin/start-app
::shutdown:/bin/umount -a -r
"""

# the app without its poweroff (start-app powers off once the trace is out)
APP_NO_POWEROFF = APP.replace("poweroff -f\n", "")


def cache_dir() -> Path:
    """~/.cache/bootlens/strace-arm64 (beside the targets' cache)."""
    return cache_root().parent / "strace-arm64"


def fetch_root(packages: tuple[str, ...] = PACKAGES, d: Path | None = None,
               binary: str = "usr/bin/strace") -> Path:
    """The unpacked arm64 packages (cached in ``d``): a directory with ``binary`` and its libraries."""
    d = d or cache_dir()
    root = d / "root"
    if (root / binary).exists():
        return root
    state = d / "apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    apt = ["-o", "APT::Architecture=arm64", "-o", "APT::Architectures=arm64",
           "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}",
           "-o", "Dir::State::Status=/dev/null", "-o", "Debug::NoLocking=1", "-qq"]
    debs = d / "debs"
    debs.mkdir(exist_ok=True)
    download = ["apt-get", *apt, "download", *packages]
    # lists fetched earlier may name versions the mirror has dropped: then update and retry
    if not any((state / "lists").glob("*Packages*")) or \
            subprocess.run(download, capture_output=True, cwd=debs, timeout=600).returncode != 0:
        subprocess.run(["apt-get", *apt, "update"], check=True, capture_output=True, timeout=600)
        subprocess.run(download, check=True, capture_output=True, cwd=debs, timeout=600)
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True, capture_output=True)
        if root.exists():
            shutil.rmtree(root)
        shutil.move(tmp, root)
        (root).chmod(0o755)
    return root


def build_overlay(dest: Path) -> Path:
    """An overlay directory (for ``target.boot(overlay=...)``) with strace, its libraries, the
    loader, and the wrapped start of the app."""
    root = fetch_root()
    for sub in ("usr/bin", "etc/init.d", "lib"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "usr" / "bin" / "strace", dest / "usr" / "bin" / "strace")
    copy_libraries(root, dest)
    for path, text in (("usr/bin/start-app", START), ("etc/rc.app", S90APP), ("etc/inittab", INITTAB),
                       ("usr/bin/app", APP_NO_POWEROFF)):
        p = dest / path
        p.write_text(text)
        p.chmod(0o755 if not path.startswith("etc/inittab") else 0o644)
    return dest


def copy_libraries(root: Path, dest: Path) -> None:
    """The unpacked packages' shared libraries and the loader into the overlay ``dest``."""
    (dest / "lib").mkdir(parents=True, exist_ok=True)
    # libraries: Debian 12's packages put them in /lib/aarch64-linux-gnu (libc6) and
    # /usr/lib/aarch64-linux-gnu (libunwind8); both into /lib/aarch64-linux-gnu, a default
    # directory of the loader. No ld.so.cache: the loader walks its default paths (a real storm).
    out = dest / "lib" / "aarch64-linux-gnu"
    out.mkdir(parents=True, exist_ok=True)
    for libdir in (root / "lib" / "aarch64-linux-gnu", root / "usr" / "lib" / "aarch64-linux-gnu"):
        for so in sorted(libdir.iterdir()) if libdir.is_dir() else []:
            if ".so" not in so.name or (out / so.name).exists() or (out / so.name).is_symlink():
                continue
            if so.is_symlink():
                (out / so.name).symlink_to(so.readlink())
            elif so.is_file():
                shutil.copy(so, out / so.name)
    if not (out / "ld-linux-aarch64.so.1").exists():
        raise RuntimeError("no arm64 loader in libc6")
    (dest / "lib" / "ld-linux-aarch64.so.1").symlink_to("aarch64-linux-gnu/ld-linux-aarch64.so.1")


def boot_traced(out: str, timeout_s: float = 90.0) -> str:
    """Boot qemu-arm64 once with the overlay; the capture ``out`` runs until the end marker.
    Returns the console text."""
    from bootlens.capture.recording import read_recording, to_grabserial
    from bootlens.targets.qemu import boot, setup

    tf = setup("qemu-arm64", log=False)
    with tempfile.TemporaryDirectory(prefix="bootlens-strace-") as tmp:
        boot(tf, out, timeout_s=timeout_s, overlay=build_overlay(Path(tmp) / "overlay"), ready=END)
    return to_grabserial(read_recording(out)).decode("utf-8", "replace")


_GRAB = re.compile(r"^\[\d+\.\d+ \d+\.\d+\] ")


def split_console(text: str) -> tuple[str, str]:
    """(console without the trace, the trace) from a grabserial-framed console that printed the
    trace between the markers; the trace lines lose the time prefix and the serial line's CR."""
    lines = text.splitlines(keepends=True)
    bare = [_GRAB.sub("", ln).strip() for ln in lines]
    begin = next(i for i, ln in enumerate(bare) if ln == BEGIN)
    end = next((i for i, ln in enumerate(bare) if i > begin and ln == END), len(lines))
    trace = "".join(_GRAB.sub("", ln).rstrip("\r\n") + "\n" for ln in lines[begin + 1:end])
    return "".join(lines[:begin] + lines[end + 1:]), trace


if __name__ == "__main__":  # fetch the packages ahead of the slow test
    print(fetch_root())
