"""``advise`` and ``report`` on logs of many boots (issue 29, item 6): boots advised one at a time
and their findings merged from numbers; a report of an input of many boots holds a few boots
whole and counts the others; a few boots give the same bytes as before.

Inputs: the reference boot (tests/data/corpus/qemu-arm64-uboot.console.log, 255 lines: 'Hit any
key to stop autoboot:  2' makes uboot.autoboot_delay save 2.000 s, U-Boot's banner on line 3)
repeated; bench/gen_boots.py's ~20-line boots whose printk times differ (a slowest boot), and
its one-line boots. Speed and memory are bench/bench_boots.py's, not tested here.
"""

from __future__ import annotations

import io
import json
import random
import re
import statistics
import sys
from pathlib import Path

import pytest

from bootlens.advise import listed_ids, default_registry
from bootlens.advise.base import Change, ChangeKind, Confidence, Finding
from bootlens.advise.summary import CANDIDATES, Merger, advise_inputs, advise_streams
from bootlens.core.lines import Lines
from bootlens.core.options import MarkerSpec, ParseOptions
from bootlens.render.advise_json import write_advise_json, write_advise_json_stream
from bootlens.render.html_data import report_data
from bootlens.render.many import condense
from bootlens.stats.figures import _coverage, _rank_many, statistics_of
from bootlens.timeline.inputs import analyze_inputs, stream_inputs
from bootlens.timeline.tally import MANY_BOOTS

from conftest import CORPUS, cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gen_boots import write_boots  # noqa: E402

REF = CORPUS / "qemu-arm64-uboot.console.log"
REF_LINES = 255
BANNER = 3
READY = "ready=APP READY"
OPTS = ParseOptions((MarkerSpec.parse(READY),))


def _repeated(tmp_path: Path, n: int) -> Path:
    p = tmp_path / f"ref-{n}.log"
    p.write_bytes(REF.read_bytes() * n)
    return p


def _small(tmp_path: Path, n: int) -> Path:
    p = tmp_path / f"small-{n}.log"
    with p.open("w", encoding="utf-8") as f:
        write_boots(f, n, "small")
    return p


def _json_both(log: Path) -> tuple[bytes, bytes]:
    whole, streamed = io.BytesIO(), io.BytesIO()
    rules = listed_ids(default_registry())
    write_advise_json(advise_inputs([str(log)], OPTS), rules, whole)
    write_advise_json_stream(advise_streams([str(log)], OPTS), rules, streamed)
    return whole.getvalue(), streamed.getvalue()


@pytest.mark.parametrize("n", [1, 3, MANY_BOOTS + 5])
def test_advise_json_streamed_is_the_whole_document(tmp_path: Path, n: int) -> None:
    """advise --json written boot by boot: the bytes of the document built whole."""
    whole, streamed = _json_both(_repeated(tmp_path, n))
    assert streamed == whole
    doc = json.loads(streamed)
    (inp,) = doc["inputs"]
    assert [b["first_line"] for b in inp["boots"]] == [1] + [REF_LINES * i + BANNER for i in range(1, n)]
    if n > 1:
        delay = next(m for m in inp["merged"] if m["rule"] == "uboot.autoboot_delay")
        assert (delay["seen"], delay["boots"], delay["saving"]["median_s"]) == (n, n, 2.0)
        assert delay["seen_boots"] == list(range(n))


def test_advise_text_past_the_threshold(tmp_path: Path) -> None:
    """25 boots: one merged set, each finding counted over the 25; warnings once, counted."""
    r = cli("advise", "--marker", READY, str(_repeated(tmp_path, MANY_BOOTS + 5)))
    assert r.returncode == 0, r.stderr
    assert "25 boots in one input" in r.stdout
    assert "findings merged over 25 boots" in r.stdout
    assert r.stdout.count("seen in 25 of 25 boots; shown from boot 1") == 6
    assert re.search(r"^ 1\. 2\.000 s \(median; 2\.000 s–2\.000 s over 25 boots\)", r.stdout, re.M)


def test_advise_on_a_thousand_one_line_boots(tmp_path: Path) -> None:
    log = tmp_path / "line.log"
    log.write_text("[    0.000000] Booting Linux on physical CPU 0x0\n" * 1000)
    r = cli("advise", "--marker", READY, str(log))
    assert r.returncode == 0, r.stderr
    assert "1,000 boots in one input" in r.stdout and "no findings" in r.stdout
    assert "1000 of 1000 boots: the ready marker was not seen" in r.stderr
    j = cli("advise", "--json", str(log))
    doc = json.loads(j.stdout)
    assert len(doc["inputs"][0]["boots"]) == 1000 and doc["inputs"][0]["merged"] is None  # nothing to merge


def _finding(saving: int | None, line: int) -> Finding:
    return Finding("x.rule", "t", "kernel_init", saving, f"a {line}", Confidence.LOW, "-",
                   Change(ChangeKind.CMDLINE, "quiet", "d"))


def _old_merge(per_boot: list[list[Finding]]) -> tuple[int, int | None, float | None]:
    """The merge as it was (advise/summary.py before issue 29): (shown boot, its saving, median)."""
    items = [(i, f) for i, fs in enumerate(per_boot) for f in fs]
    numbers = [f.saving_ns for _, f in items if f.saving_ns is not None]
    if not numbers:
        return items[0][0], None, None
    med = statistics.median(numbers)
    i, f = min(((i, f) for i, f in items if f.saving_ns is not None),
               key=lambda x: (abs((x[1].saving_ns or 0) - med), x[0]))
    return i, f.saving_ns, med


@pytest.mark.parametrize("seed", range(6))
def test_merger_shows_the_boot_nearest_the_median(seed: int) -> None:
    """Up to CANDIDATES distinct savings the one shown is exactly the old merge's (ties to the
    earlier boot, boots with two findings, boots without a figure)."""
    rnd = random.Random(seed)
    boots = [[_finding(rnd.choice([None, *range(0, 50, 5)]), j) for j in range(rnd.randrange(3))]
             for _ in range(rnd.randrange(2, 60))]
    if not any(boots):
        boots[0] = [_finding(None, 0)]
    m = Merger()
    for fs in boots:
        m.add(fs)
    (got,) = m.result()
    i, saving, med = _old_merge(boots)
    assert (got.boot, got.finding.saving_ns) == (i, saving)
    assert (got.saving.median if got.saving else None) == med
    assert list(got.seen_boots) == [k for k, fs in enumerate(boots) if fs]


def test_merger_of_many_distinct_savings_keeps_a_few() -> None:
    """A figure that differs in every boot of 5,000: a few hundred findings kept, not 5,000; the
    one shown is a boot whose saving is within a few of the exact median."""
    rnd = random.Random(7)
    values = [rnd.randrange(1_000_000) for _ in range(5000)]
    m = Merger()
    for k, v in enumerate(values):
        m.add([_finding(v, k)])
    (x,) = m._found.values()
    assert len(x.kept) <= CANDIDATES
    (got,) = m.result()
    assert got.seen == got.boots == 5000 and got.saving is not None
    assert got.saving.median == statistics.median(values)
    assert (got.saving.min, got.saving.max) == (min(values), max(values))
    assert values[got.boot] == got.finding.saving_ns
    rank = sorted(values).index(got.finding.saving_ns)
    assert abs(rank - 2500) < 50


@pytest.mark.parametrize("n", [1001, 1400, 2001, 3000])
def test_median_interval_of_many_values_is_the_exact_rank(n: int) -> None:
    """Past EXACT_UP_TO values the rank comes from floating point: the rank exact arithmetic gives."""
    k, level = 1, _coverage(n, 1)
    for j in range(2, (n + 1) // 2 + 1):
        c = _coverage(n, j)
        if c < 0.95:
            break
        k, level = j, c
    got = _rank_many(n)
    assert got[0] == k and got[1] == pytest.approx(level, abs=1e-12)


def test_report_of_a_few_boots_is_as_before(tmp_path: Path) -> None:
    """MANY_BOOTS boots: the group is reported whole, the page's data the same as before."""
    log = _repeated(tmp_path, MANY_BOOTS)
    (s,) = stream_inputs([str(log)], OPTS)
    g, many = condense(s.name, s.inputs, s.folder, s.boots, s.group)
    assert many is None and len(g.analysis.boots) == MANY_BOOTS
    assert report_data([g]) == report_data(analyze_inputs([str(log)], OPTS))
    assert "many" not in report_data([g])


def test_report_of_many_boots_holds_a_few(tmp_path: Path) -> None:
    """30 boots of differing times: the page holds the first, slowest and last three and boot 10
    (asked for), opens on boot 10; its table, headline, statistics and merged findings are those
    of all 30 boots analysed whole."""
    log = _small(tmp_path, 30)
    whole = analyze_inputs([str(log)], OPTS)[0]
    every = whole.analysis.boots
    (s,) = stream_inputs([str(log)], OPTS)
    g, many = condense(s.name, s.inputs, s.folder, s.boots, s.group, boot=10)
    assert many is not None and many.boots == 30 and many.measured == 30
    totals = [b.total.duration_ns for b in every]
    slowest = sorted(range(30), key=lambda i: (-(totals[i] or 0), i))[:3]
    kept = sorted({0, 1, 2, 27, 28, 29, 9, *slowest})
    assert list(many.positions) == kept
    assert [b.boot.first_line for b in g.analysis.boots] == [every[i].boot.first_line for i in kept]
    data = report_data([g], many={0: many})
    ref = report_data([whole])
    assert data["inputs"] == ref["inputs"]  # the headline over all 30
    assert data["stats"] == ref["stats"]
    assert data["merged_findings"] == ref["merged_findings"]
    assert data["findings"] == [ref["findings"][i] for i in kept]
    (table,) = data["many"]
    assert (table["boots"], table["measured"]) == (30, 30)
    rows = table["rows"]
    assert [r["n"] for r in rows] == [i + 1 for i in kept]
    assert [(r["first_line"], r["last_line"]) for r in rows] == \
        [(every[i].boot.first_line, every[i].boot.last_line) for i in kept]
    assert [r["total"] for r in rows] == [totals[i] // 1000 for i in kept]  # µs
    assert all(r["status"] == "ready reached" for r in rows)
    assert rows[kept.index(9)]["why"].endswith("asked")
    assert [r["why"] for r in rows if r["n"] in (1, 30)] == ["first", "last"]
    assert data["open"] == kept.index(9) == rows[kept.index(9)]["boot"]
    assert [d["pos"] for d in data["boots"]] == kept


def test_report_cli_of_a_thousand_one_line_boots(tmp_path: Path) -> None:
    """html, svg and perfetto of 1,000 boots: six kept whole (first and last three; none is
    slower), the count said."""
    log = tmp_path / "line.log"
    log.write_text("[    0.000000] Booting Linux on physical CPU 0x0\n" * 1000)
    for fmt, name in (("html", "r.html"), ("svg", "r.svg"), ("perfetto", "r.json")):
        out = tmp_path / name
        r = cli("report", "--format", fmt, "-o", str(out), str(log))
        assert r.returncode == 0, r.stderr
        assert r.stderr.strip() == f"bootlens: {fmt} report of 1,000 boots (6 of them whole) -> {out}"
    page = (tmp_path / "r.html").read_text()
    data = json.loads(page[page.index('id="bootlens-data">') + 19:page.index("</script>", page.index('id="bootlens-data">'))])
    assert [d["pos"] for d in data["boots"]] == [0, 1, 2, 997, 998, 999]
    assert data["open"] == 5  # none measured: the last
    assert data["inputs"][0]["boots"] == 1000
    assert "994 more boots not drawn" in (tmp_path / "r.svg").read_text()
    trace = json.loads((tmp_path / "r.json").read_text())
    assert trace["metadata"]["many"] == [{"input": str(log), "boots": 1000, "drawn": [1, 2, 3, 998, 999, 1000],
                                          "why": ["first", "first", "first", "last", "last", "last"]}]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert names == {"boot 1", "boot 2", "boot 3", "boot 998", "boot 999", "boot 1000"}  # by place in the input


def test_slices_search_the_whole_once_asked_twice() -> None:
    """A keyword two slices asked for is searched in the whole; the hits stay each slice's own."""
    n = 30
    whole = Lines([("key " if i % 7 == 0 else "") + f"l{i}" for i in range(n)], [None] * n, [None] * n)
    a, b, c = whole.slice(0, 10), whole.slice(10, 20), whole.slice(20, 30)
    assert list(a.grep("key")) == [0, 7]
    assert "key" not in whole._hits
    assert list(b.grep("key")) == [4]
    assert "key" in whole._hits
    assert list(c.grep("key")) == [1, 8]
    assert list(c.grep("nothing", "key")) == [1, 8]
    assert list(c.starting("key")) == [1, 8] and list(a.starting("l1")) == [1]


def test_report_boot_n_of_a_few_boots(tmp_path: Path) -> None:
    """--boot N opens a page of a few boots on boot N too; a boot the input has not is said."""
    log = _repeated(tmp_path, 3)
    groups = analyze_inputs([str(log)], OPTS)
    assert "open" not in report_data(groups, boot=1)
    assert report_data(groups, boot=3)["open"] == 2
    assert "open" not in report_data(groups, boot=4)
    r = cli("report", "--boot", "4", "-o", str(tmp_path / "r.html"), str(log))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == f"bootlens: warning: --boot 4: {log} has 3 boots"
