"""What each input of ``analyze``, ``report`` or ``compare`` is, told by its content (never by
its name): a log (or recording, or run folder), a boot-data file, or a supplement that adds to a
boot (:mod:`bootlens.sources.supplements`: systemd-analyze outputs, a bootchart, an ftrace buffer, an
strace, a logic analyzer capture).

Apart from :mod:`bootlens.sources.supplements` for start-up: every log is asked, and the answer for a
plain console log needs only each format's light sniff (``parsers/<format>_sniff.py``), not the
readers nor the supplement model.
"""

from __future__ import annotations

import os

# only the sniffs here: a log is sniffed by all of them, and the readers are imported when an
# input is of their kind (start-up: importing them all cost ~60 ms here, a slow 2-core machine)
from .bootchart.sniff import sniff_bootchart
from .bootdata.sniff import sniff_bootdata
from .ftrace.sniff import sniff_ftrace
from .logic.sniff import sniff_logic
from .strace.sniff import sniff_strace
from .systemd_analyze.sniff import detect

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/architecture.md step 23)
if TYPE_CHECKING:  # os.path for a log, pathlib only for a folder (start-up: ~8 ms to import)
    from pathlib import Path

SYSTEMD_ANALYZE = ("time", "blame", "critical-chain", "dump", "plot")
HEAD_BYTES = 8192  # enough for detect(): it looks at the first lines (an SVG's first 200 kB for a plot)
PLOT_HEAD = 200_000


# ----------------------------------------------------------------------------------- detection

def _head(path: str | Path, n: int) -> str:
    with open(path, "rb") as f:
        return f.read(n).decode("utf-8", "replace")


def classify(name: str) -> str | None:
    """What an input is when it is not a boot log: "bootchart", "bootdata", a systemd-analyze
    command ("time", "blame", "critical-chain", "dump", "plot") or "collection" (a folder of
    systemd-analyze outputs, as ``target boot --collect`` writes); None for a log, a recording,
    a run folder or anything unreadable (the log reader reports that)."""
    if name == "-":
        return None
    try:
        if os.path.isdir(name):
            from pathlib import Path

            p = Path(name)
            if sniff_bootchart(p):
                return "bootchart"
            return "collection" if collection_files(p) and not _has_boots(p) else None
        if not os.path.isfile(name):
            return None
        if sniff_bootchart(name):
            return "bootchart"
        head = _head(name, HEAD_BYTES)
        if sniff_bootdata(head):
            return "bootdata"
        if head.startswith("bootlens-recording"):  # a recording is a log whatever it holds
            return None
        if sniff_logic(head):
            return "logic"
        if sniff_strace(head):
            return "strace"
        if sniff_ftrace(head):
            return "ftrace"
        if "<svg" in head:
            head = _head(name, PLOT_HEAD)
        return detect(head)
    except OSError:
        return None


def _has_boots(folder: Path) -> bool:
    """A run folder (boot-N.rec, *.log) is read as boots, not as a collection."""
    return any(q.suffix in (".rec", ".log") for q in folder.iterdir())


def collection_files(folder: Path) -> list[tuple[str, Path]]:
    """The systemd-analyze outputs in a folder, (command, path) by file name; ``target boot
    --collect`` names them analyze-time.txt, analyze-blame.txt, analyze-critical-chain.txt,
    analyze-critical-chain-app.txt, analyze-dump.txt, analyze-plot.svg. Journals and other files
    in the folder are left alone: they are logs, given as inputs of their own."""
    out: list[tuple[str, Path]] = []
    try:
        files = sorted(q for q in folder.iterdir() if q.is_file())
    except OSError:
        return out
    for q in files:
        if q.suffix not in (".txt", ".svg", ".json") or q.name.startswith("journal"):
            continue
        try:
            head = _head(q, PLOT_HEAD if q.suffix == ".svg" else HEAD_BYTES)
        except OSError:
            continue
        what = detect(head)
        if what is not None:
            out.append((what, q))
    # the default target's chain before one asked for a unit ("critical-chain app.service")
    out.sort(key=lambda wq: (SYSTEMD_ANALYZE.index(wq[0]), len(wq[1].name), wq[1].name))
    return out
