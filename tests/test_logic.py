"""Logic analyzer captures (parsers/logic.py): real files only.

- sigrok: made at test time by ``sigrok-cli -d demo`` (its pattern generator is deterministic;
  only the date lines differ between runs), in every CSV option set and as VCD; each must give
  the edges that a naive read of the plainest CSV (label=channel, one row a sample) gives.
- Saleae Logic 2 (the vendor's documentation example), Logic 1.x (a README's recorded sample)
  and other tools' VCD (ModelSim; a hand-written example with vectors and multi-character ids):
  golden cases in tests/golden/logic (provenance and hand-checked facts in its README.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from bootlens.sources.logic.reader import Capture, read_logic, read_saleae_csv, read_sigrok_csv, read_vcd, sniff_logic

GOLDEN = Path(__file__).parent / "golden" / "logic"
SIGROK = shutil.which("sigrok-cli")


def needs_sigrok() -> str:
    """sigrok-cli's path; outside CI a missing tool skips, under CI it fails (the Makefile installs it)."""
    if SIGROK is None:
        if os.environ.get("CI"):
            pytest.fail("CI: sigrok-cli is required (Debian package sigrok-cli in APT_PACKAGES)")
        pytest.skip("needs sigrok-cli (apt-get install sigrok-cli)")
    return SIGROK


def demo(tmp: Path, out_format: str, name: str, samples: int = 2000, rate: str = "1m",
         channels: str = "D0,D1,D2,D3", crash_ok: bool = False) -> Path:
    """A capture from sigrok's demo driver, written by sigrok-cli itself. ``crash_ok``: Debian's
    sigrok-cli 0.7.2 aborts at exit ("double free") after writing a capture with an analog
    channel; the file is whole (the same bytes but for the date, run after run)."""
    path = tmp / name
    r = subprocess.run([needs_sigrok(), "-d", "demo", "--config", f"samplerate={rate}", "--samples", str(samples),
                        "-C", channels, "-O", out_format, "-o", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 or (crash_ok and r.returncode == -6 and path.stat().st_size), r.stderr
    return path


def summary(cap: Capture) -> dict[str, Any]:
    """What a golden case pins down: format, rate, extent, every channel's edges, warnings."""
    src = cap.source + ": "
    return {"format": cap.format, "samplerate_hz": cap.samplerate_hz, "end_ns": cap.end_ns, "rows": cap.rows,
            "channels": [{"name": c.name, "initial": c.initial, "rising": list(c.rising),
                          "falling": list(c.falling)} for c in cap.channels],
            "warnings": [w.removeprefix(src) for w in cap.warnings]}


def edges(cap: Capture) -> list[tuple[str, int | None, list[int], list[int]]]:
    return [(c.name, c.initial, list(c.rising), list(c.falling)) for c in cap.channels]


def naive(path: Path, period_ns: int) -> list[tuple[str, int | None, list[int], list[int]]]:
    """The oracle: every row of a label=channel CSV, sample k at k periods, compared one by one."""
    rows = [ln.split(",") for ln in path.read_text().splitlines() if ln and not ln.startswith(";")]
    names, data = rows[0], [[int(v) for v in r] for r in rows[1:]]
    out: list[tuple[str, int | None, list[int], list[int]]] = []
    for j, name in enumerate(names):
        col = [r[j] for r in data]
        rise = [k * period_ns for k in range(1, len(col)) if col[k - 1] == 0 and col[k] == 1]
        fall = [k * period_ns for k in range(1, len(col)) if col[k - 1] == 1 and col[k] == 0]
        out.append((name, col[0], rise, fall))
    return out


# sigrok-cli's CSV options (-O csv --show): label, time, header, dedup, comment, value, trigger
SIGROK_CSV = ["csv", "csv:time=true", "csv:label=channel:time=true", "csv:label=off", "csv:label=off:time=true",
              "csv:dedup=true:time=true", "csv:trigger=true:time=true", "csv:value=;", "csv:comment=#",
              "csv:header=false:time=true", "csv:label=channel:dedup=true:time=true"]


def test_sigrok_demo_every_csv_option_set_and_vcd_give_the_same_edges(tmp_path: Path) -> None:
    plain = demo(tmp_path, "csv:label=channel", "plain.csv")
    want = naive(plain, 1000)  # 1 MHz
    assert [w[0] for w in want] == ["D0", "D1", "D2", "D3"]
    assert sum(len(w[2]) + len(w[3]) for w in want) > 1000  # the demo pattern toggles: a real test
    for i, opt in enumerate(SIGROK_CSV + ["vcd"]):
        cap = read_logic(demo(tmp_path, opt, f"d{i}.out"))
        got = edges(cap)
        if opt.startswith("csv:header=false"):  # no Channels comment: columns are numbered
            got = [(w[0], *g[1:]) for w, g in zip(want, got)]
        assert got == want, opt
        assert cap.samplerate_hz == 1e6, opt
        assert cap.end_ns == 2_000_000, opt  # 2000 samples at 1 us: where sigrok's VCD puts its last #
        assert cap.warnings == (), opt
        assert cap.format == ("sigrok vcd" if opt == "vcd" else "sigrok csv")


def test_sigrok_first_csv_time_is_one_period_and_vcd_starts_at_zero(tmp_path: Path) -> None:
    """The trap of research §3: at 10 kHz the time column reads 100, 200, ... (us) while the
    VCD says #0, #1, ...: both are read as sample k at k x 100 us."""
    csv = demo(tmp_path, "csv:time=true", "t.csv", samples=200, rate="10k")
    lines = [ln for ln in csv.read_text().splitlines() if not ln.startswith(";")]
    assert lines[0].startswith("microseconds,") and lines[1].startswith("100,")
    vcd = demo(tmp_path, "vcd", "t.vcd", samples=200, rate="10k")
    assert "#0 " in vcd.read_text()
    a, b = read_logic(csv), read_logic(vcd)
    assert edges(a) == edges(b)
    first = min(t for c in a.channels for t in [*c.rising, *c.falling])
    assert first % 100_000 == 0  # on the 100 us grid, counted from sample 0


def test_sigrok_3mhz_time_column_rounding_is_undone(tmp_path: Path) -> None:
    """At 3 MHz sigrok prints whole nanoseconds (333, 666, 999): the samplerate puts each row
    back on its sample."""
    csv = demo(tmp_path, "csv:time=true", "t.csv", samples=300, rate="3m")
    assert "\n333," in csv.read_text() and "\n999," in csv.read_text()
    vcd = demo(tmp_path, "vcd", "t.vcd", samples=300, rate="3m")
    assert edges(read_logic(csv)) == edges(read_logic(vcd))


def test_sigrok_reread_file_meta_samplerate(tmp_path: Path) -> None:
    """sigrok-cli converting a file (-i) writes 'META samplerate: N' instead of a comment."""
    src = demo(tmp_path, "vcd", "src.vcd", samples=500)
    out = tmp_path / "re.csv"
    r = subprocess.run([needs_sigrok(), "-i", str(src), "-I", "vcd", "-O", "csv", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "META samplerate: 1000000" in out.read_text()
    again = read_logic(out)
    assert again.samplerate_hz == 1e6 and again.warnings == ()
    assert edges(again) == edges(read_logic(src))


def test_sigrok_analog_columns_are_skipped_with_a_count(tmp_path: Path) -> None:
    path = demo(tmp_path, "csv:label=channel", "a.csv", samples=50, channels="D0,D1,A0", crash_ok=True)
    text = path.read_text()
    assert "\nD0,D1,A0\n" in text and text.count("A0: ") == 50  # sigrok-cli prints each analog value too
    cap = read_logic(path)
    assert [c.name for c in cap.channels] == ["D0", "D1"]
    assert any("1 non-digital column skipped (A0)" in w for w in cap.warnings), cap.warnings
    assert any("50 lines not understood" in w for w in cap.warnings), cap.warnings  # the 'A0: ...' lines
    plain = demo(tmp_path, "csv:label=channel", "p.csv", samples=50, channels="D0,D1")
    assert edges(cap) == naive(plain, 1000)


@pytest.mark.parametrize("path", sorted(p for p in GOLDEN.iterdir() if p.suffix in (".csv", ".vcd")),
                         ids=lambda p: p.stem)
def test_golden(path: Path, update_golden: bool) -> None:
    cap = read_logic(path)
    got = summary(cap)
    expected = path.with_suffix(".expected.json")
    if update_golden or not expected.exists():
        expected.write_bytes(orjson.dumps(got, option=orjson.OPT_INDENT_2) + b"\n")
        if not update_golden:
            pytest.fail(f"{expected.name} written: review it")
    assert got == orjson.loads(expected.read_bytes())


def test_saleae2_docs_example_hand_checked() -> None:
    """The facts README.md derives by hand from the documentation's 8 rows."""
    cap = read_logic(GOLDEN / "saleae2-docs-example.csv")
    c0, c1, c2 = cap.channels
    assert (c0.name, c1.name, c2.name) == ("Channel 0 :)", "Channel 1 :)", "Ch2")
    assert (c0.initial, list(c0.rising), list(c0.falling)) == (0, [250_000_000, 625_000_000, 875_000_000],
                                                               [500_000_000, 750_000_000])
    assert c2.initial is None and list(c2.rising) == [875_000_000] and list(c2.falling) == [625_000_000]
    assert cap.rows == 8 and any("6 X (no data)" in w for w in cap.warnings)
    assert cap.channel("channel 0 :)") is c0 and cap.channel("ch2") is c2  # case and spaces ignored
    one = read_logic(GOLDEN / "saleae1-shepherd-readme.csv")  # sigrok's D1 is Saleae's Channel 1
    assert one.channel("D1") is one.channels[1] and one.channel("1") is one.channels[1]


def test_sniff_by_content_not_name(tmp_path: Path) -> None:
    for p in GOLDEN.iterdir():
        if p.suffix in (".csv", ".vcd"):
            moved = tmp_path / "capture.log"
            moved.write_bytes(p.read_bytes())
            assert sniff_logic(moved.read_text()) is not None, p.name
    assert sniff_logic("[    0.000000] Booting Linux on physical CPU 0x0\n") is None
    assert sniff_logic("Time [s],Channel 0\n") == "saleae logic 2 csv"
    assert sniff_logic("Trigger [s],Time [s],Ch0\n") is None  # Saleae analog: not digital edges
    assert sniff_logic("logic\nU-Boot SPL 2023.01\n") is None  # a log's first line reading "logic"
    assert sniff_logic("logic,logic\n1,0\n") == "sigrok csv"  # header=false: the label row and data


def test_bad_lines_are_counted_never_raised() -> None:
    text = ["; CSV generated by libsigrok 0.5.2\n", "; Samplerate: 1 kHz\n", "logic,logic\n",
            "0,0\n", "0,1\n", "garbage\n", "1,\n", "2,7\n", "1,1\n", "\x00\xff\n"]
    cap = read_sigrok_csv(text, "bad.csv")
    assert any("4 lines not understood" in w for w in cap.warnings), cap.warnings
    d0, d1 = cap.channels
    assert list(d1.rising) == [1_000_000] and list(d0.rising) == [2_000_000]  # a bad line is no sample
    vcd = ["$timescale 1 ms $end\n", "$var wire 1 ! a $end\n", "$enddefinitions $end\n", "#0 0!\n",
           "#x\n", "?!\n", "#5 1! 1@\n"]
    sal = read_saleae_csv(["Time [s],Channel 0\n", "0.0,0\n", "inf,1\n", "1e999,1\n", "nan,1\n", "0.5,1\n"],
                          "bad.csv")
    assert list(sal.channels[0].rising) == [500_000_000]
    assert any("3 lines not understood" in w for w in sal.warnings), sal.warnings
    vcd.insert(4, "#" + "9" * 40 + "\n")  # past any 64-bit time
    v = read_vcd(vcd, "bad.vcd")
    assert list(v.channels[0].rising) == [5_000_000]
    assert any("4 lines not understood" in w for w in v.warnings), v.warnings
