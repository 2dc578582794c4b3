"""Golden tests: tests/golden/<format>/<case>.log -> <case>.expected.json.

<format> is a parser name (that parser alone reads the case), ``lines`` (the framed lines) or
``analyze`` (the whole ``analyze --json`` output). Cases are found by glob; regenerate with
``pytest --update-golden`` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN, result_dict

from bootlens.timeline.analyze import analyze_paths
from bootlens.read.reader import read_path
from bootlens.parsers import MarkerSpec, ParseOptions, default_registry
from bootlens.render.jsonout import to_json_obj

CASES = sorted(GOLDEN.glob("*/*.log"))
OPTIONS = ParseOptions((MarkerSpec.parse("ready=APP READY"),))


def produce(path: Path) -> Any:
    fmt = path.parent.name
    rel = str(path.relative_to(GOLDEN.parent.parent))
    if fmt == "analyze":
        obj = to_json_obj(analyze_paths([rel], OPTIONS))
        obj.pop("generator")
        return obj
    lines, stats = read_path(rel)
    if fmt == "lines":
        return {
            "framing": stats.framing,
            "warnings": list(stats.warnings),
            "lines": [[ln.no, ln.host_ns, ln.kernel_ns, ln.text] for ln in lines],
        }
    parser = {cls.name: cls for cls in default_registry()}[fmt]()
    return result_dict(parser.parse(lines, OPTIONS))


def test_every_format_has_cases() -> None:
    have = {p.parent.name for p in CASES}
    wanted = set(default_registry().names()) | {"lines", "analyze"}
    assert wanted <= have, f"formats without golden cases: {sorted(wanted - have)}"


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_golden(path: Path, update_golden: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(GOLDEN.parent.parent)
    got = json.loads(json.dumps(produce(path)))
    expected_path = path.with_suffix(".expected.json")
    if update_golden or not expected_path.exists():
        expected_path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
        if not update_golden:
            pytest.fail(f"{expected_path.name} did not exist; written now, review and commit it")
    expected = json.loads(expected_path.read_text())
    assert got == expected
