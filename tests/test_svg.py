"""``bootlens report --format svg``: the static boot graph.

Figures of the corpus logs (tests/data/corpus), read off the logs: the arm64 grabserial log has
918 returned initcalls (912 on pid 1, 6 on pid 0), 10 device probes, 1 PCI fixup and one U-Boot
step (the 2 s autoboot delay); the x86_64 initcall log has 670 initcalls, 13 probes and 15 PCI
fixups; the x86_64 tp_printk log has 5 user processes (init, three busybox children, the
final init) and 33 kernel threads that exit (43 more never exit and are not drawn).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from bootlens.timeline.inputs import Group, analyze_inputs
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.render.svg import ASCENT_EM, CHAR_EM, DESCENT_EM, WIDTH, render_svg
from bootlens.render.svglayout import LabelRows

from conftest import CORPUS

NS = "{http://www.w3.org/2000/svg}"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
X86_INITCALL = CORPUS / "qemu-x86_64-initcall.console.log"
X86_TRACE = CORPUS / "qemu-x86_64-tp_printk.console.log"
ARM_CONSOLE = CORPUS / "qemu-arm64-uboot.console.log"
READY = ParseOptions((MarkerSpec.parse("ready=APP READY"),))


def groups(*paths: Path | str) -> list[Group]:
    return analyze_inputs([str(p) for p in paths], READY)


def svg_of(*paths: Path | str) -> ET.Element:
    return ET.fromstring(render_svg(groups(*paths)))


def bars(root: ET.Element) -> Counter[str]:
    """Bars by kind: every ``rect`` with class "bar KIND ..."."""
    out: Counter[str] = Counter()
    for el in root.iter(NS + "rect"):
        cls = el.get("class", "").split()
        if cls and cls[0] == "bar":
            out[cls[1]] += 1
    return out


def texts(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(NS + "text"))


def box(el: ET.Element) -> tuple[float, float, float, float]:
    """The box a text takes, from its x, y, font-size, anchor and length: the estimate the
    renderer promises (CHAR_EM per character, ASCENT_EM above and DESCENT_EM below the baseline)."""
    size = float(el.get("font-size", "0"))
    w = len(el.text or "") * CHAR_EM * size
    x, y = float(el.get("x", "0")), float(el.get("y", "0"))
    x0 = {"start": x, "middle": x - w / 2, "end": x - w}[el.get("text-anchor", "start")]
    return x0, x0 + w, y - ASCENT_EM * size, y + DESCENT_EM * size


def overlaps(root: ET.Element) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap (sweep over boxes sorted by their left edge)."""
    items = sorted((box(el), el.text or "") for el in texts(root))
    found = []
    for i, ((x0, x1, y0, y1), s) in enumerate(items):
        for (a0, a1, b0, b1), t in items[i + 1:]:
            if a0 >= x1 - 0.01:
                break
            if b0 < y1 - 0.01 and y0 < b1 - 0.01:
                found.append((s, t))
    return found


@pytest.mark.parametrize("log, expected", [
    (GRAB, {"initcall": 918, "probe": 10, "fixup": 1, "bootloader": 1}),
    (X86_INITCALL, {"initcall": 670, "probe": 13, "fixup": 15}),
    (X86_TRACE, {"process": 5, "kthread": 33}),
    (ARM_CONSOLE, {}),
])
def test_one_bar_per_event(log: Path, expected: dict[str, int]) -> None:
    root = svg_of(log)
    assert root.tag == NS + "svg"
    assert dict(bars(root)) == expected


def test_bars_carry_tooltips() -> None:
    """Every bar has a <title>: its own, or its group's (a process bar and its exec part)."""
    root = svg_of(GRAB)
    tips = []
    for parent in root.iter():
        for el in parent:
            if el.get("class", "").startswith("bar "):
                title = el.find(NS + "title")
                if title is None:
                    title = parent.find(NS + "title")
                assert title is not None, el.attrib
                tips.append(title.text or "")
    assert len(tips) == 930
    slow = [t for t in tips if t.startswith("initcall: crypto_algapi_init")]
    assert slow == ["initcall: crypto_algapi_init\nstart 3.575256 s, duration 166.3 ms\nlines 2025–2026\n"
                    "pid 1, returned 0"]


@pytest.mark.parametrize("log", [GRAB, X86_INITCALL])
def test_longest_initcalls_are_labelled(log: Path) -> None:
    g = groups(log)
    top = g[0].analysis.boots[0].top_initcalls
    assert len(top) == 10
    labels = [el.text or "" for el in texts(ET.fromstring(render_svg(g)))]
    for e in top:
        assert any(s.startswith(e.name + " ") and s.endswith("s") for s in labels), e.name


def test_labels_with_durations() -> None:
    labels = {el.text for el in texts(svg_of(GRAB))}
    assert "crypto_algapi_init 166.3 ms" in labels
    assert "of_platform_default_populate_init 108.0 ms" in labels
    assert "autoboot delay (2 s) 2.089 s" in labels
    assert "ready 3.903 s" in labels
    assert "bootloader (U-Boot) 2.260 s" in labels


@pytest.mark.parametrize("log", [GRAB, X86_INITCALL, X86_TRACE, ARM_CONSOLE])
def test_no_two_labels_overlap(log: Path) -> None:
    root = svg_of(log)
    # (the console-only log has few events, and the legend lists only what is drawn)
    assert len(texts(root)) > (25 if log == ARM_CONSOLE else 40)
    assert overlaps(root) == []
    for el in texts(root):
        x0, x1, _, _ = box(el)
        assert 0 <= x0 and x1 <= WIDTH, el.text


def test_overlap_check_can_fail() -> None:
    """The geometric check itself finds two labels drawn on top of each other."""
    root = ET.fromstring(f'<svg xmlns="{NS[1:-1]}"><text x="10" y="20" font-size="10">initcall_a 1 ms</text>'
                         '<text x="60" y="24" font-size="10">initcall_b 2 ms</text>'
                         '<text x="60" y="40" font-size="10" text-anchor="end">clear</text></svg>')
    assert overlaps(root) == [("initcall_a 1 ms", "initcall_b 2 ms")]


def place(rows: LabelRows, asks: list[tuple[tuple[float, ...], float, float, bool, bool]]
          ) -> tuple[list[tuple[int, float] | None], int]:
    """Each label in turn: find its spot and take it; the spots and the rows used."""
    spots = []
    for xs, w, lead, must, lead_in_row in asks:
        spot = rows.find(xs, w, lead, must, lead_in_row)
        spots.append(spot)
        if spot is not None:
            rows.take(spot, w, lead, lead_in_row)
    return spots, rows.used


def test_label_rows_index_gives_the_same_spots() -> None:
    """Past a few rows LabelRows answers from an index: the same spots as asking row by row,
    with or without the labels announced, on labels that stack at one x, spread, clamp at the
    edges, must be shown or may be dropped."""
    r = random.Random(11)
    lo, hi = 196.0, 1588.0
    for _ in range(400):
        asks = []
        for _ in range(r.randrange(1, 90)):
            c = r.choice((700.0, lo + r.randrange(40) * 7.3, lo + r.random() * (hi - lo), lo - 20, hi + 20))
            w = r.choice((62.0, 6.2 * r.randrange(30), 1500.0))
            xs = r.choice(((c + 3, c - 3 - w), (c,), (c, c - w), ()))
            asks.append((xs, w, c, r.random() < 0.4, r.random() < 0.5))
        max_rows = r.choice((1, 3, 5))
        plan = [(xs, w, c, lir) for xs, w, c, _, lir in asks] if r.random() < 0.5 else []
        by_row = place(LabelRows(lo, hi, max_rows, index_after=10**9), asks)
        indexed = place(LabelRows(lo, hi, max_rows, plan=plan, index_after=r.choice((0, 1, 4))), asks)
        assert indexed == by_row


def test_markers_at_one_time_all_labelled(tmp_path: Path) -> None:
    """300 marker lines at one printk time: 300 labels in 300 rows (the index's case), none
    overlapping another."""
    log = tmp_path / "marks.log"
    log.write_text("[    0.000000] Linux version 6.1.0\n" + "".join(f"[    1.000000] MARK {i}\n" for i in range(300))
                   + "[    1.500000] Run /init as init process\n[    2.000000] APP READY\n")
    opts = ParseOptions((MarkerSpec.parse("ready=APP READY"), MarkerSpec.parse("mark=MARK")))
    root = ET.fromstring(render_svg(analyze_inputs([str(log)], opts)))
    labels = [el for el in texts(root) if (el.text or "").startswith("mark 1.000 s")]
    assert len(labels) == 300
    assert len({el.get("y") for el in labels}) == 300
    assert overlaps(root) == []


def test_run_folder_boots_stacked(tmp_path: Path) -> None:
    """A folder of repeated boots: one graph per boot, one under the other, on shared scales."""
    run = tmp_path / "run"
    run.mkdir()
    for i in (1, 2):
        shutil.copy(GRAB, run / f"boot-{i}.log")
    (run / "run.json").write_text('{"markers": {"ready": "APP READY"}}')
    root = ET.fromstring(render_svg(analyze_inputs([str(run)])))
    assert bars(root)["initcall"] == 2 * 918
    heads = [el.text or "" for el in texts(root) if "· boot " in (el.text or "")]
    assert [h.rsplit("· ", 1)[1] for h in heads] == ["boot 1 of 2", "boot 2 of 2"]
    assert overlaps(root) == []
    # the same scale for both boots: the same tick labels, at the same x
    ticks = [(el.get("x"), el.text) for el in texts(root) if el.get("text-anchor") == "middle"]
    half = len(ticks) // 2
    assert ticks[:half] == ticks[half:]


def test_hostile_log_is_escaped(tmp_path: Path) -> None:
    name = os.fsdecode(b"boot-\xff<script>.log")  # a non-UTF-8 file name, too
    log = tmp_path / name
    log.write_text(
        "U-Boot 2023.01 <script>alert(1)</script>\n"
        "Hit any key to stop autoboot:  0\n"
        "Starting kernel ...\n"
        "[    0.000000] Booting Linux on physical CPU 0x0\n"
        '[    0.000000] Linux version 6.1.0 "><img src=x onerror=alert(1)>\n'
        "[    0.100000] calling  <script>alert(1)</script>+0x0/0x10 @ 1\n"
        "[    0.300000] initcall <script>alert(1)</script>+0x0/0x10 returned 0 after 200000 usecs\n"
        '[    0.310000] calling  "><img+0x0/0x10 @ 1\n'
        '[    0.320000] initcall "><img+0x0/0x10 returned 0 after 5000 usecs\n'
        '[    0.400000] probe of "><img/onerror=alert(1) returned 0 after 100 usecs\n'
        "[    0.500000] Run /init as init process\n"
        '[    0.600000] "><img src=x onerror=alert(1)> APP READY\n'
    )
    data = render_svg(groups(log))
    root = ET.fromstring(data)
    for el in root.iter():
        assert not el.tag.lower().endswith("script")
        assert not any(a.lower().startswith("on") for a in el.attrib), el.attrib
    assert b"<script" not in data and b"<img" not in data
    # escaped, not dropped: the names come back as text
    labels = [el.text or "" for el in texts(root)]
    assert any(s.startswith("<script>alert(1)</script> 200.0 ms") for s in labels)
    assert any(s.startswith('"><img ') for s in labels)
    tips = [el.text or "" for el in root.iter(NS + "title")]
    assert any('"><img src=x onerror=alert(1)> APP READY' in t for t in tips)
    assert bars(root) == {"initcall": 2, "probe": 1}
    assert any("boot-\ufffd<script>.log" in s for s in labels)


def test_bidi_controls_are_shown_escaped(tmp_path: Path) -> None:
    """A U+202E in an initcall's name and in a line: shown as \\u202e in labels and tooltips,
    measured as drawn (six characters), never written as the character itself."""
    from test_visible import RLO_LOG

    log = tmp_path / "rlo.log"
    log.write_text(RLO_LOG, encoding="utf-8")
    data = render_svg(groups(log))
    assert not any(c in data.decode() for c in "\u202e\u202c\u200b\ufeff\x85")
    root = ET.fromstring(data)
    assert "evil\\u202e_init 800.0 ms" in [el.text for el in texts(root)]
    tips = [el.text or "" for el in root.iter(NS + "title")]
    assert any("initcall: evil\\u202e_init" in t for t in tips)
    assert overlaps(root) == []


def test_deterministic() -> None:
    g = groups(GRAB, X86_TRACE)
    assert render_svg(g) == render_svg(groups(GRAB, X86_TRACE))


def test_self_contained() -> None:
    data = render_svg(groups(GRAB))
    root = ET.fromstring(data)
    for el in root.iter():
        for k, v in el.attrib.items():
            assert "href" not in k and "url(" not in v, (el.tag, k)
    assert b"@import" not in data and b"@font-face" not in data


def test_no_boots() -> None:
    root = ET.fromstring(render_svg([]))
    assert [el.text for el in texts(root) if el.text == "no boots found in the input"]


def test_cli_writes_svg(tmp_path: Path) -> None:
    out = tmp_path / "graph.svg"
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "report", "--format", "svg", "-o", str(out),
                        "--marker", "ready=APP READY", str(GRAB)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert "svg report of 1 boot" in r.stderr
    assert bars(ET.parse(out).getroot())["initcall"] == 918
