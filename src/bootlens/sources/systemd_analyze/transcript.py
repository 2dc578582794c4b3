"""systemd-analyze outputs inside a shell transcript: what people paste when they ran
``systemd-analyze time`` and ``blame`` over SSH or at a prompt, or what a test harness logs for
each board it reboots (``COMMAND: systemd-analyze time``, the output below it; ``[root@host ~]#
systemd-analyze blame | head -n 5``).

Read only where a log holds no boot (:func:`bootlens.timeline.analyze.analyze_paths`): a console
log in which someone typed the command keeps its boot. An output starts on the line after its
command's echo and runs while its lines read as that output (``time``: its ``Startup finished``
and ``reached after`` lines; ``blame``: its rows); a prompt, a harness message or a blank line
ends it. The outputs of one board are one boot: a second output of a command the current boot
already has starts the next (three boards each giving ``time`` then ``blame`` are three boots).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ...core.lazyre import lazy
from . import _BLAME

# the command as echoed after any prompt ("$ ", "# ", "[root@acer BootCode]# ", "COMMAND: "); no
# subcommand is systemd-analyze's default, time. Options before it ("--no-pager") are skipped.
_ECHO = lazy(r"(?:.*[\s$#>:])?systemd-analyze(?:\s+--?[\w-]+(?:=\S+)?)*(?:\s+(time|blame)\b|\s*$|\s*\|)(.*)$")
_TIME_LINES = ("Startup finished in ", "reached after ", "Bootup is not yet finished")
# a pipe that keeps part of blame's rows ("| head -n 5", "| sed 10q"): the rows are the slowest only
_CUT = ("head", "sed", "awk 'NR", "tail", "grep")


class Output(NamedTuple):
    """One command's output in the transcript: indices [start, end) of its lines."""

    kind: str  # "time" or "blame"
    echo: int  # index of the command's echo
    start: int
    end: int
    cut: str  # the pipe after the command that keeps part of the output ("head -n 5"), or ""


def outputs(texts: Sequence[str]) -> list[Output]:
    """Every ``systemd-analyze time`` / ``blame`` output after its command's echo, in order."""
    found: list[Output] = []
    n = len(texts)
    for i in range(n):
        t = texts[i]
        if "systemd-analyze" not in t or (m := _ECHO.match(t)) is None:
            continue
        kind = m[1] or "time"
        pipe = m[2].strip().lstrip("|").strip()
        cut = pipe.split("|")[0].strip() if pipe.startswith(_CUT) else ""
        j = i + 1
        if kind == "time":
            while j < n and any(x in texts[j] for x in _TIME_LINES):
                j += 1
        else:
            while j < n and texts[j][:1] != "" and texts[j].lstrip()[:1].isdigit() and _BLAME.match(texts[j]):
                j += 1
        if j > i + 1:
            found.append(Output(kind, i, i + 1, j, cut))
    return found


def boards(found: Sequence[Output]) -> list[list[Output]]:
    """The outputs grouped one boot each: a command seen again starts the next boot."""
    groups: list[list[Output]] = []
    for o in found:
        if not groups or any(p.kind == o.kind for p in groups[-1]):
            groups.append([])
        groups[-1].append(o)
    return groups


def text_of(texts: Sequence[str], o: Output) -> str:
    """The output's lines as its reader takes them, preceded by as many empty lines as come before
    it in the file: the line numbers the reader gives are the file's."""
    return "\n" * o.start + "\n".join(texts[o.start:o.end]) + "\n"
