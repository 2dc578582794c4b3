"""``bootlens advise`` end to end, through the real entry point: the listing, the JSON contract
(docs/json.md, "bootlens advise --json"), run folders, and one-line errors.

Figures: the grabserial corpus log waits 2 s in U-Boot's countdown (line 14) and prints
141,848 console bytes before user space (12.313 s at 115200 baud); the reference-target run
folder in tests/data/advise holds two boots of qemu-arm64 without --baud.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from test_cli import run

HERE = Path(__file__).parent
GRAB = HERE / "data" / "corpus" / "qemu-arm64-uboot-initcall.grabserial-t.log"
RUN = HERE / "data" / "advise" / "qemu-arm64-run"
BAUD_REC = HERE / "data" / "advise" / "qemu-arm64-baud115200.rec"
LEGACY = HERE / "golden" / "uboot" / "legacy-uimage-gzip-host.log"
MINE = {"uboot.autoboot_delay", "uboot.image_verify", "uboot.console", "kernel.compression",
        "kernel.serial_console", "kernel.lpj"}


def advise(*args: str | Path) -> str:
    r = run("advise", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def advise_json(*args: str | Path) -> Any:
    return json.loads(advise(*args, "--json"))


def test_help() -> None:
    out = advise("--help")
    assert "INPUT..." in out and "--baud" in out and "--json" in out


def test_listing_worst_first_with_every_part_of_a_finding() -> None:
    out = advise(GRAB)
    assert out.index("uboot.autoboot_delay") < out.index("kernel.serial_console")  # a number before none
    first = out[out.index(" 1. "):]
    assert first.startswith(" 1. 2.000 s  HIGH  uboot.autoboot_delay · bootloader")
    for label in ("change", "trade-off", "arithmetic", "evidence"):
        assert re.search(rf"^{label} ", out, re.M), label
    assert "line 14: Hit any key to stop autoboot" in out
    assert "U-Boot variable bootdelay=0 (automatic)" in out
    # findings without a figure say so, and why
    assert "no estimate  MEDIUM  kernel.serial_console" in out
    assert "no estimate: console baud unknown: pass --baud" in re.sub(r"\s+", " ", out)
    assert re.search(r"\d+ findings; \d+ can be applied automatically", out)


def test_baud_turns_the_console_into_the_worst_finding() -> None:
    out = advise(GRAB, "--baud", "115200")
    assert out[out.index(" 1. "):].startswith(" 1. 12.313 s  MEDIUM  kernel.serial_console")
    assert "console 115200 baud" in out


def test_a_run_folder_is_merged_over_its_boots() -> None:
    out = advise(RUN)
    assert "run folder of 2 boots · target qemu-arm64 · console baud unknown" in re.sub(r"\s+", " ", out)
    assert "findings merged over 2 boots" in out
    assert " 1. 2.000 s (median; 2.000 s–2.000 s over 2 boots)  HIGH  uboot.autoboot_delay" in out
    assert "seen in 2 of 2 boots" in out
    assert "not paced" in out  # the serial console finding on a QEMU target says so


def test_json_contract() -> None:
    d = advise_json(LEGACY, RUN)
    assert d["schema_version"] == 1 and d["kind"] == "advise" and d["generator"].startswith("bootlens ")
    assert MINE <= set(d["rules"])
    legacy, run_ = d["inputs"]
    assert legacy["name"] == str(LEGACY) and legacy["folder"] is False and legacy["merged"] is None
    assert legacy["context"] == {"target": None, "baud": None, "rootfs_files": []}
    (boot,) = legacy["boots"]
    assert (boot["index"], boot["first_line"], boot["last_line"]) == (0, 1, 33)
    fs = {f["rule"]: f for f in boot["findings"]}
    assert {"uboot.image_verify", "kernel.compression", "kernel.lpj", "uboot.console"} <= set(fs)
    v = fs["uboot.image_verify"]
    assert set(v) == {"rule", "title", "stage", "saving_s", "confidence", "arithmetic", "tradeoff", "change",
                      "evidence"}
    assert v["saving_s"] == pytest.approx(0.0804) and v["confidence"] == "high"
    assert v["change"] == {"kind": "uboot_env", "value": "verify=no", "automatic": True, "files": [],
                           "description": v["change"]["description"]}
    assert v["evidence"] == [{"line": 16, "text": "Verifying Checksum ... OK"}]
    # no --baud: the rate of the kernel's console=ttymxc0,115200 (line 27), said to be taken as U-Boot's too
    con = fs["uboot.console"]
    assert con["saving_s"] == pytest.approx(756 * 10 / 115200) and con["confidence"] == "low"
    assert "console=...,115200 (line 27), taken as U-Boot's rate too" in con["arithmetic"]
    savings = [f["saving_s"] for f in boot["findings"]]
    numbers = [s for s in savings if s is not None]
    assert numbers == sorted(numbers, reverse=True) and savings[:len(numbers)] == numbers  # worst first
    assert run_["folder"] is True and run_["context"]["target"] == "qemu-arm64"
    assert "etc/init.d/S40settle" in run_["context"]["rootfs_files"]
    assert len(run_["boots"]) == 2
    m = {x["rule"]: x for x in run_["merged"]}["uboot.autoboot_delay"]
    assert {x["rule"]: x for x in run_["merged"]}["uboot.console"]["saving_s"] is None  # no rate: null, never 0
    assert m["seen"] == 2 and m["boots"] == 2 and m["boot"] in (0, 1)
    assert m["saving"] == {"n": 2, "median_s": 2.0, "min_s": 2.0, "max_s": 2.0}


def test_a_recording_remembers_its_baud() -> None:
    d = advise_json(BAUD_REC)
    assert d["inputs"][0]["context"]["baud"] == 115200
    f = {f["rule"]: f for f in d["inputs"][0]["boots"][0]["findings"]}["kernel.serial_console"]
    assert f["saving_s"] == pytest.approx(14_732 * 10 / 115200, abs=1e-9)


def test_log_text_is_never_markup(tmp_path: Path) -> None:
    log = tmp_path / "hostile.log"
    text = GRAB.read_text().replace("U-Boot 2023.01+dfsg-2+deb12u3", "U-Boot 2023.01 [bold red]x[/] \x1b[31mred")
    log.write_text(text)
    out = advise(log)
    assert "line 3: U-Boot 2023.01 [bold red]x[/]" in out  # shown as text, not interpreted
    assert "\x1b" not in out


@pytest.mark.parametrize(("args", "message"), [
    (["/nonexistent/boot.log"], "bootlens: error: /nonexistent/boot.log: "),
    (["--marker", "ready", str(GRAB)], "bootlens: error: --marker 'ready': expected NAME=REGEX"),
    (["--marker", "ready=(", str(GRAB)], "bootlens: error: --marker 'ready=(': bad regular expression"),
])
def test_bad_input_is_a_one_line_error(args: list[str], message: str) -> None:
    r = run("advise", *args)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr


def test_an_empty_input_and_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    for p in (tmp_path / "empty.log", tmp_path / "folder"):
        r = run("advise", p)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
