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
    with pytest.raises(T.TargetError, match="not a plain path"):
        S._debugfs_script([("etc/a b.conf", b"x", 0o100644)], tmp_path)


def test_qemu_command_keeps_root_and_restricts_the_network(tmp_path: Path) -> None:
    tf = T.TargetFiles(T.spec(NAME), tmp_path / "vmlinuz", tmp_path / "initrd", "0", tmp_path / "rootfs.ext4")
    cmd = T.qemu_command(tf, "mon", T.kernel_cmdline(tf, cmdline="printk.time=1", append="quiet"))
    assert cmd[cmd.index("-append") + 1] == "console=ttyS0 root=/dev/vda ro printk.time=1 quiet"
    assert "user,id=n0,restrict=on" in cmd
    assert f"file={tmp_path / 'rootfs.ext4'},format=raw,if=virtio,snapshot=on" in cmd


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
