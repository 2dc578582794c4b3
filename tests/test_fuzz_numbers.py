"""Bounded numbers (bootlens/numbers.py): the one way log digits become ints (issue 10: 20-digit
values, 4,301-digit runs, saturation). The native scan's bounds: tests/test_native.py."""

from __future__ import annotations

import pytest
from conftest import INDEX_NEEDLES, INDEX_PREFIXES

from bootlens.read import reader as L
from bootlens.core import numbers as N


@pytest.mark.parametrize(("text", "hi", "lo", "want"), [
    ("0", 10, 0, 0),
    ("007", 10, 0, 7),
    ("10", 10, 0, 10),
    ("11", 10, 0, None),
    ("-1", 10, 0, None),  # unsigned field: no sign
    ("-1", 10, -5, -1),
    ("-6", 10, -5, None),
    ("-0", 10, -5, 0),
    ("", 10, 0, None),
    ("-", 10, -5, None),
    ("1,000", 10**6, 0, None),
    ("²", 10, 0, None),  # str.isdigit says yes, int() says no
    ("٣", 10, 0, None),  # Arabic-Indic digit: int() would read 3
    ("9" * 4301, 2**63, 0, None),  # past Python's int-conversion limit: refused before int()
    ("0" * 5000 + "5", 10, 0, 5),  # leading zeros do not count against the limit
    (str(2**63 - 1), 2**63 - 1, 0, 2**63 - 1),
    (str(2**63), 2**63 - 1, 0, None),
])
def test_to_int(text: str, hi: int, lo: int, want: int | None) -> None:
    assert N.to_int(text, hi, lo) == want


def test_to_ns_and_hex() -> None:
    assert N.to_ns("5", N.NS_PER_US) == 5000
    assert N.to_ns(str(N.TIME_NS_MAX // N.NS_PER_MS), N.NS_PER_MS) == N.TIME_NS_MAX // N.NS_PER_MS * N.NS_PER_MS
    assert N.to_ns(str(N.TIME_NS_MAX // N.NS_PER_MS + 1), N.NS_PER_MS) is None
    assert N.to_ns("99999999999999999999", N.NS_PER_US) is None
    assert N.hex_to_int("ff", 255) == 255
    assert N.hex_to_int("100", 255) is None
    assert N.hex_to_int("f" * 5000, N.BYTES_MAX) is None
    assert N.hex_to_int("0x10", 255) is None


def test_tally_counts_and_names_the_first_line() -> None:
    t = N.Tally("U-Boot")
    assert t.take("12", 100, field="pid", line_no=3) == 12
    assert t.warnings() == ()
    assert t.take("1" * 30, 100, field="pid", line_no=7) is None
    assert t.ns("9" * 30, N.NS_PER_MS, field="load time", line_no=9) is None
    assert t.warnings() == ("U-Boot: 2 numbers out of range were not used (1 load time, 1 pid; first at line 7)",)


@pytest.mark.parametrize("framing", ["plain", "journalctl", "grabserial-t"])
def test_stamps_out_of_range_are_no_time_in_any_framing(framing: str) -> None:
    big = "[9999999999.999999] "  # ten digits of seconds: 9.99e18 ns, past TIME_NS_MAX
    edge = f"[{N.TIME_NS_MAX // 10**9:10d}.{N.TIME_NS_MAX % 10**9 // 1000:06d}] "
    pre = "[    1.000000     0.000000] " if framing == "grabserial-t" else ""
    text = f"{pre}{big}Linux version 6.1\n{pre}{edge}b\n{pre}[    2.000000] c\nglued {big}d\n"
    notes: list[str] = []
    got = L.frame_text(text, framing, INDEX_NEEDLES, INDEX_PREFIXES, notes)
    assert got.kernel[0] is None and got.text[0] == "Linux version 6.1"
    assert got.kernel[1] == N.TIME_NS_MAX // 1000 * 1000
    # a glued stamp out of range is not read either; as at a line's start, it is taken off and counted
    assert got.kernel[3] is None and got.text[3] == "d"
    assert notes == ["2 timestamps out of range (over 1,152,921,504 s) were not used"]
