"""Side format: systemd-analyze's outputs (time, blame, critical-chain, dump, plot) and the units'
ordering.

This module is the format's light part: its declaration (``FORMAT``), its sniff (:func:`detect`)
and the few patterns the sniff shares with the readers (:mod:`.reader` imports them from here).
Every input of ``bootlens analyze`` is sniffed, so a plain console log must not pay for
importing the readers' eleven dataclasses and their patterns (~15-25 ms on the reference
machine) only to learn it is none of them.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...core.lazyre import lazy
from ..base import HEAD_BYTES, REGISTRY, Head, SideFormat, read_head

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:  # pathlib only for a folder (start-up: ~8 ms to import)
    from pathlib import Path

SYSTEMD_ANALYZE = ("time", "blame", "critical-chain", "dump", "plot")
# a boot made of these outputs alone (attach.alone_boot): its split_reason and its one format
ALONE = "systemd-analyze outputs alone"
PLOT_HEAD = 200_000  # a plot's SVG names its generator late: detect() looks this far

# a systemd format_timespan() ("1min 2.345s"); the units are systemd_analyze._UNIT_NS's
_SPAN = r"(?:\d+(?:\.\d+)?\s*(?:month|min|ms|us|μs|µs|ns|y|w|d|h|s)\s*)+"
_ANSI = lazy(r"\x1b\[[0-?]*[ -/]*[@-~]")
_BLAME = lazy(r"^\s*(" + _SPAN + r")(\S+)\s*$")
_CHAIN_HEADER = ("The time when unit became active", "The time after the unit is active",
                 "The time the unit took to start", "The time the unit takes to start",
                 "The time when unit", "The time after the unit", "The time the unit")


# a journal line of a user manager (systemd --user, "systemd[1653]: Startup finished in 2.734s."):
# it times a login session's manager, not a boot; the system manager is "systemd[1]:"
_USER_MANAGER = lazy(r"(?:.*\s)?systemd\[(?!1\])\d+\]: ")


def user_manager(line: str) -> bool:
    """True for a journal line a user manager (``systemd[N]``, N not 1) logged."""
    return "systemd[" in line and _USER_MANAGER.match(line) is not None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without colour escapes or the line end)."""
    for no, raw in enumerate(text.splitlines(), 1):
        yield no, _ANSI.sub("", raw) if "\x1b" in raw else raw


def detect(text: str) -> str | None:
    """Which systemd-analyze output this text is: "time", "blame", "critical-chain", "dump",
    "plot" (SVG or JSON), or None. Looks at the first lines only."""
    head = text[:4096]
    if "<svg" in head and ("systemd-analyze" in head or 'class="box"' in text[:200_000]):
        return "plot"
    if head.lstrip().startswith("[") and '"activating"' in head:
        return "plot"
    first = [ln for _, ln in _lines(head) if ln.strip()][:8]
    # a running manager's dump opens with its own lines (Manager:, Features:, a dozen
    # Timestamp ...:) before the first unit: the reference target's systemd 252 has it at line 13
    if any(ln.lstrip().startswith("-> Unit ") for ln in first) or (first and first[0].startswith("Manager: systemd ")):
        return "dump"
    if any(ln.lstrip().startswith(_CHAIN_HEADER) for ln in first):
        return "critical-chain"
    if any(("Startup finished in " in ln and not user_manager(ln)) or "Bootup is not yet finished" in ln
           for ln in first):
        return "time"
    # a blame line starts with a time: lines that do not start with a digit are not tried (nor
    # is the pattern compiled, for the plain log every input is asked about: start-up)
    timed = [ln for ln in first if ln.lstrip()[:1].isdigit()]
    if timed and sum(1 for ln in timed if _BLAME.match(ln)) >= max(1, len(first) - 1):
        return "blame"
    return None


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
            head = read_head(q, PLOT_HEAD if q.suffix == ".svg" else HEAD_BYTES)
        except OSError:
            continue
        what = detect(head)
        if what is not None:
            out.append((what, q))
    # the default target's chain before one asked for a unit ("critical-chain app.service")
    out.sort(key=lambda wq: (SYSTEMD_ANALYZE.index(wq[0]), len(wq[1].name), wq[1].name))
    return out


def _sniff(path: str, head: Head) -> str | None:
    return detect(read_head(path, PLOT_HEAD) if "<svg" in head.text else head.text)


def _sniff_dir(path: str) -> str | None:
    """A folder of its outputs (``target boot --collect``), unless it is a run folder of boots."""
    from pathlib import Path

    
    p = Path(path)
    return "collection" if collection_files(p) and not any(q.suffix in (".rec", ".log") for q in p.iterdir()) else None


# its parts join first: a dump names the console's units before anything else reads them
FORMAT = REGISTRY.register(SideFormat("systemd_analyze", sniff_order=60, attach_order=10, sniff=_sniff, sniff_dir=_sniff_dir,
                                      kinds=(*SYSTEMD_ANALYZE, "collection"), accumulates=("critical-chain",)))
