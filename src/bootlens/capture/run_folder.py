"""A run folder: the recordings of repeated boots (``boot-N.rec``) and ``run.json``, which says
how the folder was made (the markers it was captured with, the target, the options). This is
the one writer and the one reader of ``run.json``."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import printable
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


def run_options(folder: Path, markers: tuple[MarkerSpec, ...] = ()) -> ParseOptions:
    """How to read a run folder's boots (:func:`read_run_options` without its problems)."""
    return read_run_options(folder, markers)[0]


def read_run_options(folder: Path, markers: tuple[MarkerSpec, ...] = ()) -> tuple[ParseOptions, tuple[str, ...]]:
    """How to read a run folder's boots: its markers (``markers``, the user's, win when given), on
    the guest's clocks when it was booted in the deterministic mode (run.json ``"clock": "guest"``);
    and what is wrong in its run.json, one line each naming the file and the key (for a warning:
    what is wrong is not used, the rest is). A folder without run.json (logs) has no problem."""
    import orjson

    where = printable(str(folder / RUN_META))
    problems: list[str] = []
    meta: Any = {}
    try:
        meta = orjson.loads((folder / RUN_META).read_bytes())
    except FileNotFoundError:
        pass
    except OSError as e:
        problems.append(f"{where}: cannot read ({e.strerror or e}): its markers and clock are not used")
    except orjson.JSONDecodeError as e:
        problems.append(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}): its markers and clock "
                        "are not used")
    if not isinstance(meta, dict):
        problems.append(f"{where}: not a JSON object: its markers and clock are not used")
        meta = {}
    found: list[MarkerSpec] = []
    table = meta.get("markers", {})
    if not isinstance(table, dict):
        problems.append(f"{where}: markers: expected an object of NAME: REGEX; not used")
        table = {}
    for name, rx in table.items():
        try:
            if not isinstance(rx, str):
                raise ValueError(f"expected a pattern (text), got {type(rx).__name__}")
            found.append(MarkerSpec.of(name, rx))
        except ValueError as e:
            problems.append(f"{where}: markers.{printable(name)}: {e}; this marker is not used")
    if markers:  # the user's win, and what is wrong with run.json's is not theirs to hear
        problems = [p for p in problems if f"{where}: markers" not in p]
    return ParseOptions(markers or tuple(found), guest_clock=meta.get("clock") == "guest"), tuple(problems)


def folder_files(folder: Path) -> list[Path]:
    """The boots of a run folder, in boot order: ``boot-N.rec``, else every ``*.rec``/``*.log``."""
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses
    recs = [p for p in folder.glob("boot-*.rec") if p.stem[5:].isascii() and p.stem[5:].isdigit()]
    if recs:
        return sorted(recs, key=lambda p: int(p.stem[5:]))
    return sorted(p for p in folder.iterdir() if p.suffix in (".rec", ".log") and p.is_file())
