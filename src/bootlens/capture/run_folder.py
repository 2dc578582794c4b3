"""A run folder: the recordings of repeated boots (``boot-N.rec``) and ``run.json``, which says
how the folder was made (the markers it was captured with, the target, the options). This is
the one writer and the one reader of ``run.json``."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.options import MarkerSpec, ParseOptions

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:  # pathlib is imported where a folder is read (start-up: ~8 ms to import)
    from pathlib import Path
    from typing import Any

RUN_META = "run.json"


def write_run_meta(folder: Path, markers: Sequence[MarkerSpec], **extra: object) -> None:
    """Record how a run folder was made (markers, target, options) in ``run.json``."""
    import orjson  # here, not at import: analyze of a log never pays for it (jsonbytes)

    meta = {"markers": {m.name: m.pattern.pattern for m in markers}, **extra}
    (folder / RUN_META).write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")


def read_run_meta(folder: Path) -> dict[str, object]:
    """A run folder's ``run.json`` as a dict (empty when it holds no JSON object); OSError when
    it cannot be read, ValueError when it is not JSON."""
    import orjson

    meta = orjson.loads((folder / RUN_META).read_bytes())
    return dict(meta) if isinstance(meta, dict) else {}


def run_markers(folder: Path) -> tuple[MarkerSpec, ...]:
    """The markers a run folder was captured with (empty when it has no readable run.json)."""
    try:
        meta: Any = read_run_meta(folder)  # any JSON: what is not a map of markers is no marker
        return tuple(MarkerSpec.parse(f"{k}={v}") for k, v in dict(meta.get("markers", {})).items())
    except (OSError, AttributeError, TypeError, ValueError):
        return ()


def run_options(folder: Path, markers: tuple[MarkerSpec, ...] = ()) -> ParseOptions:
    """How to read a run folder's boots: its markers (``markers``, the user's, win when given), on
    the guest's clocks when it was booted in the deterministic mode (run.json ``"clock": "guest"``)."""
    try:
        guest = read_run_meta(folder).get("clock") == "guest"
    except (OSError, ValueError):
        guest = False
    return ParseOptions(markers or run_markers(folder), guest_clock=guest)


def folder_files(folder: Path) -> list[Path]:
    """The boots of a run folder, in boot order: ``boot-N.rec``, else every ``*.rec``/``*.log``."""
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses
    recs = [p for p in folder.glob("boot-*.rec") if p.stem[5:].isascii() and p.stem[5:].isdigit()]
    if recs:
        return sorted(recs, key=lambda p: int(p.stem[5:]))
    return sorted(p for p in folder.iterdir() if p.suffix in (".rec", ".log") and p.is_file())
