"""The reference target: the initramfs bootlens writes, and a real QEMU boot (slow; CI runs it)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_qemu

from bootlens.targets import initramfs as I, qemu as T
from bootlens.timeline.inputs import analyze_folder
from bootlens.stats.figures import statistics_of


def parse_newc(data: bytes) -> dict[str, tuple[int, bytes]]:
    """A minimal newc reader, independent of the writer, to check what the kernel will see."""
    out: dict[str, tuple[int, bytes]] = {}
    pos = 0
    while True:
        assert data[pos:pos + 6] == b"070701", pos
        f = [int(data[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name_at = pos + 110
        name = data[name_at:name_at + namesize - 1].decode()
        data_at = name_at + namesize + (-(110 + namesize) % 4)
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, data[data_at:data_at + size])
        pos = data_at + size + (-size % 4)


def test_initramfs_layout() -> None:
    files = parse_newc(gzip.decompress(I.build_initramfs(b"\x7fELF fake busybox")))
    assert files["bin/busybox"] == (0o100755, b"\x7fELF fake busybox")
    assert files["init"] == (0o120777, b"sbin/init")
    assert files["sbin/init"][1] == b"../bin/busybox"
    assert b"::sysinit:/etc/init.d/rcS" in files["etc/inittab"][1]
    scripts = sorted(n for n in files if n.startswith("etc/init.d/S"))
    assert scripts == sorted(f"etc/init.d/{n}" for n in I.SCRIPTS)
    assert b"sleep 1" in files["etc/init.d/S40settle"][1]
    assert b"APP READY" in files["usr/bin/app"][1]
    assert all(files[f"bin/{a}"] == (0o120777, b"busybox") for a in I.APPLETS)


def test_unknown_target_is_a_one_line_error() -> None:
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-pdp11"], capture_output=True)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == ("bootlens: error: unknown target 'qemu-pdp11'; known: board, labgrid, qemu-arm64, "
                                         "qemu-x86_64, qemu-x86_64-systemd")




def test_kernel_cmdline_is_one_value_joined_in_one_place() -> None:
    """console= (and root= for an image) kept, the defaults or --cmdline, the user's and the
    configuration's arguments, bootlens's own last; run.json's parts; the parameters set."""
    from bootlens.targets.cmdline import KernelCmdline

    tf = T.TargetFiles(T.TARGETS["qemu-arm64"], Path("k"), Path("i"), "v")
    k = T.kernel_cmdline(tf)
    assert k.text() == f"console=ttyAMA0 {T.BASE_CMDLINE}" and k.appended == "" and k.user_base is None
    k = T.kernel_cmdline(tf, append="quiet").append("", "lpj=1250000 quiet").append_own("ftrace=function")
    assert k.text() == f"console=ttyAMA0 {T.BASE_CMDLINE} quiet lpj=1250000 quiet ftrace=function"
    assert k.appended == "quiet lpj=1250000 quiet"  # what the user and the changes add; not bootlens's own
    assert k.names() == ("console", "printk.time", "panic", "quiet", "lpj")
    r = T.kernel_cmdline(tf, cmdline="  lpj=250000 ", append=" ")
    assert r.text() == "console=ttyAMA0 lpj=250000" and r.user_base == "  lpj=250000 " and r.appended == ""
    image = T.TargetFiles(T.TARGETS["qemu-x86_64-systemd"], Path("k"), Path("i"), "v", Path("rootfs.ext4"))
    assert T.kernel_cmdline(image, cmdline="").text() == "console=ttyS0 root=/dev/vda ro"
    assert KernelCmdline().text() == "" and KernelCmdline(base="a=1").replacing(None).user_base is None


@pytest.mark.slow
@needs_qemu
def test_boot_qemu_arm64_twice_from_power_on(tmp_path: Path) -> None:
    """Real Debian arm64 kernel, real U-Boot, real QEMU: every stage measured from power-on."""
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--repeat", "2",
                        "-o", str(tmp_path / "run")], capture_output=True, timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    out = r.stdout.decode()
    assert "Statistics over 2 boots" in out and "marker ready" in out
    a = analyze_folder(tmp_path / "run")
    assert len(a.boots) == 2
    for b in a.boots:
        assert b.alignment.origin == "power_on"
        st = {s.name: s for s in b.stages}
        for name in ("firmware", "bootloader", "kernel_load", "kernel_init", "userspace"):
            assert st[name].status == "measured", name
        assert st["bootloader"].duration_ns > 1.9e9  # U-Boot's default 2 s autoboot delay
        assert st["userspace"].duration_ns > 1e9  # the S40settle 'sleep 1'
        assert b.total.duration_ns is not None and b.total.end.startswith("ready marker")
        assert b.boot.fact("kernel_version").value.endswith("-arm64")  # type: ignore[union-attr]
    names = [s.name for s in statistics_of(a.boots)]
    assert names[0].startswith("total (power-on") and "marker ready" in names


@pytest.mark.skipif(not Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").exists(), reason="u-boot-qemu not installed")
def test_uboot_env_image_is_the_default_with_overrides(tmp_path: Path) -> None:
    import zlib

    fw = Path("/usr/lib/u-boot/qemu_arm64/u-boot.bin").read_bytes()
    default = T.default_uboot_env(fw)
    assert default["bootdelay"] == "2" and default["bootcmd"].startswith("run ")
    tf = T.TargetFiles(T.TARGETS["qemu-arm64"], Path("k"), Path("i"), "v")
    flash = tmp_path / "flash1.img"
    T.flash_image(tf, {"bootdelay": "0", "silent": "1"}, str(flash))
    data = flash.read_bytes()
    assert len(data) == 64 << 20 and data[0x40000:0x40010] == b"\xff" * 16
    env = data[4:0x40000]
    assert int.from_bytes(data[:4], "little") == zlib.crc32(env)
    pairs = dict(kv.decode().split("=", 1) for kv in env.split(b"\0\0")[0].split(b"\0"))
    assert pairs == {**default, "bootdelay": "0", "silent": "1"}
    with pytest.raises(T.TargetError, match="NAME=VALUE"):
        T.parse_env_overrides(["nonsense"])


@pytest.mark.slow
@needs_qemu
def test_uboot_env_bootdelay_0_on_the_real_target(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--uboot-env", "bootdelay=0",
                        "-o", str(tmp_path / "run")], capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    b = analyze_folder(tmp_path / "run").boots[0]
    assert b.boot.fact("bootdelay").value == "0"  # type: ignore[union-attr]
    assert "Loading Environment from Flash... OK" in "\n".join(b.boot.lines.text)
    assert any(t.startswith("Hit any key to stop autoboot:  0") for t in b.boot.lines.text)


def test_overlay_replaces_in_place_and_keeps_parents_first(tmp_path: Path) -> None:
    ov = tmp_path / "ov"
    (ov / "etc/init.d").mkdir(parents=True)
    (ov / "etc/init.d/S40settle").write_text("#!/bin/sh\n")
    (ov / "etc/init.d/S40settle").chmod(0o755)
    (ov / "opt/new").mkdir(parents=True)
    (ov / "opt/new/file").write_text("x")
    names = []
    raw = gzip.decompress(I.build_initramfs(b"bb", ov))
    files = parse_newc(raw)
    pos = 0
    while True:  # the archive order: every path's parent directory comes before it
        namesize = int(raw[pos + 94:pos + 102], 16)
        size = int(raw[pos + 54:pos + 62], 16)
        name = raw[pos + 110:pos + 110 + namesize - 1].decode()
        if name == "TRAILER!!!":
            break
        names.append(name)
        pos += 110 + namesize + (-(110 + namesize) % 4)
        pos += size + (-size % 4)
    for i, n in enumerate(names):
        parent = n.rsplit("/", 1)[0] if "/" in n else None
        assert parent is None or parent in names[:i], n
    assert files["etc/init.d/S40settle"] == (0o100755, b"#!/bin/sh\n")
    assert files["opt/new/file"] == (0o100644, b"x")
    assert names.count("etc/init.d/S40settle") == 1


@pytest.mark.slow
@needs_qemu
def test_rootfs_overlay_and_cmdline_on_the_real_target(tmp_path: Path) -> None:
    """Dropping the needless 'sleep 1' through an overlay shortens user space by about 1 s;
    --cmdline replaces the kernel arguments (console= kept)."""
    ov = tmp_path / "ov" / "etc" / "init.d"
    ov.mkdir(parents=True)
    (ov / "S40settle").write_text("#!/bin/sh\necho 'overlay: S40settle without sleep'\n")
    (ov / "S40settle").chmod(0o755)
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--rootfs-overlay",
                        str(tmp_path / "ov"), "--cmdline", "printk.time=1 panic=-1 lpj=250000",
                        "-o", str(tmp_path / "run")], capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    b = analyze_folder(tmp_path / "run").boots[0]
    assert b.boot.fact("cmdline").value == "console=ttyAMA0 printk.time=1 panic=-1 lpj=250000"  # type: ignore[union-attr]
    assert b.boot.fact("lpj_source").value == "preset"  # type: ignore[union-attr]
    assert "overlay: S40settle without sleep" in b.boot.lines.text  # the overlay's script ran
    assert b.total.end.startswith("ready marker")
