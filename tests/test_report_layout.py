"""The HTML report as a user sees it at 1,280 px, in a real browser (headless Chromium through
Playwright, as tests/test_report.py): no horizontal scroll of the page, a legend for every colour
the timeline draws, the same colours as the SVG boot graph, and a run folder's headline that is
the median of its boots with their min and max.

The canvas's colours are read by wrapping its drawing calls before the page's script runs
(``fillRect``, ``fill``, ``stroke``, ``strokeRect``): what was actually painted, not what the
script meant to paint.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bootlens.timeline.inputs import analyze_inputs
from bootlens.capture.run_folder import write_run_meta
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.capture.recording import Header, RecordingWriter
from bootlens.render import palette
from bootlens.render.headline import boots_total
from bootlens.render.html import render_html
from bootlens.render.svg import render_svg
from bootlens.render.svglayout import fmt_duration

from conftest import CORPUS, WILD_LOGS, needs_wild
from test_report import Browser, Loaded, browser, needs_browser, report  # noqa: F401  (browser: fixture)

GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
X86_TRACE = CORPUS / "qemu-x86_64-tp_printk.console.log"
X86_INITCALL = CORPUS / "qemu-x86_64-initcall.console.log"
READY = "ready=APP READY"
NS = "{http://www.w3.org/2000/svg}"
WIDTH = 1280

# Records the colour of every fill and stroke the canvas makes: [what, colour, y, dashed].
PAINT_SPY = """(() => {
  const rec = window.__paint = [];
  const P = CanvasRenderingContext2D.prototype;
  const wrap = (name, entry) => {
    const orig = P[name];
    P[name] = function (...a) { rec.push(entry(this, a)); return orig.apply(this, a); };
  };
  wrap("fillRect", (c, a) => ["fill", String(c.fillStyle), a[1], false]);
  wrap("fill", (c) => ["fill", String(c.fillStyle), null, false]);
  wrap("stroke", (c) => ["stroke", String(c.strokeStyle), null, c.getLineDash().length > 0]);
  wrap("strokeRect", (c) => ["stroke", String(c.strokeStyle), null, false]);
})();"""

# The colours each visible legend entry shows (what its swatch is painted with, as computed).
LEGEND_COLOURS = """(() => [...document.querySelectorAll('#legend .lg')]
  .filter((e) => e.offsetParent !== null)
  .map((e) => {
    const sw = e.querySelector('.sw'), cs = getComputedStyle(sw);
    const line = sw.classList.contains('line') || sw.classList.contains('dash');
    return [e.dataset.key, line ? cs.borderLeftColor : cs.backgroundColor + ' ' + cs.backgroundImage];
  }))()"""

NEUTRAL = {palette.SURFACE, palette.ROW_ALT, palette.GRID, palette.TEXT}  # backgrounds, grid, hover outline


def hexes(css: str) -> set[str]:
    """Every opaque ``rgb()`` colour in a computed CSS value, as ``#rrggbb``."""
    out = set()
    for m in re.finditer(r"rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)", css):
        if m.group(4) is None or float(m.group(4)) > 0:
            out.add("#" + "".join(f"{int(m.group(i)):02x}" for i in (1, 2, 3)))
    return out


class Spied(Loaded):
    """A report loaded at 1,280 px with the canvas's drawing calls recorded."""

    def __init__(self, browser: Browser, path: Path) -> None:
        super().__init__(browser, path, width=WIDTH, height=900, init_script=PAINT_SPY)

    def painted(self) -> list[tuple[str, str, float | None, bool]]:
        """The calls since the last :meth:`redraw` (after one more frame)."""
        self.frame()
        return [(w, c, y, d) for w, c, y, d in self.js("window.__paint")]

    def redraw(self) -> None:
        """Forget the calls so far and draw the whole boot again."""
        self.js("window.__paint.length = 0")
        self.page.keyboard.press("0")
        self.frame()


@pytest.fixture
def open_report(browser: Browser) -> Iterator[Callable[[Path], Spied]]:  # noqa: F811
    pages: list[Spied] = []

    def load(path: Path) -> Spied:
        pages.append(Spied(browser, path))
        return pages[-1]

    yield load
    for p in pages:
        p.close()


def page_width(p: Loaded) -> int:
    return int(p.js("document.documentElement.scrollWidth"))


# ---- no horizontal scroll --------------------------------------------------------------------


@needs_browser
def test_a_long_initcall_blacklist_does_not_widen_the_page(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """The arm64 corpus log's 42 failed initcalls make a 730-character initcall_blacklist= value,
    one token without a space: it wraps in its cell, and opened in the detail box too."""
    p = open_report(report(tmp_path, str(GRAB), "--marker", READY))
    rows = p.page.locator("#t-findings tbody tr")
    changes = [rows.nth(i).locator("td").nth(3).inner_text() for i in range(rows.count())]
    longest = max(changes, key=len)
    assert longest.startswith("initcall_blacklist=") and len(longest.split()[0]) > 500
    assert page_width(p) <= WIDTH
    table = p.page.locator("#t-findings").bounding_box()
    assert table is not None and table["x"] + table["width"] <= WIDTH
    rows.nth(changes.index(longest)).click()
    assert p.page.is_visible("#finding-detail")
    assert "initcall_blacklist=" in p.page.inner_text("#finding-detail")
    assert page_width(p) <= WIDTH
    # the log's long lines scroll inside the log box, never the page
    assert p.js("document.getElementById('log').scrollWidth") >= p.js("document.getElementById('log').clientWidth")
    assert p.errors == []


@needs_browser
def test_long_names_lines_and_paths_do_not_widen_the_page(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """An initcall name, a log line, a marker and a file name, each hundreds of characters with no
    space, in every table and line of the page."""
    long = "x" * 400
    text = GRAB.read_text().splitlines()
    at = next(i for i, line in enumerate(text) if "calling  crypto_algapi_init" in line)
    stamp = text[at].split("]")[0] + "]"
    extra = [f"{stamp} calling  {long}_init+0x0/0x10 @ 1", f"{stamp} initcall {long}_init+0x0/0x10 returned 0 "
             "after 90000 usecs", f"{stamp} {long}/{long}", f"{stamp} MARK{long}"]
    src = tmp_path / ("boot-" + "y" * 200 + ".log")
    src.write_text("\n".join(text[:at] + extra + text[at:]) + "\n")
    p = open_report(report(tmp_path, str(src), "--marker", READY, "--marker", f"m{'z' * 300}=MARK"))
    assert p.js(f"bootlens.find('{long}_init')") >= 0
    assert long in p.page.inner_text("#t-initcalls")
    assert page_width(p) <= WIDTH
    assert p.errors == []


@needs_browser
@needs_wild
def test_no_report_of_the_corpus_scrolls_sideways(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """Every boot of the corpus (35 real boards and the project's own QEMU logs), each shown in
    turn in one report, with the advisor's findings: the page is never wider than 1,280 px."""
    out = tmp_path / "all.html"
    out.write_bytes(render_html(analyze_inputs([*map(str, WILD_LOGS), *map(str, sorted(CORPUS.glob("*.log")))])))
    p = open_report(out)
    n = p.page.locator("#boot-select option").count()
    assert n >= len(WILD_LOGS) + 4
    wide = {}
    findings = 0
    for i in range(n):
        p.page.select_option("#boot-select", str(i))
        findings += p.page.locator("#t-findings tbody tr").count() if p.page.is_visible("#t-findings") else 0
        if (w := page_width(p)) > WIDTH:
            wide[p.page.inner_text("#sub").split(" · ")[0]] = w
    assert wide == {}
    assert findings > 50
    assert p.errors == []


# ---- the legend ------------------------------------------------------------------------------


def check_legend(p: Spied) -> set[str]:
    """Every colour the canvas painted since the last reset is in the visible legend; returns
    the legend's keys."""
    painted = {c for _, c, _, _ in p.painted()}
    legend = dict(p.js(LEGEND_COLOURS))
    shown = set().union(*(hexes(v) for v in legend.values()))
    assert painted - NEUTRAL <= shown, (painted - NEUTRAL - shown, legend)
    return set(legend)


@needs_browser
def test_legend_lists_every_colour_the_timeline_draws(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """For each boot of the corpus logs (initcalls on two pids, probes, PCI fixups, the autoboot
    delay, processes and kernel threads, markers and milestones) and the search and selection
    colours: the legend is on screen without a click and shows each colour painted."""
    out = tmp_path / "corpus.html"
    groups = analyze_inputs([str(GRAB), str(X86_TRACE), str(X86_INITCALL)],
                            ParseOptions((MarkerSpec.parse(READY),)))
    out.write_bytes(render_html(groups))
    p = open_report(out)
    box = p.page.locator("#legend").bounding_box()
    assert box is not None and box["y"] + box["height"] < 900  # in the first screen
    keys: set[str] = set()
    for i in range(3):
        p.page.select_option("#boot-select", str(i))
        p.redraw()
        keys |= check_legend(p)
    assert {"initcall", "initcall_async", "probe", "fixup", "bootloader", "process", "kthread", "ready",
            "milestone", "stage-kernel_init"} <= keys
    # the search greys out what does not match; a click paints the event in the selection colour
    p.page.select_option("#boot-select", "0")
    p.page.fill("#search", "crypto")
    p.redraw()
    p.js("bootlens.select(bootlens.find('crypto_algapi_init'))")
    p.frame()
    painted = {c for _, c, _, _ in p.painted()}
    assert {palette.colour("dimmed"), palette.colour("selected")} <= painted
    check_legend(p)
    assert p.errors == []


@needs_browser
def test_legend_check_can_fail(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """A colour painted that the legend does not show is caught."""
    p = open_report(report(tmp_path, str(GRAB), "--marker", READY))
    p.redraw()
    p.js("document.getElementById('tl-canvas').getContext('2d').fillStyle = '#123456'")
    p.js("document.getElementById('tl-canvas').getContext('2d').fillRect(0, 0, 1, 1)")
    with pytest.raises(AssertionError):
        check_legend(p)


# ---- one palette -----------------------------------------------------------------------------


def svg_colours(svg: bytes) -> tuple[dict[str, set[str]], dict[str, str], dict[str, set[str]]]:
    """From the SVG: the fills of the bars of each kind, each stage's fill, the strokes of the
    marker and milestone lines."""
    root = ET.fromstring(svg)
    bars: dict[str, set[str]] = {}
    stages: dict[str, str] = {}
    for g in root.iter(NS + "g"):  # a process: fork → exec, then its split rect exec → exit
        rects = list(g.iter(NS + "rect"))
        if len(rects) == 2 and rects[0].get("class", "").startswith("bar process"):
            bars.setdefault("process", set()).add(rects[1].get("fill", ""))
    for el in root.iter(NS + "rect"):
        cls = el.get("class", "").split()
        if cls[:1] == ["bar"]:
            bars.setdefault(cls[1], set()).add(el.get("fill", ""))
        elif cls[:1] == ["stage"]:
            stages[cls[1]] = el.get("fill", "")
    marks: dict[str, set[str]] = {}
    for el in root.iter(NS + "line"):
        cls = el.get("class", "").split()
        if cls[:1] == ["mark"]:
            marks.setdefault(cls[1], set()).add(el.get("stroke", ""))
    return bars, stages, marks


def html_colours(p: Spied) -> tuple[dict[str, set[str]], dict[str, str], dict[str, set[str]]]:
    """From the page on view: the fills painted in each row of events (by the kind of event),
    each stage's colour in the stage bar, the strokes of solid and dashed lines (markers,
    milestones) that are not the grid."""
    p.redraw()
    calls = p.painted()
    layout = p.js("bootlens.layout.filter((r) => r.type === 'events').map((r) => [r.kind, r.y, r.h])")
    bars: dict[str, set[str]] = {}
    for what, colour, y, _ in calls:
        if what == "fill" and y is not None:
            for kind, top, h in layout:
                if top <= y < top + h and colour not in NEUTRAL:
                    bars.setdefault(kind, set()).add(colour)
    stages = {k: next(iter(hexes(v))) for k, v in p.js(
        "[...document.querySelectorAll('#stagebar > div:not(.nm)')].map((d) => "
        "[d.dataset.stage, getComputedStyle(d).backgroundColor])")}
    lines: dict[str, set[str]] = {}
    for what, colour, _, dashed in calls:
        if what == "stroke" and colour not in NEUTRAL:
            lines.setdefault("milestone" if dashed else "marker", set()).add(colour)
    return bars, stages, lines


@needs_browser
def test_html_and_svg_draw_each_kind_in_the_same_colours(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """Both outputs of the same logs, read back: the bars of each kind of event, each stage and
    the marker and milestone lines have the same colours in the report's canvas and stage bar
    and in the SVG."""
    compared = set()
    for log in (GRAB, X86_TRACE):
        html = open_report(report(tmp_path, str(log), "--marker", READY, name=log.stem + ".html"))
        svg = report(tmp_path, str(log), "--marker", READY, "--format", "svg", name=log.stem + ".svg").read_bytes()
        s_bars, s_stages, s_marks = svg_colours(svg)
        h_bars, h_stages, h_lines = html_colours(html)
        # what the page draws for a kind, the SVG draws too; and the SVG draws nothing the page's
        # palette (its CSS variables) does not give that kind (a pixel column of the canvas
        # shows one of several tiny bars, so the page may show fewer shades than the SVG)
        allowed = {kind: {v.strip() for v in html.js(
            "((k) => bootlens.layout.filter((r) => r.kind === k).flatMap((r) => "
            "['--pal-' + r.paint, '--pal-' + r.paint + '-2']).map((v) => "
            f"getComputedStyle(document.documentElement).getPropertyValue(v)))('{kind}')") if v.strip()}
            for kind in h_bars}
        assert set(h_bars) == set(s_bars)
        for kind in h_bars:
            assert h_bars[kind] <= s_bars[kind] <= allowed[kind], kind
        shared = set(h_stages) & set(s_stages)
        assert shared and {k: h_stages[k] for k in shared} == {k: s_stages[k] for k in shared}
        assert h_lines["milestone"] == s_marks["milestone"]
        # (the SVG also draws the "uptime" marker that anchors user space's clock; the page does not)
        assert palette.colour("ready") in h_lines["marker"] and h_lines["marker"] <= s_marks["marker"]
        compared |= set(h_bars) | {"stage-" + k for k in shared}
    assert {"initcall", "probe", "fixup", "bootloader", "process", "kthread", "stage-kernel_init",
            "stage-userspace"} <= compared


def test_the_palette_reaches_the_page_and_the_svg() -> None:
    """The HTML's CSS variables are generated from the palette; the SVG's legend shows the
    palette's colours for what it draws."""
    groups = analyze_inputs([str(GRAB)], ParseOptions((MarkerSpec.parse(READY),)))
    html = render_html(groups).decode()
    for s in palette.ALL:
        assert f"--pal-{s.key}:{s.colour}" in html
    root = ET.fromstring(render_svg(groups))
    fills = {el.get("fill") for el in root.iter(NS + "rect")}
    assert {palette.colour("initcall"), palette.BY_KEY["initcall"].colours[1], palette.colour("probe"),
            palette.stage_colour("kernel_init")} <= fills


# ---- a run folder's headline -----------------------------------------------------------------


def recorded_run(folder: Path, delays_s: list[float], cut_ready: frozenset[int] = frozenset()) -> Path:
    """A run folder of recordings replaying the arm64 grabserial log, as a capture from power-on
    writes them: boot i waits ``delays_s[i]`` more at U-Boot's autoboot prompt, so its ready
    line comes that much later (3.903 s + delay). Boots in ``cut_ready`` end before ready."""
    folder.mkdir()
    lines = GRAB.read_text().splitlines()
    for i, delay in enumerate(delays_s, 1):
        w = RecordingWriter(str(folder / f"boot-{i}.rec"), Header("replay", None, "power_on", "", 0))
        extra = 0
        for line in lines:
            t, _, text = line.partition("] ")
            if "Hit any key to stop autoboot" in text:
                extra = int(delay * 1e9)
            if i in cut_ready and "APP READY" in text:
                break
            w.chunk(int(float(t[1:].split()[0]) * 1e9) + extra, (text + "\n").encode())
        w.close()
    write_run_meta(folder, (MarkerSpec.parse(READY),))
    return folder


@needs_browser
def test_run_folder_headline_is_the_median_with_min_and_max(open_report: Callable[[Path], Spied], tmp_path: Path) -> None:
    """Three recorded boots of 3.903, 4.403 and 6.903 s: the headline is the median (4.403 s,
    not boot 1's 3.903 s) with min–max, and it stays while another boot is shown; the SVG says
    the same above its boots."""
    run = recorded_run(tmp_path / "run", [0.0, 0.5, 3.0])
    want = "power-on → ready: median 4.403 s · min–max 3.903–6.903 s · 3 boots"
    p = open_report(report(tmp_path, str(run)))
    assert p.page.inner_text("#headline") == want
    assert "showing boot 1 of 3: 3.903 s" in p.page.inner_text("#sub")
    # the statistics table agrees, with the median's interval (3 boots: min to max, 75 %)
    total = p.page.locator("#t-stats tbody tr").first.inner_text().split("\t")
    assert total[0] == "total (power-on → ready)" and "4.403 s" in total and "3.903–6.903 s (75 %)" in total
    p.page.select_option("#boot-select", "2")
    assert p.page.inner_text("#headline") == want
    assert "showing boot 3 of 3: 6.903 s" in p.page.inner_text("#sub")
    assert page_width(p) <= WIDTH
    assert p.errors == []
    svg = report(tmp_path, str(run), "--format", "svg", name="run.svg").read_bytes()
    assert want in [el.text for el in ET.fromstring(svg).iter(NS + "text")]


def test_run_folder_median_leaves_out_a_boot_that_never_got_ready(tmp_path: Path) -> None:
    run = recorded_run(tmp_path / "run", [0.0, 0.5, 3.0, 1.0], cut_ready=frozenset({3}))
    (g,) = analyze_inputs([str(run)])
    bt = boots_total(g.analysis.boots)
    assert bt.stat is not None and (bt.stat.n, bt.boots) == (3, 4)
    assert bt.text(fmt_duration) == "power-on → ready: median 4.403 s · min–max 3.903–4.903 s · 3 of 4 boots"
