"""A JSON string escape of half a UTF-16 pair ("\\ud800") decodes to a lone surrogate: no
character, and nothing can write it as UTF-8 (the native index refused it with a
UnicodeEncodeError traceback, orjson's JSON document with a TypeError). Every JSON input reads it
as U+FFFD, as undecodable bytes are read (core.lines.whole_chars). Found by the one-minute fuzz
run of a fresh clone (fuzz/crashes/crash-d2de2a206c5a7c75: a journalctl -o json line); the same
class in systemd's plot JSON and a recording's header (issue 29, item 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bootlens.capture.recording import read_recording
from bootlens.core.lines import whole_chars
from bootlens.parsers import ParseOptions
from bootlens.read.reader import frame_bytes
from bootlens.timeline.boots import index_keywords

from test_recording_validation import LINE, chunk, header_with, write

CLI = [sys.executable, "-m", "bootlens.cli"]
LONE = "\\ud800"  # as JSON text: a backslash, u, d800
REF_LOG = Path(__file__).parent / "data" / "corpus" / "qemu-arm64-uboot.console.log"


def analyze_json(*paths: Path) -> dict[str, object]:
    r = subprocess.run([*CLI, "analyze", "--json", *map(str, paths)], capture_output=True, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode()[-1500:]
    doc: dict[str, object] = json.loads(r.stdout)
    return doc


def test_whole_chars() -> None:
    assert whole_chars("abc") == "abc"
    assert whole_chars("x\ud800y\udfffz") == "x\ufffdy\ufffdz"
    assert whole_chars("pair \U0001f600 é") == "pair \U0001f600 é"  # a whole pair is one character


def test_a_journal_json_message_with_a_lone_surrogate(tmp_path: Path) -> None:
    lines = [{"MESSAGE": f"Linux version 6.1.0 {LONE}x", "_TRANSPORT": "kernel", "__MONOTONIC_TIMESTAMP": "0",
              "PRIORITY": "5"},
             {"MESSAGE": f"Started app{LONE}.service", "_PID": "1", "_COMM": "systemd",
              "__MONOTONIC_TIMESTAMP": "1500000"}]
    p = tmp_path / "j.json"
    p.write_text("\n".join(json.dumps(o).replace("\\\\ud800", "\\ud800") for o in lines) + "\n")
    assert LONE in p.read_text()
    analyze_json(p)
    lines, _ = frame_bytes(str(p), p.read_bytes(), *index_keywords(ParseOptions()))
    assert [t for t in lines.text if "\ufffd" in t] == ["Linux version 6.1.0 \ufffdx", "systemd[1]: Started app\ufffd.service"]


def test_a_plot_json_unit_with_a_lone_surrogate(tmp_path: Path) -> None:
    plot = tmp_path / "plot.json"
    plot.write_text(f'[{{"name":"a{LONE}.service","activating":1000,"activated":2000,"time":1000}}]')
    doc = analyze_json(REF_LOG, plot)
    assert "a\ufffd.service" in json.dumps(doc, ensure_ascii=False)


def test_a_recording_header_with_a_lone_surrogate(tmp_path: Path) -> None:
    rec = write(tmp_path / "s.rec", header_with(source=f'"/dev/tty{LONE}"'), chunk(1000, LINE))
    assert read_recording(str(rec)).header.source == "/dev/tty\ufffd"
    analyze_json(rec)
    r = subprocess.run([*CLI, "report", str(rec), "-o", str(tmp_path / "r.html")], capture_output=True, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr.decode()[-1500:]
