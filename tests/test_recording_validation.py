"""The recording reader trusts nothing: every header field and record is validated (issue 10).

Damaged records are skipped and counted; a header that cannot be a bootlens header is a
one-line error (exit 2); a header field out of range falls back to what is safe, with a warning.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bootlens.core.errors import InputError
from bootlens.capture.recording import Header, RecordingWriter, line_times, read_recording, to_grabserial

CLI = [sys.executable, "-m", "bootlens.cli"]

GOOD_HEADER = ('{"format":"bootlens-recording","format_version":1,"bootlens":"0.1.0","source":"/dev/ttyUSB0",'
               '"baud":115200,"bits_per_byte":10,"origin":"start","started_wall":"2026-01-01T00:00:00+00:00",'
               '"clock":"CLOCK_MONOTONIC","t0_monotonic_ns":4916393664287}')
LINE = b"[    0.000000] Linux version 6.1.0 (x)\n"


def chunk(t: int | str, data: bytes = LINE) -> str:
    return f'{{"t":{t},"b64":"{base64.b64encode(data).decode()}"}}'


def write(path: Path, header: str, *records: str | bytes) -> Path:
    body = b"\n".join(r if isinstance(r, bytes) else r.encode() for r in (header, *records))
    path.write_bytes(body + b"\n")
    return path


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=60)


def header_with(**fields: str) -> str:
    """GOOD_HEADER with fields replaced by raw JSON text (so that NaN, 1e999 can be written)."""
    h = GOOD_HEADER
    for k, raw in fields.items():
        d = json.loads(h)
        old = json.dumps(d[k], separators=(",", ":")) if k in d else None
        h = h.replace(f'"{k}":{old}', f'"{k}":{raw}') if old is not None else h[:-1] + f',"{k}":{raw}}}'
    return h


def one_line_error(r: subprocess.CompletedProcess[bytes]) -> str:
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("bootlens: error: ") and "Traceback" not in err, err
    return err


# --- the header ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ['"2a"', '"1"', "1.0", "true", "0", "-1", "null", "[1]", "1" + "0" * 400])
def test_format_version_that_is_not_a_version_number_is_a_one_line_error(tmp_path: Path, version: str) -> None:
    rec = write(tmp_path / "v.rec", header_with(format_version=version), chunk(1000))
    for cmd in ("analyze", "export"):
        err = one_line_error(run(cmd, str(rec)))
        assert "header line" in err


def test_newer_format_version_is_refused_by_name(tmp_path: Path) -> None:
    rec = write(tmp_path / "v2.rec", header_with(format_version="2"), chunk(1000))
    assert "recording format 2 is newer than this bootlens" in one_line_error(run("export", str(rec)))


@pytest.mark.parametrize("t0", ["NaN", "Infinity", "-Infinity", "1e999", "1.5", '"now"', "-5", "9" * 400, "true"])
def test_t0_that_is_not_a_time_is_unknown_with_a_warning(tmp_path: Path, t0: str) -> None:
    rec_path = write(tmp_path / "t0.rec", header_with(t0_monotonic_ns=t0), chunk(1000))
    rec = read_recording(str(rec_path))
    assert rec.header.t0_monotonic_ns is None and rec.data == LINE and rec.bad_records == 0
    assert any("t0_monotonic_ns" in w and "is not a time" in w for w in rec.warnings), rec.warnings
    r = run("export", str(rec_path))
    assert r.returncode == 0 and r.stdout == LINE and b"t0_monotonic_ns" in r.stderr and b"Traceback" not in r.stderr
    d = json.loads(run("analyze", str(rec_path), "--json").stdout)
    assert any("t0_monotonic_ns" in w for w in d["inputs"][0]["warnings"])


@pytest.mark.parametrize("baud", ['"115200"', "0", "-9600", "115200.5", "1e999", "NaN", "true", "[115200]", "9" * 400])
def test_baud_that_is_not_a_line_rate_turns_the_wire_correction_off(tmp_path: Path, baud: str) -> None:
    # two lines in one chunk: with a baud rate the first would be placed earlier than the chunk
    rec = read_recording(str(write(tmp_path / "b.rec", header_with(baud=baud), chunk(50_000_000, b"a\nb\n"))))
    assert rec.header.baud is None
    assert any("baud" in w and "not corrected for time on the wire" in w for w in rec.warnings)
    assert line_times(rec)[1] == [50_000_000, 50_000_000]


def test_valid_baud_still_corrects_and_null_baud_is_no_warning(tmp_path: Path) -> None:
    rec = read_recording(str(write(tmp_path / "ok.rec", header_with(baud="10000"), chunk(50_000_000, b"a\nb\n"))))
    assert rec.header.baud == 10_000 and rec.warnings == ()
    assert line_times(rec)[1] == [47_000_000, 49_000_000]
    rec = read_recording(str(write(tmp_path / "null.rec", header_with(baud="null"), chunk(1))))
    assert rec.header.baud is None and rec.warnings == ()


@pytest.mark.parametrize("field,raw,word", [
    ("bits_per_byte", "0", "bits_per_byte"), ("bits_per_byte", '"10"', "bits_per_byte"),
    ("origin", '"power_off"', "origin"), ("origin", "7", "origin"), ("source", "[1,2]", "source"),
    ("started_wall", "{}", "started_wall"), ("bootlens", "null", "bootlens"), ("extra", "[]", "extra"),
])
def test_other_header_fields_fall_back_with_a_warning(tmp_path: Path, field: str, raw: str, word: str) -> None:
    rec = read_recording(str(write(tmp_path / "h.rec", header_with(**{field: raw}), chunk(1000))))
    assert rec.data == LINE
    assert any(word in w for w in rec.warnings), rec.warnings
    assert rec.header.origin in ("start", "power_on") and isinstance(rec.header.source, str)
    assert isinstance(rec.header.bits_per_byte, int) and isinstance(rec.header.extra, dict)


@pytest.mark.parametrize("head", [
    b"[" * 100_000,  # 100,000-deep: never handed to a recursive parser
    b'{"format":"bootlens-recording","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"format":"bootlens-recording", oops',
    b'["format","bootlens-recording"]',
    b'{"format":"bootlens-recording","format_version":1,"source":"\xff\xfe"}',
])
def test_header_line_that_does_not_parse_is_a_one_line_error(tmp_path: Path, head: bytes) -> None:
    rec = write(tmp_path / "bad.rec", head, chunk(1000))
    with pytest.raises(InputError):
        read_recording(str(rec))
    one_line_error(run("analyze", str(rec)))


# --- records ---------------------------------------------------------------------------------

DAMAGED = [
    chunk("9" * 400),  # a 400-digit time
    chunk("-" + "9" * 400),
    chunk("18446744073709551615"),  # beyond signed 64 bits
    chunk("-1"), chunk("1.5"), chunk("1e3"), chunk("NaN"), chunk("Infinity"), chunk("true"), chunk('"1000"'),
    chunk("null"),
    '{"t":1000,"b64":"not base64!"}', '{"t":1000,"b64":12}', '{"t":1000,"b64":"w6k="  }'.replace("w6k=", "é"),
    '{"t":1000,"event":5}', '{"t":1000,"event":"gap_start","detail":[1]}', '{"t":1000}', '{"b64":"YQ=="}',
    "[1,2,3]", '"a string"', "17", "null",
    "[" * 100_000,  # 100,000 deep: RecursionError would make the whole recording unreadable
    '{"t":1000,"event":' + "[" * 100_000,
    '{"t":1000,"event":"gap_start","detail":' + "{\"a\":" * 50_000 + "1" + "}" * 50_000 + "}",
    b'{"t":1000,"b64":"YQ==\xff"}', b"\x00\x01\x02", '{"t":1000,"b64":"YQ=="',  # torn
    '{"t":1000,"event":"start","detail":"(unclosed"}',  # a --start pattern no capture could have had
    '{"t":1000,"event":"start","detail":"[z-a]"}',
]


def test_each_kind_of_damaged_record_is_skipped_and_counted(tmp_path: Path) -> None:
    one, two = b"[    0.000000] Linux version 6.1.0 (x)\n", b"[    0.500000] Run /init as init process\n"
    good = [chunk(1000, one), chunk(2000, two), '{"t":3000,"event":"end","detail":"quit pattern"}']
    for i, bad in enumerate(DAMAGED):
        path = write(tmp_path / f"d{i}.rec", GOOD_HEADER, good[0], bad, good[1], good[2])
        rec = read_recording(str(path))
        assert rec.bad_records == 1, (i, str(bad)[:60])
        assert rec.data == one + two and [n.event for n in rec.notes] == ["end"]
    path = write(tmp_path / "all.rec", GOOD_HEADER, good[0], *DAMAGED, good[1], good[2])
    r = run("export", str(path))
    assert r.returncode == 0 and r.stdout == one + two, r.stderr
    assert r.stderr.decode() == f"bootlens: warning: {len(DAMAGED)} damaged records skipped\n"
    d = json.loads(run("analyze", str(path), "--json").stdout)
    assert f"{len(DAMAGED)} damaged records in the recording were skipped" in d["inputs"][0]["warnings"]


def test_bounds_of_time_are_inclusive_and_unknown_fields_are_ignored(tmp_path: Path) -> None:
    path = write(tmp_path / "edge.rec", GOOD_HEADER, chunk(0, b"a\n"), chunk((1 << 63) - 1, b"b\n"),
                 '{"t":5,"event":"marker","detail":"x","future_field":{"a":[1,2]}}',
                 '{"t":6,"event":"some_future_event"}')
    rec = read_recording(str(path))
    assert rec.bad_records == 0 and rec.data == b"a\nb\n"
    assert [(n.event, n.detail) for n in rec.notes] == [("marker", "x"), ("some_future_event", "")]
    assert to_grabserial(rec).startswith(b"[0.000000 ")


def test_export_restart_with_a_start_pattern_that_does_not_compile(tmp_path: Path) -> None:
    path = write(tmp_path / "start.rec", GOOD_HEADER, chunk(1_000_000_000, b"U-Boot\n"),
                 '{"t":2000000000,"event":"start","detail":"(unclosed"}', chunk(2_000_000_000, b"Starting kernel\n"),
                 '{"t":2000000000,"event":"start","detail":"^Starting"}', chunk(3_000_000_000, b"Linux\n"))
    r = run("export", str(path), "--format", "grabserial", "--restart", "--no-wire")
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    assert r.stderr == b"bootlens: warning: 1 damaged records skipped\n"
    lines = r.stdout.decode().splitlines()
    assert lines[1].startswith("[0.000000 ") and lines[2].startswith("[1.000000 ")  # the valid pattern restarts
    # a Recording built by hand (not read) with a bad pattern: the pattern is left out
    from bootlens.capture.recording import Chunk, Note, Recording

    built = Recording("x", Header("x", None, "start", "", 0), (Chunk(5, b"a\n"),), (Note(5, "start", "("),), 0)
    assert to_grabserial(built, restart=True) == b"[0.000000 0.000000] a\n"


def test_writer_and_reader_agree_on_an_unknown_t0(tmp_path: Path) -> None:
    path = tmp_path / "w.rec"
    w = RecordingWriter(str(path), Header("cmd", None, "start", "", None))
    w.chunk(7, b"x\n")
    w.end(9, "quit pattern")
    w.close()
    rec = read_recording(str(path))
    assert rec.header.t0_monotonic_ns is None and rec.warnings == () and rec.bad_records == 0
    assert rec.notes[-1].detail == "quit pattern"


def test_recording_on_stdin_is_validated_the_same_way(tmp_path: Path) -> None:
    body = (header_with(baud='"fast"') + "\n" + chunk(1000) + "\n" + "[" * 100_000 + "\n").encode()
    r = subprocess.run([*CLI, "analyze", "-", "--json"], input=body, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    w = json.loads(r.stdout)["inputs"][0]["warnings"]
    assert any("baud" in x for x in w) and any("1 damaged records" in x for x in w)
