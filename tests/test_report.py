"""The HTML report in a real browser: Debian's headless Chromium driven by Playwright.

Every test loads a report written by the real ``bootlens report`` command and checks what a
user would see and do: the timeline draws the boot's events, wheel zoom and keys change the
view, hovering shows the event and its source line, clicking scrolls the log to that line, and
nothing is fetched or executed that the report did not ship.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import orjson
import pytest

from bootlens.timeline.inputs import analyze_inputs
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.core.model import Event
from bootlens.render.html import _embed, render_html
from bootlens.render.html_columns import _pack
from bootlens.render.html_data import report_data

CORPUS = Path(__file__).parent / "data" / "corpus"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the test extra installs it
    sync_playwright = None  # type: ignore[assignment]

HAVE_BROWSER = sync_playwright is not None and os.path.exists(CHROMIUM)
if os.environ.get("CI") and not HAVE_BROWSER:  # CI must run the browser tests, not skip them
    raise RuntimeError("CI: chromium and playwright are required (make system installs chromium)")
needs_browser = pytest.mark.skipif(not HAVE_BROWSER, reason="needs /usr/bin/chromium and playwright")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-default-apps"]


def report(tmp: Path, *args: str, name: str = "report.html") -> Path:
    out = tmp / name
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "report", *args, "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not HAVE_BROWSER:
        pytest.skip("needs /usr/bin/chromium and playwright")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Loaded:
    """A report open in a page, with everything the page asked for and complained about."""

    def __init__(self, browser: Browser, path: Path, width: int = 1400, height: int = 1000,
                 init_script: str | None = None) -> None:
        self.page: Page = browser.new_page(viewport={"width": width, "height": height})
        if init_script:  # runs before the page's own scripts
            self.page.add_init_script(init_script)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", dialog)
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=15_000)
        self.frame()

    def js(self, expr: str) -> Any:
        return self.page.evaluate(expr)

    def frame(self) -> None:
        """Wait until the canvas has drawn the current view."""
        self.page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def canvas_point(self, x: float, y: float) -> tuple[float, float]:
        box = self.page.locator("#tl-canvas").bounding_box()
        assert box is not None
        return box["x"] + x, box["y"] + y

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def grab_page(browser: Browser, tmp_path: Path) -> Iterator[Loaded]:
    page = Loaded(browser, report(tmp_path, str(GRAB), "--marker", "ready=APP READY"))
    yield page
    page.close()


def placed_events(path: Path, *markers: str) -> int:
    """Events the timeline should draw: every event with a time that is not a marker line."""
    groups = analyze_inputs([str(path)], ParseOptions(tuple(MarkerSpec.parse(m) for m in markers)))
    return len(report_data(groups)["boots"][0]["ev"]["s"])


@needs_browser
def test_corpus_report_loads_offline_and_draws_every_event(grab_page: Loaded) -> None:
    p = grab_page
    expected = placed_events(GRAB, "ready=APP READY")
    assert expected > 900  # 918 initcalls, PCI fixups, probes, the autoboot delay
    assert p.js("bootlens.total()") == expected
    assert p.js("bootlens.stats.visible") == expected  # the whole boot is in view at first
    assert p.page.inner_text("#headline") == "first byte → ready: 3.903 s"
    assert "bootloader (U-Boot)" in p.page.inner_text("#stagebar")
    assert p.page.locator("#t-initcalls tbody tr").count() == 25
    assert p.page.locator("#t-initcalls tbody tr").first.inner_text().startswith("crypto_algapi_init")
    assert p.errors == [] and p.dialogs == []
    assert p.requests == [p.url]  # the file itself, nothing else


@needs_browser
def test_wheel_zoom_keys_and_reset(grab_page: Loaded) -> None:
    p = grab_page
    total = p.js("bootlens.stats.visible")
    span0 = p.js("bootlens.v1 - bootlens.v0")
    i = p.js("bootlens.find('crypto_algapi_init')")
    at = p.js(f"bootlens.locate({i})")
    p.page.mouse.move(*p.canvas_point(at["x"], at["y"]))
    for _ in range(6):
        p.page.mouse.wheel(0, -400)
    p.frame()
    span1 = p.js("bootlens.v1 - bootlens.v0")
    assert span1 < span0 / 10
    visible = p.js("bootlens.stats.visible")
    assert 0 < visible < total
    # zoomed around the cursor: the initcall under it is still in view
    start = p.js(f"bootlens.boot.ev.s[{i}]")
    assert p.js("bootlens.v0") <= start <= p.js("bootlens.v1")
    p.page.locator("#tl-canvas").focus()
    p.page.keyboard.press("ArrowRight")
    p.frame()
    assert p.js("bootlens.v0") > start - span1  # panned right
    p.page.keyboard.press("-")
    p.frame()
    assert p.js("bootlens.v1 - bootlens.v0") == pytest.approx(span1 * 2, rel=0.01)
    p.page.keyboard.press("0")
    p.frame()
    assert p.js("bootlens.v1 - bootlens.v0") == pytest.approx(span0)
    assert p.js("bootlens.stats.visible") == total
    # drag pans without changing the zoom
    p.page.click("#zoom-in")
    p.frame()
    v0, span = p.js("bootlens.v0"), p.js("bootlens.v1 - bootlens.v0")
    x, y = p.canvas_point(700, 60)
    p.page.mouse.move(x, y)
    p.page.mouse.down()
    p.page.mouse.move(x - 200, y, steps=5)
    p.page.mouse.up()
    p.frame()
    assert p.js("bootlens.v0") > v0
    assert p.js("bootlens.v1 - bootlens.v0") == pytest.approx(span)
    assert p.errors == []


@needs_browser
def test_hover_shows_the_event_and_click_scrolls_the_log(grab_page: Loaded) -> None:
    p = grab_page
    i = p.js("bootlens.find('crypto_algapi_init')")
    at = p.js(f"bootlens.locate({i})")
    p.page.mouse.move(*p.canvas_point(at["x"], at["y"]))
    tip = p.page.locator("#tip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert "crypto_algapi_init" in text and "166.345 ms" in text and "line 2025" in text
    assert "calling  crypto_algapi_init" in text  # the source line itself
    p.page.mouse.click(*p.canvas_point(at["x"], at["y"]))
    p.frame()
    hl = p.page.locator("#log .r.hl")
    assert hl.count() == 2  # the calling and the returned line
    assert hl.first.get_attribute("data-line") == "2025"
    assert "crypto_algapi_init" in hl.first.inner_text()
    assert hl.first.is_visible()  # scrolled into the log's view
    assert "line 2025" in p.page.inner_text("#selected")
    # a table row selects the same way
    p.page.locator("#t-initcalls tbody tr").nth(1).click()
    p.frame()
    assert p.page.locator("#log .r.hl").first.get_attribute("data-line") == "563"
    # sorting a table by name
    p.page.locator("#t-initcalls th", has_text="name").click()
    names = p.page.locator("#t-initcalls tbody tr td:first-child").all_inner_texts()
    assert names == sorted(names)
    assert p.errors == []


@needs_browser
def test_hostile_log_runs_nothing(browser: Browser, tmp_path: Path) -> None:
    """Every byte of a log is untrusted: markup in it is shown as text, never run."""
    payloads = [
        "<script>window.__pwned=1;alert(1)</script>",
        '"><img src=x onerror="window.__pwned=2;alert(2)">',
        "</script><script>window.__pwned=3</script>",
        "<!--<script>window.__pwned=4</script>",
        "\u2028javascript:alert(5)",
    ]
    text = GRAB.read_text(errors="replace").splitlines()
    hostile = [text[0]]
    for k, pl in enumerate(payloads):
        hostile.append(f"[0.000{k}00 0.000001] {pl}")
    hostile += text[1:]
    src = tmp_path / "<svg onload=alert('name')>.log"
    src.write_text("\n".join(hostile) + "\n")
    path = report(tmp_path, str(src), "--marker", "ready=APP READY",
                  "--marker", "<i>alert(6)</i>=Run /init")
    html = path.read_text()
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    p = Loaded(browser, path)
    try:
        p.page.wait_for_timeout(300)
        assert p.dialogs == []
        assert p.js("window.__pwned") is None
        assert p.page.locator("img").count() == 0
        assert p.page.locator("script").count() == 2  # the data block and the viewer
        log = p.page.inner_text("#log")
        assert "<script>window.__pwned=1;alert(1)</script>" in log  # shown, as text
        assert "<svg onload=alert('name')>" in p.page.inner_text("#sub")
        assert p.page.locator("svg").count() == 0
        assert p.js("bootlens.boot.marks.map(m => m.n)").count("<i>alert(6)</i>") == 1
        assert p.page.locator("i").count() == 0
        assert p.requests == [p.url]
        assert p.errors == []
    finally:
        p.close()


@needs_browser
def test_bidi_controls_are_shown_escaped(browser: Browser, tmp_path: Path) -> None:
    """A U+202E in an initcall's name, in a log line (with a zero-width space, a BOM and a C1
    NEL) and in the file's name: the page shows each as an escape (\\u202e) in the headline,
    the tables, the tooltip and the log, and no element's text holds the character itself."""
    from test_visible import INVISIBLE, RLO_LOG

    src = tmp_path / "rlo\u202egol.log"
    src.write_text(RLO_LOG, encoding="utf-8")
    p = Loaded(browser, report(tmp_path, str(src), "--marker", "ready=APP READY"))
    try:
        assert "rlo\\u202egol.log" in p.page.inner_text("#sub")
        assert p.page.locator("#t-initcalls tbody tr").first.inner_text().startswith("evil\\u202e_init")
        assert "note \\u202eflip\\u202c, zwsp\\u200b bom\\ufeff nel\\x85 end" in p.page.inner_text("#log")
        i = p.js("bootlens.find('evil\\\\u202e_init')")  # the name the canvas draws, escaped
        at = p.js(f"bootlens.locate({i})")
        p.page.mouse.move(*p.canvas_point(at["x"], at["y"]))
        assert "calling  evil\\u202e_init+0x0/0x10 @ 1" in p.page.locator("#tip").inner_text()
        # nothing shown holds an invisible character: not the page, not its data, not the title
        everything = p.js("document.title + document.documentElement.textContent")
        assert not [c for c in INVISIBLE if c in everything]
        assert p.errors == []
    finally:
        p.close()


@needs_browser
def test_run_folder_report_has_a_boot_picker_and_statistics(browser: Browser, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for i in (1, 2, 3):
        shutil.copy(GRAB, run / f"boot-{i}.log")
    (run / "run.json").write_text('{"markers": {"ready": "APP READY"}}')
    p = Loaded(browser, report(tmp_path, str(run)))
    try:
        assert p.page.locator("#boot-select option").count() == 3
        assert p.page.is_visible("#stats-wrap")
        assert "Statistics over 3 boots" in p.page.inner_text("#stats-title")
        assert "total (first byte → ready)" in p.page.inner_text("#t-stats")
        p.page.select_option("#boot-select", "2")
        p.frame()
        assert "boot-3.log" in p.page.inner_text("#sub")
        assert p.errors == []
    finally:
        p.close()


def test_embedded_json_cannot_close_its_script_element() -> None:
    raw = _embed({"a": "</script><!-- <script>", "b": "\u2028\u2029&"}).decode()
    assert "<" not in raw and ">" not in raw and "&" not in raw and "\u2028" not in raw
    assert orjson.loads(raw) == {"a": "</script><!-- <script>", "b": "\u2028\u2029&"}


def test_the_page_in_pieces_is_the_page(tmp_path: Path) -> None:
    """render_html_pieces written by write_output (the big values writing themselves) is
    render_html's page, byte for byte, to a file and to standard output; a write that fails
    part way leaves no file behind, and says so in one line."""
    import errno

    from bootlens.cli.exits import write_output
    from bootlens.render.html import render_html_pieces

    src = tmp_path / "boot.log"
    lines = []
    for i in range(3_000):
        t = 1.0 + i * 0.001
        lines.append(f"[{t:12.6f}] calling  fn_{i}+0x0/0x40 @ {1 + i % 3}")
        lines.append(f"[{t + 0.0004:12.6f}] <b>&amp;</b> \"quoted\" \\ line {i}")
        lines.append(f"[{t + 0.0005:12.6f}] initcall fn_{i}+0x0/0x40 returned 0 after 400 usecs")
    src.write_text("\n".join(lines) + "\n")
    groups = analyze_inputs([str(src)])
    pieces = render_html_pieces(groups)
    # the string table, the event columns, the log's lines and their times
    assert sum(not isinstance(p, bytes) for p in pieces) == 4
    out = tmp_path / "r.html"
    write_output(str(out), pieces)
    assert out.read_bytes() == render_html(groups) and b"\\u003cb\\u003e\\u0026amp;" in out.read_bytes()
    cmd = [sys.executable, "-m", "bootlens", "report", str(src), "-o"]
    subprocess.run([*cmd, str(out)], capture_output=True, check=True)
    piped = subprocess.run([*cmd, "-"], capture_output=True, check=True)
    assert piped.stdout == out.read_bytes()

    class Failing:
        def write_to(self, f: Any) -> None:
            f.write(b"x" * 100_000)
            raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(SystemExit) as ex:
        write_output(str(out), [b"<!DOCTYPE html>", Failing(), b"</html>"])
    assert ex.value.code == 2 and not out.exists()


def test_report_size_grows_linearly_with_events(tmp_path: Path) -> None:
    def log(n: int) -> Path:
        lines = []
        for i in range(n):
            t = 1.0 + i * 0.001
            lines.append(f"[{t:12.6f}] calling  fn_{i % 500}+0x0/0x40 @ 1")
            lines.append(f"[{t + 0.0004:12.6f}] initcall fn_{i % 500}+0x0/0x40 returned 0 after 400 usecs")
        path = tmp_path / f"n{n}.log"
        path.write_text("\n".join(lines) + "\n")
        return path

    sizes = [len(render_html(analyze_inputs([str(log(n))]))) for n in (5_000, 10_000, 20_000)]
    per_event = [(b - a) / n for a, b, n in zip(sizes, sizes[1:], (5_000, 10_000))]
    assert per_event[1] == pytest.approx(per_event[0], rel=0.1)
    assert per_event[0] < 200  # bytes per initcall: the two log lines and the event columns


def first_fit(items: list[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """The packing the report promises, the plain way: each span in order of start goes into the
    lowest-numbered lane whose last span has ended (quadratic; _pack does it with heaps)."""
    lanes: list[list[tuple[int, int, int]]] = []
    ends: list[int] = []
    for it in sorted(items):
        s, d, _ = it
        j = next((j for j, end in enumerate(ends) if end <= s), len(ends))
        if j == len(ends):
            lanes.append([])
            ends.append(0)
        lanes[j].append(it)
        ends[j] = s + max(d, 0)
    return lanes


class _Copies(Sequence[Event]):
    """Events as a lazy sequence may hand them out: a new object for each access."""

    def __init__(self, events: Sequence[Event]) -> None:
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | Sequence[Event]:
        if isinstance(i, slice):
            return [Event(*e) for e in self._events[i]]
        return Event(*self._events[i])


def test_report_data_does_not_depend_on_event_identity(tmp_path: Path) -> None:
    """The top lists point into the event columns by the events' values: the same page when
    ``boot.events`` hands out a new object for each event on each access."""
    log = tmp_path / "boot.log"
    log.write_text("[    0.000000] Linux version 6.1.0 (b@h) #1 SMP\n" + "".join(
        f"[    {0.1 + i / 1000:.6f}] calling  f{i}_init+0x0/0x10 @ {1 + i % 3}\n"
        f"[    {0.1 + i / 1000 + 0.0005:.6f}] initcall f{i}_init+0x0/0x10 returned 0 after {100 + i} usecs\n"
        for i in range(40)) + "[    0.200000] Run /init as init process\n[    0.300000] APP READY\n")
    groups = analyze_inputs([str(log)], ParseOptions((MarkerSpec.parse("ready=APP READY"),)))
    want = report_data(groups)
    assert len(want["boots"][0]["top"]["initcalls"]) == 10
    g = groups[0]
    b = g.analysis.boots[0]
    lazy = b._replace(boot=b.boot.replace(events=_Copies(b.boot.events)))
    g2 = g._replace(analysis=g.analysis._replace(boots=(lazy,)))
    assert report_data([g2]) == want


def test_lane_packing_is_first_fit() -> None:
    """Instants (-1), zero-length spans, ties and nested spans: lane for lane what first fit
    gives, and no lane holds two spans that overlap."""
    r = random.Random(10)
    for _ in range(500):
        items = [(r.randrange(50), r.choice((-1, 0, r.randrange(30))), i) for i in range(r.randrange(80))]
        lanes = _pack(list(items))
        assert lanes == first_fit(items)
        for lane in lanes:
            assert all(s + max(d, 0) <= s2 for (s, d, _), (s2, _, _) in zip(lane, lane[1:]))


def test_overlapping_initcalls_are_packed_into_lanes(tmp_path: Path) -> None:
    """2,000 initcalls whose calling lines are missing (no pid: one row), each overlapping the
    next 99: 100 lanes, each sorted and free of overlaps, every event in one."""
    log = tmp_path / "overlap.log"
    lines = [f"[{0.5 + i * 1e-5 + 1e-3:12.6f}] initcall fn_{i}+0x0/0x40 returned 0 after 1000 usecs"
             for i in range(2000)]
    log.write_text("\n".join(lines) + "\n")
    boot = report_data(analyze_inputs([str(log)]))["boots"][0]
    (row,) = [r for r in boot["rows"] if r["title"] == "initcalls"]
    assert len(row["lanes"]) == 100
    s, d = boot["ev"]["s"], boot["ev"]["d"]
    assert sum(b - a for a, b in row["lanes"]) == 2000
    for a, b in row["lanes"]:
        assert all(s[i] + d[i] <= s[i + 1] for i in range(a, b - 1))


@needs_browser
def test_compare_report_waterfall_and_tables(browser: Browser, tmp_path: Path) -> None:
    """bootlens compare --html: two run folders, B without crypto_algapi_init."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    text = GRAB.read_bytes()
    lines = text.split(b"\n")
    without = b"\n".join(x for x in lines if b"crypto_algapi_init" not in x)
    for i in (1, 2, 3):
        (a / f"boot-{i}.log").write_bytes(text)
        (b / f"boot-{i}.log").write_bytes(without)
    for d in (a, b):
        (d / "run.json").write_text('{"markers": {"ready": "APP READY"}}')
    out = tmp_path / "compare.html"
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "compare", str(a), str(b), "--html", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "crypto_algapi_init" in r.stdout  # the terminal tables are printed too
    p = Loaded(browser, out)
    try:
        assert p.page.inner_text("#headline") == "B against A"
        bars = p.page.locator(".waterfall svg rect")
        kinds = [bars.nth(i).get_attribute("data-kind") for i in range(bars.count())]
        assert kinds[0] == "total" and kinds[-1] == "total" and len(kinds) >= 4
        first = p.page.locator("#pairs table").first.locator("tbody tr").first.inner_text()
        assert first.startswith("crypto_algapi_init (removed)") and "yes" in first
        assert p.page.locator("#t-figures tbody tr").count() >= 6
        assert p.errors == [] and p.requests == [p.url]
    finally:
        p.close()


@needs_browser
def test_svg_and_perfetto_exports_open(browser: Browser, tmp_path: Path) -> None:
    """The SVG renders in Chromium as an image with every initcall bar; the Perfetto JSON is a
    trace object (its format is checked in depth by tests/test_perfetto.py)."""
    svg = report(tmp_path, str(GRAB), "--marker", "ready=APP READY", "--format", "svg", name="boot.svg")
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(svg.resolve().as_uri())
    assert page.evaluate("document.documentElement.tagName") == "svg"
    box = page.evaluate("(() => { const b = document.documentElement.getBBox(); return [b.width, b.height]; })()")
    assert box[0] > 1000 and box[1] > 300
    assert page.locator("text", has_text="crypto_algapi_init").count() >= 1
    assert errors == []
    page.close()
    trace = report(tmp_path, str(GRAB), "--marker", "ready=APP READY", "--format", "perfetto",
                   name="boot.perfetto.json")
    obj = orjson.loads(trace.read_bytes())
    assert {e["ph"] for e in obj["traceEvents"]} >= {"X", "i", "M"}


@pytest.mark.slow
@needs_browser
def test_report_of_a_real_run_folder_loads_zooms_and_clicks(browser: Browser, tmp_path: Path) -> None:
    """`bootlens run qemu-arm64 --repeat 3 --report`: three real boots, one report."""
    if shutil.which("qemu-system-aarch64") is None or not Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").exists():
        pytest.skip("qemu-system-arm and u-boot-qemu not installed (make test installs them)")
    out = tmp_path / "run.html"
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--repeat", "3", "-o",
                        str(tmp_path / "run"), "--report", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    p = Loaded(browser, out)
    try:
        assert p.page.locator("#boot-select option").count() == 3
        assert p.page.inner_text("#headline").startswith("power-on → ready: ")
        assert "Statistics over 3 boots" in p.page.inner_text("#stats-title")
        total = p.js("bootlens.stats.visible")
        assert total == p.js("bootlens.total()") and total >= 1  # the autoboot delay at least
        p.page.locator("#tl-canvas").focus()
        for _ in range(3):
            p.page.keyboard.press("+")
        p.frame()
        assert p.js("bootlens.v1 - bootlens.v0") < p.js("bootlens.hi - bootlens.lo") / 4
        i = p.js("bootlens.find('autoboot delay (2 s)')")
        assert i >= 0
        p.page.keyboard.press("0")
        p.frame()
        at = p.js(f"bootlens.locate({i})")
        p.page.mouse.click(*p.canvas_point(at["x"], at["y"]))
        p.frame()
        assert "Hit any key to stop autoboot" in p.page.locator("#log .r.hl").first.inner_text()
        p.page.select_option("#boot-select", "1")
        p.frame()
        assert "boot-2.rec" in p.page.inner_text("#sub")
        assert p.errors == [] and p.requests == [p.url]
    finally:
        p.close()


def test_positions_by_bisection_and_by_walk_agree() -> None:
    """html._positions: the wanted events' indices, found by bisection over the line column of
    events in line order and by the walk over every line when they are not; an equal event on
    another line is not taken, the same line's equal events go to the first, a missing one is
    left out."""
    from bootlens.core.model import Kind
    from bootlens.render.html_data import _positions

    def ev(name: str, line: int) -> Event:
        return Event(Kind.MARKER, name, None, None, line, None, None)

    evs = [ev("a", 1), ev("b", 2), ev("b", 2), ev("c", 4), ev("a", 7), ev("d", 9)]
    want = [ev("b", 2), ev("a", 7), ev("c", 5), evs[5]]
    got = _positions(evs, len(evs), want)
    assert got == {want[0]: 1, want[1]: 4, evs[5]: 5}
    assert _positions(evs, 5, want) == {want[0]: 1, want[1]: 4}  # the first n events only
    shuffled = [evs[i] for i in (5, 3, 4, 1, 0, 2)]  # not in line order: the walk
    assert _positions(shuffled, len(shuffled), want) == {want[0]: 3, want[1]: 2, evs[5]: 0}
