"""Boot-time ftrace on the busybox reference targets: ``bootlens run qemu-arm64 --trace SPEC``.

The stock Debian kernel has no bootconfig (CONFIG_BOOT_CONFIG is not set), so tracing is set up
on the kernel command line (``ftrace=``, ``ftrace_graph_filter=``, ``trace_event=``,
``trace_options=``, ``trace_buf_size=``). The buffer comes back over the console: an initramfs
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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from .base import TargetError
from ..capture.trace_dump import DUMP_BEGIN, DUMP_END

if TYPE_CHECKING:
    from .cmdline import KernelCmdline
    from .qemu import TargetFiles


DEFAULT_FILTER = "do_one_initcall"  # one graph per initcall: what a KFT table per initcall needs
DEFAULT_DEPTH = 3  # measured: ~20k lines, ~0.8-1.5 MB of text for the reference target's 848 initcalls
DEFAULT_BUF = "8M"  # per CPU; with nooverwrite a full buffer drops the end of the boot, not its start
# funcgraph-abstime puts every line on the printk clock (trace_clock local = printk's local_clock),
# -proc tells initcalls run by modprobe from pid 1's, -tail names the function a "}" closes, so
# a block whose start was lost still says what it closes; nooverwrite keeps the earliest events.
GRAPH_OPTIONS = ("nooverwrite", "funcgraph-abstime", "funcgraph-proc", "funcgraph-tail")
TRACERS = ("function_graph", "function")
EVENTS = {"initcall": "initcall:*", "sched": "sched:*"}
# what --trace writes on the kernel command line: --append may not set them too (the last wins)
OWN_PARAMS = ("ftrace", "ftrace_filter", "ftrace_graph_filter", "ftrace_graph_max_depth", "trace_event",
              "trace_options", "trace_buf_size")

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


@dataclass(frozen=True, slots=True)
class TracePlan:
    """What ``--trace SPEC`` asks for, and the kernel arguments that set it up."""

    spec: str
    tracer: str | None  # "function_graph", "function" or None (events only)
    filters: tuple[str, ...]  # graph roots (function_graph) or traced functions (function)
    events: tuple[str, ...]  # trace_event= items, e.g. "initcall:*"
    depth: int  # ftrace_graph_max_depth (0: no limit); function_graph only
    buf: str  # trace_buf_size, per CPU

    @property
    def kernel_args(self) -> str:
        """The kernel command line arguments of this plan."""
        args: list[str] = []
        options = ["nooverwrite"]
        if self.tracer == "function_graph":
            options = list(GRAPH_OPTIONS)
            args += ["ftrace=function_graph", f"ftrace_graph_filter={','.join(self.filters)}"]
            if self.depth:
                args.append(f"ftrace_graph_max_depth={self.depth}")
        elif self.tracer == "function":
            args.append("ftrace=function")
            if self.filters:
                args.append(f"ftrace_filter={','.join(self.filters)}")
        if self.events:
            args.append(f"trace_event={','.join(self.events)}")
        args += [f"trace_options={','.join(options)}", f"trace_buf_size={self.buf}"]
        return " ".join(args)


_BUF = re.compile(r"[1-9][0-9]*[KMG]?")
_FUNC = re.compile(r"[A-Za-z_.*?][A-Za-z0-9_.*?\[\]:]*")  # a kernel symbol, or an ftrace glob


def parse_trace(spec: str) -> TracePlan:
    """``SPEC``: comma-separated items ``function_graph[=FUNC]``, ``function[=FUNC]``, ``initcall``
    (trace_event=initcall:*), ``sched`` (trace_event=sched:*), ``depth=N`` (graph depth, 0: no
    limit; default 3) and ``buf=SIZE`` (buffer per CPU, e.g. 16M; default 8M). A word that is none
    of these adds a function to the filter before it: ``function_graph=do_one_initcall,vfs_read``.
    ``function_graph`` alone graphs under ``do_one_initcall``; ``function`` alone traces every
    function (the buffer keeps the earliest; it fills early)."""
    tracer: str | None = None
    filters: list[str] = []
    events: list[str] = []
    depth, buf = DEFAULT_DEPTH, DEFAULT_BUF
    last: str | None = None  # the item a bare function name continues
    items = [i.strip() for i in spec.split(",")]
    if not spec.strip() or any(not i for i in items):
        raise UsageError(f"--trace {spec!r}: empty item; e.g. --trace function_graph=do_one_initcall,initcall")
    for item in items:
        key, sep, value = item.partition("=")
        if key in TRACERS:
            if tracer is not None:
                raise UsageError(f"--trace {spec!r}: one tracer at a time ({tracer} and {key}); the kernel "
                                 "takes a single ftrace=")
            tracer, last = key, key
            if sep:
                filters.append(_function(spec, value))
        elif key in EVENTS and not sep:
            if EVENTS[key] not in events:
                events.append(EVENTS[key])
            last = None
        elif key == "depth" and sep:
            if not value.isascii() or not value.isdigit():
                raise UsageError(f"--trace {spec!r}: depth={value!r} is not a number (0: no limit)")
            depth = int(value)
        elif key == "buf" and sep:
            if not _BUF.fullmatch(value):
                raise UsageError(f"--trace {spec!r}: buf={value!r}: a size like 1408K, 8M or 1G")
            buf = value
        elif not sep and last is not None:
            filters.append(_function(spec, item))
        else:
            raise UsageError(f"--trace {spec!r}: unknown item {item!r}; known: function_graph[=FUNC], "
                             "function[=FUNC], initcall, sched, depth=N, buf=SIZE")
    if tracer is None and not events:
        raise UsageError(f"--trace {spec!r}: nothing to trace")
    if tracer == "function_graph" and not filters:
        filters.append(DEFAULT_FILTER)
    return TracePlan(spec, tracer, tuple(filters), tuple(events), depth if tracer == "function_graph" else 0, buf)


def _function(spec: str, name: str) -> str:
    if not _FUNC.fullmatch(name):
        raise UsageError(f"--trace {spec!r}: {name!r} is not a kernel function name or glob")
    return name


def check_append(cmdline: KernelCmdline) -> None:
    """The target's, the user's and the configuration's kernel arguments may not set what
    --trace sets: the kernel keeps the last of each, silently."""
    for name in cmdline.names():
        if name in OWN_PARAMS:
            raise UsageError(f"the kernel arguments set {name}=, which --trace sets: put it in --trace "
                             "(e.g. depth=N, buf=SIZE) or drop --trace")


def check_trace(tf: TargetFiles, plan: TracePlan, cmdline: KernelCmdline) -> None:
    """A traced boot of this target with this kernel command line can be made (else a one-line
    error, before anything is booted or written)."""
    if tf.rootfs is not None:
        raise TargetError(f"--trace is for the busybox targets (qemu-arm64, qemu-x86_64), not {tf.spec.name}")
    check_append(cmdline)


def write_overlay(into: Path, user_overlay: Path | None, app: bytes) -> Path:
    """An overlay directory at ``into``: the user's overlay (copied, links kept), the dump script,
    ``bin/poweroff`` running it first, and the application (the overlay's own, else ``app``)
    with a ``poweroff`` shell function that dumps first. An application that is not a shell
    script dumps only when it runs /bin/poweroff by its path."""
    import shutil

    if user_overlay is not None:
        if not user_overlay.is_dir():
                raise TargetError(f"--rootfs-overlay {user_overlay}: not a directory")
        shutil.copytree(user_overlay, into, symlinks=True, dirs_exist_ok=True)
    for rel, text in ((DUMP_SCRIPT, DUMP.encode()), ("bin/poweroff", POWEROFF.encode()),
                      ("usr/bin/app", hooked_app(_read(into / "usr/bin/app") or app))):
        path = into / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_bytes(text)
        path.chmod(0o755)
    return into


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def hooked_app(app: bytes) -> bytes:
    """A shell-script application with the dumping ``poweroff`` function after its #! line."""
    first, nl, rest = app.partition(b"\n")
    if not first.startswith(b"#!") or not first.rstrip().endswith(b"sh"):
        return app
    return first + nl + APP_HOOK.encode() + rest


def end_pattern() -> str:
    """The capture's quit pattern on a traced boot: the end of the dump, not the ready line."""
    return re.escape(DUMP_END)
