"""``bootlens advise --json``: the versioned contract in docs/json.md ("bootlens advise --json").

Savings are seconds; ``null`` means no estimate (the finding's ``arithmetic`` says why), never
zero. Fields may be added; renaming or dropping one raises SCHEMA_VERSION.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, BinaryIO

import orjson

from .. import __version__
from ..advise.base import Change, Context, Finding
from ..advise.summary import AdviceStream, BootAdvice, GroupAdvice, InputAdvice, MergedFinding
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
        **({"kconfig": list(c.kconfig)} if c.kconfig else {}),
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


def _doc(rules: Sequence[str], inputs: list[Any]) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": KIND, "generator": f"bootlens {__version__}",
            "rules": list(rules), "inputs": inputs}


def _input_dict(name: str, folder: bool, ctx: Context, boots: Any, ia: InputAdvice | None) -> dict[str, Any]:
    return {
        "name": name,
        "folder": folder,
        "context": {"target": ctx.target, "baud": ctx.baud, "rootfs_files": sorted(ctx.rootfs_files)},
        "boots": boots,
        "merged": [merged_dict(m) for m in ia.merged] if ia is not None and ia.merged else None,
        "warnings": [{"text": w.text, "boots": w.boots} for w in ia.warnings] if ia is not None else [],
    }


def _boot_dict(ba: BootAdvice) -> dict[str, Any]:
    b = ba.boot.boot
    return {"source": b.source, "index": b.index, "first_line": b.first_line, "last_line": b.last_line,
            "findings": [finding_dict(f) for f in ba.findings]}


def advise_json_obj(groups: Sequence[GroupAdvice], rules: Sequence[str]) -> dict[str, Any]:
    """The whole advice as a JSON-ready dict."""
    from ..advise.summary import input_advice

    return _doc(rules, [_input_dict(ga.group.name, ga.group.folder, ga.context, [_boot_dict(ba) for ba in ga.boots],
                                    input_advice(ga)) for ga in groups])


def write_advise_json(groups: Sequence[GroupAdvice], rules: Sequence[str], out: BinaryIO) -> None:
    """Write the JSON document (small: built whole, serialised by orjson)."""
    out.write(orjson.dumps(advise_json_obj(groups, rules), option=orjson.OPT_INDENT_2))
    out.write(b"\n")


def _dumps(obj: Any, indent: int) -> bytes:
    """``obj`` as orjson writes it as an item ``indent`` spaces deep in an indented document."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n" + b" " * indent)


def write_advise_json_stream(streams: Sequence[AdviceStream], rules: Sequence[str], out: BinaryIO
                             ) -> list[InputAdvice]:
    """:func:`write_advise_json` of inputs whose boots are advised as they are written, each boot
    serialised alone (a log of a million boots is written in the memory of one: issue 29), in
    the bytes the document built whole has. Returns each input's advice (its warnings, counted)."""
    mark = b'"@@boots@@"'
    head = _dumps(_doc(rules, [b"@@inputs@@".decode()]), 0)
    at = head.index(b'"@@inputs@@"')
    out.write(head[:at])
    done = []
    for si, st in enumerate(streams):
        if si:
            out.write(b",\n    ")
        front = _dumps(_input_dict(st.name, st.folder, st.context, "@@boots@@", None), 4)
        out.write(front[:front.index(mark)])
        n = 0
        for ba in st.boots():
            out.write(b"[\n        " if not n else b",\n        ")
            out.write(_dumps(_boot_dict(ba), 8))
            n += 1
        out.write(b"\n      ]" if n else b"[]")
        ia = st.result()
        done.append(ia)
        back = _dumps(_input_dict(st.name, st.folder, st.context, "@@boots@@", ia), 4)
        out.write(back[back.index(mark) + len(mark):])
    out.write(head[at + len(b'"@@inputs@@"'):])
    out.write(b"\n")
    return done
