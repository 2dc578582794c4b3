"""Bootchart archives as inputs of ``bootlens analyze`` and ``report`` (issue 12, part 4), through
the real entry point: processes as events on the uptime clock, CPU/IO samples as a panel under the
report's timeline (checked in headless Chromium).

Input: tests/golden/bootchart/ubuntu-8.10, an excerpt of xrmx/bootchart examples/1 (provenance and
facts in that folder's README.md), as a folder and packed into a .tgz at run time.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from conftest import GOLDEN, cli
from test_report import Loaded, browser, needs_browser, report  # noqa: F401 - browser is a fixture

CHART = GOLDEN / "bootchart" / "ubuntu-8.10"
KERNEL = GOLDEN.parent / "data" / "supplements" / "reference-debian12-kernel.log"


def analyze_json(*args: str) -> dict[str, Any]:
    r = cli("analyze", "--json", *args)
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def packed(tmp: Path) -> Path:
    out = tmp / "bootlog.tgz"
    with tarfile.open(out, "w:gz") as tar:
        for p in sorted(CHART.iterdir()):
            tar.add(p, arcname=p.name)
    return out


def test_a_bootchart_alone_is_a_boot_of_its_processes(tmp_path: Path) -> None:
    doc = analyze_json(str(CHART))
    (b,) = doc["boots"]
    assert b["formats"] == ["bootchart"] and b["axis"] == "kernel"
    procs = [e for e in b["events"] if e["kind"] == "process"]
    # awk 'NF>1 {print $1}' proc_ps.log | sort -u: 45 pids; pid 2 and its children: 23
    assert len(procs) == 45 and sum(1 for e in procs if e["kthread"]) == 23
    init = next(e for e in procs if e["pid"] == 1)
    # "1 (init) S 0 ... 29 ...": starttime 29 ticks, seen until the last block (196): 1.67 s
    assert init["start_s"] == 0.29 and init["duration_s"] == 1.67
    sa = b["systemd_analyze"]["bootchart"]
    # proc_stat.log blocks 154 175 195 219: 3 intervals; proc_diskstats.log 154 176 196: 2
    assert sa == {"collector": "bootchartd", "processes": 45, "cpu_samples": 3, "disk_samples": 2}
    assert b["kernel"]["version"] == "2.6.27-10-generic"
    assert not any(w.startswith("no timestamps") for w in b["warnings"])
    # the archive as bootchartd leaves it reads the same
    tgz = analyze_json(str(packed(tmp_path)))["boots"][0]
    assert [e for e in tgz["events"]] == b["events"]


def test_a_bootchart_with_a_log_adds_its_processes_on_the_uptime_clock() -> None:
    # placement arithmetic only: the kernel lines and the chart are of different machines
    doc = analyze_json(str(KERNEL), str(CHART))
    (b,) = doc["boots"]
    assert "bootchart" in b["formats"] and b["systemd_analyze"]["processes_from_bootchart"] == 45
    init = next(e for e in b["events"] if e["kind"] == "process" and e["pid"] == 1)
    assert init["start_s"] == 0.29  # kernel axis: uptime = printk clock, offset 0
    assert len(doc["inputs"]) == 1


def test_report_has_the_samples_on_the_boot_axis(tmp_path: Path) -> None:
    html = report(tmp_path, str(CHART)).read_text()
    start = html.index('id="bootlens-data">') + len('id="bootlens-data">')
    data = json.loads(html[start:html.index("</script>", start)])
    s = data["boots"][0]["samples"]
    # proc_stat.log blocks 154 and 175: "cpu  2 0 117 145 0 ..." then "cpu  7 0 134 162 0 ...":
    # user +5, system +17, idle +17 of 39 ticks, at 1.75 s
    assert s["t"][0] == 1_750_000 and s["user"][0] == round(5 / 39, 3) and s["sys"][0] == round(17 / 39, 3)
    assert s["iow"][0] == 0 and len(s["t"]) == 3 and len(s["dt"]) == 2


@needs_browser
def test_report_draws_the_cpu_io_panel(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    page = Loaded(browser, report(tmp_path, str(CHART)))
    try:
        assert not page.errors and page.js("!document.getElementById('samples-wrap').hidden")
        # the panel's canvas has the timeline's width and holds coloured pixels where the CPU bars are
        widths = page.js("[document.getElementById('tl-canvas').width, document.getElementById('samples-canvas').width]")
        assert widths[0] == widths[1]
        painted = page.js("""(() => { const c = document.getElementById('samples-canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] !== d[i + 1] || d[i + 1] !== d[i + 2])) n++;
            return n; })()""")
        assert painted > 100
    finally:
        page.close()
    # a report of a log without a bootchart has no panel
    page = Loaded(browser, report(tmp_path, str(KERNEL), name="k.html"))
    try:
        assert page.js("document.getElementById('samples-wrap').hidden")
    finally:
        page.close()


def test_numbers_past_what_the_kernel_writes_are_counted_not_used(tmp_path: Path) -> None:
    """A damaged log's digit run where bootchartd wrote an uptime, a pid, a CPU time or a sector
    count (fuzz/crashes/crash-bootchart-028b450ff4567fa0: a 23-digit uptime became a sample time
    past 64 bits, which the report's data could not hold): not used, one counted warning."""
    from bootlens.render.html import render_html
    from bootlens.sources.bootchart.reader import read_bootchart
    from bootlens.timeline.inputs import analyze_inputs

    big = "9" * 23
    chart = tmp_path / "chart"
    chart.mkdir()
    for p in CHART.iterdir():
        (chart / p.name).write_bytes(p.read_bytes())
    stat = (chart / "proc_stat.log").read_text()
    assert "\n\n195\n" in stat  # the third block's uptime (1.95 s)
    (chart / "proc_stat.log").write_text(stat.replace("\n\n195\n", f"\n\n{big}\n", 1))
    ps = (chart / "proc_ps.log").read_text()
    assert ps.startswith("155\n1 (init) S 0 ")
    (chart / "proc_ps.log").write_text(ps.replace("1 (init) S 0 ", f"{big} (init) S 0 ", 1))
    before, after = read_bootchart(CHART), read_bootchart(chart)
    assert len(after.cpu) == len(before.cpu) - 1  # the block without a usable uptime
    assert all(s.ns < 2**60 for s in after.cpu) and all(p.pid < 2**22 for p in after.processes)
    assert [n for n in after.warnings if n.startswith("bootchart:")] == [
        "bootchart: 2 numbers out of range were not used (1 pid, 1 uptime)"]
    # the report's data hold the samples kept (the crash: orjson refused the 23-digit one)
    html = render_html(analyze_inputs([str(chart)]))
    start = html.index(b'id="bootlens-data">') + len(b'id="bootlens-data">')
    data = json.loads(html[start:html.index(b"</script>", start)])
    assert len(data["boots"][0]["samples"]["t"]) == len(after.cpu)
