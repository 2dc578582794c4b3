"""The Raspberry Pi 4's boot chain: boot EEPROM, then the VideoCore firmware (start4.elf) whose
``MESS:HH:MM:SS.uuuuuu:N:`` lines read its system timer since reset.

The case is an excerpt of a real Pi 4 UART log (its provenance is the log's first line). What a
person reads in it with grep:

- ``grep -n 'MESS:' | tail -2``: the firmware's last line of its own is ``MESS:00:00:08.744483``
  (log line 18); the next line is the kernel's first (``[    0.000000] Booting Linux``): the
  kernel started 8.744 s after reset, give or take the 2 ms to the kernel line's own prefix.
- ``grep -n 'VFS: Mounted root\\|Run /sbin/init\\|systemd\\['``: the kernel mounted the root itself
  (3.473398) before ``Run /sbin/init`` (3.504041): no initramfs ran, so the 357.361 ms up to
  systemd's first line (3.861402) is init loading from the SD card, not an initramfs.
"""

from __future__ import annotations

from pathlib import Path

from bootlens.timeline.analyze import analyze_paths
from bootlens.parsers import ParseOptions

LOG = Path(__file__).parent / "golden" / "analyze" / "rpi4-videocore-systemd.log"


def test_pi4_power_on_to_kernel_from_the_firmware_clock() -> None:
    (boot,) = analyze_paths([str(LOG)], ParseOptions()).boots
    stages = {s.name: s for s in boot.stages}
    run = stages["from_reset"]
    assert run.duration_ns == 8_744_483_000
    assert run.end is not None and run.end.line_no == 18
    assert stages["spl"].label == "SPL (Raspberry Pi boot EEPROM)"
    assert stages["bootloader"].label == "bootloader (Raspberry Pi start.elf)"
    facts = {f.key: f.value for f in boot.boot.facts}
    assert facts["spl_version"] == "8ba17717"
    assert facts["bootloader_version"] == "82f3750a65fa (Mar 17 2023 10:50:39)"


def test_no_initramfs_when_the_kernel_mounted_the_root() -> None:
    (boot,) = analyze_paths([str(LOG)], ParseOptions()).boots
    names = [s.name for s in boot.stages]
    assert "initramfs" not in names
    st = next(s for s in boot.stages if s.name == "init_start")
    assert st.duration_ns == 357_361_000 and st.parent == "userspace"


def test_an_initramfs_still_named_so(tmp_path: Path) -> None:
    # the same boot with an initramfs: no "VFS: Mounted root" before "Run /init"
    text = LOG.read_text().replace("VFS: Mounted root (ext4 filesystem) readonly on device 179:2.",
                                   "Trying to unpack rootfs image as initramfs...")
    text = text.replace("Run /sbin/init as init process", "Run /init as init process")
    log = tmp_path / "initramfs.log"
    log.write_text(text)
    (boot,) = analyze_paths([str(log)], ParseOptions()).boots
    assert [s.name for s in boot.stages if s.parent == "userspace"] == ["initramfs"]
