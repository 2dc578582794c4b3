"""Build an overlay for qemu-arm64 that records the reference app's start with Debian's arm64
``trace-cmd`` and brings the ``.dat`` file back over the console, byte-exact.

The .debs are fetched and unpacked the way tests/strace_target.py does it (a private apt state
for arm64, ``apt-get download``, ``dpkg-deb -x``; its helpers are reused), cached under
``~/.cache/bootlens/trace-cmd-arm64/``. trace-cmd is dynamic (libtracefs1, libtraceevent1,
libzstd1, libc6), so the overlay carries those libraries and the loader.

In the guest, ``trace-cmd record`` runs the app with scheduler, interrupt and block events and a
function_graph of ``do_sys_openat2`` (3 levels): the app's shell, ``cat`` and their opens. The
.dat (file version 7, zstd: the kallsyms it carries shrink about 4x) goes to /tmp, and once the
app has said ``APP READY`` it is printed base64-encoded (busybox's ``base64`` applet) between
two marker lines; the capture stops at the end marker and :func:`split_console` decodes it.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from pathlib import Path

from strace_target import APP_NO_POWEROFF, INITTAB, _GRAB, copy_libraries, fetch_root

from bootlens.targets.qemu import cache_root

PACKAGES = ("trace-cmd", "libtracefs1", "libtraceevent1", "libzstd1", "libc6")
BEGIN = "=== TRACE.DAT BEGIN ==="
END = "=== TRACE.DAT END ==="
GRAPH_FUNCTION = "do_sys_openat2"
RECORD_CMD = ("trace-cmd record -q -e sched -e irq -e block -p function_graph "
              f"-g {GRAPH_FUNCTION} --max-graph-depth 3 --file-version 7 --compression zstd "
              "-o /tmp/trace.dat")

# the init step that starts the product's app under trace-cmd, then brings the .dat out
START = f"""\
#!/bin/sh
# start the product's application under trace-cmd record, then bring the .dat out on the console
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
/usr/bin/{RECORD_CMD} /usr/bin/app
# kernel messages printed during the dump would land inside it
echo 1 > /proc/sys/kernel/printk
echo "{BEGIN}"
/bin/busybox base64 /tmp/trace.dat
echo "{END}"
poweroff -f
"""


def cache_dir() -> Path:
    """~/.cache/bootlens/trace-cmd-arm64 (beside the targets' cache)."""
    return cache_root().parent / "trace-cmd-arm64"


def fetch() -> Path:
    """The unpacked arm64 packages (cached): a directory with usr/bin/trace-cmd and its libraries."""
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    return fetch_root(PACKAGES, d, "usr/bin/trace-cmd")


def build_overlay(dest: Path) -> Path:
    """An overlay directory (for ``target.boot(overlay=...)``) with trace-cmd, its libraries,
    the loader, and the recorded start of the app."""
    root = fetch()
    for sub in ("usr/bin", "etc"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "usr" / "bin" / "trace-cmd", dest / "usr" / "bin" / "trace-cmd")
    copy_libraries(root, dest)
    for path, text in (("usr/bin/start-app", START), ("etc/inittab", INITTAB), ("usr/bin/app", APP_NO_POWEROFF)):
        p = dest / path
        p.write_text(text)
        p.chmod(0o644 if path == "etc/inittab" else 0o755)
    return dest


def boot_recorded(out: str, timeout_s: float = 100.0) -> str:
    """Boot qemu-arm64 once with the overlay; the capture ``out`` runs until the end marker.
    Returns the console text (grabserial-framed)."""
    from bootlens.capture.recording import read_recording, to_grabserial
    from bootlens.targets.qemu import boot, setup

    tf = setup("qemu-arm64", log=False)
    with tempfile.TemporaryDirectory(prefix="bootlens-tracecmd-") as tmp:
        boot(tf, out, timeout_s=timeout_s, overlay=build_overlay(Path(tmp) / "overlay"), ready=END)
    return to_grabserial(read_recording(out)).decode("utf-8", "replace")


def split_console(text: str) -> tuple[str, bytes]:
    """(console without the dump, the .dat's bytes) from a grabserial-framed console that printed
    the base64 between the markers. Raises ValueError when the dump is missing or cut short
    (base64 of a truncated dump does not decode, or decodes to fewer bytes than trace-cmd wrote)."""
    lines = text.splitlines(keepends=True)
    bare = [_GRAB.sub("", ln).strip() for ln in lines]
    begin = bare.index(BEGIN)
    end = bare.index(END, begin + 1)
    data = base64.b64decode("".join(bare[begin + 1:end]), validate=True)
    return "".join(lines[:begin] + lines[end + 1:]), data


if __name__ == "__main__":  # fetch the packages ahead of the slow test
    print(fetch())
