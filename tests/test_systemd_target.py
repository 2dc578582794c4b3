"""The systemd reference target qemu-x86_64-systemd: overlays written into a real ext4 image
with debugfs (fast), and a real setup and real QEMU boots with the guest's own systemd-analyze
and journal collected (slow: the first setup takes minutes, each boot about a minute under TCG)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bootlens.targets import qemu as T
from bootlens.targets import qemu_systemd as S
from bootlens.capture.recording import read_recording
from conftest import CAN_BUILD_SYSTEMD as CAN_BUILD

NAME = "qemu-x86_64-systemd"
needs_e2fsprogs = pytest.mark.skipif(shutil.which("mkfs.ext4") is None or shutil.which("debugfs") is None,
                                     reason="e2fsprogs not installed")
needs_build = pytest.mark.skipif(
    not CAN_BUILD,
    reason="qemu-system-x86 and mmdebstrap needed, and root (mmdebstrap's root mode, the image's owners)")


def debugfs(image: Path, request: str) -> str:
    """One read-only debugfs request's output (an independent reader of the image)."""
    p = subprocess.run(["debugfs", "-R", request, str(image)], capture_output=True, text=True, check=True)
    return p.stdout


@needs_e2fsprogs
def test_overlay_image_writes_files_dropins_and_masks_into_a_copy(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "etc/systemd/system").mkdir(parents=True)
    (tree / "etc/systemd/system/app.service").write_text("[Service]\nExecStart=/old\n")
    (tree / "etc/systemd/system/man-db.timer").write_text("[Timer]\n")
    base = tmp_path / "cache" / "rootfs.ext4"
    base.parent.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-d", str(tree), "-F", str(base), "16M"], check=True)
    before = base.read_bytes()
    overlay = tmp_path / "overlay"
    (overlay / "etc/systemd/system/app.service.d").mkdir(parents=True)
    (overlay / "etc/systemd/system/app.service.d/10-fast.conf").write_text("[Unit]\nDefaultDependencies=no\n")
    (overlay / "etc/systemd/system/app.service").write_text("[Service]\nExecStart=/new\n")
    os.symlink("/dev/null", overlay / "etc/systemd/system/man-db.timer")
    (overlay / "usr/local/bin").mkdir(parents=True)
    (overlay / "usr/local/bin/tool").write_text("#!/bin/sh\n")
    (overlay / "usr/local/bin/tool").chmod(0o755)
    tf = T.TargetFiles(T.spec(NAME), tmp_path / "vmlinuz", tmp_path / "initrd", "0", base)

    image = S.overlay_image(tf, overlay)
    assert base.read_bytes() == before  # the base image is never written
    assert debugfs(image, "cat /etc/systemd/system/app.service") == "[Service]\nExecStart=/new\n"
    assert debugfs(image, "cat /etc/systemd/system/app.service.d/10-fast.conf") == \
        "[Unit]\nDefaultDependencies=no\n"
    link = debugfs(image, "stat /etc/systemd/system/man-db.timer")
    assert "Type: symlink" in link and 'Fast link dest: "/dev/null"' in link
    tool = debugfs(image, "stat /usr/local/bin/tool")
    assert "Mode:  0755" in tool and "User:     0   Group:     0" in tool
    fsck = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout
    # once per configuration: the same overlay again is the cached image, not a new copy
    mtime = image.stat().st_mtime_ns
    assert S.overlay_image(tf, overlay) == image and image.stat().st_mtime_ns >= mtime
    assert len(list((base.parent / "overlays").glob("*.ext4"))) == 1


def test_overlay_paths_that_leave_the_tree_are_refused(tmp_path: Path) -> None:
    for path in ("../etc/passwd", "etc/../../x", "/"):
        with pytest.raises(T.TargetError, match="not a path inside the root filesystem"):
            S._debugfs_script([(path, b"x", 0o100644)], tmp_path)


def _image_with_passwd(tmp_path: Path) -> T.TargetFiles:
    tree = tmp_path / "tree"
    (tree / "etc").mkdir(parents=True)
    (tree / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    base = tmp_path / "cache" / "rootfs.ext4"
    base.parent.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-d", str(tree), "-F", str(base), "16M"], check=True)
    return T.TargetFiles(T.spec(NAME), tmp_path / "vmlinuz", tmp_path / "initrd", "0", base)


@needs_e2fsprogs
@pytest.mark.parametrize("hostile", ["x\nrm /etc/passwd", "x\n!touch {marker}", "x\rrm /etc/passwd",
                                     "x\0rm /etc/passwd"])
def test_a_control_character_in_an_overlay_link_target_is_refused_not_run(tmp_path: Path, hostile: str) -> None:
    """Issue 29: a newline in a symlink's target ended debugfs's command line, the rest ran as
    commands of their own: /etc/passwd gone from the image, and a line starting with "!" run by
    the host's shell (as root when bootlens is). Now refused, one line naming the overlay."""
    tf = _image_with_passwd(tmp_path)
    marker = tmp_path / "PWNED"
    overlay = tmp_path / "overlay"
    (overlay / "etc").mkdir(parents=True)
    target = hostile.format(marker=marker)
    if "\0" in target:  # no file system holds a NUL in a link: an overlay a rule made (entries as data)
        with pytest.raises(T.TargetError) as e:
            S._debugfs_script([("etc/evil", target.encode(), 0o120777)], tmp_path, f"overlay {overlay}")
    else:
        os.symlink(target, overlay / "etc/evil")
        with pytest.raises(T.TargetError) as e:
            S.overlay_image(tf, overlay)
        assert not list((tf.rootfs.parent / "overlays").glob("*.ext4"))  # type: ignore[union-attr]
    assert str(e.value) == (f"overlay {overlay}: 'etc/evil': a control character (newline, NUL, ...) in the link "
                            "target; refused, it would reach debugfs as a command of its own")
    assert "\n" not in str(e.value)
    assert not marker.exists()
    assert "Type: regular" in debugfs(tf.rootfs, "stat /etc/passwd")  # type: ignore[arg-type]


@needs_e2fsprogs
def test_a_control_character_in_an_overlay_name_is_refused(tmp_path: Path) -> None:
    tf = _image_with_passwd(tmp_path)
    overlay = tmp_path / "overlay"
    (overlay / "etc").mkdir(parents=True)
    (overlay / "etc/x\nrm passwd").write_text("x")
    with pytest.raises(T.TargetError, match=r"^overlay .*: 'etc/x\\nrm passwd': a control character .* in the name;"):
        S.overlay_image(tf, overlay)


@needs_e2fsprogs
def test_hostile_but_legal_overlay_names_and_targets_are_laid_as_data(tmp_path: Path) -> None:
    """Quotes, ';', spaces, a leading '!' or '#', an inode-number form <2>, '../' and absolute
    link targets: each is a name or a link target in the image, nothing else. Before issue 29 a
    file named <2> turned the image's root directory into a regular file (debugfs's sif took
    the name as inode 2)."""
    tf = _image_with_passwd(tmp_path)
    marker = tmp_path / "PWNED"
    overlay = tmp_path / "overlay"
    (overlay / "etc/a dir;x").mkdir(parents=True)
    names = ['a "b";rm passwd.conf', f"!touch {marker.name}", "#c", "<2>", "<11>", '""', "sp ace", "ümlaut"]
    for n in names:
        (overlay / "etc" / n).write_text(f"{n}\n")
    (overlay / "<2>").write_text("top\n")
    (overlay / "etc/a dir;x/f").write_text("deep\n")
    os.symlink('"/dev/null"; rm /etc/passwd', overlay / "etc/quoted-link")
    os.symlink("../../../../../etc/shadow", overlay / "etc/up-link")
    os.symlink("/etc/passwd", overlay / "etc/abs-link")
    image = S.overlay_image(tf, overlay)

    listing = debugfs(image, "ls -p /etc")  # /inode/mode/uid/gid/name/size/ per entry
    got = {ln.split("/")[5] for ln in listing.splitlines() if ln.startswith("/")}
    assert got == {".", "..", "passwd", "a dir;x", *names, "quoted-link", "up-link", "abs-link"}
    assert debugfs(image, 'cat "/etc/a ""b"";rm passwd.conf"') == 'a "b";rm passwd.conf\n'
    assert debugfs(image, 'cat "/etc/<2>"') == "<2>\n"
    assert debugfs(image, 'cat "/<2>"') == "top\n"
    assert debugfs(image, 'cat "/etc/a dir;x/f"') == "deep\n"
    assert 'Fast link dest: ""/dev/null"; rm /etc/passwd"' in debugfs(image, "stat /etc/quoted-link")
    assert 'Fast link dest: "../../../../../etc/shadow"' in debugfs(image, "stat /etc/up-link")
    assert 'Fast link dest: "/etc/passwd"' in debugfs(image, "stat /etc/abs-link")
    assert "Type: directory" in debugfs(image, "stat <2>")
    assert "Type: regular" in debugfs(image, "stat /etc/passwd")
    assert "Mode:  0644" in debugfs(image, 'stat "/etc/<11>"')
    assert not marker.exists()
    fsck = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stdout


def test_a_debugfs_line_past_its_buffer_is_refused(tmp_path: Path) -> None:
    """debugfs reads 8191 bytes a line: the rest of a longer one would be a command of its own."""
    long = "/" + '"' * 4094  # a link target Linux allows (4095 bytes), quoted: 8190 + the command
    with pytest.raises(T.TargetError, match="too long for a debugfs command line"):
        S._debugfs_script([("etc/l", long.encode(), 0o120777)], tmp_path)
    assert S._debugfs_script([("etc/l", long[:2000].encode(), 0o120777)], tmp_path)


def test_the_essential_hook_takes_the_stage_folder_as_data(tmp_path: Path) -> None:
    """mmdebstrap runs the hook with sh -c: the cache folder's name (the user's) was pasted in
    unquoted, so a space broke the build and a ';' or $(...) ran as root (issue 29)."""
    cache = tmp_path / 'c "x"; touch M1; $(touch M2) `touch M3` \'q\''
    stage = cache / "stage"
    (stage / "etc").mkdir(parents=True)
    (stage / "etc/hostname").write_text("h\n")
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["sh", "-c", S.essential_hook(stage), "sh", str(root)], check=True, cwd=tmp_path)
    assert (root / "etc/hostname").read_text() == "h\n"
    assert not [p.name for p in tmp_path.glob("M*")]


def test_qemu_command_keeps_root_and_restricts_the_network(tmp_path: Path) -> None:
    tf = T.TargetFiles(T.spec(NAME), tmp_path / "vmlinuz", tmp_path / "initrd", "0", tmp_path / "rootfs.ext4")
    cmd = T.qemu_command(tf, "mon", T.kernel_cmdline(tf, cmdline="printk.time=1", append="quiet"))
    assert cmd[cmd.index("-append") + 1] == "console=ttyS0 root=/dev/vda ro printk.time=1 quiet"
    assert "user,id=n0,restrict=on" in cmd
    assert f"file={tmp_path / 'rootfs.ext4'},format=raw,if=virtio,snapshot=on" in cmd


def _guest_disk(path: Path, members: list[tuple[str, bytes | str, int]]) -> Path:
    """A raw disk as the guest's collector leaves it: a tar at its start, zeros after. Members:
    (name, content or link target, type: tarfile.REGTYPE / SYMTYPE), written as given (tarfile
    keeps '../' and absolute names when asked to write them)."""
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type, info.mode = bytes([kind]) if isinstance(kind, int) else kind, 0o4755
            if isinstance(data, str):
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    path.write_bytes(raw.getvalue() + b"\0" * 65536)
    return path


def test_collect_reports_an_absolute_member_under_the_name_it_was_written_to(tmp_path: Path) -> None:
    """Issue 29: an absolute member was written inside DIR (the data filter drops the '/') but
    reported under its absolute name. Links and '..' inside DIR's own tree stay inside DIR."""
    disk = _guest_disk(tmp_path / "disk.img", [
        ("systemd-analyze/blame.txt", b"1.2s a.service\n", ord("0")),
        ("/etc/bootlens-abs.txt", b"abs\n", ord("0")),
        ("./journal/../journal.txt", b"j\n", ord("0")),
        ("ln", "/etc", ord("2")),
        ("ln/passwd", b"not through the link\n", ord("0"))])
    dest = tmp_path / "guest"
    names = S.read_collection(disk, dest)
    assert names == ["etc/bootlens-abs.txt", "journal.txt", "ln/passwd", "systemd-analyze/blame.txt"]
    assert (dest / "etc/bootlens-abs.txt").read_text() == "abs\n" and not Path("/etc/bootlens-abs.txt").exists()
    assert (dest / "ln/passwd").read_text() == "not through the link\n" and not (dest / "ln").is_symlink()
    assert (dest / "journal.txt").read_text() == "j\n"
    assert (dest / "systemd-analyze/blame.txt").stat().st_mode & 0o7777 == 0o755  # setuid dropped (data filter)


@pytest.mark.parametrize("evil", ["../escaped.txt", "a/../../escaped.txt", "guest/../../escaped.txt"])
def test_collect_refuses_a_member_leaving_dir_as_what_it_is(tmp_path: Path, evil: str) -> None:
    """Issue 29: a '../' member was reported as 'the guest wrote no collection ... is
    bootlens-collect.service in the image?', blaming the guest's set-up. It is refused as an
    unsafe member, named, before anything is extracted."""
    disk = _guest_disk(tmp_path / "disk.img", [("ok.txt", b"ok\n", ord("0")), (evil, b"evil\n", ord("0"))])
    dest = tmp_path / "out" / "guest"
    with pytest.raises(T.TargetError) as e:
        S.read_collection(disk, dest)
    msg = str(e.value)
    assert msg.startswith("the collection the guest wrote onto its second disk holds an unsafe member, refused "
                          f"(nothing extracted): '{evil}' would be extracted to ")
    assert msg.endswith("which is outside the destination") and "bootlens-collect.service" not in msg
    assert not dest.exists() and not list(tmp_path.rglob("escaped.txt"))


def test_collect_on_a_disk_without_a_tar_still_asks_about_the_collector(tmp_path: Path) -> None:
    disk = tmp_path / "disk.img"
    S.collect_disk(disk)
    with pytest.raises(T.TargetError, match="is bootlens-collect.service in the image"):
        S.read_collection(disk, tmp_path / "guest")


# --- the real thing -----------------------------------------------------------------------


def _boot(out: Path, *args: str) -> Path:
    """`bootlens target boot NAME --collect`, through the real entry point; the guest's files."""
    guest = out / "guest"
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "target", "boot", NAME, "-o", str(out / "boot.rec"),
                        "--collect", str(guest), "--timeout", "600", *args], capture_output=True, timeout=900)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return guest


@pytest.fixture(scope="module")
def target_files() -> T.TargetFiles:
    r = subprocess.run([sys.executable, "-m", "bootlens.cli", "target", "setup", NAME], capture_output=True,
                       timeout=3600)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return T.files(NAME)


@pytest.mark.slow
@needs_build
def test_real_boot_collects_the_guests_view(target_files: T.TargetFiles, tmp_path: Path) -> None:
    assert b"After=multi-user.target network-online.target" in T.rootfs_files(NAME)["etc/systemd/system/app.service"]
    guest = _boot(tmp_path)
    console = read_recording(str(tmp_path / "boot.rec")).data.decode(errors="replace")
    # journald forwards the app's stdout to the console as "[ MONOTONIC] app[PID]: APP READY"
    assert re.search(r"^\[ *\d+\.\d{6}\] app\[\d+\]: APP READY\r?$", console, re.M), console[-3000:]
    for name in ("analyze-time.txt", "analyze-blame.txt", "analyze-critical-chain.txt",
                 "analyze-critical-chain-app.txt", "analyze-plot.svg", "analyze-dump.txt", "journal.json",
                 "journal.export", "journal-short-monotonic.txt", "journal-short-precise.txt", "units.txt"):
        assert (guest / name).stat().st_size > 0, name
    assert "Startup finished in" in (guest / "analyze-time.txt").read_text()
    blame = [ln for ln in (guest / "analyze-blame.txt").read_text().splitlines() if ln.strip()]
    assert len(blame) >= 5 and any("systemd-networkd-wait-online.service" in ln for ln in blame)
    assert "<svg" in (guest / "analyze-plot.svg").read_text()
    records = [json.loads(ln) for ln in (guest / "journal.json").read_text().splitlines()]
    assert any(r.get("MESSAGE") == "APP READY" for r in records)  # journal+console: in both
    assert "app.service" in (guest / "analyze-critical-chain-app.txt").read_text()


@pytest.mark.slow
@needs_build
def test_real_boot_with_a_cmdline_mask_and_an_overlay(target_files: T.TargetFiles, tmp_path: Path) -> None:
    overlay = tmp_path / "overlay"
    dropin = overlay / "etc/systemd/system/app.service.d"
    dropin.mkdir(parents=True)
    (dropin / "50-bootlens-test.conf").write_text("[Unit]\nDescription=Application with a drop-in\n")
    os.symlink("/dev/null", overlay / "etc/systemd/system/e2scrub_reap.service")
    guest = _boot(tmp_path, "--append", "systemd.mask=systemd-random-seed.service", "--rootfs-overlay", str(overlay))
    assert "systemd.mask=systemd-random-seed.service" in (guest / "cmdline.txt").read_text()
    units = {ln.split()[0]: ln.split()[1:4] for ln in (guest / "units.txt").read_text().splitlines() if ln.strip()}
    assert units["systemd-random-seed.service"][0] == "masked"  # the cmdline change
    assert units["e2scrub_reap.service"][0] == "masked"  # the overlay's symlink
    journal = (guest / "journal-short-monotonic.txt").read_text()
    assert "Started app.service - Application with a drop-in." in journal  # the overlay's drop-in
    assert "APP READY" in journal
