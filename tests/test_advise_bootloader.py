"""The rules for the bootloader, the kernel image and the console, on real logs: the corpus
captures of the qemu-arm64 reference target, recordings of it (tests/data/advise: a run folder
of two boots without --baud, one boot with --baud 115200), and the golden U-Boot logs.

Figures are read off those files: the reference target prints 14,732 console bytes from
``Booting Linux`` (line 25) to ``Run /init`` (line 252) and 754 from the U-Boot banner (line 3)
to ``Starting kernel ...`` (line 23); milestones-old-and-new.log calibrates its delay loop from
0.000012 to 0.090021 s; legacy-uimage-gzip-host.log reads 4,446,310 bytes in 486 ms, verifies
for 80.4 ms (line 16) and un-gzips in 427.8 ms.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import READY_OPTS as OPTS, one, run_rule

from bootlens.advise import Change, ChangeKind, Confidence, Context, Finding
from bootlens.advise.context import context_for_group
from bootlens.advise.rules.kernel_compression import CODECS, KernelCompression
from bootlens.advise.rules.kernel_console import SerialConsole
from bootlens.advise.rules.kernel_lpj import DelayLoopCalibration
from bootlens.advise.rules.uboot_autoboot import AutobootDelay
from bootlens.advise.rules.uboot_console import BootloaderConsole
from bootlens.advise.rules.uboot_verify import ImageVerify
from bootlens.advise.summary import BootAdvice, advise_inputs, merge
from bootlens.timeline.analyze import analyze_paths
from bootlens.timeline.inputs import analyze_inputs
from bootlens.capture.recording import read_recording
from bootlens.targets.qemu import rootfs_files

HERE = Path(__file__).parent
CORPUS = HERE / "data" / "corpus"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
CONSOLE = CORPUS / "qemu-arm64-uboot.console.log"
X86 = CORPUS / "qemu-x86_64-initcall.console.log"
RUN = HERE / "data" / "advise" / "qemu-arm64-run"
BAUD_REC = HERE / "data" / "advise" / "qemu-arm64-baud115200.rec"
GOLDEN = HERE / "golden"
LEGACY = GOLDEN / "uboot" / "legacy-uimage-gzip-host.log"
FIT_SIGNED = GOLDEN / "uboot" / "fit-signed-lz4-host.log"
FIT_PLAIN = GOLDEN / "uboot" / "fit-verify-efi.log"
IMX8 = GOLDEN / "analyze" / "spl-bootstage-host.log"
CALIBRATED = GOLDEN / "kernel" / "milestones-old-and-new.log"
TIMER_ROUTINE = GOLDEN / "kernel" / "calibrate-timer-routine.log"
PRESET = GOLDEN / "kernel" / "preset-lpj-panic.log"
MS = 1_000_000



def raw_bytes(rec: Path, first: bytes, last: bytes) -> int:
    """Bytes a recording holds from the start of the line containing ``first`` to the end of the
    line containing ``last``: what the console really sent (independent of the rules' count)."""
    d = read_recording(str(rec)).data
    a = d.rfind(b"\n", 0, d.find(first)) + 1
    b = d.find(b"\n", d.find(last)) + 1
    return b - a


# --- kernel.lpj ------------------------------------------------------------------------------


def test_lpj_from_a_calibrated_delay_loop() -> None:
    f = one(DelayLoopCalibration, CALIBRATED)
    assert f.saving_ns == 90_009_000  # 0.090021 - 0.000012
    assert f.change == Change(ChangeKind.CMDLINE, "lpj=7962624", f.change.description)
    assert f.change.automatic and f.confidence is Confidence.HIGH and f.stage == "kernel_init"
    assert [e.line_no for e in f.evidence] == [4] and "lpj=7962624" in f.evidence[0].text


def test_lpj_from_the_timer_specific_routine() -> None:
    f = one(DelayLoopCalibration, TIMER_ROUTINE)
    assert f.saving_ns == 20 * MS and f.change.value == "lpj=240000"


@pytest.mark.parametrize("path", [GRAB, CONSOLE, X86, PRESET], ids=lambda p: p.name)
def test_no_lpj_finding_when_the_calibration_is_skipped(path: Path) -> None:
    # "(skipped), value calculated using timer frequency" and "(skipped) preset value": nothing to save
    assert run_rule(DelayLoopCalibration, path) == []


def test_lpj_without_timestamps_gives_no_number(tmp_path: Path) -> None:
    bare = tmp_path / "bare.log"
    bare.write_text(re.sub(r"^\[ *[\d.]+\] ", "", CALIBRATED.read_text(), flags=re.M))
    f = one(DelayLoopCalibration, bare)
    assert f.saving_ns is None and f.arithmetic.startswith("no estimate:") and "printk" in f.arithmetic
    assert f.change.value == "lpj=7962624"


# --- kernel.serial_console --------------------------------------------------------------------


def test_serial_console_counts_the_bytes_the_console_really_sent() -> None:
    f = one(SerialConsole, BAUD_REC, Context(baud=115200))
    sent = raw_bytes(BAUD_REC, b"Booting Linux", b"Run /init")
    assert sent == 14_732
    assert f.saving_ns == 14_732 * 10 * 1_000_000_000 // 115200  # 1.279 s
    assert f"{sent:,} bytes" in f.title
    assert f.change.kind is ChangeKind.CMDLINE and f.change.value == "quiet" and f.change.automatic
    assert [e.line_no for e in f.evidence] == [25, 252]
    assert f.confidence is Confidence.MEDIUM


def test_serial_console_without_a_baud_rate_says_why() -> None:
    f = one(SerialConsole, RUN / "boot-1.rec")
    assert f.saving_ns is None
    assert f.arithmetic.startswith("no estimate: console baud unknown: pass --baud to bootlens advise or capture "
                                   "with bootlens capture --baud")
    assert "14,732 bytes" in f.arithmetic


def test_serial_console_on_qemu_says_the_console_is_not_paced() -> None:
    ctx = Context(target="qemu-arm64", baud=115200)
    f = one(SerialConsole, BAUD_REC, ctx)
    assert f.saving_ns is not None and "not paced" in f.arithmetic and "docs/target.md" in f.arithmetic
    assert "not paced" not in one(SerialConsole, BAUD_REC, Context(baud=115200)).arithmetic


def test_serial_console_with_ignore_loglevel_is_a_manual_change() -> None:
    f = one(SerialConsole, GRAB, Context(baud=115200))
    assert f.change.kind is ChangeKind.MANUAL and "remove ignore_loglevel" in f.change.description
    assert f.saving_ns == 141_848 * 10 * 1_000_000_000 // 115200


def test_no_serial_console_finding_when_already_quiet() -> None:
    assert run_rule(SerialConsole, PRESET, Context(baud=115200)) == []  # "... lpj=4980736 quiet"


# --- uboot.console ----------------------------------------------------------------------------


def test_uboot_console_on_the_reference_target() -> None:
    ctx = context_for_group(analyze_inputs([str(BAUD_REC)], OPTS)[0])
    assert ctx.baud == 115200 and ctx.target == "qemu-arm64"
    f = one(BootloaderConsole, BAUD_REC, ctx)
    assert f.saving_ns == 754 * 10 * 1_000_000_000 // 115200  # 65.5 ms
    # the recording holds 760: the countdown's 6 backspaces are control characters, not text
    assert raw_bytes(BAUD_REC, b"U-Boot 20", b"Starting kernel") == 760
    assert [e.line_no for e in f.evidence] == [3, 23]
    assert f.change.kind is ChangeKind.KCONFIG and f.change.value == "CONFIG_SILENT_CONSOLE=y"
    assert not f.change.automatic and "silent=1" in f.change.description
    assert "built without CONFIG_SILENT_CONSOLE" in f.change.description  # tested: silent=1 does nothing


def test_uboot_console_without_a_baud_rate_and_without_uboot() -> None:
    f = one(BootloaderConsole, FIT_PLAIN)
    assert f.saving_ns is None and "console baud unknown" in f.arithmetic
    assert "built without" not in f.change.description  # not a reference target: nothing known
    assert run_rule(BootloaderConsole, X86, Context(baud=115200)) == []  # SeaBIOS, no U-Boot


# --- uboot.image_verify -----------------------------------------------------------------------


def test_image_verify_timed_on_a_legacy_image() -> None:
    f = one(ImageVerify, LEGACY)
    assert f.saving_ns == 80_400_000
    assert f.change.kind is ChangeKind.UBOOT_ENV and f.change.value == "verify=no" and f.change.automatic
    assert [e.line_no for e in f.evidence] == [16] and "Verifying Checksum" in f.evidence[0].text
    assert f.confidence is Confidence.HIGH and f.stage == "bootloader"


def test_image_verify_untimed_gives_no_number() -> None:
    f = one(ImageVerify, FIT_PLAIN)
    assert f.saving_ns is None and "no host timestamps" in f.arithmetic
    assert [e.line_no for e in f.evidence] == [6, 8]


def test_image_verify_of_a_signed_fit_never_advises_verify_no() -> None:
    f = one(ImageVerify, FIT_SIGNED)
    assert f.saving_ns is None and "signed" in f.arithmetic and "108.7 ms" in f.arithmetic
    assert f.change.kind is ChangeKind.MANUAL and "verify=no" not in f.change.value


def test_no_image_verify_on_the_reference_target() -> None:
    assert run_rule(ImageVerify, GRAB) == []


# --- uboot.autoboot_delay (countdown capped at bootdelay) -------------------------------------


def test_autoboot_saving_is_the_countdown_not_the_load_after_it() -> None:
    f = one(AutobootDelay, GRAB)
    assert f.saving_ns == 2_000_000_000  # the next line came 2.088569 s later, after qfw load
    assert "2.088569 s, of which the countdown is bootdelay = 2 s" in f.arithmetic
    assert run_rule(AutobootDelay, FIT_SIGNED) == []  # bootdelay=0 already


# --- kernel.compression -----------------------------------------------------------------------


def _codec(name: str) -> tuple[float, float]:
    c = next(c for c in CODECS if c.name == name)
    return c.ratio, c.decompress_mb_s or 0.0


def test_compression_on_a_board_reading_an_uncompressed_image() -> None:
    f = one(KernelCompression, IMX8)
    size, read_ns = 9_728_512, 421 * MS
    ratio, speed = _codec("zstd")
    expected = read_ns - (read_ns / ratio + size / (speed * 1e6) * 1e9)  # none - zstd, table speeds
    assert f.saving_ns is not None and abs(f.saving_ns - expected) < 1000
    assert round(f.saving_ns / MS, 1) == 275.7
    assert "zstd" in f.title and "23.1 MB/s" in f.title
    assert f.confidence is Confidence.LOW and f.change.kind is ChangeKind.MANUAL
    assert "Image.zst" in f.change.description and "CONFIG_ZSTD" in f.change.description
    assert "1/11.3" in f.arithmetic  # up to which CPU slowdown the advice holds
    for name in ("none 421.0 ms", "gzip", "lzo", "lz4", "xz", "zstd 118.6 ms + 26.7 ms"):
        assert name in f.arithmetic


def test_compression_scaled_by_the_measured_decompression() -> None:
    f = one(KernelCompression, LEGACY)
    stored, got, read_ns, dec_ns = 4_446_246, 4_446_310, 486 * MS, 427.8 * MS
    r_gz, s_gz = _codec("gzip")
    r_zs, s_zs = _codec("zstd")
    size_u = stored * r_gz
    k = dec_ns / (size_u / (s_gz * 1e6) * 1e9)
    zstd = size_u / r_zs / (got / read_ns) + size_u / (s_zs * 1e6) * 1e9 * k
    current = stored / (got / read_ns) + dec_ns
    assert f.saving_ns is not None and abs(f.saving_ns - (current - zstd)) < 1000
    assert "gzip decompression measured 427.8 ms" in f.arithmetic and "0.14x" in f.arithmetic
    assert "faster than gzip" in f.title


def test_compression_reads_the_fit_kernel_subimage() -> None:
    f = one(KernelCompression, FIT_SIGNED)
    assert "11,534,336-byte kernel" in f.arithmetic and "U-Boot decompresses it (lz4)" in f.arithmetic
    assert "faster than lz4" in f.title and f.saving_ns is not None and f.saving_ns > 0


def test_compression_on_qemu_fw_cfg_gives_no_number() -> None:
    f = one(KernelCompression, GRAB)
    assert f.saving_ns is None
    assert f.arithmetic.startswith("no estimate: the kernel comes through QEMU's fw_cfg")
    assert "at most 88.6 ms" in f.arithmetic and "not compressed (arm64" in f.arithmetic
    assert [e.line_no for e in f.evidence] == [14, 15, 23]  # qfw, autoboot, Starting kernel (no decompression)


def test_compression_without_host_times_or_loads() -> None:
    f = one(KernelCompression, CONSOLE)  # qfw line, no host timestamps
    assert f.saving_ns is None and "not timed" in f.arithmetic
    assert run_rule(KernelCompression, X86) == []  # no bootloader load at all


# --- context and run folders ------------------------------------------------------------------


def test_context_of_a_run_folder_a_recording_and_a_plain_log(tmp_path: Path) -> None:
    run, rec, log = analyze_inputs([str(RUN), str(BAUD_REC), str(GRAB)], OPTS)
    c = context_for_group(run)
    assert c.target == "qemu-arm64" and c.baud is None and c.rootfs_files == rootfs_files()
    assert context_for_group(run, baud=9600).baud == 9600
    assert context_for_group(rec).baud == 115200
    assert context_for_group(log) == Context()
    broken = tmp_path / "broken"
    shutil.copytree(RUN, broken)
    (broken / "run.json").write_text("{not json")
    c = context_for_group(analyze_inputs([str(broken)], OPTS)[0])
    assert c.target is None and c.baud is None


def test_a_run_folder_is_merged_per_rule_with_median_min_max() -> None:
    (ga,) = advise_inputs([str(RUN)])
    assert len(ga.boots) == 2 and ga.context.target == "qemu-arm64"
    by_rule = {m.finding.rule: m for m in ga.merged}
    auto = by_rule["uboot.autoboot_delay"]
    assert auto.seen == 2 and auto.boots == 2
    assert auto.saving is not None and auto.saving.n == 2 and auto.saving.median == 2e9
    console = by_rule["kernel.serial_console"]
    assert console.saving is None and console.finding.saving_ns is None
    assert ga.merged[0].finding.rule == "uboot.autoboot_delay"  # numbers first, worst first


def test_merge_takes_the_median_and_shows_the_boot_nearest_it() -> None:
    boots = analyze_paths([str(GRAB)], OPTS).boots * 3
    base = one(AutobootDelay, GRAB)

    def f(ns: int | None) -> Finding:
        return Finding(base.rule, base.title, base.stage, ns, base.arithmetic, base.confidence, base.tradeoff,
                       base.change, base.evidence)

    merged = merge([BootAdvice(boots[0], (f(3 * MS),)), BootAdvice(boots[1], (f(1 * MS),)),
                    BootAdvice(boots[2], (f(None),))])
    (m,) = merged
    assert m.seen == 3 and m.boots == 3 and m.boot == 0  # 1 and 3 ms: median 2, ties to the first
    assert m.saving is not None and (m.saving.n, m.saving.min, m.saving.median, m.saving.max) == (2, MS, 2e6, 3 * MS)


def test_autoboot_without_timestamps_is_the_prompts_bootdelay() -> None:
    f = one(AutobootDelay, Path(str(HERE / "data" / "corpus" / "qemu-arm64-uboot.console.log")))
    assert f.saving_ns == 2_000_000_000 and "no timestamps" in f.arithmetic
    assert one(AutobootDelay, FIT_PLAIN).saving_ns == 1_000_000_000  # "Autobooting in 1 seconds"
