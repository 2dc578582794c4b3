"""A printk stamp past what bootlens keeps (numbers.TIME_NS_MAX = 2**60 ns, about 36.5 years) reads
the same wherever it stands (issue 29, item 8): at the start of a line the native framing parses it,
glued behind other text the Python settle step does; both take it off the text, count it in the
one warning, and use no time from it. Before, the glued one stayed in the text and was not counted."""

from __future__ import annotations

import pytest

from bootlens.core.numbers import TIME_NS_MAX
from bootlens.parsers import ParseOptions
from bootlens.read import reader as L
from bootlens.timeline.boots import index_keywords

KEYS = index_keywords(ParseOptions())


def _frame(text: str) -> tuple[list[str], list[int | None], tuple[str, ...]]:
    lines, stats = L.frame_bytes("t", text.encode(), *KEYS)
    return list(lines.text), list(lines.kernel), stats.warnings


# seconds: 2**60 ns is 1,152,921,504.606846976 s; i64 ns ends at 9,223,372,036.854775807 s
@pytest.mark.parametrize("secs,kept", [
    ("1152921504.606846", True),    # the last microsecond in range
    ("1152921504.606847", False),   # the first out of range
    ("9223372036.854775", False),   # just under i64 nanoseconds
    ("9300000000.000000", False),   # past i64 nanoseconds (the example)
    ("9999999999.999999", False),   # the most ten digits hold
])
@pytest.mark.parametrize("glue", ["", "foo "])
def test_a_stamp_reads_the_same_at_the_start_and_glued(secs: str, kept: bool, glue: str) -> None:
    text, kernel, warnings = _frame(f"{glue}[{secs}] Linux version 6.1\n[    1.000000] next\n")
    assert text[0] == "Linux version 6.1"
    assert text[1] == "next" and kernel[1] == 1_000_000_000
    if kept:
        assert kernel[0] == int(secs.replace(".", "")) * 1000 <= TIME_NS_MAX
        assert not any("out of range" in w for w in warnings)
    else:
        assert kernel[0] is None
        assert "1 timestamps out of range (over 1,152,921,504 s) were not used" in warnings
