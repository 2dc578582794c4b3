"""Logs of many boots (issue 29, item 6): analysed one boot at a time, summarised past
MANY_BOOTS, the JSON complete and the same as the whole document's.

Inputs: the reference boot (tests/data/corpus/qemu-arm64-uboot.console.log: U-Boot, a Linux 6.1
kernel, busybox, 'APP READY', 255 lines, U-Boot's banner on line 3) repeated, as a console left running across resets shows
it; and one-line boots, a kernel's first line over and over (bench/gen_boots.py's worst case).
Speed is measured by bench/bench_boots.py, not here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson

from bootlens.core.lines import Lines
from bootlens.core.options import MarkerSpec, ParseOptions
from bootlens.render.jsonout import render_json, to_json_obj
from bootlens.timeline.analyze import analyze_paths, stream_paths
from bootlens.timeline.boots import iter_cuts, split_boots
from bootlens.timeline.tally import KEEP, MANY_BOOTS, BootTally

from conftest import CORPUS, cli

REF = CORPUS / "qemu-arm64-uboot.console.log"
REF_LINES = 255
BANNER = 3  # each copy's boot starts at its U-Boot banner: the two empty lines before it are the boot before's
KERNEL_LINE = "[    0.000000] Booting Linux on physical CPU 0x0\n"
READY = "ready=APP READY"


def _repeated(tmp_path: Path, n: int) -> Path:
    p = tmp_path / f"ref-{n}.log"
    p.write_bytes(REF.read_bytes() * n)
    return p


def _one_line(tmp_path: Path, n: int) -> Path:
    p = tmp_path / f"line-{n}.log"
    p.write_text(KERNEL_LINE * n)
    return p


def test_a_stream_is_the_whole_analysis(tmp_path: Path) -> None:
    """stream_paths gives the boots analyze_paths does, one at a time."""
    log = _repeated(tmp_path, 3)
    opts = ParseOptions((MarkerSpec.parse(READY),))
    whole = analyze_paths([str(log)], opts)
    stats, boots = stream_paths([str(log)], opts)
    streamed = list(boots)
    assert stats == whole.inputs
    assert [(b.boot.first_line, b.boot.last_line, b.total) for b in streamed] == \
        [(b.boot.first_line, b.boot.last_line, b.total) for b in whole.boots]
    assert [b.boot.first_line for b in streamed] == [1, REF_LINES + BANNER, 2 * REF_LINES + BANNER]


def test_cuts_come_one_at_a_time(tmp_path: Path) -> None:
    """iter_cuts gives the first boot before the splitter has looked past the second's start."""
    from bootlens.read.reader import read_path

    lines, _ = read_path(str(_one_line(tmp_path, 5)))
    it = iter_cuts(lines)
    first = next(it)
    assert (first.lines.first, len(first.lines), first.reason) == (1, 1, "start of input")
    assert [c.lines.first for c in it] == [2, 3, 4, 5]
    assert len(split_boots(lines)) == 5


def test_json_of_many_boots_is_the_whole_document(tmp_path: Path) -> None:
    """The streamed document parses to what the document built whole (orjson of to_json_obj) holds."""
    log = _repeated(tmp_path, MANY_BOOTS + 5)
    r = cli("analyze", "--json", "--marker", READY, str(log))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    a = analyze_paths([str(log)], ParseOptions((MarkerSpec.parse(READY),)))
    assert doc == json.loads(orjson.dumps(to_json_obj(a)))
    assert r.stdout.encode() == render_json(a)
    assert [b["first_line"] for b in doc["boots"]] == [1] + [REF_LINES * i + BANNER for i in range(1, MANY_BOOTS + 5)]
    assert {b["total"]["duration_s"] for b in doc["boots"]} == {0.95}  # each boot the reference's ('uptime: 0.95' before APP READY)


def test_json_of_a_thousand_one_line_boots(tmp_path: Path) -> None:
    """Every boot in the document, each with every key a one-boot document's boot has."""
    one = json.loads(cli("analyze", "--json", str(_one_line(tmp_path, 1))).stdout)["boots"][0]
    r = cli("analyze", "--json", str(_one_line(tmp_path, 1000)))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    assert doc["inputs"][0]["lines"] == 1000
    boots = doc["boots"]
    assert len(boots) == 1000
    assert [b["index"] for b in boots] == list(range(1000))
    assert [b["first_line"] for b in boots] == list(range(1, 1001))
    assert all(b.keys() == one.keys() for b in boots)
    assert boots[999]["split_reason"] == "new kernel start (Booting Linux)"
    assert all(b["warnings"] == one["warnings"] for b in boots)  # in the document, each boot's own


def test_twenty_boots_are_printed_each(tmp_path: Path) -> None:
    """Up to MANY_BOOTS boots: each in full, as always."""
    r = cli("analyze", "--marker", READY, str(_repeated(tmp_path, MANY_BOOTS)))
    assert r.returncode == 0, r.stderr
    heads = re.findall(r"^Boot (\d+) of (\d+) ·", r.stdout, re.M)
    assert heads == [(str(i), str(MANY_BOOTS)) for i in range(1, MANY_BOOTS + 1)]
    assert "boots · " not in r.stdout


def test_past_twenty_boots_a_summary(tmp_path: Path) -> None:
    """21 boots: the count, the median total, and the first, slowest and last boots, one row each."""
    n = MANY_BOOTS + 1
    r = cli("analyze", "--marker", READY, str(_repeated(tmp_path, n)))
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "21 boots · kernel start → ready: median 950.0 ms (950.0–950.0 ms)"
    assert out[1].endswith(f" · lines 1–{REF_LINES * n}")
    assert not re.search(r"^Boot \d+", r.stdout, re.M)
    rows = [line.split() for line in out if re.match(r"^\s*\d+\s+\d+–\d+", line)]
    # all boots the same: the slowest are the earliest of them, the first three
    assert [row[0] for row in rows] == ["1", "2", "3", "19", "20", "21"]
    assert rows[0][1] == f"1–{REF_LINES + BANNER - 1}" and rows[-1][1] == f"{REF_LINES * 20 + BANNER}–{REF_LINES * 21}"
    assert "first, slowest" in out[out.index(next(x for x in out if x.lstrip().startswith("1 ")))]
    assert "each boot in full: --all-boots" in r.stdout
    # warnings each once, counted over the boots
    assert r.stderr.count("bootlens: warning:") == len(set(r.stderr.splitlines()))


def test_all_boots_prints_each_then_the_summary(tmp_path: Path) -> None:
    r = cli("analyze", "--all-boots", "--marker", READY, str(_repeated(tmp_path, MANY_BOOTS + 1)))
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^Boot (\d+) ·", r.stdout, re.M) == [str(i) for i in range(1, MANY_BOOTS + 2)]
    assert re.search(r"^21 boots · kernel start → ready", r.stdout, re.M)


def test_one_line_boots_summary_and_summary_lines(tmp_path: Path) -> None:
    log = _one_line(tmp_path, 1000)
    r = cli("analyze", str(log))
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "1,000 boots · total: not measured in any boot"
    assert out[1].endswith(" · lines 1–1000")
    rows = [line.split()[0] for line in out if re.match(r"^\s*\d+\s+\d+\s+not measured", line)]
    assert rows == ["1", "2", "3", "998", "999", "1000"]
    s = cli("analyze", "--summary", str(log))
    lines = s.stdout.splitlines()
    assert len(lines) == 1000
    assert lines[999].endswith(f" · {log} boot 1000")
    assert s.stderr.strip() == "bootlens: 1 warning (without --summary: each one)"


def test_tally_keeps_a_few() -> None:
    """The tally of a stream keeps KEEP first, KEEP last and KEEP slowest boots, nothing more."""
    from bootlens.read.reader import read_path

    t = BootTally()
    assert t.median_total() is None and t.picked() == []
    stats, boots = stream_paths([str(REF)], ParseOptions((MarkerSpec.parse(READY),)))
    b = next(boots)
    for _ in range(10):
        t.add(b)
    assert (t.n, t.measured) == (10, 10)
    assert [p.n for p in t.picked()] == [1, 2, 3, 8, 9, 10]
    assert t.median_total() == (10, 950_000_000, 950_000_000, 950_000_000)
    assert len(t.first) == len(t.last) == KEEP
    del read_path


def test_slices_carry_fields_and_glued_lines() -> None:
    """A slice's glued texts and journal fields are the whole's in its range (found by bisection)."""
    n = 50
    whole = Lines([f"l{i}" for i in range(n)], [None] * n, [None] * n)
    whole.glued = {i: f"g{i}" for i in range(0, n, 3)}
    whole.fields = {i: {"_PID": str(i)} for i in range(1, n, 4)}
    whole.by_init = list(range(2, n, 5))
    for a, b in ((0, 10), (7, 8), (10, 49), (48, 50), (5, 5)):
        part = whole.slice(a, b)
        assert part.glued == {i - a: g for i, g in whole.glued.items() if a <= i < b}
        assert part.fields == {i - a: f for i, f in whole.fields.items() if a <= i < b}
        assert part.by_init == [i - a for i in whole.by_init if a <= i < b]
    whole.glued = {5: "x", 1: "y"}  # not in line order: still right
    assert whole.slice(0, 6).glued == {5: "x", 1: "y"}
