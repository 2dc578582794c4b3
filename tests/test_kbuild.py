"""optimize --rebuild-kernel: a boot's initcalls mapped to the Kconfig symbols that built them
(bootlens.kbuild), the configuration made of them, the kernel built and booted.

The source is Debian's linux-source-6.1 (the version the reference target boots; `make test`
installs it). The facts below were read by hand with grep in that tree and in the logs:

- drivers/tty/serial/Makefile:27 `obj-$(CONFIG_SERIAL_AMBA_PL011) += amba-pl011.o`;
- drivers/rtc/Makefile:132 `obj-$(CONFIG_RTC_DRV_PL031) += rtc-pl031.o`, drivers/Makefile:112
  `obj-$(CONFIG_RTC_LIB) += rtc/`;
- net/Makefile:17 `obj-$(CONFIG_INET) += ipv4/`, Kbuild:97 `obj-$(CONFIG_NET) += net/`;
- init/Makefile:12 `obj-$(CONFIG_BLK_DEV_INITRD) += initramfs.o`;
- drivers/tty/Makefile:6-7: pty.o under CONFIG_LEGACY_PTYS *or* CONFIG_UNIX98_PTYS (Debian: only
  the second is set);
- tests/data/corpus/qemu-arm64-uboot-initcall.grabserial-t.log (our reference boot, Debian
  6.1.0-56-arm64): `grep -c 'calling  '` 919, `grep -c 'initcall .* returned 0 after'` 869,
  `grep -c 'initcall .* returned -'` 48; pl011_init returned 0 at line 550 and its device
  bound in of_platform_default_populate_init (`probe of 9000000.pl011 returned 0`, line 566);
  tegra_pcie_driver_init returned 0 at line 1355 with no probe inside or named for it;
  xen_hvc_init returned -19 at line 1641; no module was loaded (no `[module]` on any line).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bootlens import analyze_paths
from bootlens.advise import RuleRegistry, advise
from bootlens.advise.base import ChangeKind, Context
from bootlens.advise.rules.kernel_from_boot import KernelFromBoot
from bootlens.advise.rules.uboot_direct_boot import DirectBoot
from bootlens.kbuild.derive import derive, read_config
from bootlens.targets.initramfs import init_files

from conftest import CORPUS, READY_OPTS, extra_log, needs_qemu

TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
needs_source = pytest.mark.skipif(not TARBALL.exists() and not os.environ.get("CI"),
                                  reason="linux-source-6.1 is not installed (make test installs it)")
REF = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
X86 = CORPUS / "qemu-x86_64-initcall.console.log"


@pytest.fixture(scope="module")
def sm():  # type: ignore[no-untyped-def]
    from bootlens.kbuild.build import source_tree
    from bootlens.kbuild.sourcemap import load_or_index

    return load_or_index(source_tree())


def _boot(path: Path):  # type: ignore[no-untyped-def]
    return analyze_paths([str(path)], READY_OPTS).boots[0]


def _gates(sm, fn: str, running=None) -> list[tuple[str | None, str, int]]:  # type: ignore[no-untyped-def]
    return [(g.symbol, g.makefile, g.line) for f in sm.files_for(fn) for g in sm.symbols(f, running) or []]


@needs_source
def test_initcalls_map_to_their_makefile_lines(sm) -> None:  # type: ignore[no-untyped-def]
    assert sm.files_for("pl011_init") == ["drivers/tty/serial/amba-pl011.c"]
    assert _gates(sm, "pl011_init") == [("SERIAL_AMBA_PL011", "drivers/tty/serial/Makefile", 27)]
    assert _gates(sm, "pl031_driver_init") == [("RTC_DRV_PL031", "drivers/rtc/Makefile", 132),
                                               ("RTC_LIB", "drivers/Makefile", 112)]
    assert _gates(sm, "inet_init") == [("INET", "net/Makefile", 17), ("NET", "Kbuild", 97)]
    assert _gates(sm, "populate_rootfs") == [("BLK_DEV_INITRD", "init/Makefile", 12)]
    # module_platform_driver(x) defines x_init: the driver macros count as initcalls
    assert sm.files_for("pl031_driver_init") == ["drivers/rtc/rtc-pl031.c"]
    # a tty's device name and a filesystem's type lead to their source files
    assert sm.ttys["ttyAMA"] == ["drivers/tty/serial/amba-pl011.c"]
    assert sm.filesystems["devtmpfs"] == ["drivers/base/devtmpfs.c"]


@needs_source
def test_an_object_on_two_lines_needs_one_of_them(sm) -> None:  # type: ignore[no-untyped-def]
    running = {"UNIX98_PTYS": "y", "LEGACY_PTYS": "n", "TTY": "y"}
    assert [g for g in _gates(sm, "pty_init", running) if g[0] and "PTYS" in g[0]] == \
        [("UNIX98_PTYS", "drivers/tty/Makefile", 7)]


@needs_source
def test_the_reference_boot_derivation(sm) -> None:  # type: ignore[no-untyped-def]
    running_text = _running_config()
    running = read_config(running_text) if running_text else None
    b = _boot(REF)
    d = derive(b.boot, sm, running, init_files(), "console=ttyAMA0 printk.time=1", b"\x1f\x8b\x08\x00")
    assert d.initcalls == 869  # grep -c 'initcall .* returned 0 after'
    used = set(d.used)
    # what the boot served: its console, the initramfs, the binaries, the filesystems its scripts mount
    assert {"SERIAL_AMBA_PL011", "SERIAL_AMBA_PL011_CONSOLE", "BLK_DEV_INITRD", "RD_GZIP", "BINFMT_ELF",
            "BINFMT_SCRIPT", "PROC_FS", "SYSFS", "DEVTMPFS", "RTC_DRV_PL031", "PCI_HOST_GENERIC"} <= used
    why = {r.what for r in d.used["SERIAL_AMBA_PL011"]}
    assert "initcall pl011_init returned 0, its driver bound 9000000.pl011 (line 566)" in why
    assert any(w.startswith("/etc/init.d/S01mount mounts -t devtmpfs") for w in (r.what for r in d.used["DEVTMPFS"]))
    dropped = {e.name: (e.line_no, why) for e, why in d.dropped}
    assert dropped["tegra_pcie_driver_init"][1] == "registered a driver that bound no device"
    assert dropped["xen_hvc_init"][1] == "returned -19"
    assert "MODULES" not in used  # no module was loaded
    assert not any(s.startswith("ARCH_") and s in sm.platforms for s in used)  # no SoC family on QEMU virt
    if running is not None:  # every symbol derived built something in the kernel that booted
        assert [s for s in used if running.get(s) not in ("y", "m")] == []


@needs_source
def test_an_x86_boot_maps_onto_the_same_tree(sm) -> None:  # type: ignore[no-untyped-def]
    """The derivation is not arm64's: the x86_64 reference boot's 8250 console and its initcalls."""
    b = _boot(X86)
    d = derive(b.boot, sm, None, init_files(), "console=ttyS0")
    assert "SERIAL_8250" in d.used and "SERIAL_8250_CONSOLE" in d.used
    assert "BLK_DEV_INITRD" in d.used


@needs_source
def test_kernel_from_boot_finding(sm) -> None:  # type: ignore[no-untyped-def]
    reg = RuleRegistry()
    reg.register(KernelFromBoot)
    from bootlens.kbuild.build import source_tree

    b = _boot(REF)
    assert list(advise(b, Context(target="qemu-arm64"), reg)) == []  # no source tree: no finding
    ctx = Context(target="qemu-arm64", rootfs_files=init_files(), kernel_source=str(source_tree()),
                  initramfs_head=b"\x1f\x8b")
    found = advise(b, ctx, reg)
    assert len(found) == 2
    (f,) = [x for x in found if x.change.value.endswith("the boot used")]
    (small,) = [x for x in found if x.change.value.endswith("the product used")]
    assert f.change.kind is ChangeKind.KCONFIG
    lines = f.change.kconfig_lines
    assert lines[0] == "allnoconfig" and "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y" in lines
    assert f.change.value == f"allnoconfig + {len(lines) - 1} symbols the boot used"
    assert f.stage == "kernel_init" and f.saving_ns and f.saving_ns > 10_000_000
    # the minimal kernel: what the product itself used, nothing that only initialised itself
    mini = small.change.kconfig_lines
    assert mini[0] == "allnoconfig" and small.change.value == f"allnoconfig + {len(mini) - 1} symbols the product used"
    assert {"CONFIG_SERIAL_AMBA_PL011_CONSOLE=y", "CONFIG_BLK_DEV_INITRD=y", "CONFIG_RD_GZIP=y", "CONFIG_BINFMT_ELF=y",
            "CONFIG_DEVTMPFS=y", "CONFIG_PROC_FS=y", "CONFIG_SYSFS=y", "CONFIG_RTC_DRV_PL031=y"} <= set(mini)
    assert "CONFIG_NET=y" in lines and "CONFIG_NET=y" not in mini and "CONFIG_SECURITY_SELINUX=y" not in mini
    assert small.saving_ns and small.saving_ns > f.saving_ns


def test_direct_boot_waits_for_the_countdown() -> None:
    """The reference boot counts down 2 s (bootdelay=2, line 13): bootdelay=0 is the first change,
    falcon mode is proposed once U-Boot no longer waits."""
    reg = RuleRegistry()
    reg.register(DirectBoot)
    assert advise(_boot(REF), Context(), reg) == []


@needs_qemu
def test_direct_boot_finding_on_a_boot_without_countdown(tmp_path: Path) -> None:
    """A real boot of the reference target with bootdelay=0: the finding is U-Boot proper's whole
    stage, from its banner to `Starting kernel ...`, as the stage table measures it."""
    from bootlens.targets.base import BootConfig, TargetOptions
    from bootlens.targets.qemu import QemuTarget

    target = QemuTarget.from_options(TargetOptions("qemu-arm64", timeout_s=120))
    target.boot(BootConfig("nodelay", uboot_env=(("bootdelay", "0"),)), tmp_path / "boot-1.rec")
    b = _boot(tmp_path / "boot-1.rec")
    stage = next(s for s in b.stages if s.name == "bootloader")
    reg = RuleRegistry()
    reg.register(DirectBoot)
    (f,) = advise(b, Context(), reg)
    assert f.change.kind is ChangeKind.BOOTLOADER and f.change.value == "direct" and f.stage == "bootloader"
    assert f.saving_ns == stage.duration_ns and 10_000_000 < f.saving_ns < 2_000_000_000
    texts = [e.text for e in f.evidence]
    assert texts[0].startswith("U-Boot 20") and texts[-1].strip() == "Starting kernel ..."


@needs_source
def test_a_board_never_shown_x13s(sm) -> None:  # type: ignore[no-untyped-def]
    """Extra log 120 (Lenovo X13s, Qualcomm SC8280XP, Fedora 6.13.1; its MANIFEST gives the
    source and these grep facts): 1137 built-in initcalls returned 0 (`grep 'initcall .* returned
    0 after' | grep -vc '] returned'`); no pl011 device (`grep -c 'probe of .*pl011'` 0) though
    pl011_init returned 0 (line 640); modules load in parallel threads, their lines interleave:
    sc8280xp_pinctrl_init [pinctrl_sc8280xp] runs from line 3239 to 3254 and
    `probe of f100000.pinctrl returned 0` (line 3253) is its TLMM; other modules' initcalls are
    open at the same time. Its kernel is newer than the tree: names the tree lacks are counted."""
    b = _boot(extra_log("120"))
    d = derive(b.boot, sm, None, {}, "console=tty0")
    assert d.initcalls == 1137
    dropped = {e.name: why for e, why in d.dropped}
    assert dropped["pl011_init"] == "registered a driver that bound no device"
    why = [r.what for r in d.used["ARCH_QCOM"]]
    assert "initcall sc8280xp_pinctrl_init returned 0 (module pinctrl_sc8280xp), its driver bound f100000.pinctrl " \
        "(line 3253)" in why
    # a node name many drivers share (pinctrl, pcie) does not make another SoC's driver bound
    assert "ARCH_TEGRA" not in d.used and "ARCH_MESON" not in d.used
    assert "MODULES" in d.used  # modules were loaded
    assert 100 < len(d.unmapped) < 200  # 6.13's initcalls the 6.1 tree does not have (143 here)


def _running_config() -> str | None:
    from bootlens.targets.qemu import cache_root

    found = sorted((cache_root() / "qemu-arm64").glob("config-*"))
    return found[-1].read_text() if found else None


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None and not os.environ.get("CI"),
                    reason="gcc-aarch64-linux-gnu is not installed (make test installs it)")
@needs_source
def test_configure_switches_on_dependencies(tmp_path: Path) -> None:
    """allnoconfig, then symbols with what they depend on; the kernel's olddefconfig has the last word."""
    from bootlens.kbuild.build import configure, source_tree

    text, dropped = configure(source_tree(), ["allnoconfig", "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y",
                                              "CONFIG_NO_SUCH_SYMBOL=y", "CONFIG_PRINTK_TIME=y"], None, tmp_path)
    cfg = read_config(text)
    # PL011_CONSOLE depends on SERIAL_AMBA_PL011, which depends on TTY and ARM_AMBA
    assert cfg["SERIAL_AMBA_PL011_CONSOLE"] == "y" and cfg["SERIAL_AMBA_PL011"] == "y" and cfg["TTY"] == "y"
    assert cfg["PRINTK_TIME"] == "y"
    assert dropped == ("NO_SUCH_SYMBOL",)
    assert cfg.get("NET", "n") == "n"  # nothing asked for it


SMALL = ("allnoconfig", "CONFIG_SERIAL_AMBA_PL011_CONSOLE=y", "CONFIG_BLK_DEV_INITRD=y", "CONFIG_RD_GZIP=y",
         "CONFIG_BINFMT_ELF=y", "CONFIG_BINFMT_SCRIPT=y", "CONFIG_PROC_FS=y", "CONFIG_SYSFS=y", "CONFIG_DEVTMPFS=y",
         "CONFIG_PRINTK_TIME=y")


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None and not os.environ.get("CI"),
                    reason="gcc-aarch64-linux-gnu is not installed (make test installs it)")
@needs_source
def test_a_small_kernel_builds_and_boots_to_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The slow one: a kernel of the ten lines above built from Debian's source in a fresh build
    folder (ccache keeps compiled objects between runs) and booted on the reference target with
    no bootloader stage, to the ready line; the configuration's folder gets its .config and the
    diff against Debian's."""
    from bootlens.capture.recording import line_times, read_recording
    from bootlens.experiment.configs import combine
    from bootlens.experiment.measurement import prepare
    from bootlens.advise.base import Change
    from bootlens.targets.base import TargetOptions
    from bootlens.targets.qemu import QemuTarget

    monkeypatch.setenv("BOOTLENS_KERNEL_BUILDS", str(tmp_path / "builds"))
    target = QemuTarget.from_options(TargetOptions("qemu-arm64", timeout_s=120))
    setup = combine("small", [("small", Change(ChangeKind.KCONFIG, "small", "a small kernel", kconfig=SMALL)),
                              ("direct", Change(ChangeKind.BOOTLOADER, "direct", ""))])
    config = prepare(target, setup, tmp_path / "small")
    assert config.kernel is not None and config.kernel.is_relative_to(tmp_path / "builds") and config.direct
    built = read_config((tmp_path / "small" / "kernel.config").read_text())
    assert built["SERIAL_AMBA_PL011_CONSOLE"] == "y" and built.get("NET", "n") == "n"
    if target.kernel_config() is not None:
        diff = (tmp_path / "small" / "kernel.diff").read_text()
        assert "# CONFIG_NET is not set" in diff.splitlines()
    target.boot(config, tmp_path / "small" / "boot-1.rec")
    lines, _ = line_times(read_recording(str(tmp_path / "small" / "boot-1.rec")))
    text = b"\n".join(lines).decode(errors="replace")
    assert "APP READY" in text and "U-Boot" not in text
    assert "Linux version 6.1.192" in text


@needs_qemu
def test_direct_boot_finding_on_the_guest_clock(tmp_path: Path) -> None:
    """--deterministic reads the boot on the guest's clocks, which U-Boot does not print: the
    bootloader stage is there (its banner, `Starting kernel ...`) but untimed, so the finding has
    no figure and says why; optimize still tries it (on the total)."""
    from bootlens.timeline.inputs import analyze_folder

    from conftest import cli

    r = cli("run", "qemu-arm64", "--deterministic", "--uboot-env", "bootdelay=0", "-o", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    b = analyze_folder(tmp_path / "run").boots[0]
    assert next(s for s in b.stages if s.name == "bootloader").duration_ns is None
    reg = RuleRegistry()
    reg.register(DirectBoot)
    (f,) = advise(b, Context(), reg)
    assert f.saving_ns is None and f.change.value == "direct"
    assert f.arithmetic.startswith("no estimate: U-Boot's stage (line ") and "power-on to the kernel" in f.arithmetic


DATA = Path(__file__).parent / "data" / "kernel-rebuild"


def test_decisions_on_recorded_kernel_boots() -> None:
    """optimize's rule on the recorded boots (tests/data/kernel-rebuild/README.md): the kernel
    built from the boot is kept on the stage its finding names, kernel_init, 0.766 s shorter; the
    direct boot, whose stage has no time on the guest's clock, on the total."""
    from bootlens.experiment.configs import combine
    from bootlens.experiment.measurement import decide, measure

    def m(name: str):  # type: ignore[no-untyped-def]
        return measure(combine(name, []), DATA / name)

    base, kernel = m("baseline"), m("kernel.from_boot")
    assert (base.boots, kernel.boots, kernel.ready_boots) == (3, 3, 3)
    d = decide(base, kernel, "kernel_init")
    assert d.keep and d.on == "kernel_init" and d.reason.startswith("its stage (kernel_init) is 0.766 s shorter")
    d = decide(m("round-2-baseline"), m("uboot.direct_boot"), "bootloader")
    assert d.keep and d.on == "total" and d.reason.startswith("the total is 0.039 s shorter")


def test_a_kernel_that_does_not_build_is_a_result(tmp_path: Path) -> None:
    """A configuration whose kernel does not build is not booted and not kept, with the build's
    error as the reason; run.json says so. The run goes on."""
    from bootlens.experiment.configs import combine
    from bootlens.experiment.measurement import decide, measure, prepare
    from bootlens.kbuild.build import KernelBuildError
    from bootlens.targets.base import KERNEL

    from test_experiment import _KernelTarget

    class Broken(_KernelTarget):
        def build_kernel(self, lines: tuple[str, ...]):  # type: ignore[no-untyped-def]
            raise KernelBuildError("make Image failed: drivers/x.c:1: error (log: /tmp/b.log)")

    from bootlens.advise.base import Change

    change = Change(ChangeKind.KCONFIG, "allnoconfig + 1", "", kconfig=("allnoconfig", "CONFIG_TTY=y"))
    setup = combine("k", [("k", change)])
    with pytest.raises(KernelBuildError):
        prepare(Broken(frozenset({KERNEL})), setup, tmp_path / "k")
    import json

    run = json.loads((tmp_path / "k" / "run.json").read_text())
    assert run["experiment"]["kernel"]["failed"].startswith("make Image failed")
    rejected = measure(setup, tmp_path / "k", "make Image failed: drivers/x.c:1: error")
    base = measure(combine("baseline", []), DATA / "baseline")
    d = decide(base, rejected, "kernel_init")
    assert d.keep is False and d.reason == "not booted: make Image failed: drivers/x.c:1: error"
