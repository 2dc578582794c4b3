"""Damaged inputs through the real ``bootlens analyze`` command: nothing may crash.

Every case is built from bytes in ``tmp_path`` (mostly the real arm64 console log with one
kind of damage added) and run as a subprocess. Each test checks four things: no traceback,
the exit code, the specific count or warning in ``--json``, and that the boot is still found
and analysed (same stages and events as the undamaged log).

Figures of the reference log, read off tests/data/corpus/qemu-arm64-uboot.console.log:
255 lines, 229 with a printk time, "[    0.879351] Run /init as init process" on line 252,
"APP READY" on line 254.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any, Union

import pytest

HERE = Path(__file__).parent
CORPUS = HERE / "data" / "corpus"
CONSOLE = CORPUS / "qemu-arm64-uboot.console.log"  # CRLF, no host timestamps
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"  # grabserial -t, initcall_debug

CONSOLE_LINES = 255
CONSOLE_TIMED_LINES = 229
RUN_INIT_S = 0.879351
GRAB_INITCALLS = 918

Arg = Union[str, bytes, "os.PathLike[str]"]
Json = dict[str, Any]

# A deterministic environment for the child: no forced colours, no inherited terminal width.
ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}


# --------------------------------------------------------------------------------------------
# helpers


def run(*args: Arg, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``bootlens ARGS...`` through the real entry point; bytes in, bytes out."""
    return subprocess.run(
        [sys.executable, "-m", "bootlens.cli", *args],
        input=input,
        capture_output=True,
        timeout=120,
        env=ENV,
    )


def analyze(path: Arg, *extra: Arg) -> subprocess.CompletedProcess[bytes]:
    """``bootlens analyze PATH --json --marker ready='APP READY' EXTRA...``."""
    return run("analyze", path, "--json", "--marker", "ready=APP READY", *extra)


def analyze_json(path: Arg, *extra: Arg) -> Json:
    """Analyse a file that must succeed: exit 0, no traceback; returns the parsed JSON."""
    r = analyze(path, *extra)
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert r.returncode == 0, err
    obj: Json = json.loads(r.stdout)
    return obj


def write(tmp_path: Path, data: bytes, name: str = "capture.log") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def console_lf() -> bytes:
    """The reference console log with LF line endings (it has CRLF on disk, no bare CR)."""
    data = CONSOLE.read_bytes().replace(b"\r\n", b"\n")
    assert b"\r" not in data
    return data


def console_lines() -> list[bytes]:
    """The LF console log split into lines, without the empty string after the final newline."""
    lines = console_lf().split(b"\n")
    assert lines[-1] == b""
    return lines[:-1]


def join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines) + b"\n"


def index_of(lines: list[bytes], needle: bytes) -> int:
    """Index of the only line containing ``needle``."""
    hits = [i for i, s in enumerate(lines) if needle in s]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def only_boot(d: Json) -> Json:
    assert len(d["boots"]) == 1, [b["split_reason"] for b in d["boots"]]
    boot: Json = d["boots"][0]
    return boot


def stage(boot: Json, name: str) -> Json:
    (s,) = [s for s in boot["stages"] if s["name"] == name]
    return s  # type: ignore[no-any-return]


def events_named(boot: Json, kind: str, name: str) -> list[Json]:
    return [e for e in boot["events"] if e["kind"] == kind and e["name"] == name]


def shape(boot: Json) -> Json:
    """What a boot's analysis says, without line numbers (which shift when lines are added)."""
    return {
        "stages": [(s["name"], s["start_s"], s["duration_s"], s["status"]) for s in boot["stages"]],
        "events": [(e["kind"], e["name"], e["start_s"], e["duration_s"]) for e in boot["events"]],
        "untimed": [(e["kind"], e["name"]) for e in boot["untimed_events"]],
        "total": {k: v for k, v in boot["total"].items() if k not in ("end", "evidence")},  # both name lines
        "partial_reasons": boot["partial_reasons"],
        "formats": boot["formats"],
    }


def without(boot: Json, *keys: str) -> Json:
    return {k: v for k, v in boot.items() if k not in keys}


def assert_one_line_error(r: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    """Exit 2, nothing on stdout, exactly one stderr line "bootlens: error: ..." holding needles."""
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert r.returncode == 2, err
    assert r.stdout == b""
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err.startswith("bootlens: error: "), repr(err)
    for needle in needles:
        assert needle in err, (needle, err)
    return err


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Json:
    """The undamaged LF console log's only boot, to compare damaged variants against."""
    p = write(tmp_path_factory.mktemp("baseline"), console_lf())
    d = analyze_json(p)
    boot = only_boot(d)
    # the reference figures every test leans on
    assert d["inputs"][0]["lines"] == CONSOLE_LINES
    assert d["inputs"][0]["warnings"] == []
    assert boot["counts"]["timed_lines"] == CONSOLE_TIMED_LINES
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert not boot["partial"]
    assert not any("mid-line" in w or "backwards" in w for w in boot["warnings"])
    return boot


# --------------------------------------------------------------------------------------------
# 1. bytes that are not UTF-8


def test_invalid_utf8_is_replaced_counted_and_the_boot_still_analysed(tmp_path: Path, baseline: Json) -> None:
    """b"\\xff\\xfe\\xc3" in a kernel line: three undecodable sequences (the lone lead byte
    \\xc3 is cut short by the newline), each replaced by U+FFFD."""
    lines = console_lines()
    i = index_of(lines, b"Machine model: linux,dummy-virt")
    lines[i] = lines[i] + b" \xff\xfe\xc3"
    d = analyze_json(write(tmp_path, join(lines)))
    inp = d["inputs"][0]
    assert inp["invalid_utf8"] == 3
    assert inp["garbled_lines"] == 0  # one damaged text line is not wrong-baud noise
    assert [w for w in inp["warnings"] if "U+FFFD" in w] == ["3 undecodable byte sequences replaced by U+FFFD"]
    boot = only_boot(d)
    assert "3 undecodable byte sequences replaced by U+FFFD" in boot["warnings"]
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert without(boot, "source", "warnings") == without(baseline, "source", "warnings")


def test_invalid_utf8_does_not_count_genuine_replacement_characters(tmp_path: Path) -> None:
    """A capture tool that already replaced bad bytes writes U+FFFD as valid UTF-8
    (EF BF BD). Such a file with one more raw bad byte has ONE undecodable sequence."""
    lines = console_lines()
    lines[40] += " \ufffd".encode()  # valid UTF-8, not an undecodable sequence
    lines[41] += b" \xff"  # the only undecodable byte
    d = analyze_json(write(tmp_path, join(lines)))
    assert d["inputs"][0]["invalid_utf8"] == 1


def test_utf8_bom_does_not_change_the_analysis(tmp_path: Path) -> None:
    """Windows terminal programs may start a capture with a UTF-8 BOM (EF BB BF). It is not
    part of the console output: the analysis must be the same as without it."""
    plain = analyze_json(write(tmp_path, GRAB.read_bytes(), "plain.log"))
    bom = analyze_json(write(tmp_path, b"\xef\xbb\xbf" + GRAB.read_bytes(), "bom.log"))
    assert bom["boots"][0]["total"]["duration_s"] == plain["boots"][0]["total"]["duration_s"]
    assert shape(bom["boots"][0]) == shape(plain["boots"][0])


# --------------------------------------------------------------------------------------------
# 2. NUL bytes


def test_nul_bytes_in_lines_are_counted_and_removed(tmp_path: Path, baseline: Json) -> None:
    """NULs in the padding of a printk prefix, after a message and between two words; none
    splits a token, so once removed every line parses as before."""
    lines = console_lines()
    i = index_of(lines, b"Run /init as init process")
    assert lines[i] == b"[    0.879351] Run /init as init process"
    lines[i] = b"[ \x00  \x00 0.879351]\x00 Run /init as init process"  # 3
    j = index_of(lines, b"Machine model: linux,dummy-virt")
    lines[j] += b"\x00\x00"  # 2
    k = index_of(lines, b"Starting kernel ...")
    lines[k] = lines[k].replace(b"Starting kernel", b"Starting\x00 kernel")  # 1
    d = analyze_json(write(tmp_path, join(lines)))
    inp = d["inputs"][0]
    assert inp["nul_bytes"] == 6
    assert "6 NUL bytes removed" in inp["warnings"]
    assert inp["lines"] == CONSOLE_LINES
    boot = only_boot(d)
    (run_init,) = events_named(boot, "milestone", "run_init")
    assert run_init["start_s"] == RUN_INIT_S
    assert run_init["line"] == i + 1
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert without(boot, "source", "warnings") == without(baseline, "source", "warnings")


def test_a_run_of_1000_nuls_between_lines(tmp_path: Path, baseline: Json) -> None:
    """A serial line held in break or a flash dump pads with NULs: 1000 of them right after a
    newline vanish without adding a line, so even the line numbers stay the same."""
    lines = console_lines()
    lines[100] = b"\x00" * 1000 + lines[100]
    d = analyze_json(write(tmp_path, join(lines)))
    inp = d["inputs"][0]
    assert inp["nul_bytes"] == 1000
    assert "1000 NUL bytes removed" in inp["warnings"]
    assert inp["lines"] == CONSOLE_LINES
    boot = only_boot(d)
    assert boot["warnings"][0] == "1000 NUL bytes removed"
    assert without(boot, "source", "warnings") == without(baseline, "source", "warnings")


# --------------------------------------------------------------------------------------------
# 3. line endings


@pytest.mark.parametrize("ending", ["crlf", "cr"])
def test_crlf_and_bare_cr_line_endings_give_the_lf_result(tmp_path: Path, baseline: Json, ending: str) -> None:
    """The corpus log as stored (CRLF) and converted to bare CR: same lines, same boot, same
    stage durations, same line numbers as the LF version."""
    if ending == "crlf":
        data = CONSOLE.read_bytes()
        assert data.count(b"\r\n") == CONSOLE_LINES
    else:
        data = console_lf().replace(b"\n", b"\r")
        assert b"\n" not in data
    d = analyze_json(write(tmp_path, data))
    inp = d["inputs"][0]
    assert inp["lines"] == CONSOLE_LINES
    assert inp["no_final_newline"] is False
    cr_warning = "input uses bare CR line endings; treated as newlines"
    assert (cr_warning in inp["warnings"]) is (ending == "cr")
    boot = only_boot(d)
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert [(s["name"], s["duration_s"]) for s in boot["stages"]] == [
        (s["name"], s["duration_s"]) for s in baseline["stages"]
    ]
    assert without(boot, "source", "warnings") == without(baseline, "source", "warnings")


# --------------------------------------------------------------------------------------------
# 4. a very long line


@pytest.mark.parametrize("timed", [False, True], ids=["untimed", "printk"])
def test_a_100kB_line_in_the_middle(tmp_path: Path, baseline: Json, timed: bool) -> None:
    """A 100 kB line (an untimed binary dump, or a printk line with a huge message stamped
    like the line before it) is counted as long; everything else is as without it."""
    lines = console_lines()
    i = index_of(lines, b"] cpuidle: using governor menu")  # "[    0.149957] ..."
    prefix = lines[i][: lines[i].index(b"]") + 2] if timed else b""
    lines.insert(i + 1, prefix + b"x" * 100_000)
    d = analyze_json(write(tmp_path, join(lines)))
    inp = d["inputs"][0]
    assert inp["long_lines"] == 1
    assert "1 lines longer than 4096 characters" in inp["warnings"]
    assert inp["lines"] == CONSOLE_LINES + 1
    boot = only_boot(d)
    assert boot["counts"]["lines"] == CONSOLE_LINES + 1
    assert boot["counts"]["timed_lines"] == CONSOLE_TIMED_LINES + int(timed)
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert shape(boot) == shape(baseline)
    assert len(boot["warnings"]) == len(baseline["warnings"]) + 1


# --------------------------------------------------------------------------------------------
# 5. capture cut mid-line


def test_truncated_last_line_is_a_warning_not_an_error(tmp_path: Path, baseline: Json) -> None:
    """The capture stops in the middle of "[    1.011760] reboot: Power down"."""
    data = console_lf()
    cut = data.index(b"reboot: Power down") + len(b"reboot: Pow")
    d = analyze_json(write(tmp_path, data[:cut]))
    inp = d["inputs"][0]
    assert inp["no_final_newline"] is True
    assert inp["lines"] == CONSOLE_LINES
    assert any("mid-line" in w for w in inp["warnings"]), inp["warnings"]
    boot = only_boot(d)
    assert any("mid-line" in w for w in boot["warnings"]), boot["warnings"]
    assert boot["partial"] is False
    assert boot["counts"]["timed_lines"] == CONSOLE_TIMED_LINES  # the cut line still has its time
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert shape(boot) == shape(baseline)


# --------------------------------------------------------------------------------------------
# 6. wrong-baud noise


def baud_noise(seed: int, size: int = 2048) -> tuple[bytes, int]:
    """Lines of mostly high bytes with some ASCII letters, as a wrong baud rate gives; no CR,
    NUL, control bytes or '['. Returns the bytes and the number of lines."""
    rng = random.Random(seed)
    ascii_ = b"abcdefghijkXYZ0123456789 .:"
    out = bytearray()
    n = 0
    while len(out) < size:
        width = rng.randint(20, 80)
        out += bytes(rng.randint(0x80, 0xFF) if rng.random() < 0.8 else rng.choice(ascii_) for _ in range(width))
        out += b"\n"
        n += 1
    return bytes(out), n


def test_wrong_baud_noise_before_the_log(tmp_path: Path, baseline: Json) -> None:
    noise, n_noise = baud_noise(seed=1234)
    d = analyze_json(write(tmp_path, noise + console_lf()))
    inp = d["inputs"][0]
    assert inp["lines"] == n_noise + CONSOLE_LINES
    assert inp["invalid_utf8"] > 0
    assert inp["garbled_lines"] == n_noise
    noise_warnings = [w for w in inp["warnings"] if "noise" in w]
    assert noise_warnings and noise_warnings[0].startswith(f"{n_noise} lines look like noise")
    boot = only_boot(d)
    assert noise_warnings[0] in boot["warnings"]
    assert boot["counts"]["timed_lines"] == CONSOLE_TIMED_LINES
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert shape(boot) == shape(baseline)


# --------------------------------------------------------------------------------------------
# 7. printk time going backwards


def test_printk_time_going_back_10ms_once_is_one_boot_with_a_warning(tmp_path: Path, baseline: Json) -> None:
    """A line stamped 10 ms before the line above it (an SMP timestamp race): the same boot."""
    lines = console_lines()
    i = index_of(lines, b"] hw-breakpoint: found 6 breakpoint")
    assert lines[i].startswith(b"[    0.150670] ")
    lines.insert(i + 1, b"[    0.140670] bootlens-test: stamped 10 ms early")
    d = analyze_json(write(tmp_path, join(lines)))
    boot = only_boot(d)
    back = [w for w in boot["warnings"] if "backwards" in w]
    assert len(back) == 1 and back[0].startswith("printk time went backwards 1 times"), boot["warnings"]
    assert boot["split_reason"] == "start of input"
    assert boot["counts"]["timed_lines"] == CONSOLE_TIMED_LINES + 1
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S
    assert shape(boot) == shape(baseline)


def test_printk_time_going_back_2s_without_a_banner_starts_a_second_boot(tmp_path: Path, baseline: Json) -> None:
    """A reset whose banners were lost: after a line at 2.105424 s, the kernel lines of the log
    again from 0.105424 s (no "Booting Linux", no "Linux version", no U-Boot)."""
    lines = console_lines()
    i = index_of(lines, b"] Registered cp15_barrier emulation handler")
    assert lines[i].startswith(b"[    0.105424] ")
    second = lines[i:]
    assert not any(b"Linux version" in s or b"Booting Linux" in s or b"U-Boot" in s for s in second)
    data = join(lines + [b"[    2.105424] bootlens-test: last line before the reset"] + second)
    d = analyze_json(write(tmp_path, data))
    assert len(d["boots"]) == 2
    first, again = d["boots"]
    assert first["split_reason"] == "start of input"
    assert "went back" in again["split_reason"]
    assert again["split_reason"] == "printk time went back from 2.105424 to 0.105424"
    assert again["first_line"] == CONSOLE_LINES + 2
    assert again["partial"] is True
    assert "kernel start (Linux version) not in the log" in again["partial_reasons"]
    (run_init,) = events_named(again, "milestone", "run_init")
    assert run_init["start_s"] == RUN_INIT_S
    assert events_named(again, "marker", "ready")
    # the first boot is the whole reference boot, not cut or merged
    assert first["counts"]["lines"] == CONSOLE_LINES + 1
    assert [(s["name"], s["duration_s"]) for s in first["stages"]] == [
        (s["name"], s["duration_s"]) for s in baseline["stages"]
    ]


# --------------------------------------------------------------------------------------------
# 8. inputs with no boot at all, and unreadable paths


def _empty(tmp_path: Path) -> Path:
    return write(tmp_path, b"")


def _whitespace(tmp_path: Path) -> Path:
    return write(tmp_path, b"  \n\t\r\n   \r\n\n")


def _random_binary(tmp_path: Path) -> Path:
    return write(tmp_path, random.Random(7).randbytes(4096), "dump.bin")


def _no_boot(tmp_path: Path) -> Path:
    return write(tmp_path, b"hello\nworld\n")


def _missing(tmp_path: Path) -> Path:
    return tmp_path / "does-not-exist.log"


def _directory(tmp_path: Path) -> Path:
    d = tmp_path / "captures"
    d.mkdir()
    return d


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_empty, "empty input"),
        (_whitespace, "empty input"),
        (_random_binary, "binary or garbled input"),
        (_no_boot, "no boot found"),
        (_missing, "no such file"),
        (_directory, "no recordings (boot-N.rec) or logs in this folder"),
    ],
    ids=["empty", "whitespace", "random-binary", "no-boot", "nonexistent", "directory"],
)
def test_unusable_input_is_a_one_line_error(tmp_path: Path, make: Any, reason: str) -> None:
    path = make(tmp_path)
    err = assert_one_line_error(analyze(path), reason)
    assert err.startswith(f"bootlens: error: {path}: "), err


def test_non_utf8_file_name_with_json(tmp_path: Path) -> None:
    """A Latin-1 file name (bytes b'boot-\\xe9t\\xe9.log') is legal on Linux; bootlens must
    analyse the file, or at worst fail with a one-line error, never a traceback."""
    name = b"boot-\xe9t\xe9.log"
    target = os.path.join(os.fsencode(tmp_path), name)
    try:
        with open(target, "wb") as f:
            f.write(console_lf())
    except OSError:
        pytest.skip("file system refuses non-UTF-8 names")
    r = analyze(target)
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert r.returncode == 0, err
    boot = only_boot(json.loads(r.stdout))
    assert stage(boot, "kernel_init")["duration_s"] == RUN_INIT_S


def test_error_naming_a_path_with_a_newline_is_still_one_line(tmp_path: Path) -> None:
    path = tmp_path / "cap\nture.log"  # does not exist
    assert_one_line_error(analyze(path), "no such file")


# --------------------------------------------------------------------------------------------
# 9. printk times and nothing else


def test_timestamps_only_is_a_partial_boot(tmp_path: Path) -> None:
    """50 lines "[    0.0NN000] foo bar": a kernel was running, but nothing says which stage."""
    data = b"".join(b"[    0.%03d000] foo bar\n" % n for n in range(50))
    d = analyze_json(write(tmp_path, data))
    assert d["inputs"][0]["lines"] == 50
    boot = only_boot(d)
    assert boot["partial"] is True
    assert boot["partial_reasons"] == [
        "kernel start (Linux version) not in the log",
        "log ends before user space started (no 'Run /init', 'Freeing ... memory' or user-space output)",
    ]
    assert boot["counts"]["timed_lines"] == 50
    assert boot["axis"] == "kernel"
    assert stage(boot, "kernel_init")["status"] == "not measured"
    assert stage(boot, "kernel_init")["duration_s"] is None


# --------------------------------------------------------------------------------------------
# 10. initcalls that never returned


def test_initcalls_without_returned_lines_are_unfinished(tmp_path: Path) -> None:
    """One initcall returns, two (one of them a module init on pid 17) never do."""
    data = (
        b"[    0.000000] Linux version 6.1.0-test (bootlens@test) #1 SMP\n"
        b"[    0.100000] calling  foo_init+0x0/0x60 @ 1\n"
        b"[    0.100100] initcall foo_init+0x0/0x60 returned 0 after 100 usecs\n"
        b"[    0.200000] calling  bar_init+0x0/0x60 @ 1\n"
        b"[    0.300000] calling  baz_init+0x0/0x60 [bazmod] @ 17\n"
        b"[    0.400000] Run /init as init process\n"
    )
    d = analyze_json(write(tmp_path, data))
    boot = only_boot(d)
    assert boot["counts"]["initcalls"] == 1
    assert boot["counts"]["initcalls_unfinished"] == 2
    assert "2 initcalls were called but had not returned when the log ended" in boot["warnings"]
    unfinished = [e for e in boot["events"] if e["kind"] == "initcall" and not e["returned"]]
    assert [(e["name"], e["start_s"], e["duration_s"], e["pid"], e["module"]) for e in unfinished] == [
        ("bar_init", 0.2, None, 1, None),
        ("baz_init", 0.3, None, 17, "bazmod"),
    ]
    assert stage(boot, "kernel_init")["duration_s"] == 0.4


def test_corpus_initcalls_with_returned_lines_removed(tmp_path: Path) -> None:
    """The grabserial corpus log with the 'returned' line of three initcalls deleted."""
    gone = (b"initcall crypto_algapi_init+", b"initcall inet_init+", b"initcall slab_sysfs_init+")
    lines = GRAB.read_bytes().split(b"\n")
    kept = [s for s in lines if not any(g in s for g in gone)]
    assert len(lines) - len(kept) == 3
    d = analyze_json(write(tmp_path, b"\n".join(kept)))
    boot = only_boot(d)
    assert boot["counts"]["initcalls"] == GRAB_INITCALLS - 3
    assert boot["counts"]["initcalls_unfinished"] == 3
    assert "3 initcalls were called but had not returned when the log ended" in boot["warnings"]
    unfinished = sorted(e["name"] for e in boot["events"] if e["kind"] == "initcall" and e["duration_s"] is None)
    assert unfinished == ["crypto_algapi_init", "inet_init", "slab_sysfs_init"]
    assert "crypto_algapi_init" not in [e["name"] for e in boot["top"]["initcalls"]]
    assert stage(boot, "kernel_init")["status"] == "measured"


def test_a_run_folder_with_a_non_ascii_digit_boot_name(tmp_path: Path) -> None:
    """'boot-².rec': str.isdigit() says yes, int() says no; the file is read as a plain log."""
    from bootlens.capture.run_folder import folder_files

    rec = tmp_path / "boot-².rec"
    rec.write_text("[    0.000000] Linux version 6.1.0\n")
    assert folder_files(tmp_path) == [rec]
