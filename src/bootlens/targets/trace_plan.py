"""What ``--trace SPEC`` asks for (:class:`TracePlan`, :func:`parse_trace`): the boot-time ftrace of a
busybox reference target, set up on the kernel command line (the stock Debian kernel has no
bootconfig). A value a configuration carries to its target (BootConfig.trace); how the traced
boot is run and its buffer brought back is :mod:`.tracerun`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.errors import UsageError

if TYPE_CHECKING:
    from .cmdline import KernelCmdline

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
