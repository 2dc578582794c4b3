"""A compressed initramfs: the kernel decompresses it while unpacking it into the root filesystem.

Inside a compressed kernel image the initramfs is compressed twice: the kernel's decompressor
already expanded it once, so ``CONFIG_INITRAMFS_COMPRESSION_NONE`` loses nothing in image size
and removes the second decompression. An external initrd loaded by the bootloader can also be a
plain cpio; the bootloader then reads more bytes, which pays off on fast storage.

The unpack time is what ``populate_rootfs`` measures when it unpacks synchronously (the
``Freeing initrd memory`` line comes before the initcall returns: kernels before 5.13, or
``initramfs_async=0``). Since 5.13 the unpack runs in the background by default and its own cost
is not in the log; the finding then says so and gives no figure.

How much of the unpack is decompression was measured on the reference target (qemu-arm64,
Linux 6.1, busybox initramfs, gzip -6, 964 KiB -> 1808 KiB, initramfs_async=0, 3 boots each):
``populate_rootfs`` took 157.8 ms with the gzip cpio and 47.2 ms with the plain cpio (medians),
so decompression was 70% of the unpack.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

DECOMPRESS_SHARE_PERCENT = 70
MIN_UNPACK_NS = 5_000_000
_UNPACK = ("Trying to unpack rootfs image as initramfs", "Unpacking initramfs")
_KERNEL_DECOMPRESSED = ("Uncompressing Kernel Image", "Uncompressing Linux", "Decompressing Linux",
                        "EFI stub: Decompressing Linux Kernel")


def kernel_compressed_line(boot: BootAnalysis) -> int | None:
    """Line number of a message saying the kernel image was decompressed, or None."""
    for needle in _KERNEL_DECOMPRESSED:
        hits = K.grep(boot, needle)
        if hits:
            return K.line_no(boot, hits[0])
    return None


@REGISTRY.register
class InitramfsCompression(Rule):
    """Time spent decompressing the initramfs."""

    id = "kernel.initramfs_compression"
    title = "Compressed initramfs"
    needles = (*_UNPACK, "Freeing initrd memory", *_KERNEL_DECOMPRESSED)

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        populate = K.first_initcall(boot, "populate_rootfs")
        texts = boot.boot.lines.text
        start = next((i for n in _UNPACK for i in K.grep(boot, n) if texts[i].startswith(n)), None)
        freed = next((i for i in K.grep(boot, "Freeing initrd memory") if start is None or i > start), None)
        external = start is not None
        packed = kernel_compressed_line(boot)
        built_target = ctx.target is not None and bool(ctx.rootfs_files)  # bootlens gzips its initramfs
        unpack: int | None = None
        how = ""
        if populate is not None and populate.event.end_line_no is not None and (
                not external or (freed is not None and K.line_no(boot, freed) < populate.event.end_line_no)):
            unpack = populate.duration
            how = (f"populate_rootfs unpacked it on the init thread in {K.ms(unpack)} "
                   f"(line {populate.event.end_line_no})")
        elif start is not None and freed is not None:
            wall = K.span(boot, start, freed)
            how = (f"the initrd was unpacked in the background (lines {K.line_no(boot, start)}-"
                   f"{K.line_no(boot, freed)}, {K.ms(wall)} of wall time shared with the initcalls running "
                   "meanwhile), so its own cost is not in the log: boot once with initramfs_async=0 to "
                   "measure it")
            if wall is None or wall < MIN_UNPACK_NS:
                return
        else:
            return
        if unpack is not None and unpack < MIN_UNPACK_NS:
            return
        # Whether the archive is compressed is not in the log: a built-in one is by default
        # (CONFIG_INITRAMFS_COMPRESSION defaults to gzip), an external one only if we built it.
        known = built_target or not external
        model = None if unpack is None else unpack * DECOMPRESS_SHARE_PERCENT // 100
        saving = model if known else None
        arithmetic = how
        if model is not None and unpack is not None:
            arithmetic += (f"; decompression was {DECOMPRESS_SHARE_PERCENT}% of the unpack on the reference "
                           f"target (gzip), so {K.ms(unpack)} x {DECOMPRESS_SHARE_PERCENT}% = {K.ms(model)}")
        if external:
            if built_target:
                arithmetic += "; bootlens built this initrd with gzip"
            else:
                arithmetic += ("; not estimated: the log does not say whether the initrd is compressed at all"
                               + (" (if it is with gzip, that is the figure)" if model is not None else ""))
            change = Change(ChangeKind.MANUAL, "uncompressed initrd",
                            "ship the initrd as a plain cpio archive (no gzip/xz/zstd), or build it into the "
                            "kernel with CONFIG_INITRAMFS_SOURCE and CONFIG_INITRAMFS_COMPRESSION_NONE=y "
                            "when the kernel image itself is compressed")
            tradeoff = ("the bootloader reads the larger, uncompressed archive: worth it when the storage "
                        "reads faster than the CPU decompresses (eMMC, RAM), not on slow SPI NOR flash")
            confidence = Confidence.MEDIUM if built_target else Confidence.LOW
        else:
            arithmetic += "; a built-in initramfs is gzip-compressed unless the kernel config says otherwise"
            change = Change(ChangeKind.KCONFIG, "CONFIG_INITRAMFS_COMPRESSION_NONE=y",
                            "store the built-in initramfs uncompressed; the compressed kernel image "
                            "compresses it once already")
            tradeoff = ("none in image size when the kernel image is compressed; with an uncompressed "
                        "kernel image the image grows by the initramfs's compression savings")
            confidence = Confidence.MEDIUM if packed is not None else Confidence.LOW
        if packed is not None:
            arithmetic += f"; the kernel image is compressed (line {packed})"
        if saving is not None and unpack is not None:
            title = f"Decompressing the initramfs takes about {K.ms(saving)} of a {K.ms(unpack)} unpack"
        elif unpack is not None:
            title = f"Unpacking the initramfs takes {K.ms(unpack)}; part of it is decompression if it is compressed"
        else:
            title = "The initramfs is unpacked in the background; if it is compressed, decompression is part of it"
        yield Finding(
            rule=self.id,
            title=title,
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=confidence,
            tradeoff=tradeoff,
            change=change,
            evidence=evidence(boot.boot, [
                packed, K.line_no(boot, start) if start is not None else None,
                K.line_no(boot, freed) if freed is not None else None,
                populate.event.line_no if populate is not None else None,
                populate.event.end_line_no if populate is not None else None], K.EVIDENCE_MAX),
        )
