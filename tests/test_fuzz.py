"""The fuzz harness (fuzz/harness.py) over the seed corpus and every input a fuzz run crashed on
(fuzz/crashes/), and the crashes of issue 10 as regression tests: each goes through every parser,
the advisor and every renderer, every native framing, and the native keyword index checked
against Python's own search of each line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fuzz"))

import harness  # noqa: E402

from bootlens.advise.base import Context  # noqa: E402
from bootlens.advise.summary import advise_group  # noqa: E402
from bootlens.timeline.analyze import analyze_paths  # noqa: E402
from bootlens.timeline.inputs import Group  # noqa: E402
from bootlens.core.numbers import TIME_NS_MAX  # noqa: E402
from bootlens.render.jsonout import render_json  # noqa: E402

LINUX = "[    0.000000] Booting Linux on physical CPU 0x0\n[    0.000000] Linux version 6.1.0 (gcc) #1 SMP\n"
BIG = "99999999999999999999"  # 20 digits: past 64 bits


def _gs(t: float, s: str) -> str:
    """A grabserial -t line (host time t)."""
    return f"[{t:11.6f} {0:9.6f}] {s}\n"


def _uboot_load(size: str, data_size: str, read: str = "1000000") -> str:
    """A host-timed U-Boot boot of a gzip uImage that U-Boot decompresses (timed), then the kernel."""
    return "".join([
        _gs(0.0, "U-Boot 2023.01 (Jan 01 2023)"), _gs(0.5, "Hit any key to stop autoboot:  0"),
        _gs(0.6, f"{read} bytes read in 100 ms (9.5 MiB/s)"),
        _gs(0.7, "## Booting kernel from Legacy Image at 40400000 ..."),
        _gs(0.7, "   Image Type:   ARM64 Linux Kernel Image (gzip compressed)"),
        _gs(0.7, f"   Data Size:    {data_size} Bytes = {size}"), _gs(0.8, "   Uncompressing Kernel Image"),
        _gs(0.9, "Starting kernel ..."),
        _gs(0.9, "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x410fd034]"),
        _gs(0.9, "[    0.000000] Linux version 6.1.0 (gcc) #1 SMP"), _gs(1.5, "[    0.600000] Run /init as init process"),
    ])


# name -> (log text, a warning the analysis must give: the value was seen, not used, counted)
ISSUE_CASES = {
    "initcall-returned-20-digits": (
        LINUX + "[    0.100000] calling  foo_init+0x0/0x10 @ 1\n"
        f"[    0.200000] initcall foo_init+0x0/0x10 returned {BIG} after 5 usecs\n",
        "1 initcall lines with a number out of range"),
    "initcall-duration-20-digits": (
        LINUX + f"[    0.200000] initcall foo_init+0x0/0x10 returned 0 after {BIG} usecs\n",
        "1 initcall lines with a number out of range"),
    "initcall-pid-20-digits": (
        LINUX + f"[    0.100000] calling  foo_init+0x0/0x10 @ {BIG}\n"
        "[    0.200000] initcall foo_init+0x0/0x10 returned 0 after 5 usecs\n",
        "1 initcall lines with a number out of range"),
    "probe-20-digits": (
        LINUX + "[    0.100000] initcall a+0x0/0x1 returned 0 after 5 usecs\n"
        f"[    0.200000] probe of foo returned {BIG} after {BIG} usecs\n",
        "1 initcall lines with a number out of range"),
    "sched-process-pid-20-digits": (
        LINUX + f"[    0.300000] sched_process_fork: comm=init pid=1 child_comm=sh child_pid={BIG}\n",
        "sched_process trace: 1 numbers out of range were not used (1 pid; first at line 3)"),
    "lpj-20-digits": (
        LINUX + f"[    0.000000] Calibrating delay loop... 99.99 BogoMIPS (lpj={BIG})\n",
        "kernel: 1 numbers out of range were not used (1 lpj; first at line 3)"),
    "bytes-read-20-digits": (
        f"U-Boot 2023.01\nHit any key to stop autoboot:  2 \n{BIG} bytes read in {BIG} ms (1 MiB/s)\n"
        "Starting kernel ...\n" + LINUX,
        "U-Boot: 2 numbers out of range were not used (1 byte count, 1 load time; first at line 3)"),
    "bootstage-marks-20-digits": (
        "U-Boot 2023.01\nTimer summary in microseconds (2 records):\n       Mark    Elapsed  Stage\n"
        "          0          0  reset\n99,999,999,999,999,999,999  99,999,999,999,999,999,999  board_init_f\n\n"
        "Starting kernel ...\n" + LINUX,
        "U-Boot: 2 numbers out of range were not used (2 bootstage time; first at line 5)"),
    "bootstage-row-of-commas": (
        "U-Boot 2023.01\nTimer summary in microseconds (1 records):\n  , , x\nStarting kernel ...\n" + LINUX,
        "bootstage report at line 2 (1 records) has no readable rows"),
    "4301-digits": (
        LINUX + "[    0.200000] initcall foo returned 0 after " + "9" * 4301 + " usecs\n"
        "Hit any key to stop autoboot: " + "9" * 4301 + "\n",
        "U-Boot: 1 numbers out of range were not used (1 autoboot delay; first at line 4)"),
    "printk-ten-digit-seconds": (
        "[9999999999.999999] Linux version 6.1\n[9999999999.999999] calling  a @ 1\n"
        "[9999999999.999999] initcall a returned 0 after 5 usecs\n",
        "3 timestamps out of range (over 1,152,921,504 s) were not used"),
    "uptime-20-digits": (
        LINUX + f"uptime: {BIG}.00 1.00\n", "uptime: 1 numbers out of range were not used"),
    "grabserial-restart-4301-digit-delta": (
        "".join(_gs(5.0 + i, t) for i, t in enumerate(LINUX.splitlines())) + "[   0.100000 " + "9" * 4301
        + ".000000] [    0.500000] Run /init as init process\n", "host clock restarted 1 time(s)"),
    "kernel-compression-0-bytes-read": (_uboot_load("0 Bytes", "0", read="0"), None),
    "kernel-compression-data-size-0": (_uboot_load("0 Bytes", "0"), None),
}


@pytest.mark.parametrize("name", sorted(ISSUE_CASES))
def test_issue_crashes(name: str, tmp_path: Path) -> None:
    text, warning = ISSUE_CASES[name]
    harness.check(text.encode())  # every parser, rule and renderer; the native index against Python's search
    log = tmp_path / f"{name}.log"
    log.write_text(text)
    a = analyze_paths([str(log)])
    doc = json.loads(render_json(a))
    said = [w for st in doc["inputs"] for w in st["warnings"]] + [w for b in doc["boots"] for w in b["warnings"]]
    if warning is not None:
        assert any(warning in w for w in said), said


def test_kernel_compression_says_why_it_has_no_figure(tmp_path: Path) -> None:
    """A 0-byte kernel (Data Size 0) with a timed decompression divided by zero (issue 10)."""
    for name, text in (("size0", _uboot_load("0 Bytes", "0")), ("read0", _uboot_load("0 Bytes", "0", read="0"))):
        log = tmp_path / f"{name}.log"
        log.write_text(text)
        g = Group(str(log), analyze_paths([str(log)]), False)
        ga = advise_group(g, Context())
        found = [f for b in ga.boots for f in b.findings if f.rule == "kernel.compression"]
        assert len(found) == 1 and found[0].saving_ns is None, found
        assert found[0].arithmetic.startswith("no estimate:") and "0 bytes" in found[0].arithmetic
        assert not [w for w in ga.warnings if w.text.startswith("rule ")]


def test_kernel_compression_still_advises_a_sane_load(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text(_uboot_load("976.6 KiB", "1000000"))
    ga = advise_group(Group(str(log), analyze_paths([str(log)]), False), Context())
    found = [f for b in ga.boots for f in b.findings if f.rule == "kernel.compression"]
    assert found and found[0].saving_ns is not None and 0 < found[0].saving_ns < TIME_NS_MAX


def test_a_failing_rule_is_a_counted_warning_not_a_crash(tmp_path: Path) -> None:
    """advise_group's last resort: one rule's bug names the rule, the other rules still run."""
    from bootlens.advise import RuleRegistry, default_registry
    from bootlens.advise.base import Rule

    reg = RuleRegistry()

    @reg.register
    class Broken(Rule):
        id = "test.broken"
        title = "always fails"

        def check(self, boot, ctx):  # type: ignore[no-untyped-def]
            raise ZeroDivisionError("float division by zero")

    for cls in default_registry():
        reg.register(cls)
    log = tmp_path / "b.log"
    log.write_text(_uboot_load("976.6 KiB", "1000000"))
    ga = advise_group(Group(str(log), analyze_paths([str(log)]), False), Context(), reg)
    assert [w.text for w in ga.warnings if w.text.startswith("rule ")] == [
        "rule test.broken failed on this boot (ZeroDivisionError: float division by zero); its findings are missing"]
    assert any(f.rule == "kernel.compression" for b in ga.boots for f in b.findings)


@pytest.mark.parametrize("escape", ["\\UFFFFFFFF", "\\uD800", "\\udfff", "\\U0010FFFF"])
def test_lava_escapes_past_unicode_or_surrogates(escape: str, tmp_path: Path) -> None:
    """A LAVA message's YAML escape past U+10FFFF crashed chr(); a lone surrogate crashed every
    UTF-8 writer. Both read as U+FFFD."""
    text = (ROOT / "tests" / "golden" / "lines" / "lava-job.log").read_text()
    assert "Linux version" in text
    text = text.replace("Linux version", f"Linux {escape} version", 1)
    harness.check(text.encode())
    log = tmp_path / "lava.log"
    log.write_text(text)
    texts = [e["name"] for b in json.loads(render_json(analyze_paths([str(log)])))["boots"] for e in b["events"]]
    assert texts


@pytest.mark.parametrize("path", harness.seeds() + harness.regressions(), ids=lambda p: p.name)
def test_corpus_and_past_crashes(path: Path) -> None:
    """The seed corpus, and every input a fuzz run crashed on, through the whole harness."""
    harness.check(path.read_bytes()[: 1 << 16])


SIDE = [(t, p) for t, target in harness.TARGETS.items() if t != "log" for p in target.seeds() + harness.regressions(t)]


@pytest.mark.parametrize("target,path", SIDE, ids=lambda x: x if isinstance(x, str) else x.name)
def test_side_seeds_and_past_crashes(target: str, path: Path) -> None:
    """Each side format's seeds, and every input its harness crashed on (crash-TARGET-HASH),
    through that harness: alone and attached to a console log, every report and the advisor."""
    harness.TARGETS[target].check(path.read_bytes()[: 1 << 16])


def test_every_crash_file_names_a_harness() -> None:
    """A crash file is replayed by the harness its name gives (harness.target_of)."""
    crashes = sorted(p for p in (ROOT / "fuzz" / "crashes").glob("*") if p.is_file() and not p.name.startswith("."))
    assert sorted(p for t in harness.TARGETS for p in harness.regressions(t)) == crashes
    assert harness.target_of(Path("crash-ftrace-0123456789abcdef")) == "ftrace"
    assert harness.target_of(Path("crash-0123456789abcdef")) == "log"


def test_side_formats_bound_their_numbers() -> None:
    """The side readers' numbers go through core.numbers' bounds (issue 29: a 25-digit run where
    a pid, a time, a CPU count or an exit status belongs reached the JSON writers and the native
    report as an integer past 64 bits; fuzz/crashes/crash-{strace,systemd_analyze,ftrace}-*)."""
    from bootlens.sources.ftrace.reader import EVENTS_MAX
    from bootlens.sources.strace.reader import pid_from_name, read_trace
    from bootlens.sources.systemd_analyze.reader import parse_timespan

    big = "9" * 25
    t = read_trace(f"{big} 0.000001 execve(\"/bin/sh\", [\"sh\"], 0x1 /* 1 var */) = 0\n"
                   "7 0.000002 brk(NULL) = 0x55b539e3c000 <0.000009>\n"
                   f"7 {big}.5 brk(NULL) = 0x55b539e3c000 <{big}.1>\n"
                   f"7 0.000003 +++ exited with {big} +++\n")
    assert [c.pid for c in t.calls] == [7, 7, 7] and t.calls[1].t_ns is None and t.calls[1].dur_ns is None
    assert t.calls[2].ret_int is None  # the exit status: no kernel long
    assert "strace: 3 numbers out of range were not used (1 duration, 1 pid, 1 time; first at line 1)" in t.warnings
    assert pid_from_name(f"trace.{big}") is None and pid_from_name("trace.1336") == 1336
    assert parse_timespan(f"{big}s") is None and parse_timespan("1min 2.345s") == 62_345_000_000
    assert parse_timespan("0." + "5" * 4400 + "s") == 555_555_555  # a fraction past 4,300 digits: its first 18
    assert EVENTS_MAX < 2**63
    # numbers past Python's 4,300-digit limit never reach int() (a ValueError no reader caught)
    from bootlens.sources.logic.reader import read_vcd
    from bootlens.sources.strace.args import fd_arg

    assert fd_arg("9" * 4400) == (None, None) and fd_arg("3</dev/console>") == (3, "/dev/console")
    vcd = read_vcd(["$timescale", "9" * 4400 + " ns", "$end", "$var wire 1 ! clk $end", "$enddefinitions $end",
                    "#0", "0!", "#10", "1!"])
    assert any("not understood (1, 10 or 100 expected): 1 ns assumed" in w for w in vcd.warnings), vcd.warnings
