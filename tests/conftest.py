"""Shared test helpers. Golden files are regenerated with ``pytest --update-golden``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bootlens.advise import RuleRegistry, advise
from bootlens.advise.base import Context, Finding, Rule
from bootlens.timeline.analyze import analyze_paths
from bootlens.core.model import Event, ParseResult, Stamp
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.read.reader import keywords
from bootlens.timeline.boots import index_keywords

ROOT = Path(__file__).parent
CORPUS = ROOT / "data" / "corpus"
GOLDEN = ROOT / "golden"
# Real logs of real boards (../shared/corpus/wild, beside the checkout; CI has it there). They
# are read in place, never copied into the project. Without it the tests skip, except in CI,
# where a missing corpus must fail.
WILD = ROOT.resolve().parents[1] / "shared" / "corpus" / "wild"
WILD_LOGS = sorted(WILD.glob("*.log")) if WILD.is_dir() else []
needs_wild = pytest.mark.skipif(not WILD_LOGS and not os.environ.get("CI"),
                                reason=f"the shared corpus is not at {WILD}")
# Every keyword `analyze` indexes while framing: the built-in parsers' and the boot splitter's
# (timeline.boots.index_keywords), then the reader's own (read.reader.OWN_PREFIXES).
INDEX_NEEDLES, INDEX_PREFIXES = keywords(*index_keywords(ParseOptions()))


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``bootlens ARGS...`` through the real entry point in a subprocess, output as text."""
    return subprocess.run([sys.executable, "-m", "bootlens.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def wild_log(num: str) -> Path:
    """The corpus log whose file name starts with ``num-`` (e.g. "14"), in the corpus or its
    second batch (``more/``)."""
    (path,) = [*WILD.glob(f"{num}-*.log"), *WILD.glob(f"more/{num}-*.log")]
    return path


# Real logs found for issue 28 that are not (yet) in the shared corpus: third-party files are
# never committed, so they live in a folder outside the project, with a MANIFEST.md of their
# sources and hand-measured facts; $BOOTLENS_EXTRA_LOGS names it (its subfolders are searched).
# Tests that read them skip without it.
EXTRA = Path(os.environ["BOOTLENS_EXTRA_LOGS"]) if os.environ.get("BOOTLENS_EXTRA_LOGS") else None


def extra_log(num: str) -> Path:
    """The extra log whose file name starts with ``num-``; skips the test without the folder."""
    if EXTRA is None or not EXTRA.is_dir():
        pytest.skip("BOOTLENS_EXTRA_LOGS does not name the folder of extra real logs")
    found = [p for p in EXTRA.rglob(f"{num}-*") if p.is_file()]
    if len(found) != 1:
        pytest.skip(f"extra log {num} not in {EXTRA}")
    return found[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite golden .expected.json files")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def stamp_dict(st: Stamp | None) -> Any:
    if st is None:
        return None
    d: dict[str, Any] = {"clock": st.clock.value, "ns": st.ns}
    if st.estimated:
        d["estimated"] = True
        d["error_ns"] = st.error_ns
    return d


def event_dict(e: Event) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": e.kind.value,
        "name": e.name,
        "start": stamp_dict(e.start),
        "duration_ns": e.duration_ns,
        "line": e.line_no,
    }
    if e.end_line_no is not None:
        d["end_line"] = e.end_line_no
    if e.detail is not None:
        det = e.detail._asdict()
        if det.get("duration_bound") == "exact" and det.get("duration_error_ns") == 0:
            # UnitDetail's later fields at their defaults: the goldens written before them stay true
            del det["duration_bound"], det["duration_error_ns"]
        d["detail"] = det
    return d


def result_dict(r: ParseResult) -> dict[str, Any]:
    return {
        "events": [event_dict(e) for e in r.events],
        "facts": [{"key": f.key, "value": f.value, "line": f.line_no} for f in r.facts],
        "warnings": list(r.warnings),
    }


# --- shared by the reference-target and advisor tests ----------------------------------------

needs_qemu = pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or not Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").exists()
    or shutil.which("apt-get") is None,
    reason="qemu-system-arm and u-boot-qemu not installed (make test installs them)",
)

READY_OPTS = ParseOptions((MarkerSpec.parse("ready=APP READY"),))


def run_rule(rule: type[Rule], path: Path, ctx: Context | None = None,
             opts: ParseOptions = READY_OPTS) -> list[Finding]:
    """The findings of one rule alone (its own registry) over every boot of an input."""
    reg = RuleRegistry()
    reg.register(rule)
    return [f for b in analyze_paths([str(path)], opts).boots for f in advise(b, ctx, reg)]


def one(rule: type[Rule], path: Path, ctx: Context | None = None) -> Finding:
    """The one finding a rule makes on an input."""
    found = run_rule(rule, path, ctx)
    assert len(found) == 1, found
    return found[0]
