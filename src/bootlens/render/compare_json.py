"""``bootlens compare --json``: the versioned contract in docs/json.md ("bootlens compare --json").

Times are seconds; ``null`` means not measured (or, for a name, not seen on that side). Fields
may be added; renaming or dropping one raises SCHEMA_VERSION.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import orjson

from .. import __version__
from ..stats.compare import ALPHA, FLOOR_NS, FLOOR_REL, HORIZON, MIN_BOOTS, RULE, Comparison, Delta, InputSummary, NameDeltas
from ..stats.figures import CI_TARGET, Stat

SCHEMA_VERSION = 1
KIND = "compare"
SIGNIFICANCE_RULE: dict[str, Any] = {
    "min_boots": MIN_BOOTS, "text": RULE,
    "test": "t-test: Student's (pooled) with as many boots a side, else Welch's; two-sided",
    "alpha": ALPHA, "floor_s": FLOOR_NS / 1e9, "floor_pct": 100 * FLOOR_REL, "horizon_boots": HORIZON,
    "per_name_adjustment": "benjamini-hochberg",
    "tick": "never significant when |delta| is at most the coarser clock tick of the two sides (tick_s); a tick "
            "of 1 ms or more counts tick^2/6 of variance a side at least",
    "median_ci": f"order-statistic interval of the median, the narrowest at {CI_TARGET:.0%} or more; "
                 "with fewer than 6 boots (min, max) at its own level",
}


def _s(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def stat_dict(s: Stat | None) -> dict[str, Any] | None:
    """One quantity over one input's boots."""
    if s is None:
        return None
    return {"n": s.n, "median_s": s.median / 1e9, "min_s": s.min / 1e9, "max_s": s.max / 1e9,
            "stdev_s": s.stdev / 1e9, "spread_s": s.range_ns / 1e9, "mean_s": s.mean / 1e9,
            "median_ci_s": None if s.n < 2 else [s.ci_low / 1e9, s.ci_high / 1e9],
            "median_ci_level": None if s.n < 2 else round(s.ci_level, 6),
            "tick_s": s.tick_ns / 1e9}


def verdict_dict(d: Delta) -> dict[str, Any]:
    """The difference and its verdict."""
    return {
        "change": d.change.value,
        "delta_s": _s(d.delta_ns),
        "delta_pct": None if d.delta_pct is None else round(d.delta_pct, 3),
        "spread_s": _s(d.threshold_ns),
        "significance": d.significance.value,
        "reason": d.reason,
        "p_value": d.p_value,
        "test": d.test,
        "floor_s": _s(d.floor_ns),
        "need_boots": d.need_boots,
        "tick_s": _s(d.tick_ns),
    }


def delta_dict(d: Delta, counts: bool = False) -> dict[str, Any]:
    """One name (initcall, process, probe), baseline against one other input."""
    out: dict[str, Any] = {"name": d.name, "baseline": stat_dict(d.baseline), "other": stat_dict(d.other),
                           **verdict_dict(d)}
    if counts:
        out["baseline_count"] = d.baseline_count
        out["other_count"] = d.other_count
    return out


def _names(nd: NameDeltas) -> dict[str, Any]:
    return {
        "names": nd.names, "added": nd.added, "removed": nd.removed, "significant": nd.significant,
        "more_significant": nd.more_significant,
        "note": nd.note, "rows": [delta_dict(d, counts=nd.kind == "processes") for d in nd.rows],
    }


def _input(s: InputSummary, baseline: bool) -> dict[str, Any]:
    return {"label": s.label, "name": s.name, "folder": s.folder, "boots": s.boots, "partial_boots": s.partial,
            "baseline": baseline}


def compare_json_obj(c: Comparison) -> dict[str, Any]:
    """The whole comparison as a JSON-ready dict."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "generator": f"bootlens {__version__}",
        "significance_rule": SIGNIFICANCE_RULE,
        "top": c.top,
        "inputs": [_input(s, i == 0) for i, s in enumerate(c.inputs)],
        "figures": [
            {"name": f.name.strip(), "sub_stage": f.name.startswith("  "),
             "stats": [stat_dict(s) for s in f.stats],
             "deltas": [{"input": i + 1, "label": c.inputs[i + 1].label, **verdict_dict(d)}
                        for i, d in enumerate(f.deltas)]}
            for f in c.figures
        ],
        "comparisons": [
            {"input": p.other, "label": c.inputs[p.other].label, "initcalls": _names(p.initcalls),
             "processes": _names(p.processes), "probes": _names(p.probes), "units": _names(p.units)}
            for p in c.pairs
        ],
    }


def write_compare_json(c: Comparison, out: BinaryIO) -> None:
    """Write the JSON document (a few kilobytes: built whole, serialised by orjson)."""
    out.write(orjson.dumps(compare_json_obj(c), option=orjson.OPT_INDENT_2))
    out.write(b"\n")
