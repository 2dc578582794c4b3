"""``bootlens analyze --critical-chain``: the chain to ready in systemd-analyze's tree form,
extended below systemd (the kernel, the bootloader, power-on) and above the default target (the
application and its ready marker); and the same as JSON."""

from __future__ import annotations

from typing import Any

from ..timeline.analyze import BootAnalysis
from ..timeline.chain import AFTER, ESTIMATE, Chain, Link
from ..core.lines import clip
from ..core.units import duration
from .visible import visible

HEADER = ("The time when unit became active or started is printed after the \"@\" character "
          "(seconds since {origin}; a stage: when it ended).",
          "The time the unit took to start is printed after the \"+\" character.")


def _s(ns: int | None) -> str:
    return duration(ns, {"s": 3}, none="?", sep="")


def _at(lk: Link) -> int | None:
    """systemd-analyze's "@": when a unit with a start job started, else when it became active."""
    if lk.at_ns is not None and lk.kind == "unit" and lk.duration_ns:
        return lk.at_ns - lk.duration_ns
    return lk.at_ns


def chain_lines(b: BootAnalysis, chain: Chain, width: int = 80) -> list[str]:
    """The tree, top (ready) first, each level indented by two as systemd-analyze does; a line
    wider than ``width`` is cut at the end."""
    origin = chain.links[-1].name if chain.links else "the start"
    out = [h.format(origin=origin) for h in HEADER]
    out.append(f"Dependencies: {chain.source}")
    out.extend(f"note: {n}" for n in chain.notes)
    out.append("")
    for depth, lk in enumerate(chain.links):
        lead = "" if depth == 0 else "  " * (depth - 1) + "└─"
        name = lk.name
        if lk.kind == "marker" and lk.line_no is not None:
            text = b.boot.lines.text[b.boot.lines.index_of(lk.line_no)].strip()
            name = f"ready \"{text}\""
        at = "" if lk.at_ns is None else f" @{_s(_at(lk))}"
        plus = f" +{_s(lk.duration_ns)}" if lk.duration_ns else ""
        where = f" (line {lk.line_no})" if lk.line_no is not None and lk.kind != "unit" else ""
        guess = " ~" if lk.how == ESTIMATE else ""
        line = visible(f"{lead}{name}{at}{plus}{where}{guess}")
        out.append(clip(line, width))
    if chain.estimated:
        out.append("")
        out.append("~ an estimate: the unit that became active last before this one started "
                   "(no dependencies known)")
    return out


def chain_dict(b: BootAnalysis, chain: Chain) -> dict[str, Any]:
    """One boot's chain as JSON: links top (ready) first, times in seconds on the boot's axis."""
    return {
        "source": b.boot.source, "boot": b.boot.index + 1, "dependencies": chain.source,
        "estimated": chain.estimated, "notes": list(chain.notes),
        "links": [{"name": lk.name, "kind": lk.kind, "at_s": None if lk.at_ns is None else lk.at_ns / 1e9,
                   "start_s": None if (a := _at(lk)) is None else a / 1e9,
                   "duration_s": None if lk.duration_ns is None else lk.duration_ns / 1e9, "line": lk.line_no,
                   "found_by": {AFTER: "after", ESTIMATE: "estimate"}.get(lk.how, "stage")}
                  for lk in chain.links],
    }
