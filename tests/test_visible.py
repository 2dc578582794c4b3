"""Text shown to a person is neutralised: bidi controls and other invisible characters from a
log are shown as escapes in the terminal (``analyze``, ``advise``); the SVG and HTML reports are
tested in test_svg.py and test_report.py (the HTML one in Chromium)."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from bootlens.render.visible import visible, visible_data

# U+202E RIGHT-TO-LEFT OVERRIDE in an initcall's name and in a plain line with other invisible
# characters (hand-written; the kind of line a fuzzer or a hostile device sends)
RLO_LOG = (
    "[    0.000000] Linux version 6.1.0 (b@h) #1 SMP\n"
    "[    0.000000] Kernel command line: console=ttyAMA0,115200 quiet\n"
    "[    0.100000] calling  evil\u202e_init+0x0/0x10 @ 1\n"
    "[    0.900000] initcall evil\u202e_init+0x0/0x10 returned 0 after 800000 usecs\n"
    "[    1.000000] Run /init as init process\n"
    "[    1.500000] note \u202eflip\u202c, zwsp\u200b bom\ufeff nel\x85 end\n"
    "[    3.000000] APP READY\n"
)
INVISIBLE = ("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
             "\u200b\u200c\u200d\u2060\ufeff\u00ad\U000e0041\x80\x85\x9f\u2028\u2029\x00\x1b\x7f")


def rlo_log(tmp_path: Path) -> Path:
    log = tmp_path / "rlo.log"
    log.write_text(RLO_LOG, encoding="utf-8")
    return log


@pytest.mark.parametrize("c", INVISIBLE)
def test_invisible_characters_are_escaped(c: str) -> None:
    shown = visible(f"a{c}b")
    assert c not in shown and shown.isprintable()
    assert shown == "a" + ascii(c)[1:-1] + "b"  # \u202e, \x85, \U000e0041: Python's spelling


def test_every_format_character_is_escaped() -> None:
    """Every character of category Cf this Python knows (bidi, zero-width, tags, ...)."""
    cf = [chr(i) for i in range(0x110000) if unicodedata.category(chr(i)) == "Cf"]
    assert len(cf) > 150
    assert all(visible(c).startswith("\\") for c in cf)


def test_printable_text_tabs_and_newlines_stay() -> None:
    for s in ("plain ascii", "tab\tand\nnewline", "é日本語 µs → ≈", "", "a\\u202eb"):
        assert visible(s) == s
    s = "x\u202ey"
    assert visible(visible(s)) == visible(s) == "x\\u202ey"


def test_visible_data_walks_strings_only() -> None:
    data = {"n\u202e": ["a\u202eb", 1, 2.5, None, True, {"k": ("\u200b",)}], "i": 3}
    assert visible_data(data) == {"n\u202e": ["a\\u202eb", 1, 2.5, None, True, {"k": ["\\u200b"]}], "i": 3}


@pytest.mark.parametrize("at", [0, 4095, 4096, 9999])
def test_visible_data_long_columns(at: int) -> None:
    """A long column is checked a block of strings at a time: one hidden character anywhere in
    it (either side of a block's edge too) is escaped, the rest kept; a column with none, or of
    numbers, is the same list."""
    lines = [f"line {i}\tok" for i in range(10_000)]
    assert visible_data(lines) is lines
    numbers: list[int | None] = list(range(10_000)) + [None]
    assert visible_data(numbers) is numbers
    assert visible_data((1, 2)) == [1, 2]
    bad = list(lines)
    bad[at] = "x\u202ey"
    mixed: list[str | int] = [*bad, 7]
    want = [*lines[:at], "x\\u202ey", *lines[at + 1:]]
    assert visible_data(bad) == want
    assert visible_data(mixed) == [*want, 7]


def run_cli(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", *args], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return (r.stdout + r.stderr).decode("utf-8")


def test_analyze_terminal_shows_escapes(tmp_path: Path) -> None:
    out = run_cli("analyze", str(rlo_log(tmp_path)), "--marker", "ready=APP READY")
    assert "evil\\u202e_init" in out  # the top initcalls table
    assert "note \\u202eflip\\u202c, zwsp\\u200b bom\\ufeff" in out  # the silences table
    assert not any(c in out for c in "\u202e\u202c\u200b\ufeff\x85")


def test_advise_terminal_shows_escapes(tmp_path: Path) -> None:
    out = run_cli("advise", str(rlo_log(tmp_path)), "--marker", "ready=APP READY")
    assert "line 3: calling  evil\\u202e_init+0x0/0x10 @ 1" in out  # a finding's evidence
    assert "\u202e" not in out
