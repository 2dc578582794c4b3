"""The ``bootlens`` command line, always through the real entry point in a subprocess.

Figures of the grabserial corpus log, read off
tests/data/corpus/qemu-arm64-uboot-initcall.grabserial-t.log: "APP READY" arrives at
3.903449 s on line 2110; the three slowest initcalls are crypto_algapi_init (166345 usecs),
of_platform_default_populate_init (108000 usecs) and init_kprobe_trace (63222 usecs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Union

import pytest

from bootlens import __version__

HERE = Path(__file__).parent
CORPUS = HERE / "data" / "corpus"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
CONSOLE = CORPUS / "qemu-arm64-uboot.console.log"
READY = ("--marker", "ready=APP READY")

Arg = Union[str, "os.PathLike[str]"]
Json = dict[str, Any]

# A deterministic environment for the child: no forced colours, no inherited terminal width.
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}


def run(*args: Arg, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """``bootlens ARGS...`` through ``python -m bootlens.cli``; output decoded as UTF-8."""
    r = subprocess.run(
        [sys.executable, "-m", "bootlens.cli", *args],
        input=input,
        capture_output=True,
        timeout=120,
        env=ENV,
    )
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode("utf-8", "replace"),
                                       r.stderr.decode("utf-8", "replace"))


def ok(*args: Arg, input: bytes | None = None) -> str:
    """Run a command that must succeed; returns its stdout."""
    r = run(*args, input=input)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
    return r.stdout


def analyze_json(*args: Arg, input: bytes | None = None) -> Json:
    """``bootlens analyze ARGS... --json --marker ready='APP READY'``, parsed."""
    obj: Json = json.loads(ok("analyze", *args, "--json", *READY, input=input))
    return obj


def assert_one_line_error(r: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line "bootlens: error: ..." holding needles."""
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr.endswith("\n") and r.stderr.count("\n") == 1, repr(r.stderr)
    assert r.stderr.startswith("bootlens: error: "), repr(r.stderr)
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)


@pytest.fixture(scope="module")
def grab() -> Json:
    """``analyze --json`` of the grabserial corpus log, run once for the module."""
    return analyze_json(GRAB)


# --------------------------------------------------------------------------------------------
# help and version


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(flag: str) -> None:
    out = ok(flag)
    assert "boot-time workbench for embedded Linux" in out
    assert re.search(r"^\s+analyze\s+Analyse boot logs", out, re.M), out


def test_analyze_help() -> None:
    out = ok("analyze", "--help")
    assert "Analyse boot logs" in out
    assert "FILE... | -" in out
    for option in ("--json", "--top", "--marker", "NAME=REGEX"):
        assert option in out, option


def test_version() -> None:
    out = ok("--version")
    assert out == f"bootlens, version {__version__}\n"
    assert re.fullmatch(r"bootlens, version \d+\.\d+\.\d+\S*\n", out)


# --------------------------------------------------------------------------------------------
# the JSON contract on the grabserial log


def test_json_contract(grab: Json) -> None:
    assert grab["schema_version"] == 1
    assert grab["generator"] == f"bootlens {__version__}"
    (inp,) = grab["inputs"]
    assert inp["source"] == str(GRAB)
    assert inp["framing"] == "grabserial-t"
    (boot,) = grab["boots"]
    assert boot["source"] == str(GRAB)
    assert boot["axis"] == "host"
    assert boot["origin"] == "first_byte"
    assert boot["partial"] is False
    for s in boot["stages"]:
        assert {"name", "start_s", "duration_s"} <= s.keys(), s
    names = [s["name"] for s in boot["stages"]]
    assert {"bootloader", "kernel_load", "kernel_init", "userspace"} <= set(names)
    for name in ("bootloader", "kernel_load", "kernel_init", "userspace"):
        (s,) = [s for s in boot["stages"] if s["name"] == name]
        assert s["status"] == "measured" and s["duration_s"] > 0, s
    assert boot["events"]
    for e in boot["events"]:
        assert {"kind", "name", "start_s", "duration_s"} <= e.keys(), e
        assert isinstance(e["start_s"], float), e
    assert boot["total"]["duration_s"] > 3.5


def test_json_ready_marker(grab: Json) -> None:
    """The --marker ready=... line becomes a marker event and ends the total."""
    boot = grab["boots"][0]
    ready = [e for e in boot["events"] if e["kind"] == "marker" and e["name"] == "ready"]
    assert [(e["line"], e["start_s"]) for e in ready] == [(2110, 3.903449)]
    assert boot["total"]["end_s"] == 3.903449
    assert boot["total"]["end"] == "ready marker at line 2110"
    assert boot["counts"]["markers"] == 2  # ready, and the "uptime: 1.33 0.00" line


def test_without_ready_marker_the_total_is_not_measured() -> None:
    d = json.loads(ok("analyze", GRAB, "--json"))
    boot = d["boots"][0]
    assert boot["total"]["duration_s"] is None
    assert not [e for e in boot["events"] if e["name"] == "ready"]
    assert any("no ready marker" in w for w in boot["warnings"])


# --------------------------------------------------------------------------------------------
# inputs: stdin, several files


def test_stdin_gives_the_same_boots_as_the_file(grab: Json) -> None:
    d = analyze_json("-", input=GRAB.read_bytes())
    assert d["inputs"][0]["source"] == "<stdin>"
    assert len(d["boots"]) == len(grab["boots"]) == 1
    for from_stdin, from_file in zip(d["boots"], grab["boots"]):
        assert from_stdin["source"] == "<stdin>"
        assert {k: v for k, v in from_stdin.items() if k != "source"} == {
            k: v for k, v in from_file.items() if k != "source"
        }
    assert {k: v for k, v in d["inputs"][0].items() if k != "source"} == {
        k: v for k, v in grab["inputs"][0].items() if k != "source"
    }


def test_two_files_give_boots_from_both(grab: Json) -> None:
    d = analyze_json(GRAB, CONSOLE)
    assert [i["source"] for i in d["inputs"]] == [str(GRAB), str(CONSOLE)]
    assert [(b["source"], b["index"], b["axis"]) for b in d["boots"]] == [
        (str(GRAB), 0, "host"),
        (str(CONSOLE), 0, "kernel"),
    ]
    assert d["boots"][0]["total"] == grab["boots"][0]["total"]
    # the console log has no host timestamps: kernel init is measured on the printk clock
    (kinit,) = [s for s in d["boots"][1]["stages"] if s["name"] == "kernel_init"]
    assert kinit["duration_s"] == 0.879351


def test_missing_file_among_two_is_a_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.log"
    assert_one_line_error(run("analyze", GRAB, missing, "--json"), str(missing), "no such file")
    assert_one_line_error(run("analyze", missing, GRAB), str(missing), "no such file")


# --------------------------------------------------------------------------------------------
# options


def test_top_limits_the_initcall_list(grab: Json) -> None:
    d = analyze_json(GRAB, "--top", "3")
    top = d["boots"][0]["top"]["initcalls"]
    assert [(e["name"], e["duration_s"]) for e in top] == [
        ("crypto_algapi_init", 0.166345),
        ("of_platform_default_populate_init", 0.108),
        ("init_kprobe_trace", 0.063222),
    ]
    assert len(grab["boots"][0]["top"]["initcalls"]) == 10  # the default
    assert grab["boots"][0]["top"]["initcalls"][:3] == top


@pytest.mark.parametrize(
    ("marker", "reason"),
    [
        ("noequals", "expected NAME=REGEX"),
        ("x=(", "bad regular expression"),
        ("=APP READY", "expected NAME=REGEX"),
        ("ready=", "expected NAME=REGEX"),
    ],
)
def test_bad_marker_is_a_one_line_error(marker: str, reason: str) -> None:
    r = run("analyze", GRAB, "--json", "--marker", marker)
    assert_one_line_error(r, "--marker", repr(marker), reason)


# --------------------------------------------------------------------------------------------
# terminal output


def test_terminal_output() -> None:
    out = ok("analyze", GRAB, *READY)
    for text in ("bootloader", "autoboot delay", "Top 10 initcalls", "crypto_algapi_init", "first byte → ready"):
        assert text in out, text
    assert "first byte → ready: 3.903 s" in out
    assert not out.lstrip().startswith("{")  # tables, not JSON


def test_terminal_output_shows_log_text_literally(tmp_path: Path) -> None:
    """Text from the log is never read as rich markup: '[bold]x[/bold]' stays as printed."""
    log = tmp_path / "[red]boot.log"
    log.write_text("[    0.000000] Linux version 6.1.0 (x@y) #1 SMP\n"
                   "[    0.000000] Kernel command line: console=ttyS0 app=[bold]x[/bold]\n"
                   "[    0.100000] calling  foo_init+0x0/0x10 @ 1\n"
                   "[    0.100100] initcall foo_init+0x0/0x10 returned 0 after 100 usecs\n"
                   "[    0.200000] Run /init as init process\n"
                   "[    0.300000] [link]APP READY\n")
    out = ok("analyze", log, "--marker", "ready=APP READY")
    assert "app=[bold]x[/bold]" in out
    assert "/[red]boot.lo" in out  # the rule may clip the name; the markup stays literal
