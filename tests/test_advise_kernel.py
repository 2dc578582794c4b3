"""The kernel and file-system rules on real logs, and on excerpts where no real log here has the
case.

Real logs:
- tests/data/corpus: the qemu-arm64 and qemu-x86_64 corpus boots (initcall_debug, tp_printk).
- tests/data/advise/qemu-arm64-trace.console.log: the qemu-arm64 reference target booted with the
  tracing append (initcall_debug ignore_loglevel trace_event=sched:sched_process_fork,
  sched:sched_process_exec,sched:sched_process_exit tp_printk); ...-trace-notests.console.log is
  the same with cryptomgr.notests (both the console text of ``bootlens run`` recordings).
- ...-smp2-trace.console.log: the same kernel and initramfs under QEMU with -smp 2.
- ...-initramfs-sync.console.log: the same with initramfs_async=0 (the unpack on the init thread).

Figures asserted below are read off those files (grep the quoted lines). Excerpts (EXCERPT_*) are
written for these tests, line by line in the kernel's own printk formats (quoted from the kernel
source in each excerpt's comment), where no real log here has the case: JFFS2, rootdelay/rootwait
mounts, IP autoconfiguration, the RAID6 benchmark, a slow RTC read, deferred probes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import READY_OPTS as OPTS, one, run_rule

from bootlens.advise import ChangeKind, Confidence, Context, Finding, RuleRegistry, advise, default_registry
from bootlens.advise.rules.fs_jffs2 import Jffs2Mount
from bootlens.advise.rules.fs_root_mount import RootMount
from bootlens.advise.rules.kernel_absent_hardware import AbsentHardware
from bootlens.advise.rules.kernel_async_probe import AsyncProbe
from bootlens.advise.rules.kernel_crypto_selftests import CryptoSelftests
from bootlens.advise.rules.kernel_initramfs_compression import InitramfsCompression
from bootlens.advise.rules.kernel_rtc_hctosys import RtcHctosys
from bootlens.advise.rules.kernel_slow_initcalls import SlowInitcalls
from bootlens.advise.rules.kernel_smp_bringup import SmpBringup
from bootlens.timeline.analyze import analyze_paths
from bootlens.targets.qemu import rootfs_files

HERE = Path(__file__).parent
CORPUS = HERE / "data" / "corpus"
DATA = HERE / "data" / "advise"
GRAB = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
X86 = CORPUS / "qemu-x86_64-initcall.console.log"
X86_TRACE = CORPUS / "qemu-x86_64-tp_printk.console.log"
TRACE = DATA / "qemu-arm64-trace.console.log"
NOTESTS = DATA / "qemu-arm64-trace-notests.console.log"
SMP2 = DATA / "qemu-arm64-smp2-trace.console.log"
SYNC = DATA / "qemu-arm64-initramfs-sync.console.log"
MS = 1_000_000
US = 1_000
KERNEL_RULES = (CryptoSelftests, AbsentHardware, AsyncProbe, SlowInitcalls, RtcHctosys, SmpBringup,
                InitramfsCompression, RootMount, Jffs2Mount)



def edited(tmp_path: Path, src: Path, old: str, new: str) -> Path:
    """A copy of a real log with one string replaced (e.g. a parameter added to its command line)."""
    text = src.read_text(errors="replace")
    assert old in text
    out = tmp_path / src.name
    out.write_text(text.replace(old, new, 1))
    return out


def excerpt(tmp_path: Path, text: str, name: str = "excerpt.log") -> Path:
    p = tmp_path / name
    p.write_text(text.lstrip("\n"))
    return p


def assert_evidence_real(f: Finding, path: Path) -> None:
    """Every evidence line is the log's own line (its message, prefixes removed)."""
    lines = path.read_text(errors="replace").splitlines()
    assert f.evidence
    for ev in f.evidence:
        assert ev.text and ev.text.rstrip("…") in lines[ev.line_no - 1], (ev, lines[ev.line_no - 1])


def lifetimes(path: Path, comm: str) -> list[int]:
    """Fork-to-exit time of each kernel thread ``comm``, read straight from the trace lines."""
    forks: dict[str, int] = {}
    out = []
    for line in path.read_text(errors="replace").splitlines():
        m = re.search(r"\[ *(\d+)\.(\d{6})\] sched_process_(fork|exit): .*?(?:child_)?pid=(\d+)", line)
        if m is None:
            continue
        t = int(m[1]) * 1_000_000_000 + int(m[2]) * 1000
        if m[3] == "fork":
            forks[re.search(r"child_pid=(\d+)", line)[1]] = t  # type: ignore[index]
        elif f"comm={comm} " in line and m[4] in forks:
            out.append(t - forks[m[4]])
    return out


def initcall_us(path: Path, name: str) -> int:
    m = re.search(rf"initcall {name}\+\S+ returned -?\d+ after (\d+) usecs", path.read_text(errors="replace"))
    assert m is not None
    return int(m[1])


def test_registry_holds_the_kernel_rules() -> None:
    ids = default_registry().ids()
    for rule in KERNEL_RULES:
        assert rule.id in ids


# --- kernel.crypto_selftests --------------------------------------------------------------


def test_crypto_selftests_from_the_test_threads() -> None:
    f = one(CryptoSelftests, TRACE)
    lives = lifetimes(TRACE, "cryptomgr_test")
    assert len(lives) == 22
    assert f.saving_ns == sum(lives) - len(lives) * min(lives)  # 564.710 - 22 x 0.942 ms
    assert f.saving_ns == 543_986 * US
    assert f.change.kind is ChangeKind.CMDLINE and f.change.value == "cryptomgr.notests"
    assert f.confidence is Confidence.HIGH  # one CPU: every test's time is the init thread's loss
    assert "13 during crypto_algapi_init" in f.arithmetic
    assert "2 during load_system_certificate_list" in f.arithmetic
    assert "22 x 0.942 ms" in f.arithmetic
    assert_evidence_real(f, TRACE)


def test_crypto_estimate_against_the_notests_boot() -> None:
    """The same target with cryptomgr.notests: the initcalls that waited for tests lost 476 ms;
    the estimate (544 ms) is within 30% of it."""
    est = one(CryptoSelftests, TRACE).saving_ns
    assert est is not None
    hosts = ("crypto_algapi_init", "load_system_certificate_list", "crypto_kdf108_init", "init_encrypted")
    measured = sum(initcall_us(TRACE, n) - initcall_us(NOTESTS, n) for n in hosts) * US
    assert measured == 475_986 * US
    assert abs(est - measured) <= 0.30 * measured
    # and what notests leaves: 22 threads that start and exit, 75.3 ms in all
    assert len(lifetimes(NOTESTS, "cryptomgr_test")) == 22
    assert sum(lifetimes(NOTESTS, "cryptomgr_test")) < 0.2 * sum(lifetimes(TRACE, "cryptomgr_test"))


def test_crypto_selftests_not_when_disabled() -> None:
    assert "alg: self-tests disabled" in NOTESTS.read_text(errors="replace")
    assert run_rule(CryptoSelftests, NOTESTS) == []


def test_crypto_selftests_from_initcall_debug_alone() -> None:
    f = one(CryptoSelftests, GRAB)
    assert f.saving_ns == 166_345 * US * 97 // 100  # crypto_algapi_init ... returned 0 after 166345 usecs
    assert f.confidence is Confidence.MEDIUM
    assert "lower bound" in f.arithmetic and "166.345 ms x 97%" in f.arithmetic
    assert_evidence_real(f, GRAB)


def test_crypto_selftests_x86_process_trace() -> None:
    f = one(CryptoSelftests, X86_TRACE)
    lives = lifetimes(X86_TRACE, "cryptomgr_test")
    assert f.saving_ns == sum(lives) - len(lives) * min(lives)


def test_crypto_selftests_not_in_fips_mode(tmp_path: Path) -> None:
    log = edited(tmp_path, GRAB, "ignore_loglevel", "ignore_loglevel fips=1")
    assert run_rule(CryptoSelftests, log) == []


# --- kernel.absent_hardware ----------------------------------------------------------------


def test_absent_hardware_initcalls_blacklisted() -> None:
    f = one(AbsentHardware, GRAB)
    text = GRAB.read_text()
    failed = re.findall(r"initcall (\w+)\+\S+ returned -19 after (\d+) usecs", text)
    # 42 built-in initcalls returned -19 (43 lines: xenbus_init twice), 27 of them after more than
    # 0 usecs, 3897 us in all
    assert f.saving_ns == sum(int(us) for _, us in failed) * US == 3_897 * US
    assert f.title.startswith("42 built-in initcalls")
    assert f.change.kind is ChangeKind.CMDLINE
    names = f.change.value.removeprefix("initcall_blacklist=").split(",")
    assert names == list(dict.fromkeys(n for n, _ in failed))  # every one, in log order
    assert len(f.change.value) < 1024
    for n in names:
        assert not re.search(rf"initcall {n}\+\S+ returned 0 ", text)
    assert "break the boot" in f.tradeoff
    assert_evidence_real(f, GRAB)


def test_absent_hardware_same_change_on_every_boot() -> None:
    """Which failed initcalls took more than 0 us differs between boots; the change does not, so
    repeated boots merge into one finding."""
    assert one(AbsentHardware, GRAB).change == one(AbsentHardware, TRACE).change


def test_absent_hardware_not_without_enodev(tmp_path: Path) -> None:
    text = "\n".join(line for line in GRAB.read_text().splitlines() if "returned -19" not in line)
    assert run_rule(AbsentHardware, excerpt(tmp_path, text)) == []


def test_absent_hardware_probes(tmp_path: Path) -> None:
    found = run_rule(AbsentHardware, X86)
    probes = [f for f in found if f.change.kind is ChangeKind.MANUAL]
    assert len(probes) == 1
    # probe of PNP0103:00 returned 19 after 1115 usecs, 0000:00:00.0 536, serio1 465
    assert probes[0].saving_ns == (1115 + 536 + 465) * US
    assert "PNP0103:00" in probes[0].change.value


# Deferred probes: the driver core's line (drivers/base/dd.c, 6.1: "probe of %s returned %d after
# %lld usecs"; 5.13+ reports the error as a positive number). The lines are those of a real AM62x
# report (ti-sysc target-module deferred until a supplier appeared), with two earlier attempts;
# the driver core prints them only with initcall_debug, hence the initcall lines.
EXCERPT_DEFER = """
[    0.000000] Linux version 6.1.80 (oe-user@oe-host) (aarch64-poky-linux-gcc (GCC) 13.2.0) #1 SMP PREEMPT
[    0.000000] Kernel command line: console=ttyS2,115200n8 root=/dev/nfs ip=dhcp initcall_debug
[    1.200001] calling  sysc_init+0x0/0x44 @ 1
[    1.201334] probe of 2b300050.target-module returned 517 after 612 usecs
[    1.201391] initcall sysc_init+0x0/0x44 returned 0 after 1390 usecs
[    1.400102] calling  deferred_probe_initcall+0x0/0xb8 @ 1
[    1.402118] probe of 2b300050.target-module returned 517 after 488 usecs
[    1.402202] initcall deferred_probe_initcall+0x0/0xb8 returned 0 after 2100 usecs
[    6.888776] probe of 2b300050.target-module returned 517 after 258 usecs
[   17.129637] probe of 2b300050.target-module returned 517 after 708 usecs
[   17.137397] platform 2b300050.target-module: deferred probe pending: (reason unknown)
"""


def test_absent_hardware_deferred_probes(tmp_path: Path) -> None:
    f = one(AbsentHardware, excerpt(tmp_path, EXCERPT_DEFER))
    assert f.saving_ns == (612 + 488 + 258 + 708) * US
    assert f.confidence is Confidence.LOW and f.change.kind is ChangeKind.MANUAL


# --- kernel.async_probe --------------------------------------------------------------------


def test_async_probe_one_cpu_gives_no_figure() -> None:
    f = one(AsyncProbe, TRACE)
    assert f.saving_ns is None and "one CPU" in f.arithmetic
    # probe of 4010000000.pcie returned 0 after 24446 usecs (driver named by
    # "pci-host-generic 4010000000.pcie: host bridge ..."), probe of pmu ... 10415 usecs
    assert f.change.value == "driver_async_probe=armv8-pmu,pci-host-generic"
    assert f.confidence is Confidence.LOW


def test_async_probe_keeps_the_console_sync() -> None:
    # probe of 9000000.pl011 returned 0 after 88000 usecs: it is the console (ttyAMA0)
    f = one(AsyncProbe, GRAB)
    assert "9000000.pl011" not in f.arithmetic
    assert f.change.value == "driver_async_probe=pci-host-generic,rtc-pl031"


def test_async_probe_with_two_cpus() -> None:
    f = one(AsyncProbe, SMP2)
    # probe of pmu returned 0 after 39167 usecs, probe of 4010000000.pcie ... 35205 usecs; both
    # end long before the last initcall, so each can overlap in full
    assert f.saving_ns == (39_167 + 35_205) * US
    assert "with 2 CPUs" in f.arithmetic and "upper bound" in f.arithmetic
    assert_evidence_real(f, SMP2)


def test_async_probe_before_linux_5_1(tmp_path: Path) -> None:
    log = edited(tmp_path, SMP2, "Linux version 6.1.0-56-arm64", "Linux version 4.19.0-21-arm64")
    f = one(AsyncProbe, log)
    assert f.change.kind is ChangeKind.MANUAL and "PROBE_PREFER_ASYNCHRONOUS" in f.change.description


# --- kernel.slow_initcalls -----------------------------------------------------------------


def test_slow_initcalls_generic_list() -> None:
    f = one(SlowInitcalls, GRAB)
    assert f.saving_ns is None and f.change.kind is ChangeKind.MANUAL
    assert "of_platform_default_populate_init 108.000 ms (mostly the probe of 9000000.pl011" in f.arithmetic
    assert "crypto_algapi_init" not in f.arithmetic  # kernel.crypto_selftests's
    assert "populate_rootfs" not in f.arithmetic


def test_slow_initcalls_leave_out_test_threads() -> None:
    f = one(SlowInitcalls, TRACE)
    # crypto_kdf108_init returned after 99220 usecs; two cryptomgr_test threads lived 28.042 ms in it
    assert "crypto_kdf108_init 71.178 ms (of 99.220 ms, the rest crypto test threads)" in f.arithmetic


# lib/raid6/algos.c: "raid6: %-8s gen() %5ld MB/s", "raid6: using algorithm %s gen() %ld MB/s",
# "raid6: .... xor() %ld MB/s, rmw enabled", "raid6: using %s recovery algorithm".
EXCERPT_RAID6 = """
[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.55-1 (2023-09-29)
[    0.000000] Kernel command line: BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro initcall_debug
[    1.201005] calling  raid6_select_algo+0x0/0x1c0 @ 1
[    1.269342] raid6: avx2x4   gen() 40223 MB/s
[    1.337351] raid6: avx2x2   gen() 39895 MB/s
[    1.405349] raid6: avx2x1   gen() 30150 MB/s
[    1.405350] raid6: using algorithm avx2x4 gen() 40223 MB/s
[    1.473351] raid6: .... xor() 21590 MB/s, rmw enabled
[    1.473353] raid6: using avx2x2 recovery algorithm
[    1.473610] initcall raid6_select_algo+0x0/0x1c0 returned 0 after 272605 usecs
"""


def test_slow_initcalls_raid6_benchmark(tmp_path: Path) -> None:
    f = one(SlowInitcalls, excerpt(tmp_path, EXCERPT_RAID6))
    assert f.saving_ns == 272_605 * US
    assert f.change.kind is ChangeKind.KCONFIG and f.change.value == "CONFIG_RAID6_PQ_BENCHMARK=n"


# net/ipv4/ipconfig.c: "Sending DHCP requests ", ", OK", "IP-Config: Got DHCP answer from %pI4, ",
# "my address is %pI4", "IP-Config: Complete:".
EXCERPT_IPCONFIG = """
[    0.000000] Linux version 5.15.71 (oe-user@oe-host) (arm-poky-linux-gnueabi-gcc (GCC) 11.3.0) #1 SMP PREEMPT
[    0.000000] Kernel command line: console=ttymxc0,115200 ROOT ip=dhcp
[    2.104512] calling  ip_auto_config+0x0/0x1a4 @ 1
[    2.110233] fec 2188000.ethernet eth0: Link is Down
[    4.203118] fec 2188000.ethernet eth0: Link is Up - 100Mbps/Full - flow control rx/tx
[    4.210447] Sending DHCP requests ., OK
[    4.771912] IP-Config: Got DHCP answer from 192.168.1.1, my address is 192.168.1.50
[    4.780006] IP-Config: Complete:
[    4.783221]      device=eth0, hwaddr=00:04:9f:05:a3:7e, ipaddr=192.168.1.50, mask=255.255.255.0, gw=192.168.1.1
[    4.801002] initcall ip_auto_config+0x0/0x1a4 returned 0 after 2696490 usecs
"""


def test_slow_initcalls_ip_autoconfig_without_nfs(tmp_path: Path) -> None:
    f = one(SlowInitcalls, excerpt(tmp_path, EXCERPT_IPCONFIG.replace("ROOT", "root=/dev/mmcblk0p2 rootwait")))
    assert f.saving_ns == 2_696_490 * US
    assert f.change.kind is ChangeKind.CMDLINE and f.change.value == "ip=off"


def test_slow_initcalls_ip_autoconfig_for_nfs_root(tmp_path: Path) -> None:
    log = excerpt(tmp_path, EXCERPT_IPCONFIG.replace("ROOT", "root=/dev/nfs nfsroot=192.168.1.2:/srv/rootfs,v3"))
    f = one(SlowInitcalls, log)
    assert f.saving_ns == 561_465 * US  # 'Sending DHCP requests' 4.210447 -> answer 4.771912
    assert f.change.kind is ChangeKind.MANUAL


def test_slow_initcalls_not_when_ip_is_off(tmp_path: Path) -> None:
    log = excerpt(tmp_path, EXCERPT_IPCONFIG.replace("ROOT", "root=/dev/mmcblk0p2").replace("ip=dhcp", "ip=off"))
    assert run_rule(SlowInitcalls, log) == []


# --- kernel.rtc_hctosys --------------------------------------------------------------------


def test_rtc_hctosys_quick_reads_not_reported() -> None:
    # rtc-pl031: registered as rtc0 at 0.935762, setting system clock at 0.936404 (0.6 ms)
    assert run_rule(RtcHctosys, GRAB) == []
    assert run_rule(RtcHctosys, X86) == []  # rtc_cmos: 1.182163 -> 1.182592


# The corpus x86 boot's rtc_cmos lines, with the read landing in an MC146818 update cycle:
# mc146818_get_time() then waits ("if (mc146818_is_updating()) mdelay(20);", before Linux 5.18).
# drivers/rtc/class.c: "registered as %s", drivers/rtc/class.c rtc_hctosys: "setting system clock
# to %ptR UTC (%lld)".
EXCERPT_RTC = """
[    1.171930] calling  cmos_init+0x0/0x78 @ 1
[    1.179403] rtc_cmos 00:05: RTC can wake from S4
[    1.182163] rtc_cmos 00:05: registered as rtc0
[    1.202592] rtc_cmos 00:05: setting system clock to 2026-11-22T02:33:30 UTC (1795314810)
[    1.203970] rtc_cmos 00:05: alarms up to one day, y3k, 242 bytes nvram, hpet irqs
[    1.204195] initcall cmos_init+0x0/0x78 returned 0 after 32265 usecs
"""


def test_rtc_hctosys_slow_read(tmp_path: Path) -> None:
    f = one(RtcHctosys, excerpt(tmp_path, EXCERPT_RTC))
    # 20.429 ms between the lines, less "[    1.182163] rtc_cmos 00:05: registered as rtc0\r\n"
    # (15 + 34 + 2 = 51 bytes) at 115200 baud: 4.427 ms
    assert f.saving_ns == 20_429 * US - 51 * 10 * 1_000_000_000 // 115200
    assert "assumed" in f.arithmetic
    assert f.change.value == "CONFIG_RTC_HCTOSYS=n"
    f2 = one(RtcHctosys, excerpt(tmp_path, EXCERPT_RTC, "b.log"), Context(baud=1_500_000))
    assert f2.saving_ns == 20_429 * US - 51 * 10 * 1_000_000_000 // 1_500_000


# --- kernel.smp_bringup --------------------------------------------------------------------


def test_smp_bringup_two_cpus() -> None:
    f = one(SmpBringup, SMP2)
    # smp: Bringing up secondary CPUs ... 0.112554 -> smp: Brought up 1 node, 2 CPUs 0.146099
    assert f.saving_ns == 33_545 * US
    assert f.change.kind is ChangeKind.CMDLINE and f.change.value == "maxcpus=1"
    assert "one core" in f.tradeoff
    assert_evidence_real(f, SMP2)


def test_smp_bringup_not_on_one_cpu_or_with_maxcpus(tmp_path: Path) -> None:
    assert run_rule(SmpBringup, TRACE) == []  # smp: Brought up 1 node, 1 CPU
    assert run_rule(SmpBringup, edited(tmp_path, SMP2, "panic=-1", "panic=-1 maxcpus=1")) == []


# --- kernel.initramfs_compression ----------------------------------------------------------


def test_initramfs_sync_unpack() -> None:
    f = one(InitramfsCompression, SYNC)
    # populate_rootfs returned after 157767 usecs, with 'Freeing initrd memory' inside it; the
    # log does not say the initrd is compressed: the figure is in the arithmetic, not a saving
    assert f.saving_ns is None
    assert "157.767 ms x 70% = 110.437 ms" in f.arithmetic
    assert_evidence_real(f, SYNC)


def test_initramfs_sync_unpack_of_the_target_initrd() -> None:
    ctx = Context(target="qemu-arm64", rootfs_files=rootfs_files())
    f = one(InitramfsCompression, SYNC, ctx)
    assert f.saving_ns == 157_767 * US * 70 // 100
    assert f.confidence is Confidence.MEDIUM and f.change.kind is ChangeKind.MANUAL


def test_initramfs_async_unpack_gives_no_figure() -> None:
    ctx = Context(target="qemu-arm64", rootfs_files=rootfs_files())
    f = one(InitramfsCompression, TRACE, ctx)
    assert f.saving_ns is None and "initramfs_async=0" in f.arithmetic


# arch/arm/boot/compressed/misc.c: "Uncompressing Linux..." " done, booting the kernel."; a
# built-in initramfs prints nothing of its own while populate_rootfs unpacks it (4.14).
EXCERPT_BUILTIN = """
Starting kernel ...

Uncompressing Linux... done, booting the kernel.
[    0.000000] Booting Linux on physical CPU 0x0
[    0.000000] Linux version 4.14.98 (oe-user@oe-host) (gcc version 8.2.0 (GCC)) #1 SMP PREEMPT Tue Mar 12 10:22:41 UTC 2019
[    0.000000] Kernel command line: console=ttymxc0,115200 initcall_debug
[    0.612004] calling  populate_rootfs+0x0/0x1e0 @ 1
[    0.689511] initcall populate_rootfs+0x0/0x1e0 returned 0 after 76250 usecs
"""


def test_initramfs_built_into_a_compressed_kernel(tmp_path: Path) -> None:
    f = one(InitramfsCompression, excerpt(tmp_path, EXCERPT_BUILTIN))
    assert f.saving_ns == 76_250 * US * 70 // 100
    assert f.change.kind is ChangeKind.KCONFIG and f.change.value == "CONFIG_INITRAMFS_COMPRESSION_NONE=y"
    assert f.confidence is Confidence.MEDIUM and "kernel image is compressed (line 3)" in f.arithmetic


# --- fs.root_mount -------------------------------------------------------------------------

# init/do_mounts.c: "Waiting %d sec before mounting root device...", "Waiting for root device
# %s...", "VFS: Mounted root (%s filesystem)%s on device %u:%u."; block/partitions: " %s:" " p%d".
EXCERPT_ROOTDELAY = """
[    0.000000] Kernel command line: console=ttymxc0,115200 root=/dev/mmcblk0p2 rootdelay=3 rootfstype=ext4 ro
[    1.603311] Waiting 3 sec before mounting root device...
[    1.702455] mmc0: new high speed SDHC card at address aaaa
[    1.709843] mmcblk0: mmc0:aaaa SC16G 14.8 GiB
[    1.716234]  mmcblk0: p1 p2
[    4.647108] EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode. Opts: (null)
[    4.655017] VFS: Mounted root (ext4 filesystem) readonly on device 179:2.
"""

# drivers/usb/storage/usb.c: "USB Mass Storage device detected", scsi "scsi host%d: %s", then
# delay_use seconds (1) before the scan: "scsi 0:0:0:0: Direct-Access ...".
EXCERPT_USB_ROOT = """
[    0.000000] Kernel command line: console=ttyS0,115200 root=/dev/sda2 rootwait
[    2.011203] Waiting for root device /dev/sda2...
[    2.140512] usb 1-1: new high-speed USB device number 2 using ehci-platform
[    2.301877] usb-storage 1-1:1.0: USB Mass Storage device detected
[    2.309912] scsi host0: usb-storage 1-1:1.0
[    3.342501] scsi 0:0:0:0: Direct-Access     SanDisk  Cruzer Blade     1.00 PQ: 0 ANSI: 6
[    3.351006] sd 0:0:0:0: [sda] 31266816 512-byte logical blocks: (16.0 GB/14.9 GiB)
[    3.372811]  sda: sda1 sda2
[    3.380044] sd 0:0:0:0: [sda] Attached SCSI removable disk
[    3.472611] EXT4-fs (sda2): mounted filesystem with ordered data mode. Quota mode: none.
[    3.480113] VFS: Mounted root (ext4 filesystem) readonly on device 8:2.
"""

# fs/ext4/super.c: ext4_msg(sb, KERN_ERR, "couldn't mount as ext3 due to feature incompatibilities")
EXCERPT_FSTYPES = """
[    0.000000] Kernel command line: console=ttyS0,115200 root=/dev/mmcblk0p2 rootwait
[    2.104001] Waiting for root device /dev/mmcblk0p2...
[    2.131777]  mmcblk0: p1 p2
[    2.151920] EXT4-fs (mmcblk0p2): couldn't mount as ext3 due to feature incompatibilities
[    2.166343] EXT4-fs (mmcblk0p2): couldn't mount as ext2 due to feature incompatibilities
[    2.229450] EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode. Quota mode: disabled.
[    2.237019] VFS: Mounted root (ext4 filesystem) readonly on device 179:2.
"""


def test_root_mount_rootdelay(tmp_path: Path) -> None:
    log = excerpt(tmp_path, EXCERPT_ROOTDELAY)
    f = one(RootMount, log)
    # the 3 s sleep began at 1.603311; mmcblk0's partitions were there at 1.716234
    assert f.saving_ns == 1_603_311 * US + 3_000 * MS - 1_716_234 * US
    assert f.change.kind is ChangeKind.CMDLINE and f.change.value == "rootdelay=0 rootwait"
    assert f.confidence is Confidence.HIGH
    assert_evidence_real(f, log)


def test_root_mount_usb_storage_delay(tmp_path: Path) -> None:
    f = one(RootMount, excerpt(tmp_path, EXCERPT_USB_ROOT))
    assert f.saving_ns == 3_342_501 * US - 2_309_912 * US
    assert f.change.value == "usb-storage.delay_use=0"


def test_root_mount_filesystem_types_tried(tmp_path: Path) -> None:
    found = run_rule(RootMount, excerpt(tmp_path, EXCERPT_FSTYPES))
    fs = [f for f in found if f.change.value.startswith("rootfstype=")]
    assert len(fs) == 1 and fs[0].change.value == "rootfstype=ext4"
    assert fs[0].saving_ns == 2_166_343 * US - 2_151_920 * US  # first refusal to last: a lower bound
    wait = [f for f in found if f.change.kind is ChangeKind.MANUAL]
    assert len(wait) == 1 and wait[0].saving_ns is None  # 27.8 ms waiting for mmcblk0


def test_root_mount_not_with_an_initramfs() -> None:
    assert run_rule(RootMount, GRAB) == []  # no 'VFS: Mounted root': /init runs from the initramfs


# --- fs.jffs2 ------------------------------------------------------------------------------

# fs/jffs2/scan.c: "jffs2: Empty flash at 0x%08x ends at 0x%08x"; fs/jffs2/xattr.c:
# "complete building xattr subsystem, %u of xdatum (%u unchecked, %u orphan) and %u of xref
# (%u dead, %u orphan) found."; drivers/mtd/mtdpart.c: "0x%012llx-0x%012llx : \"%s\"".
EXCERPT_JFFS2 = """
[    0.000000] Kernel command line: console=ttyS0,115200 root=/dev/mtdblock3 rootfstype=jffs2 rw
[    1.432101] physmap-flash 20000000.flash: physmap platform flash device: [mem 0x20000000-0x21ffffff]
[    1.452000] 5 cmdlinepart partitions found on MTD device 20000000.flash
[    1.458321] Creating 5 MTD partitions on "20000000.flash":
[    1.463904] 0x000000000000-0x000000040000 : "u-boot"
[    1.470112] 0x000000040000-0x000000060000 : "env"
[    1.476330] 0x000000060000-0x000000600000 : "kernel"
[    1.482551] 0x000000600000-0x000002000000 : "rootfs"
[    1.590233] ALSA device list:
[    1.593402]   No soundcards found.
[    2.612345] jffs2: Empty flash at 0x00f3c104 ends at 0x00f3c800
[    4.981532] jffs2: notice: (1) jffs2_build_xattr_subsystem: complete building xattr subsystem, 0 of xdatum (0 unchecked, 0 orphan) and 0 of xref (0 dead, 0 orphan) found.
[    4.997004] VFS: Mounted root (jffs2 filesystem) on device 31:3.
[    5.011009] Freeing unused kernel memory: 1024K
[    5.093117] Run /sbin/init as init process
"""


def test_jffs2_mount_scan(tmp_path: Path) -> None:
    log = excerpt(tmp_path, EXCERPT_JFFS2)
    f = one(Jffs2Mount, log)
    assert f.saving_ns == 4_997_004 * US - 1_593_402 * US  # 'No soundcards found.' -> VFS line
    assert f.confidence is Confidence.LOW and "upper bound" in f.arithmetic
    assert "UBIFS" in f.change.description and "fastmap" in f.change.description
    assert "2 scan messages" in f.arithmetic
    assert_evidence_real(f, log)


def test_jffs2_not_for_other_roots(tmp_path: Path) -> None:
    assert run_rule(Jffs2Mount, excerpt(tmp_path, EXCERPT_ROOTDELAY)) == []


# --- all of them -----------------------------------------------------------------------------


def every_log() -> list[Path]:
    # golden cases are one folder deep; deeper ones are the pieces of a bootchart archive, not logs
    return sorted([*CORPUS.glob("*.log"), *(HERE / "golden").glob("*/*.log"), *DATA.glob("*.console.log")])


@pytest.mark.parametrize("path", every_log(), ids=lambda p: p.name)
def test_rules_hold_on_every_log(path: Path) -> None:
    """No rule raises on any real log, and every finding is complete and consistent."""
    reg = RuleRegistry()
    for rule in KERNEL_RULES:
        reg.register(rule)
    for b in analyze_paths([str(path)], OPTS).boots:
        for f in advise(b, Context(), reg):
            assert f.arithmetic and f.tradeoff and f.change.value and f.change.description
            assert f.saving_ns is None or f.saving_ns >= 0
            assert f.stage == "kernel_init"
            assert f.evidence
