"""The advisor's findings in the HTML report, in a real browser (Debian's Chromium through
Playwright, as in test_report.py): the table lists each boot's findings worst first, sorts,
and a click shows the finding's arithmetic and scrolls the log to its first evidence line.
Strings from the log stay text.
"""

from __future__ import annotations

from pathlib import Path

from test_report import GRAB, Loaded, browser, needs_browser, report  # noqa: F401  (browser: fixture)

from bootlens.timeline.inputs import analyze_inputs
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.render.html_data import report_data

HERE = Path(__file__).parent
RUN = HERE / "data" / "advise" / "qemu-arm64-run"
READY = ("--marker", "ready=APP READY")


def test_report_data_has_the_findings_of_each_boot() -> None:
    groups = analyze_inputs([str(GRAB), str(RUN)], ParseOptions((MarkerSpec.parse("ready=APP READY"),)))
    d = report_data(groups)
    assert len(d["findings"]) == len(d["boots"]) == 3  # findings[i] belongs to boots[i]
    first = d["findings"][0][0]
    assert first["rule"] == "uboot.autoboot_delay" and first["saving_s"] == 2.0
    assert first["evidence"] == [{"line": 14, "text": "Hit any key to stop autoboot:  2  1  0"}]
    run_rules = {f["rule"] for f in d["findings"][1]}
    assert {"kernel.serial_console", "uboot.console"} <= run_rules


@needs_browser
def test_findings_table_sorts_and_a_click_scrolls_the_log(browser, tmp_path: Path) -> None:  # noqa: F811
    p = Loaded(browser, report(tmp_path, str(GRAB), *READY))
    try:
        assert p.page.is_visible("#findings-wrap")
        rows = p.page.locator("#t-findings tbody tr")
        n = len(p.js("bootlens.boot && JSON.parse(document.getElementById('bootlens-data').textContent)"
                     ".findings[0]"))
        assert rows.count() == n >= 4
        assert rows.first.inner_text().startswith("2.000 s\thigh\tU-Boot waits 2.000 s")
        assert "no estimate" in rows.nth(n - 1).inner_text()  # findings without a number come last
        # the serial console finding: its detail and its first evidence line (25, Booting Linux)
        row = p.page.locator("#t-findings tbody tr", has_text="kernel.serial_console")
        row.click()
        p.frame()
        assert p.js("bootlens.logHl") == [25, 25]
        hl = p.page.locator("#log .r.hl")
        assert hl.count() == 1 and "Booting Linux on physical CPU" in hl.inner_text()
        detail = p.page.inner_text("#finding-detail")
        assert "arithmetic" in detail and "141,848 bytes" in detail and "console baud unknown" in detail
        assert "line 2103" in detail and "Run /init as init process" in detail
        # sort by saving: first click largest first, second smallest first; 'no estimate' stays last
        def savings() -> list[float | None]:
            out: list[float | None] = []
            for i in range(n):
                cell = rows.nth(i).inner_text().split("\t")[0]
                num, _, unit = cell.partition(" ")
                out.append(None if cell == "no estimate" else float(num) * {"s": 1, "ms": 1e-3, "µs": 1e-6}[unit])
            return out

        p.page.locator("#t-findings th", has_text="saving").click()
        down = savings()
        p.page.locator("#t-findings th", has_text="saving").click()
        up = savings()
        nums = [x for x in down if x is not None]
        assert down[0] == 2.0 and nums == sorted(nums, reverse=True) and down[len(nums):] == [None] * (n - len(nums))
        assert [x for x in up if x is not None] == sorted(nums) and up[-1] is None
        p.page.locator("#t-findings th", has_text="rule").click()
        rules = [rows.nth(i).inner_text().split("\t")[4] for i in range(n)]
        assert rules == sorted(rules)
        assert p.errors == [] and p.dialogs == [] and p.requests == [p.url]
    finally:
        p.close()


@needs_browser
def test_each_boot_of_a_run_folder_shows_its_own_findings(browser, tmp_path: Path) -> None:  # noqa: F811
    p = Loaded(browser, report(tmp_path, str(RUN)))
    try:
        assert p.page.locator("#boot-select option").count() == 2
        text1 = p.page.inner_text("#t-findings")
        p.page.select_option("#boot-select", "1")
        p.frame()
        text2 = p.page.inner_text("#t-findings")
        assert "uboot.autoboot_delay" in text1 and "uboot.autoboot_delay" in text2
        p.page.locator("#t-findings tbody tr", has_text="uboot.console").click()
        assert p.js("bootlens.logHl") == [3, 3]
        assert "built without CONFIG_SILENT_CONSOLE" in p.page.inner_text("#finding-detail")
        assert p.errors == []
    finally:
        p.close()


@needs_browser
def test_hostile_evidence_is_shown_as_text(browser, tmp_path: Path) -> None:  # noqa: F811
    payload = '"><img src=x onerror="window.__pwned=1;alert(1)"><script>window.__pwned=2</script>'
    log = tmp_path / "hostile.log"
    log.write_text(GRAB.read_text().replace("U-Boot 2023.01+dfsg-2+deb12u3", "U-Boot 2023.01 " + payload))
    path = report(tmp_path, str(log), *READY)
    assert "<img src=x" not in path.read_text()
    p = Loaded(browser, path)
    try:
        p.page.locator("#t-findings tbody tr", has_text="uboot.console").click()
        p.page.wait_for_timeout(200)
        assert payload in p.page.inner_text("#finding-detail")
        assert p.page.locator("img").count() == 0 and p.js("window.__pwned") is None
        assert p.dialogs == [] and p.errors == []
    finally:
        p.close()
