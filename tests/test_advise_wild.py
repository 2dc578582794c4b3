"""The advisor on real boards' logs (../shared/corpus/wild, read in place, never copied here).

Every figure asserted below is read off the log with grep (line numbers as ``grep -n`` counts
them, times as printk printed them); the README beside the logs gives each log's source. What
these tests pin down is the issue-9 list of wrong advice made right or silent:

- an interrupted autoboot countdown (31: ``ath> printenv`` at the prompt; 04: the prompt right
  after the countdown) claims no saving; the countdown forms of 14, 15, 22, 25 read right;
- the RTC read counts only the RTC's own time (28: two adjacent lines), never the span across
  other drivers' work (an old kernel's late ``rtc_hctosys``, 17 and 02);
- the kernel image's format and compression come from the log (booti ``Moving Image``, extlinux
  ``Retrieving file: /Image.gz``, uImage and FIT headers) and the rule is silent where the log
  does not say (FIT "uncompressed" on arm32, the kernel's own decompressor, RedBoot, coreboot);
- SMP bring-up takes off the console's printing in between (06: a boot console at a rate the log
  does not give);
- the console rules read the rate from ``console=ttyS1,57600`` (19) and say nothing where no
  serial console printed (26: ``console=none``, 28: RAM console only);
- several boots in one input give one set of findings, and warnings are counted on stderr.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import WILD_LOGS as LOGS
from conftest import cli, needs_wild, one, run_rule, wild_log

from bootlens.advise import Context
from bootlens.advise.rules.kernel_absent_hardware import AbsentHardware
from bootlens.advise.rules.kernel_compression import KernelCompression
from bootlens.advise.rules.kernel_console import SerialConsole
from bootlens.advise.rules.kernel_lpj import DelayLoopCalibration
from bootlens.advise.rules.kernel_rtc_hctosys import RtcHctosys
from bootlens.advise.rules.kernel_smp_bringup import SmpBringup
from bootlens.advise.rules.uboot_autoboot import AutobootDelay
from bootlens.advise.rules.uboot_console import BootloaderConsole
from bootlens.advise.summary import advise_inputs
from bootlens.timeline.analyze import analyze_paths

pytestmark = needs_wild

MS = 1_000_000
US = 1_000


def log(num: str) -> Path:
    return wild_log(num)


def facts(num: str, key: str) -> list[tuple[str, int]]:
    """(value, line) of every fact ``key`` of the log's boots."""
    return [(f.value, f.line_no) for b in analyze_paths([str(log(num))]).boots for f in b.boot.facts if f.key == key]


def wire(nbytes: int, baud: int) -> int:
    return nbytes * 10 * 1_000_000_000 // baud


# --- uboot.autoboot_delay ---------------------------------------------------------------------


def test_an_interrupted_countdown_claims_no_saving() -> None:
    # 31 L29 "Hit any key to stop autoboot:  0", L30 "ath> printenv", L33 "bootdelay=1"
    assert facts("31", "autoboot_interrupted") == [("ath> printenv", 30)]
    assert facts("31", "bootdelay_env") == [("1", 33)]
    f = one(AutobootDelay, log("31"))
    assert f.saving_ns is None and "interrupted" in f.title and "waits 1 s" in f.title
    assert "line 30 ('ath> printenv')" in f.arithmetic and "bootdelay=1 printed at the prompt (line 33)" in f.arithmetic
    assert [e.line_no for e in f.evidence] == [29, 30, 33]
    # 04 L36 countdown at 0, L37 the prompt "MX6UL_VAR_DART(nand)==> ": nothing to say
    assert facts("04", "autoboot_interrupted") == [("MX6UL_VAR_DART(nand)==>", 37)]
    assert run_rule(AutobootDelay, log("04")) == []
    # 19 types setenv at "=> " with no countdown line at all
    assert run_rule(AutobootDelay, log("19")) == []


@pytest.mark.parametrize(("num", "line", "seconds"), [
    ("14", 37, 2),  # "Autoboot in 2 seconds, press <Space> to stop"
    ("15", 41, 1),  # "Hit any key to stop autoboot:  1 \b\b\b 0"
    ("22", 28, 1),  # "Autobooting in 1 seconds"
    ("25", 19, 1),  # "Hit any key to stop autoboot:  1 \b\b\b 0"
])
def test_countdown_forms_read_their_delay(num: str, line: int, seconds: int) -> None:
    assert facts(num, "autoboot_interrupted") == []
    f = one(AutobootDelay, log(num))
    assert f.saving_ns == seconds * 1_000_000_000 and [e.line_no for e in f.evidence] == [line]


def test_countdowns_that_booted_at_zero_are_silent() -> None:
    for num in ("01", "06", "13", "34"):  # "Hit any key to stop autoboot:  0" then the boot command
        assert facts(num, "autoboot_interrupted") == [] and run_rule(AutobootDelay, log(num)) == []


# --- kernel.rtc_hctosys -----------------------------------------------------------------------


def test_rtc_counts_only_the_rtc_drivers_own_time() -> None:
    # 28 L188 [0.493313] tps65910-rtc: registered as rtc0, L189 [0.495810] setting system clock; no
    # serial console prints yet (only ramoops-1 is enabled): all 2.497 ms are the RTC core's
    f = one(RtcHctosys, log("28"))
    assert f.saving_ns == 2_497 * US and f.title.startswith("tps65910-rtc reads the RTC for 2.497 ms")
    assert [e.line_no for e in f.evidence] == [188, 189]
    assert "no serial console was printing yet" in f.arithmetic
    # 4.x kernels set the clock from the late_initcall, seconds after the RTC registered
    # (17: L316 at 6.493766 -> L628 at 8.670195, other drivers' work in between): not the RTC's
    for num in ("17", "02", "30"):
        assert run_rule(RtcHctosys, log(num)) == []
    # 13/14/34: sun6i-rtc reads in 66/23/30 us; 07: 3.631 ms less its line at an assumed 115200
    # baud on the serial console [ttyS2] (56 bytes, 4.861 ms) leaves nothing
    for num in ("13", "14", "34", "07"):
        assert run_rule(RtcHctosys, log(num)) == []


# drivers/rtc/class.c, 5.6+: "registered as %s", then rtc_hctosys' "setting system clock to ..."
# right after it on the same thread; here another driver's probe line (a real i.MX6 4.x line, from
# corpus 02) came between them: the span is no longer the RTC's alone.
EXCERPT_RTC_BETWEEN = """\
[    0.000000] Linux version 5.10.0 (builder@host) (gcc 10.2.0) #1 SMP
[    0.000000] Kernel command line: console=ttymxc0,115200 root=/dev/mmcblk1p2 rootwait
[    0.000000] Memory: 1020000K/1048576K available
[    0.912345] loop: module loaded
[    1.182163] rtc-pcf8563 0-0051: registered as rtc0
[    1.190112] imx-sdma 20ec000.sdma: loaded firmware 3.3
[    1.202592] rtc-pcf8563 0-0051: setting system clock to 2026-11-22T02:33:30 UTC (1795314810)
"""


def test_rtc_with_another_drivers_line_between_is_silent(tmp_path: Path) -> None:
    p = tmp_path / "between.log"
    p.write_text(EXCERPT_RTC_BETWEEN)
    assert run_rule(RtcHctosys, p) == []
    p.write_text(EXCERPT_RTC_BETWEEN.replace("[    1.190112] imx-sdma 20ec000.sdma: loaded firmware 3.3\n", ""))
    f = one(RtcHctosys, p)  # adjacent, and no serial console enabled before them: all 20.429 ms
    assert f.saving_ns == 20_429 * US and "no serial console was printing yet" in f.arithmetic


# --- kernel.compression -----------------------------------------------------------------------


@pytest.mark.parametrize(("num", "fmt", "comp"), [
    ("06", ("Image", 112), ("gzip", 112)),  # extlinux "Retrieving file: /Image.gz"
    ("13", ("Image", 32), ("none", 32)),  # booti "Moving Image from 0x40080000", no "Uncompressing"
    ("14", ("Image", 47), ("none", 52)),  # "Retrieving file: /Image", then booti moves it as it is
    ("34", ("Image", 48), ("none", 48)),
    ("15", ("uImage", 50), ("lzma", 50)),  # "Image Type:   MIPS Linux Kernel Image (lzma compressed)"
    ("18", ("uImage", 80), ("lzma", 80)),
    ("31", ("uImage", 67), ("lzma", 67)),
    ("19", ("uImage", 17), ("none", 17)),  # "ARM Linux Kernel Image (uncompressed)"
    ("01", ("FIT", 161), ("none", 162)),  # "Type: Kernel Image", "Compression: uncompressed"
    ("10", ("FIT", 25), ("none", 26)),
    ("17", ("FIT", 40), ("none", 41)),
])
def test_kernel_image_format_and_compression_come_from_the_log(num: str, fmt: tuple[str, int],
                                                               comp: tuple[str, int]) -> None:
    assert facts(num, "kernel_image_format")[0] == fmt
    assert facts(num, "kernel_compression")[0] == comp


def test_compression_advice_only_where_the_log_shows_the_image() -> None:
    # 13: 26,708,480 bytes read in 1109 ms (line 31), then booti moves the Image as it is (line 32)
    f = one(KernelCompression, log("13"))
    assert "faster than none" in f.title and "24.1 MB/s" in f.title and f.saving_ns is not None
    assert "Image (line 32) is uncompressed (line 32)" in f.arithmetic
    assert [e.line_no for e in f.evidence] == [31, 32]
    # 14: extlinux names the kernel file: the load after "Retrieving file: /Image" (line 48), not
    # the largest read
    f = one(KernelCompression, log("14"))
    assert "22,398,984 bytes read in 1.852 s at line 48: the kernel file extlinux retrieved at line 47" in f.arithmetic
    # arm32 FIT/uImage "uncompressed" may hold a zImage (01, 10, 17, 19); 25's kernel decompresses
    # itself ("Uncompressing Linux... done") with an algorithm it does not name; 05 is RedBoot
    # whose "bytes read in" is a user-space loader's; 21/23 boot coreboot payloads: all silent
    for num in ("01", "05", "10", "17", "19", "21", "23", "25"):
        assert run_rule(KernelCompression, log(num)) == [], num


def test_a_bare_metal_payload_is_not_a_kernel(tmp_path: Path) -> None:
    # U-Boot's "go"/bootelf of a bare-metal program: a timed load, then "## Starting application"
    p = tmp_path / "baremetal.log"
    p.write_text("U-Boot 2023.04 (Apr 03 2023 - 12:00:00 +0000)\n\n"
                 "Hit any key to stop autoboot:  0 \n"
                 "1048576 bytes read in 52 ms (19.2 MiB/s)\n"
                 "## Starting application at 0x48000000 ...\n"
                 "hello from the payload\n")
    assert run_rule(KernelCompression, p) == []


# --- kernel.absent_hardware -------------------------------------------------------------------


# The driver core's probe debug line (drivers/base/dd.c, 5.13+: "probe of %s returned %d after %lld
# usecs", the error as a positive number) for an SDIO Wi-Fi whose driver takes function 1 and
# declines function 2 with -ENODEV (as brcmfmac's sdio probe does for every function but its
# own: "if (func->num != 2) return -ENODEV"), a device 07's rtw_8821cs card talks to, and one
# platform device that really is absent.
EXCERPT_SDIO = """\
[    0.000000] Linux version 6.6.0 (builder@host) (gcc 13.2.0) #1 SMP
[    0.000000] Kernel command line: console=ttyS2,1500000 initcall_debug
[    0.000000] Memory: 2000000K/2097152K available
[    1.000000] loop: module loaded
[    5.100000] calling  rtw_8821cs_driver_init+0x0/0x20 @ 1
[    5.101000] mmc3: new high speed SDIO card at address 0001
[    5.402110] probe of mmc3:0001:1 returned 0 after 300004 usecs
[    5.410020] probe of mmc3:0001:2 returned 19 after 7801 usecs
[    5.410100] initcall rtw_8821cs_driver_init+0x0/0x20 returned 0 after 310100 usecs
[    5.844443] rtw_8821cs mmc3:0001:1: Firmware version 24.11.0, H2C version 12
[    6.099000] calling  rk3x_i2c_driver_init+0x0/0x20 @ 1
[    6.100000] probe of ff3c0000.i2c returned 0 after 120 usecs
[    6.104000] probe of 1-0050 returned 19 after 3250 usecs
[    6.104100] initcall rk3x_i2c_driver_init+0x0/0x20 returned 0 after 5100 usecs
[    6.199000] calling  pci_host_driver_init+0x0/0x20 @ 1
[    6.200000] probe of 0000:01:00.1 returned 19 after 2200 usecs
[    6.210000] probe of 0000:01:00.0 returned 0 after 9000 usecs
[    6.210100] initcall pci_host_driver_init+0x0/0x20 returned 0 after 11100 usecs
"""


def test_absent_hardware_never_the_functions_of_a_working_device(tmp_path: Path) -> None:
    p = tmp_path / "sdio.log"
    p.write_text(EXCERPT_SDIO)
    (f,) = [x for x in run_rule(AbsentHardware, p) if "found no hardware" in x.title]
    assert f.change.value == "disable: 1-0050"  # the I2C chip that did not answer: really absent
    assert f.saving_ns == 3250 * US and "mmc3:0001" not in f.arithmetic and "0000:01:00.1" not in f.arithmetic
    # without function 1's probe line (its driver came as a module), the card is seen working
    # through its driver's own messages
    p.write_text(EXCERPT_SDIO.replace("[    5.402110] probe of mmc3:0001:1 returned 0 after 300004 usecs\n", ""))
    (f,) = [x for x in run_rule(AbsentHardware, p) if "found no hardware" in x.title]
    assert "mmc3" not in f.change.value


# --- kernel.smp_bringup and kernel.lpj: the console's share ------------------------------------


def test_smp_bringup_takes_off_the_console() -> None:
    # 07: the boot console was disabled at L63, [ttyS2] comes at L201: L72 -> L82 is all bring-up
    assert one(SmpBringup, log("07")).saving_ns == 4_686 * US
    # 28: only ramoops-1 prints: 0.007724 -> 0.030521
    assert one(SmpBringup, log("28")).saving_ns == 22_797 * US
    # 06: the same board as 07 with the boot console [uart8250] printing the 10 lines in between
    # (earlycon options '': the rate is the firmware's, not in the log): assumed 115200 baud, the
    # console's share exceeds the 5.042 ms span and nothing is left to claim
    assert run_rule(SmpBringup, log("06")) == []
    # at Rockchip's 1,500,000 baud the 10 lines (L128-L137, 650 bytes) take 4.3 ms of the 5.042: less
    # than a millisecond is left, too little to claim
    assert run_rule(SmpBringup, log("06"), Context(baud=1_500_000)) == []


def test_lpj_takes_off_the_console_printing_the_line() -> None:
    # 15: "Calibrating delay loop... 1185.38 BogoMIPS (lpj=5926912)" at 0.000020 (L92), the next
    # line at 0.087810; the boot console [early0] (L62) prints it at console=ttyS1,115200n8
    f = one(DelayLoopCalibration, log("15"))
    lines = log("15").read_text(errors="replace").splitlines()
    text = lines[91].split("] ", 1)[1]
    nbytes = len(text.encode()) + 15 + 2
    assert f.saving_ns == 87_790 * US - wire(nbytes, 115200)
    assert "[early0] (enabled at line 62)" in f.arithmetic and "115200" in f.arithmetic
    # 08: the serial console registers at 0.796403, after the calibration: nothing to take off
    assert one(DelayLoopCalibration, log("08")).saving_ns == 39_839 * US


# --- console rules: the rate of console=..., and only on a serial console ----------------------


def test_console_rules_read_the_command_lines_rate() -> None:
    assert facts("19", "console_baud") == [("57600", 30)]
    # 1,620 bytes from "Booting Linux" (L26) to "Freeing unused kernel memory" (L44): a 3.10
    # kernel prints no "Run /init", init runs right after free_initmem
    f = one(SerialConsole, log("19"))
    assert f.saving_ns == wire(1620, 57600) and "console=...,57600 (line 30)" in f.arithmetic
    assert [e.line_no for e in f.evidence] == [26, 44]
    u = one(BootloaderConsole, log("19"))
    assert u.saving_ns == wire(867, 57600) and "taken as U-Boot's rate too" in u.arithmetic
    assert one(SerialConsole, log("19"), Context(baud=115200)).saving_ns == wire(1620, 115200)
    # 32's second boot (3.10, no "Run /init", no "Freeing"): up to the last kernel line (L523)
    # before user space's "Welcome to Realtek Linux" (L533), not the kernel lines printed after it
    f = one(SerialConsole, log("32"))
    assert [e.line_no for e in f.evidence] == [321, 523] and "9,815 bytes" in f.arithmetic


def test_no_serial_console_no_console_finding() -> None:
    for num in ("26", "27", "28", "35"):  # console=none / [ram-1] / [ramoops-1] only: no UART printed
        assert run_rule(SerialConsole, log(num)) == [], num
    # RedBoot, the NVIDIA bootloader, GRUB and EcoNet's boot code are not U-Boot
    for num in ("05", "08", "20", "33"):
        assert run_rule(BootloaderConsole, log(num)) == [], num


# --- several boots in one input -----------------------------------------------------------------


def test_many_boots_in_one_log_give_one_set_of_findings(tmp_path: Path) -> None:
    text = log("34").read_text(errors="replace")
    many = tmp_path / "three-boots.log"
    many.write_text((text.rstrip("\n") + "\n") * 3)
    (ga,) = advise_inputs([str(many)])
    assert len(ga.boots) == 3 and ga.merged
    rules = [m.finding.rule for m in ga.merged]
    assert len(rules) == len(set(rules))  # each finding once, not once per boot
    comp = {m.finding.rule: m for m in ga.merged}["kernel.compression"]
    assert comp.seen == comp.boots == 3 and comp.seen_boots == (0, 1, 2)
    assert comp.saving is not None and comp.saving.n == 3
    assert all(w.boots == 3 for w in ga.warnings if "ready marker" in w.text)



def test_many_boots_on_the_command_line(tmp_path: Path) -> None:
    text = log("13").read_text(errors="replace")
    many = tmp_path / "boots.log"
    many.write_text((text.rstrip("\n") + "\n") * 4)
    r = cli("advise", str(many))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("kernel.compression") == 1 and "seen in 4 of 4 boots" in r.stdout
    assert "4 boots in one input" in r.stdout and "bootlens: warning" not in r.stdout
    warned = [w for w in r.stderr.splitlines() if "warning" in w]
    assert len(warned) == len(set(warned)) and all("4 of 4 boots: " in w for w in warned if "ready" in w)
    d = orjson.loads(cli("advise", "--json", str(many)).stdout)
    (inp,) = d["inputs"]
    assert len(inp["boots"]) == 4 and all(b["findings"] for b in inp["boots"])  # per boot, still there
    m = {x["rule"]: x for x in inp["merged"]}["kernel.compression"]
    assert m["seen"] == 4 and m["seen_boots"] == [0, 1, 2, 3] and m["saving"]["n"] == 4
    assert all(w["boots"] == 4 for w in inp["warnings"])


def test_every_corpus_log_advises_as_json() -> None:
    r = cli("advise", "--json", *map(str, LOGS))
    assert r.returncode == 0, r.stderr
    d = orjson.loads(r.stdout)
    assert len(d["inputs"]) == len(LOGS)
    two = next(i for i in d["inputs"] if Path(i["name"]).name.startswith("32-"))
    assert len(two["boots"]) == 2 and two["merged"] is not None


def test_report_shows_one_merged_set_for_several_boots(tmp_path: Path) -> None:
    from bootlens.timeline.inputs import analyze_inputs
    from bootlens.render.html_data import report_data

    many = tmp_path / "three.log"
    many.write_text((log("34").read_text(errors="replace").rstrip("\n") + "\n") * 3)
    d = report_data(analyze_inputs([str(many), str(log("13"))]))
    assert len(d["findings"]) == len(d["boots"]) == 4  # per boot, still
    (mg,) = d["merged_findings"]  # only the input of several boots
    assert mg["group"] == 0 and mg["boots"] == 3
    rules = [f["rule"] for f in mg["findings"]]
    assert len(rules) == len(set(rules)) and all(f["seen"] == 3 for f in mg["findings"] if f["rule"] == "kernel.compression")
