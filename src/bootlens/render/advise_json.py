"""``bootlens advise --json``: the versioned contract in docs/json.md ("bootlens advise --json").

Savings are seconds; ``null`` means no estimate (the finding's ``arithmetic`` says why), never
zero. Fields may be added; renaming or dropping one raises SCHEMA_VERSION.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, BinaryIO

import orjson

from .. import __version__
from ..advise.base import Change, Finding
from ..advise.summary import GroupAdvice, MergedFinding
from ..stats.figures import Stat

SCHEMA_VERSION = 1
KIND = "advise"


def _s(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def change_dict(c: Change) -> dict[str, Any]:
    """A change: what to do, and whether bootlens can do it on a target it controls."""
    return {
        "kind": c.kind.value,
        "value": c.value,
        "description": c.description,
        "automatic": c.automatic,
        "files": [{"path": p, "mode": mode, "content": data.decode("utf-8", "replace")} for p, data, mode in c.files],
    }


def finding_dict(f: Finding) -> dict[str, Any]:
    """One finding of one boot."""
    return {
        "rule": f.rule,
        "title": f.title,
        "stage": f.stage,
        "saving_s": _s(f.saving_ns),
        "confidence": f.confidence.value,
        "arithmetic": f.arithmetic,
        "tradeoff": f.tradeoff,
        "change": change_dict(f.change),
        "evidence": [{"line": e.line_no, "text": e.text} for e in f.evidence],
    }


def _stat(s: Stat | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"n": s.n, "median_s": s.median / 1e9, "min_s": s.min / 1e9, "max_s": s.max / 1e9}


def merged_dict(m: MergedFinding) -> dict[str, Any]:
    """One finding over a run folder's boots."""
    return {**finding_dict(m.finding), "boot": m.boot, "seen": m.seen, "boots": m.boots, "saving": _stat(m.saving),
            "seen_boots": list(m.seen_boots)}


def advise_json_obj(groups: Sequence[GroupAdvice], rules: Sequence[str]) -> dict[str, Any]:
    """The whole advice as a JSON-ready dict."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "generator": f"bootlens {__version__}",
        "rules": list(rules),
        "inputs": [{
            "name": ga.group.name,
            "folder": ga.group.folder,
            "context": {"target": ga.context.target, "baud": ga.context.baud,
                        "rootfs_files": sorted(ga.context.rootfs_files)},
            "boots": [{"source": ba.boot.boot.source, "index": ba.boot.boot.index,
                       "first_line": ba.boot.boot.first_line, "last_line": ba.boot.boot.last_line,
                       "findings": [finding_dict(f) for f in ba.findings]} for ba in ga.boots],
            "merged": [merged_dict(m) for m in ga.merged] if ga.merged else None,
            "warnings": [{"text": w.text, "boots": w.boots} for w in ga.warnings],
        } for ga in groups],
    }


def write_advise_json(groups: Sequence[GroupAdvice], rules: Sequence[str], out: BinaryIO) -> None:
    """Write the JSON document (small: built whole, serialised by orjson)."""
    out.write(orjson.dumps(advise_json_obj(groups, rules), option=orjson.OPT_INDENT_2))
    out.write(b"\n")
