"""One fuzz input through everything bootlens does with a log.

:func:`check` is the whole harness: the bytes are read as a file (``analyze_paths``, so the
recording reader sees the inputs that look like recordings) and as a buffer (``frame_bytes``),
framed in every native framing; the analysis is advised (every rule) and rendered by every
renderer (terminal, JSON, HTML, SVG, Perfetto, the advisor's listing and JSON).

Anything but a clean result or a :class:`~bootlens.core.errors.BootlensError` (a one-line error for
unusable input) raises: a crash (a panic in the native core surfaces as an exception too).
``fuzz/run.py`` drives this with atheris; tests/test_fuzz.py replays the
seed corpus and every input a run ever crashed on (``fuzz/crashes/``).
"""

from __future__ import annotations

import atexit
import io
import os
import tempfile
import zlib
from pathlib import Path

import orjson
from rich.console import Console

from bootlens.read import reader as L
from bootlens.core import lines as LC
from bootlens.advise.context import context_for_group
from bootlens.advise.summary import advise_group
from bootlens.timeline.analyze import Analysis, analyze_paths
from bootlens.core.errors import BootlensError
from bootlens.timeline.inputs import Group
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.parsers.initcall import NATIVE_TYPES, NEEDLES
from bootlens.capture.recording import is_recording
from bootlens.render.advise_json import write_advise_json
from bootlens.render.advise_terminal import render_advise, warning_lines
from bootlens.render.html import render_html
from bootlens.render.jsonout import render_json
from bootlens.render.perfetto import render_perfetto
from bootlens.render.svg import render_svg
from bootlens.render.terminal import render_terminal

ROOT = Path(__file__).resolve().parents[1]
# A marker, so the marker parser and the "ready" paths of stages and rules run too.
OPTIONS = ParseOptions((MarkerSpec.parse("ready=APP READY"),))
FRAMINGS = ("plain", "journalctl", "grabserial-t")
# JSON writers must only ever see numbers a JSON reader takes back (orjson: 64-bit integers).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def seeds() -> list[Path]:
    """The seed corpus: every test input of the repository (logs and recordings)."""
    found = [p for p in sorted((ROOT / "tests" / "data").rglob("*")) if p.is_file() and p.suffix in (".log", ".rec")]
    return found + sorted((ROOT / "tests" / "golden").glob("*/*.log"))


def regressions() -> list[Path]:
    """Every input a fuzz run crashed on, kept as a regression test (fuzz/crashes/)."""
    return sorted(p for p in (ROOT / "fuzz" / "crashes").glob("*") if p.is_file() and not p.name.startswith("."))


def _analyze(path: str) -> Analysis | None:
    try:
        return analyze_paths([path], OPTIONS, 10)
    except BootlensError:
        return None  # unusable input: a one-line error, not a crash


def _render_deep(a: Analysis, path: str, baud: int | None, terminal: bool) -> None:
    """The report renderers and the advisor over one analysis (the JSON document is the caller's).
    ``terminal``: the two terminal listings too (rich's layout costs 4x everything else)."""
    out = io.StringIO()
    if terminal:
        render_terminal(a, Console(file=out, width=100, highlight=False, color_system=None), 10)
    group = Group(path, a, False)
    render_html([group])
    render_svg([group])
    orjson.loads(render_perfetto([group]))
    ctx = context_for_group(group, baud)
    advice = [advise_group(group, ctx)]
    for w in advice[0].warnings:  # advise_group's last resort must never be needed
        if w.text.startswith("rule ") and ("failed on this boot" in w.text or "out of range" in w.text):
            raise AssertionError(w.text)
    buf = io.BytesIO()
    write_advise_json(advice, ["x"], buf)
    orjson.loads(buf.getvalue())
    warning_lines(advice)
    if terminal:
        render_advise(advice, Console(file=out, width=100, highlight=False, color_system=None))


def _frame_all(data: bytes) -> None:
    """Every native framing and the initcall scan over the cleaned bytes, whatever the sniff says;
    the index must hold only lines that have the keyword."""
    native = LC.native_module()
    text, _ = L.clean_text(data)
    for framing in FRAMINGS:
        lines = L.frame_text(text, framing, L.INDEX_NEEDLES, L.INDEX_PREFIXES)
        for needle in L.INDEX_NEEDLES:
            if any(needle not in lines.text[i] for i in lines.grep(needle)):
                raise AssertionError(f"index {needle!r} names a line without it ({framing})")
        native.initcall_events(lines.text, lines.grep(*NEEDLES), lines.kernel, lines.host, lines.first,
                               NATIVE_TYPES)


def _ints_in_range(obj: object) -> None:
    """Every integer of a JSON document within what JSON readers take (orjson would refuse)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)
        elif isinstance(o, int) and not isinstance(o, bool) and not INT_MIN <= o <= INT_MAX:
            raise AssertionError(f"integer out of range in JSON: {o}")


def check(data: bytes, recordings: bool = True, deep_every: int = 1, terminal_every: int = 1) -> None:
    """Run one input through everything; raises on a crash.

    Every input is framed (every native framing), analysed and written as JSON. One input in
    ``deep_every`` also goes through the report renderers and the advisor; one in
    ``terminal_every`` through the terminal listings too. Which inputs is decided by the input's hash, so a crash reproduces
    from the input alone. ``recordings=False`` skips inputs that look like a recording.
    """
    if not recordings and is_recording(data[:512]):
        return
    h = zlib.crc32(data)
    deep = deep_every <= 1 or h % deep_every == 0
    terminal = deep and (terminal_every <= 1 or (h >> 8) % terminal_every == 0)
    try:
        L.frame_bytes("<fuzz>", data, OPTIONS.needles())
    except BootlensError:
        pass
    _frame_all(data)
    path = str(_scratch())
    with open(path, "wb") as f:
        f.write(data)
    baud = 115200 if len(data) % 2 else None  # the console rules with and without a line rate
    a = _analyze(path)
    if a is None:
        return
    doc = render_json(a)
    parsed = orjson.loads(doc)  # what we wrote reads back
    _ints_in_range(parsed)
    if not deep:
        return
    _render_deep(a, path, baud, terminal)


_SCRATCH: list[Path] = []


def cleanup() -> None:
    """Remove the scratch file (for callers that leave with os._exit)."""
    if _SCRATCH:
        _SCRATCH[0].unlink(missing_ok=True)


def _scratch() -> Path:
    """One file per process that every input is written to (a temp file per input costs more
    than the analysis of a small one); removed at exit."""
    if not _SCRATCH:
        fd, name = tempfile.mkstemp(prefix="bootlens-fuzz-", suffix=".log")
        os.close(fd)
        _SCRATCH.append(Path(name))
        atexit.register(cleanup)
    return _SCRATCH[0]
