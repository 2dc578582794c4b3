"""The guest's own clock at the ready line, for the deterministic mode (``--deterministic``).

Under QEMU's ``-icount`` the guest's clocks count instructions, not host time, so a boot reads
the same on them however loaded the host is; the console's host timestamps do not. The printk
clock covers the kernel and user space, but starts at the kernel's sched_clock, not at reset. The
arm64 virtual counter (CNTVCT_EL0) does count from the machine's reset (QEMU starts it at 0, and
a guest without EL2 has no offset): one reading of it beside a printk time places power-on on the
printk clock. ``guestclock`` is that reading: a 381-byte static AArch64 program, run by the
reference application just before its ready line, that writes

    bootlens: guest clock <CNTVCT_EL0> ticks at <CNTFRQ_EL0> Hz

to /dev/kmsg at level 2 (so that ``quiet`` does not hide it); :mod:`bootlens.parsers.markers`
reads it. No cross compiler is needed to build the reference target: the machine code below was
assembled from :data:`SOURCE` with ``llvm-mc -triple=aarch64-linux-gnu -filetype=obj`` and
``llvm-objcopy -O binary --only-section=.text`` (tests/test_deterministic.py assembles it again
where llvm-mc is installed and compares), and :func:`elf` wraps it in the smallest ELF
executable that Linux loads (one PT_LOAD segment), as no library here writes one.
"""

from __future__ import annotations

import struct
from pathlib import Path

SOURCE = """\
// guestclock: write "<2>bootlens: guest clock <CNTVCT_EL0> ticks at <CNTFRQ_EL0> Hz" to /dev/kmsg
// (standard output when /dev/kmsg cannot be opened), then exit 0. AArch64 Linux, no libc.
    .text
    .globl _start
_start:
    isb
    mrs     x19, cntvct_el0         // the virtual counter: ticks since the machine's reset
    mrs     x20, cntfrq_el0         // its frequency, Hz
    sub     sp, sp, #128            // sp+0..99: the line; sp+100 down: digits, backwards
    mov     x21, sp                 // where the next byte of the line goes
    adr     x1, prefix
    mov     x2, #(ticks - prefix)
    bl      copy
    mov     x0, x19
    bl      decimal
    adr     x1, ticks
    mov     x2, #(hz - ticks)
    bl      copy
    mov     x0, x20
    bl      decimal
    adr     x1, hz
    mov     x2, #(path - hz)
    bl      copy
    mov     x0, #-100               // openat(AT_FDCWD, "/dev/kmsg", O_WRONLY)
    adr     x1, path
    mov     x2, #1
    mov     x3, #0
    mov     x8, #56
    svc     #0
    cmp     x0, #0
    b.ge    1f
    mov     x0, #1                  // no /dev/kmsg: standard output
1:  mov     x1, sp                  // write(fd, line, length)
    sub     x2, x21, x1
    mov     x8, #64
    svc     #0
    mov     x0, #0                  // exit(0)
    mov     x8, #93
    svc     #0

copy:                               // x2 bytes from x1 to x21
    ldrb    w3, [x1], #1
    strb    w3, [x21], #1
    subs    x2, x2, #1
    b.ne    copy
    ret

decimal:                            // x0 in decimal to x21
    add     x9, sp, #128
    mov     x13, x9
    mov     x10, #10
2:  udiv    x11, x0, x10
    msub    x12, x11, x10, x0
    add     w12, w12, #48
    strb    w12, [x9, #-1]!
    mov     x0, x11
    cbnz    x0, 2b
3:  ldrb    w12, [x9], #1
    strb    w12, [x21], #1
    cmp     x9, x13
    b.ne    3b
    ret

prefix: .ascii "<2>bootlens: guest clock "
ticks:  .ascii " ticks at "
hz:     .ascii " Hz\n"
path:   .asciz "/dev/kmsg"
"""

CODE = bytes.fromhex(
    "df3f03d553e03bd514e03bd5ff0302d1f503009101060010220380d21b000094e00313aa1e00009421060030420180d2"
    "16000094e00314aa19000094c1050070820080d211000094600c809261050070220080d2030080d2080780d2010000d4"
    "1f0000f14a000054200080d2e1030091a20201cb080880d2010000d4000080d2a80b80d2010000d423144038a3160038"
    "420400f1a1ffff54c0035fd6e9030291ed0309aa4a0180d20b08ca9a6c810a9b8cc100112cfd1f38e0030baa60ffffb5"
    "2c154038ac1600383f010deba1ffff54c0035fd63c323e626f6f746c656e733a20677565737420636c6f636b20207469"
    "636b732061742020487a0a2f6465762f6b6d736700"
)

PATH = "usr/bin/guestclock"  # in the guest's root filesystem


def elf(code: bytes, machine: int = 183, base: int = 0x400000) -> bytes:
    """A static ELF64 little-endian executable: the headers, then ``code``, entered at its
    first byte, loaded read+execute at ``base``. ``machine``: EM_AARCH64 (183)."""
    ehsize, phsize = 64, 56
    entry = base + ehsize + phsize
    size = ehsize + phsize + len(code)
    header = struct.pack("<4sBBBBB7xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 2, machine, 1, entry, ehsize, 0, 0,
                         ehsize, phsize, 1, 0, 0, 0)
    program = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)  # PT_LOAD, R+X
    return header + program + code


def aarch64() -> bytes:
    """The ``guestclock`` executable for an arm64 guest."""
    return elf(CODE)


ICOUNT = ("-icount", "shift=0,sleep=off")  # QEMU: 1 ns of guest time per instruction, no sleeping

# The reference application in the deterministic mode: the counter's reading, then the ready line
# through the kernel's log (at level 2, as the reading), so that both carry a printk time.
APP = """\
#!/bin/sh
# The product's application (bootlens --deterministic): read the guest's clock, report ready through
# the kernel's log so that the line carries a printk time, then power off so that QEMU exits.
echo "uptime: $(cat /proc/uptime)"
/usr/bin/guestclock
echo "<2>APP READY" > /dev/kmsg
poweroff -f
"""


def write_overlay(into: Path, user_overlay: Path | None) -> Path:
    """An overlay directory at ``into``: the user's overlay (copied, links kept), ``guestclock``,
    and the deterministic application unless the user's overlay has an application of its own
    (which then calls /usr/bin/guestclock just before its ready line itself)."""
    from .initramfs import copy_overlay, write_executables

    copy_overlay(into, user_overlay)
    files = {PATH: aarch64()}
    if not (into / "usr/bin/app").exists() and not (into / "usr/bin/app").is_symlink():  # a link: the guest's
        files["usr/bin/app"] = APP.encode()
    return write_executables(into, files)
