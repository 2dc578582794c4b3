"""What an ftrace buffer looks like: :func:`sniff_ftrace`, and the line patterns it shares with
the reader in :mod:`bootlens.parsers.ftrace` (which imports them from here).

Split from the reader for start-up: every input of ``bootlens analyze`` is sniffed, so a plain
console log would otherwise pay for importing the reader (its dataclasses, patterns and the
native scan's glue) only to learn it is no trace.
"""

from __future__ import annotations

import re

from ..lazyre import lazy

# an event line: comm-pid [(tgid)] [cpu] [flags] ts: message (comm may hold spaces and dashes)
_EVENT = lazy(r"\s*(.*?)-(\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(\d+)\]\s+(?:([^\s:]{3,6})\s+)?(\d+)\.(\d+):\s+(.*)",
                    re.ASCII)
_NAME = lazy(r"(\w+): ?(.*)", re.ASCII)
_TRACER = lazy(r"#\s*tracer:\s*(\S+)", re.ASCII)
# for sniffing only (the scan itself is native): a graph line's cpu column and body
_GRAPH_SNIFF = lazy(r"\s*(?:\d+\.\d+\s*\|\s*)?\d+\)\s.*(?:\(\)\s*[{;]|\}(?:\s*/\*.*\*/)?)\s*$", re.ASCII)
_DAT_MAGIC = "\x17\x08Dtracing"


def sniff_ftrace(head: str) -> bool:
    """Whether the first kilobytes of a file are an ftrace buffer (or a trace-cmd .dat)."""
    if head.startswith(_DAT_MAGIC):
        return True
    events = graphs = 0
    for line in head.splitlines()[:200]:
        if _TRACER.match(line):
            return True
        if _EVENT.match(line) and _NAME.match(_EVENT.match(line)[7]):  # type: ignore[index]
            events += 1
        elif _GRAPH_SNIFF.match(line):
            graphs += 1
        if events >= 3 or graphs >= 5:
            return True
    return False
