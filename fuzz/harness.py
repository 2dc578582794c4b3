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
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import orjson
from rich.console import Console

from bootlens.read import reader as L
from bootlens._native import native_module
from bootlens.advise.context import context_for_group
from bootlens.advise.summary import advise_group, input_advice
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
GOLDEN = ROOT / "tests" / "golden"
# A marker, so the marker parser and the "ready" paths of stages and rules run too.
OPTIONS = ParseOptions((MarkerSpec.parse("ready=APP READY"),))
FRAMINGS = ("plain", "journalctl", "grabserial-t")
# JSON writers must only ever see numbers a JSON reader takes back (orjson: 64-bit integers).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def seeds() -> list[Path]:
    """The seed corpus: every test input of the repository (logs and recordings), LAVA's job logs,
    and the small synthetic logs of fuzz/seeds/ (formats whose real logs are third-party only)."""
    found = [p for p in sorted((ROOT / "tests" / "data").rglob("*")) if p.is_file() and p.suffix in (".log", ".rec")]
    return (found + sorted(GOLDEN.glob("*/*.log")) + sorted(GOLDEN.glob("lava/*.yaml"))
            + sorted((ROOT / "fuzz" / "seeds").glob("*.log")))


def regressions(target: str = "log") -> list[Path]:
    """Every input a fuzz run of ``target`` crashed on, kept as a regression test (fuzz/crashes/:
    ``crash-HASH`` for the log harness, ``crash-TARGET-HASH`` for the others)."""
    return sorted(p for p in (ROOT / "fuzz" / "crashes").glob("*") if p.is_file() and not p.name.startswith(".")
                  and target_of(p) == target)


def target_of(crash: Path) -> str:
    """The harness a saved crash input belongs to (its file name: crash-TARGET-HASH or crash-HASH)."""
    parts = crash.name.split("-")
    return parts[1] if len(parts) == 3 and parts[1] in TARGETS else "log"


def _analyze(path: str) -> Analysis | None:
    try:
        return analyze_paths([path], OPTIONS, 10)
    except BootlensError:
        return None  # unusable input: a one-line error, not a crash


def _render_deep(a: Analysis, path: str, baud: int | None, terminal: bool, group: Group | None = None) -> None:
    """The report renderers and the advisor over one analysis (the JSON document is the caller's).
    ``terminal``: the two terminal listings too (rich's layout costs 4x everything else)."""
    out = io.StringIO()
    if terminal:
        render_terminal(a, Console(file=out, width=100, highlight=False, color_system=None), 10)
    group = group or Group(path, a, False)
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
    shown = [input_advice(advice[0])]  # what the CLI lists (advise_streams' form of a whole group)
    warning_lines(shown)
    if terminal:
        render_advise(shown, Console(file=out, width=100, highlight=False, color_system=None))


def _frame_all(data: bytes) -> None:
    """Every native framing and the initcall scan over the cleaned bytes, whatever the sniff says;
    the index must hold only lines that have the keyword."""
    from bootlens.timeline.boots import index_keywords

    native = native_module()
    text, _ = L.clean_text(data)
    needles, prefixes = index_keywords(OPTIONS)  # what analyze indexes: every parser's keywords
    for framing in FRAMINGS:
        lines = L.frame_text(text, framing, needles, prefixes)
        for needle in needles:
            if any(needle not in lines.text[i] for i in lines.grep(needle)):
                raise AssertionError(f"index {needle!r} names a line without it ({framing})")
        block, *_ = native.initcall_block(lines.text, lines.grep(*NEEDLES), lines.kernel, lines.host, lines.first,
                                          NATIVE_TYPES)
        list(block)  # every row built as an Event


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
    from bootlens.timeline.boots import index_keywords

    if not recordings and is_recording(data[:512]):
        return
    h = zlib.crc32(data)
    deep = deep_every <= 1 or h % deep_every == 0
    terminal = deep and (terminal_every <= 1 or (h >> 8) % terminal_every == 0)
    try:
        L.frame_bytes("<fuzz>", data, *index_keywords(OPTIONS))
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


# --- side files: the formats that add to a boot or stand alone (issue 29) ----------------------

# a real boot (the reference target's console, an excerpt) that side files attach to
CONSOLE = GOLDEN / "systemd" / "reference-debian12-console-grabserial.log"
# bootchart's members, in the order a fuzz input holds them (SEP between them): bootchartd's tar
BOOTCHART = ("header", "proc_stat.log", "proc_ps.log", "proc_diskstats.log")
SEP = b"\n\0\0\n"


def side_seeds(folder: str) -> Callable[[], list[Path]]:
    """The seeds of one side format: tests/golden/FOLDER's inputs (their expected JSON and
    READMEs left out; a format's folder of files, as strace -ff writes, too)."""
    def found() -> list[Path]:
        return [p for p in sorted((GOLDEN / folder).rglob("*")) if p.is_file()
                and not p.name.endswith((".json", ".md", ".c"))]
    return found


def check_side(data: bytes, recordings: bool = True, deep_every: int = 1, terminal_every: int = 1,
               path: str | None = None) -> None:
    """One input as a side file, classified by its content as ``analyze`` does: alone (the boot
    its format makes of it) and given with a real console log (attached to that boot); the JSON
    document of each, and one in ``deep_every`` through the reports and the advisor."""
    from bootlens.timeline.inputs import analyze_inputs

    if path is None:
        if not recordings and is_recording(data[:512]):
            return
        path = str(_scratch())
        with open(path, "wb") as f:
            f.write(data)
    h = zlib.crc32(data)
    deep = deep_every <= 1 or h % deep_every == 0
    terminal = deep and (terminal_every <= 1 or (h >> 8) % terminal_every == 0)
    baud = 115200 if len(data) % 2 else None
    for inputs in ([path], [str(CONSOLE), path]):
        try:
            groups = analyze_inputs(inputs, OPTIONS, 10)
        except BootlensError:
            continue  # unusable input: a one-line error, not a crash
        for g in groups:
            _ints_in_range(orjson.loads(render_json(g.analysis)))
            if deep:
                _render_deep(g.analysis, g.name, baud, terminal, g)


def bootchart_tar(data: bytes) -> bytes:
    """The fuzz input as bootchartd's archive: its parts (split at SEP) as the members of
    BOOTCHART, in a gzip'd tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for name, part in zip(BOOTCHART, data.split(SEP)):
            info = tarfile.TarInfo(name)
            info.size = len(part)
            tar.addfile(info, io.BytesIO(part))
    return buf.getvalue()


def bootchart_seeds() -> list[Path]:
    """The golden bootchart's members joined as check_bootchart reads them (written to the
    working corpus by fuzz/run.py: the seed is made, not a file of the repository)."""
    folder = GOLDEN / "bootchart" / "ubuntu-8.10"
    out = Path(tempfile.gettempdir()) / "bootlens-fuzz-bootchart-seed"
    out.write_bytes(SEP.join((folder / n).read_bytes() for n in BOOTCHART))
    return [out]


def check_bootchart(data: bytes, recordings: bool = True, deep_every: int = 1, terminal_every: int = 1) -> None:
    """The input made a bootchart archive (:func:`bootchart_tar`), through :func:`check_side`."""
    path = str(_scratch(".tgz"))
    with open(path, "wb") as f:
        f.write(bootchart_tar(data))
    check_side(data, recordings, deep_every, terminal_every, path)


class Target(NamedTuple):
    """One harness: what runs an input, and its seeds."""

    check: Callable[..., None]
    seeds: Callable[[], list[Path]]


# fuzz/run.py --target NAME: the console logs (every framing and parser, the journals, LAVA,
# logcat, EDK2), and each side format by its own seeds
TARGETS: dict[str, Target] = {
    "log": Target(check, seeds),
    "systemd_analyze": Target(check_side, side_seeds("systemd_analyze")),
    "bootdata": Target(check_side, side_seeds("bootdata")),
    "ftrace": Target(check_side, side_seeds("ftrace")),
    "strace": Target(check_side, side_seeds("strace")),
    "logic": Target(check_side, side_seeds("logic")),
    "bootchart": Target(check_bootchart, bootchart_seeds),
}


def replay(path: Path) -> None:
    """A saved input through the harness it was found by."""
    TARGETS[target_of(path)].check(path.read_bytes()[: 1 << 16])


_SCRATCH: dict[str, Path] = {}


def cleanup() -> None:
    """Remove the scratch files (for callers that leave with os._exit)."""
    for p in _SCRATCH.values():
        p.unlink(missing_ok=True)


def _scratch(suffix: str = ".log") -> Path:
    """One file per process (and suffix) that every input is written to (a temp file per input
    costs more than the analysis of a small one); removed at exit. Formats are told by content,
    never by the suffix."""
    if suffix not in _SCRATCH:
        fd, name = tempfile.mkstemp(prefix="bootlens-fuzz-", suffix=suffix)
        os.close(fd)
        if not _SCRATCH:
            atexit.register(cleanup)
        _SCRATCH[suffix] = Path(name)
    return _SCRATCH[suffix]
