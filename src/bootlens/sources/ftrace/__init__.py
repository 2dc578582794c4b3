"""Side format: ftrace buffers (function_graph, function, trace events), their KFT table, and a
buffer dumped beside a recording.

This module is the format's light part: its declaration (``FORMAT``), its sniff,
:func:`sniff_ftrace`, and the line patterns the sniff shares with the reader (:mod:`.reader`
imports them from here). Every input of ``bootlens analyze`` is sniffed, so a plain console log
must not pay for importing the reader (its dataclasses, patterns and the native scan's glue)
only to learn it is no trace.
"""

from __future__ import annotations

import re

from ...core.lazyre import lazy
from ..base import REGISTRY, Head, SideFormat

# an event line: comm-pid [(tgid)] [cpu] [flags] ts: message (comm may hold spaces and dashes)
_EVENT = lazy(r"\s*(.*?)-(\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(\d+)\]\s+(?:([^\s:]{3,6})\s+)?(\d+)\.(\d+):\s+(.*)",
                    re.ASCII)
_NAME = lazy(r"(\w+): ?(.*)", re.ASCII)
_TRACER = lazy(r"#\s*tracer:\s*(\S+)", re.ASCII)
# for sniffing only (the scan itself is native): a graph line's cpu column and body
_GRAPH_SNIFF = lazy(r"\s*(?:\d+\.\d+\s*\|\s*)?\d+\)\s.*(?:\(\)\s*[{;]|\}(?:\s*/\*.*\*/)?)\s*$", re.ASCII)
_DAT_MAGIC = "\x17\x08Dtracing"


def _cpu_column(head: str) -> bool:
    """Whether the text holds an event line's cpu column, ``[`` ASCII digits ``]`` (a printk
    time's ``[    0.000049]`` or a CPU id's ``[0x411fd070]`` is not one)."""
    n = len(head)
    i = head.find("[")
    while i >= 0:
        j = i + 1
        while j < n and "0" <= head[j] <= "9":
            j += 1
        if j > i + 1 and head[j:j + 1] == "]":
            return True
        i = head.find("[", j)
    return False


def sniff_ftrace(head: str) -> bool:
    """Whether the first kilobytes of a file are an ftrace buffer (or a trace-cmd .dat)."""
    if head.startswith(_DAT_MAGIC):
        return True
    # What each pattern cannot match without, looked for in the whole head first: a console log
    # has none of them, and its sniff then compiles none of the patterns (0.4 ms of start-up)
    may_tracer = "tracer:" in head
    may_event = _cpu_column(head)
    may_graph = "()" in head or "}" in head  # a call's "() {" or "();", or a closing "}"
    if not (may_tracer or may_event or may_graph):
        return False
    events = graphs = 0
    for line in head.splitlines()[:200]:
        if may_tracer and _TRACER.match(line):
            return True
        if may_event and _EVENT.match(line) and _NAME.match(_EVENT.match(line)[7]):  # type: ignore[index]
            events += 1
        elif may_graph and _GRAPH_SNIFF.match(line):
            graphs += 1
        if events >= 3 or graphs >= 5:
            return True
    return False


def _sniff(path: str, head: Head) -> str | None:
    return "ftrace" if sniff_ftrace(head.text) else None


FORMAT = REGISTRY.register(SideFormat("ftrace", sniff_order=50, attach_order=50, sniff=_sniff))
