"""What ``report`` and ``compare`` take as INPUT: a log, a recording, or a run folder.

Each input becomes a :class:`Group`: the boots it holds, analysed. A run folder (written by
``bootlens run``) is one group of repeated boots; its ``run.json`` remembers the markers the
run was captured with, so a later ``report`` or ``compare`` measures to the same ready line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from .analyze import Analysis, analyze_paths
from .errors import InputError
from .parsers import MarkerSpec, ParseOptions

RUN_META = "run.json"


@dataclass(frozen=True, slots=True)
class Group:
    """One INPUT: a single log or recording, or a folder of repeated boots."""

    name: str  # the input as the user gave it
    analysis: Analysis
    folder: bool  # True for a run folder (repeated boots of one configuration)


def write_run_meta(folder: Path, markers: Sequence[MarkerSpec], **extra: object) -> None:
    """Record how a run folder was made (markers, target, options) in ``run.json``."""
    meta = {"markers": {m.name: m.pattern.pattern for m in markers}, **extra}
    (folder / RUN_META).write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")


def run_markers(folder: Path) -> tuple[MarkerSpec, ...]:
    """The markers a run folder was captured with (empty when it has no readable run.json)."""
    try:
        meta = orjson.loads((folder / RUN_META).read_bytes())
        return tuple(MarkerSpec.parse(f"{k}={v}") for k, v in dict(meta.get("markers", {})).items())
    except (OSError, orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return ()


def folder_files(folder: Path) -> list[Path]:
    """The boots of a run folder, in boot order: ``boot-N.rec``, else every ``*.rec``/``*.log``."""
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses
    recs = [p for p in folder.glob("boot-*.rec") if p.stem[5:].isascii() and p.stem[5:].isdigit()]
    if recs:
        return sorted(recs, key=lambda p: int(p.stem[5:]))
    return sorted(p for p in folder.iterdir() if p.suffix in (".rec", ".log") and p.is_file())


def analyze_folder(folder: Path, options: ParseOptions | None = None, top: int = 10) -> Analysis:
    """Analyse every boot of a run folder; markers given by the user win over run.json's."""
    files = folder_files(folder)
    if not files:
        raise InputError(str(folder), "no recordings (boot-N.rec) or logs in this folder")
    opts = options if options is not None and options.markers else ParseOptions(run_markers(folder))
    return analyze_paths([str(p) for p in files], opts, top)


def analyze_inputs(inputs: Sequence[str], options: ParseOptions | None = None, top: int = 10) -> list[Group]:
    """One group per input, in the order given."""
    groups = []
    for name in inputs:
        p = Path(name)
        if name != "-" and p.is_dir():
            groups.append(Group(name, analyze_folder(p, options, top), True))
        else:
            groups.append(Group(name, analyze_paths([name], options, top), False))
    return groups
