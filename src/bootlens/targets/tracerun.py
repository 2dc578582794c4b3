"""Boot-time ftrace on the busybox reference targets: ``bootlens run qemu-arm64 --trace SPEC``.

The stock Debian kernel has no bootconfig (CONFIG_BOOT_CONFIG is not set), so tracing is set up
on the kernel command line (``ftrace=``, ``ftrace_graph_filter=``, ``trace_event=``,
``trace_options=``, ``trace_buf_size=``: :mod:`.trace_plan`). The buffer comes back over the console: an initramfs
overlay replaces ``/bin/poweroff`` with a script that, when the application powers off after
its ready line, stops tracing and ``cat``\\ s ``/sys/kernel/tracing/trace`` between two marker
lines, then powers off. The capture runs on past the ready line to the end marker; the dump is
split out of the recording into ``boot-N.trace.txt`` (the recording keeps every byte), and the
console's framing leaves the lines between the markers out (:func:`drop_dump`), so the trace
is never read as console lines of the boot and the boot's analysis still ends at ready.

Replacing ``poweroff`` rather than the application composes with ``--rootfs-overlay``: an
edited app that prints its ready line and powers off gets its trace dumped too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..capture.trace_dump import DUMP_BEGIN, DUMP_END
from .base import TargetError
from .trace_plan import TracePlan, check_append

if TYPE_CHECKING:
    from .cmdline import KernelCmdline
    from .qemu import TargetFiles


DUMP_SCRIPT = "usr/bin/bootlens-trace-dump"
DUMP = f"""\
#!/bin/sh
# bootlens --trace: dump the boot's ftrace buffer to the console, once.
T=/sys/kernel/tracing
[ -e /tmp/.bootlens-trace-dumped ] && exit 0
: > /tmp/.bootlens-trace-dumped
[ -d /sys/kernel ] || mount -t sysfs sysfs /sys
mount -t tracefs nodev $T 2>/dev/null
echo 0 > $T/tracing_on
# kernel messages printed during the dump would land inside it
echo 1 > /proc/sys/kernel/printk
echo "{DUMP_BEGIN}"
cat $T/trace
echo "{DUMP_END}"
"""
# busybox's shell runs its own applets without looking at /bin (FEATURE_SH_STANDALONE): a
# poweroff script in /bin is only reached by its path, so the app also gets a shell function
# of that name, which ash looks up before any applet
POWEROFF = f"""\
#!/bin/sh
/{DUMP_SCRIPT}
exec /bin/busybox poweroff "$@"
"""
APP_HOOK = f'poweroff() {{ /{DUMP_SCRIPT}; /bin/busybox poweroff "$@"; }}  # bootlens --trace\n'


def check_trace(tf: TargetFiles, plan: TracePlan, cmdline: KernelCmdline) -> None:
    """A traced boot of this target with this kernel command line can be made (else a one-line
    error, before anything is booted or written)."""
    if tf.rootfs is not None:
        raise not_traceable(tf)
    check_append(cmdline)


def not_traceable(tf: TargetFiles) -> TargetError:
    """The error for --trace on a target that boots a root filesystem image (no dump hook there)."""
    return TargetError(f"--trace is for the busybox targets (qemu-arm64, qemu-x86_64), not {tf.spec.name}")


def write_overlay(into: Path, user_overlay: Path | None, app: bytes) -> Path:
    """An overlay directory at ``into``: the user's overlay (copied, links kept), the dump script,
    ``bin/poweroff`` running it first, and the application (the overlay's own, else ``app``)
    with a ``poweroff`` shell function that dumps first. An application that is not a shell
    script dumps only when it runs /bin/poweroff by its path."""
    from .initramfs import copy_overlay, write_executables

    copy_overlay(into, user_overlay)
    files = {DUMP_SCRIPT: DUMP.encode(), "bin/poweroff": POWEROFF.encode()}
    user_app = into / "usr/bin/app"
    # a link is the guest's to resolve, never read on the host (it may name a host file): kept
    # as it is, like an application that is not a script
    if not user_app.is_symlink():
        files["usr/bin/app"] = hooked_app(user_app.read_bytes() if user_app.is_file() else app)
    return write_executables(into, files)


def hooked_app(app: bytes) -> bytes:
    """A shell-script application with the dumping ``poweroff`` function after its #! line."""
    first, nl, rest = app.partition(b"\n")
    if not first.startswith(b"#!") or not first.rstrip().endswith(b"sh"):
        return app
    return first + nl + APP_HOOK.encode() + rest


def end_pattern() -> str:
    """The capture's quit pattern on a traced boot: the end of the dump, not the ready line."""
    return re.escape(DUMP_END)
