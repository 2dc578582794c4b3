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


def test_kernel_arguments_the_kernel_would_misread_are_refused() -> None:
    """Issue 29: every part of the command line is checked as the kernel reads it: an odd
    quote would make the rest of the line (bootlens's own arguments too) one value, a newline or
    NUL has no place on it. Quoted values with spaces, ';' and a '--' are fine: init's
    arguments go after everyone's kernel arguments."""
    tf = T.TargetFiles(T.TARGETS["qemu-arm64"], Path("k"), Path("i"), "v")
    k = T.kernel_cmdline(tf, cmdline='dyndbg="file a.c +p" -- single', append="quiet;x")
    k = k.append("lpj=1").append_own("bootlens.collect=1")
    assert k.text() == 'console=ttyAMA0 dyndbg="file a.c +p" quiet;x lpj=1 bootlens.collect=1 -- single'
    assert k.names() == ("console", "dyndbg", "quiet;x", "lpj")
    cases = {'quiet dyndbg="file a.c': "an unbalanced '\"'", "quiet\ninit=/bin/sh": "a control character",
             "quiet\0init=/bin/sh": "a control character", "a\rb": "a control character",
             "a\tb": "a control character"}
    for bad, why in cases.items():
        for where in ("append", "cmdline", "own"):
            with pytest.raises(T.TargetError) as e:
                if where == "own":
                    T.kernel_cmdline(tf).append_own(bad)
                else:
                    T.kernel_cmdline(tf, **{where: bad})
            assert why in str(e.value) and "\n" not in str(e.value) and "\0" not in str(e.value)
    with pytest.raises(T.TargetError) as e:
        T.kernel_cmdline(tf, append='rootfstype=ext4"')
    assert str(e.value) == ("kernel arguments 'rootfstype=ext4\"': an unbalanced '\"' (the kernel would read the "
                            "rest of the command line, bootlens's own arguments too, as this one value)")


def test_the_cli_refuses_a_bad_append_in_one_line(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "run", "qemu-arm64", "--append", "quiet\ninit=/x",
                        "-o", str(tmp_path / "run")], capture_output=True, timeout=120, check=False)
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1, r.stderr.decode()[-2000:]
    assert "kernel arguments 'quiet\\ninit=/x': a control character" in r.stderr.decode()


def test_qemu_option_values_double_their_commas(tmp_path: Path) -> None:
    """A comma separates QEMU's -drive options: a cache folder named 'a,b' was read as an option b."""
    d = tmp_path / "x,if=none,file=/etc/shadow"
    tf = T.TargetFiles(T.spec("qemu-x86_64-systemd"), d / "k", d / "i", "0", d / "rootfs.ext4")
    cmd = T.qemu_command(tf, str(d / "mon"), collect_disk=d / "c.img")
    assert f"file={tmp_path}/x,,if=none,,file=/etc/shadow/rootfs.ext4,format=raw,if=virtio,snapshot=on" in cmd
    assert f"file={tmp_path}/x,,if=none,,file=/etc/shadow/c.img,format=raw,if=virtio" in cmd
    assert f"unix:{tmp_path}/x,,if=none,,file=/etc/shadow/mon,server,nowait" in cmd


def test_an_initramfs_overlay_keeps_hostile_names_and_links_as_data(tmp_path: Path) -> None:
    """newc carries names and link targets as data: a newline, quote or ';' is part of the name,
    a '../' or absolute link target stays a link (the guest resolves it in its own root). A name
    the kernel would create outside the root, or a NUL, is refused."""
    import os

    ov = tmp_path / "ov"
    (ov / "etc").mkdir(parents=True)
    names = ["a\nrm -rf x", 'q"uo\'te', "semi;colon", "$(touch M)"]
    for n in names:
        (ov / "etc" / n).write_text(n)
    os.symlink("../../../../etc/shadow", ov / "etc/up")
    os.symlink("/etc/shadow", ov / "etc/abs")
    files = parse_newc(gzip.decompress(I.build_initramfs(b"bb", ov)))
    for n in names:
        assert files[f"etc/{n}"] == (0o100644, n.encode())
    assert files["etc/up"] == (0o120777, b"../../../../etc/shadow")
    assert files["etc/abs"] == (0o120777, b"/etc/shadow")
    import io

    for name, mode, data in [("../etc/passwd", 0o100644, b""), ("/etc/passwd", 0o100644, b""),
                             ("etc/../../x", 0o100644, b""), ("etc/a\0b", 0o100644, b""), ("", 0o100644, b""),
                             ("etc/l", 0o120777, b"/dev/null\0x")]:
        with pytest.raises(T.TargetError, match=r"^initramfs entry '.*': (not a path inside|a NUL in the link)"):
            I.cpio_entry(io.BytesIO(), 1, name, mode, data)


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
    # issue 29: a NUL in a value ended it and started a variable of the value's making
    with pytest.raises(T.TargetError) as e:
        T.flash_image(tf, {"bootdelay": "0\0bootcmd=echo pwned"}, str(flash))
    assert str(e.value) == ("U-Boot variable 'bootdelay=0\\x00bootcmd=echo pwned': a control character (newline, "
                            "NUL, ...) in the value; U-Boot would read it as the end of the variable")


def test_uboot_variables_the_environment_cannot_hold_are_refused() -> None:
    """';' and quotes are U-Boot's own script syntax, kept; a NUL, a newline, a name with '=' or
    a space, a character outside Latin-1 are refused in one line (no traceback)."""
    assert T.parse_env_overrides(["bootcmd=run a; echo \"b\" 'c'", "silent="]) == {
        "bootcmd": "run a; echo \"b\" 'c'", "silent": ""}
    for bad, why in [("bootdelay=0\0bootcmd=x", "in the value"), ("bootcmd=a\nb", "in the value"),
                     ("a b=1", "expected NAME=VALUE"), ("=1", "expected NAME=VALUE"), ("a\0=1", "expected NAME=VALUE"),
                     ("x=\u20ac", "Latin-1 only"), ("novalue", "expected NAME=VALUE")]:
        with pytest.raises(T.TargetError, match=why) as e:
            T.parse_env_overrides([bad])
        assert str(e.value).startswith("--uboot-env '") and "\n" not in str(e.value)


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
