"""Kernel image compression: reading fewer bytes against decompressing them.

For each of none, gzip, lzo, lz4, xz and zstd the time to get the kernel into memory is modelled
as ``size_u / ratio / read_bw + size_u / decompress_bw``: ``read_bw`` is this board's storage,
measured from U-Boot's load of the image; ``ratio`` and ``decompress_bw`` come from one published
measurement of the kernel's own decompressors on one kernel (table :data:`CODECS`, sources in
docs/rules/bootloader-and-image.md). Where the log times the current decompression, the table's
speeds are scaled to this CPU; otherwise they are taken as they are and the finding says up to
which CPU slowdown its advice holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...timeline.analyze import BootAnalysis
from ...core.model import Kind, LoadDetail, Milestone
from ...core.numbers import BYTES_MAX, INT_MAX, TIME_NS_MAX, to_int
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Evidence, Finding, Rule
from ..evidence import evidence, secs, size
from ._kernel import of_kind  # a kind's events, from the native block's columns


@dataclass(frozen=True, slots=True)
class Codec:
    """A kernel compression: typical ratio (uncompressed / compressed) and decompression speed
    in MB/s of output (None: nothing to decompress)."""

    name: str
    ratio: float
    decompress_mb_s: float | None


# Nick Terrell, "[PATCH v2 0/2] Add support for ZSTD-compressed kernel", LKML 2017-10-12: a
# 21.7 MB x86_64 kernel, the kernel's own boot decompressors, QEMU on a 2.2 GHz x86 CPU. The
# order agrees with init/Kconfig's help texts (LZ4 decompresses fastest, then LZO and ZSTD,
# gzip, XZ; XZ compresses best, then ZSTD, gzip, LZO, LZ4).
CODECS = (
    Codec("none", 1.0, None),
    Codec("gzip", 3.11, 229.1),
    Codec("lzo", 2.81, 582.9),
    Codec("lz4", 2.18, 1447.5),
    Codec("xz", 4.06, 42.2),
    Codec("zstd", 3.55, 364.6),
)
# seen as the current compression only (never advised: XZ beats both, per the same source)
OTHER_CODECS = (Codec("lzma", 3.81, 36.6), Codec("bzip2", 3.23, 30.0))
EARLY_LINES = 5000  # how far into a boot the bootloader's and the kernel's first lines are looked for


def codec(name: str) -> Codec | None:
    """The table row of a compression name as U-Boot or the kernel spell it."""
    name = {"lzma2": "xz", "zst": "zstd", "gz": "gzip", "uncompressed": "none"}.get(name, name)
    return next((c for c in CODECS + OTHER_CODECS if c.name == name), None)


@dataclass(frozen=True, slots=True)
class KernelLoad:
    """How the kernel image reached memory, as far as the log tells."""

    size_bytes: int  # the kernel image as stored (compressed, if it is)
    read_bytes: int  # bytes the timed read moved (the image, or kernel + initrd for qfw)
    read_ns: int | None
    how: str  # prose: where the figures come from
    lines: tuple[int, ...]
    qfw: bool = False


def _kernel_load(boot: BootAnalysis) -> KernelLoad | None:
    b = boot.boot
    lines = b.lines
    ksize_fact = b.fact("kernel_image_size")
    ksize = ksize_fact if ksize_fact is not None and to_int(ksize_fact.value, BYTES_MAX) is not None else None
    kbytes = to_int(ksize.value, BYTES_MAX) if ksize is not None else None
    loader = b.fact("kernel_loader")
    if loader is not None and loader.value == "qfw" and ksize is not None and kbytes is not None:
        initrd = b.fact("initrd_size")
        total = kbytes + ((to_int(initrd.value, BYTES_MAX) or 0) if initrd is not None else 0)
        auto = next((e for e in of_kind(b.events, Kind.BOOTLOADER) if e.name.startswith("autoboot delay")), None)
        delay = b.fact("bootdelay")
        end = lines.host[lines.index_of(loader.line_no)]
        read_ns = None
        how = f"QEMU fw_cfg load printed at line {loader.line_no} (not timed: no host timestamps)"
        delay_s = to_int(delay.value, INT_MAX) if delay is not None else None
        if auto is not None and auto.start is not None and delay_s is not None and end is not None:
            # qfw prints its line once both images are read; the countdown before it lasts
            # bootdelay seconds: what is left is the read (an upper bound: it includes the
            # boot script's own work)
            read_ns = end - auto.start.ns - delay_s * 1_000_000_000
            how = (f"kernel + initrd read through QEMU's fw_cfg: line {loader.line_no} arrived "
                   f"{secs(end - auto.start.ns)} after the autoboot prompt (line {auto.line_no}), less the "
                   f"{delay_s} s countdown = at most {secs(read_ns)}")
            if read_ns <= 0:
                read_ns = None
        return KernelLoad(kbytes, total, read_ns, how, (loader.line_no,) + ((auto.line_no,) if auto else ()),
                          qfw=True)
    # loads U-Boot made before starting the kernel (a "bytes read in" of user space is no image load)
    start = _starting(boot)
    loads = [e for e in of_kind(b.events, Kind.BOOTLOADER) if isinstance(e.detail, LoadDetail)
             and (start is None or e.line_no < start)]
    if not loads:
        return None
    fmt = b.fact("kernel_image_format")
    named = None
    if fmt is not None and lines.text[lines.index_of(fmt.line_no)].lstrip().startswith("Retrieving file:"):
        # extlinux names the kernel file, and its load line follows
        named = next((e for e in loads if fmt.line_no < e.line_no <= fmt.line_no + 3), None)
    big = named or max(loads, key=lambda e: (e.detail.size_bytes if isinstance(e.detail, LoadDetail) else 0))
    assert isinstance(big.detail, LoadDetail)
    got = big.detail.size_bytes
    image = kbytes if kbytes is not None and kbytes <= got else got
    if named is not None and fmt is not None:
        what = f"the kernel file extlinux retrieved at line {fmt.line_no}"
    elif image != got and ksize is not None:
        what = f"the image holding the kernel ({image:,}-byte kernel, Data Size at line {ksize.line_no})"
    else:
        what = "the largest image read, taken as the kernel (the log does not name it)"
    how = f"{got:,} bytes read in {secs(big.duration_ns or 0)} at line {big.line_no}: {what}"
    return KernelLoad(image, got, big.duration_ns or None, how,
                      (big.line_no,) + ((ksize.line_no,) if ksize is not None and image != got else ())
                      + ((fmt.line_no,) if named is not None and fmt is not None else ()))


def _arch(boot: BootAnalysis) -> str | None:
    """arm64, arm, riscv, x86, or None, from lines every kernel of that architecture prints."""
    b = boot.boot
    version = b.fact("kernel_version")
    if version is not None and any(s in version.value for s in ("arm64", "aarch64")):
        return "arm64"
    if version is not None and "riscv" in version.value:
        return "riscv"
    texts = b.lines.text
    prefix = "Booting Linux on physical CPU 0x"
    for i in b.lines.starting("Booting Linux"):  # indexed while framing: no scan
        if texts[i].startswith(prefix):
            # arm64 prints the MPIDR with 10 hex digits ("0x%010lx"), arm only as needed ("0x%x")
            return "arm64" if len(texts[i][len(prefix):].split(" ")[0]) == 10 else "arm"
    for t in texts[:EARLY_LINES]:  # the kernel says what it runs on in its first lines
        if t.startswith("CPU features: detected"):
            return "arm64"
        if t.startswith("CPU: ARMv"):
            return "arm"
        if t.startswith(("BIOS-e820", "x86/fpu:", "BIOS-provided")):
            return "x86"
    return None


def _early(boot: BootAnalysis, *prefixes: str) -> int | None:
    """Index of the first line starting with a prefix among the lines before the kernel's
    first timestamped line (the bootloader's and the kernel's decompressor's), or None."""
    lines = boot.boot.lines
    texts, kern = lines.text, lines.kernel
    for i in range(min(len(lines), EARLY_LINES)):
        if kern[i] is not None:
            return None
        if texts[i].lstrip().startswith(prefixes):
            return i
    return None


@dataclass(frozen=True, slots=True)
class Current:
    """How the booted image is compressed and where it is decompressed, read from the log."""

    where: str  # "none" (booted as it is) or "bootloader" (U-Boot decompresses it)
    algo: str  # a CODECS/OTHER_CODECS name
    measured: int | None  # U-Boot's decompression, timed (host timestamps)
    lines: tuple[int, ...]
    how: str  # the log's evidence, in words


SELF_DECOMPRESSING = ("zImage", "bzImage", "vmlinuz")


def _is_linux(boot: BootAnalysis) -> bool:
    """A Linux kernel ran in this boot: a bare-metal payload (``## Starting application at``, a
    coreboot payload, a non-Linux image) is no kernel to recompress."""
    b = boot.boot
    if b.fact("kernel_image_os") is not None:
        return False
    return any(e.name == Milestone.KERNEL_START for e in of_kind(b.events, Kind.MILESTONE))


def _current(boot: BootAnalysis) -> Current | None:
    """The booted image's compression as the log shows it, or None when it does not (the rule is
    then silent: a figure computed from a guessed algorithm would be a guess)."""
    b = boot.boot
    if not _is_linux(boot):
        return None
    if _early(boot, "Uncompressing Linux", "Decompressing Linux", "EFI stub: Decompressing") is not None:
        return None  # the kernel's own decompressor (zImage, bzImage, EFI zboot): it never names its algorithm
    fmt, comp = b.fact("kernel_image_format"), b.fact("kernel_compression")
    if fmt is not None and fmt.value in SELF_DECOMPRESSING:
        return None  # decompresses itself, with an algorithm the log does not name
    texts = b.lines.text
    unc = next((e for e in of_kind(b.events, Kind.BOOTLOADER) if e.name == "uncompress kernel"
                and not texts[b.lines.index_of(e.line_no)].lstrip().startswith("Uncompressing Linux")), None)
    said = f"{fmt.value} (line {fmt.line_no})" if fmt is not None else "the image"
    if comp is not None and comp.value != "none":
        if codec(comp.value) is None:
            return None
        lines = (comp.line_no,) + ((unc.line_no,) if unc is not None else ())
        return Current("bootloader", comp.value, unc.duration_ns if unc is not None else None, lines,
                       f"{said} says {comp.value} (line {comp.line_no})"
                       + (f", 'Uncompressing Kernel Image' at line {unc.line_no}" if unc is not None else ""))
    arch = _arch(boot)
    if comp is not None:  # "uncompressed" to U-Boot
        if arch in ("arm64", "riscv") or (fmt is not None and fmt.value == "Image"):
            return Current("none", "none", None, (comp.line_no,),
                           f"{said} is uncompressed (line {comp.line_no})")
        return None  # an uncompressed uImage/FIT on arm32 or MIPS is often a zImage inside: not known
    if unc is not None or _starting(boot) is None or b.fact("uboot_version") is None:
        return None  # decompressed with an algorithm not shown, or no U-Boot lines to read
    if arch in ("arm64", "riscv"):
        # their boot protocol takes an uncompressed Image; U-Boot says when it decompresses one
        # ("Uncompressing Kernel Image") and the EFI zboot stub says when it does: neither here
        start = _starting(boot)
        return Current("none", "none", None, (start,) if start is not None else (),
                       f"an {arch} kernel is booted as an uncompressed Image unless U-Boot says it "
                       "decompresses it or the EFI stub does, and neither is in this log")
    return None


def _starting(boot: BootAnalysis) -> int | None:
    """Line number of U-Boot's ``Starting kernel ...``, or None."""
    return next((e.line_no for e in of_kind(boot.boot.events, Kind.MILESTONE)
                 if e.name == Milestone.STARTING_KERNEL), None)


@REGISTRY.register
class KernelCompression(Rule):
    """Pick the kernel compression that gets the image into memory fastest on this storage."""

    id = "kernel.compression"
    title = "kernel image compression"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        load = _kernel_load(boot)
        if load is None:
            return
        now = _current(boot)
        if now is None:
            return  # the log does not show how the kernel image is compressed: no figure to give
        where, measured = now.where, now.measured
        cur = codec(now.algo)
        assert cur is not None
        b = boot.boot
        arch = _arch(boot)
        ev = evidence(b, (*load.lines, *now.lines))
        if load.read_ns is None:
            yield self._no_estimate("the image load is not timed",
                                    f"{load.how}; without the read time the storage bandwidth is unknown", ev)
            return
        if load.read_bytes <= 0 or load.size_bytes <= 0:
            yield self._no_estimate("the image load gives no bandwidth",
                                    f"{load.how}; a load of 0 bytes gives no storage bandwidth", ev)
            return
        read_bw = load.read_bytes / load.read_ns  # bytes per ns = GB/s
        stored = load.size_bytes
        size_u = stored * cur.ratio
        table_dec = size_u / (cur.decompress_mb_s * 1e6) * 1e9 if cur.decompress_mb_s else 0.0
        # scale the table's speeds to this CPU where the log times the current decompression
        if cur.decompress_mb_s and measured and table_dec > 0:
            factor = measured / table_dec
            dec_note = (f"{cur.name} decompression measured {secs(measured)} (table: {secs(table_dec)}), "
                        f"so this CPU decompresses {1 / factor:.2f}x the table's speed")
            cur_dec = float(measured)
        else:
            factor = 1.0
            dec_note = "decompression speeds as in the table (2.2 GHz x86 core, not this CPU)"
            cur_dec = table_dec
        cur_read = stored / read_bw
        current = cur_read + cur_dec
        rows = []
        for c in CODECS:
            t_read = size_u / c.ratio / read_bw
            t_dec = size_u / (c.decompress_mb_s * 1e6) * 1e9 * factor if c.decompress_mb_s else 0.0
            rows.append((c, t_read, t_dec, t_read + t_dec))
        best = min(rows, key=lambda r: r[3])
        bc, b_read, b_dec, b_total = best
        if not current <= TIME_NS_MAX:  # e.g. a byte read in a year
            yield self._no_estimate("the image load gives no usable bandwidth",
                                    f"{load.how}: at that rate the image would take {secs(current)}", ev)
            return
        saving = int(current - b_total)
        model = ", ".join(f"{c.name} {secs(tr)}" + (f" + {secs(td)}" if td else "") for c, tr, td, _ in rows)
        cur_txt = (f"the image is not compressed ({arch or 'unknown'} kernel booted as is: {now.how})"
                   if where == "none" else f"U-Boot decompresses it ({cur.name}): {now.how}")
        arithmetic = (f"{load.how}; storage reads {read_bw * 1e3:.1f} MB/s; {cur_txt}; uncompressed "
                      f"{size(size_u)}; {dec_note}; time = size / ratio / read bandwidth + size / decompression "
                      f"speed: {model}; fastest: {bc.name}, {secs(current)} - {secs(b_total)} = {secs(saving)}")
        if bc.name == cur.name or saving <= 0:
            return  # the current compression is already the fastest for this storage
        if factor == 1.0 and b_dec > 0:
            k = (current - b_read) / b_dec
            arithmetic += (f"; {bc.name} stays ahead of {cur.name} as long as this CPU decompresses at least "
                           f"1/{k:.1f} as fast as the table's")
        qemu_note = ""
        if load.qfw:
            qemu_note = ("no estimate: the kernel comes through QEMU's fw_cfg, a memory copy rather than "
                         "storage, and QEMU decompresses a gzip -kernel image on the host, so no compression "
                         "changes this target; on a board, advise on a log that shows the storage load "
                         "('N bytes read in M ms'). Figures for the same bandwidth: ")
        yield Finding(
            rule=self.id,
            title=f"kernel image: {bc.name} would get it into memory faster than {cur.name} on this storage "
                  f"({read_bw * 1e3:.1f} MB/s)",
            stage="bootloader",
            saving_ns=None if load.qfw else saving,
            arithmetic=qemu_note + arithmetic,
            confidence=Confidence.LOW,
            tradeoff=_tradeoff(bc.name, size_u / bc.ratio - stored),
            change=_change(bc.name),
            evidence=ev,
        )

    def _no_estimate(self, what: str, why: str, ev: tuple[Evidence, ...]) -> Finding:
        """The finding of a load the figures cannot be computed from: it says why."""
        return Finding(
            rule=self.id, title=f"kernel image compression: {what}", stage="bootloader", saving_ns=None,
            arithmetic=f"no estimate: {why}", confidence=Confidence.LOW, tradeoff="—",
            change=Change(ChangeKind.MANUAL, "measure the load",
                          "capture the console with host timestamps (bootlens capture) to time the load"),
            evidence=ev)



def _tradeoff(name: str, growth: float) -> str:
    more = (f"the stored image grows by {size(growth)}" if growth > 0 else f"the stored image shrinks by {size(-growth)}")
    extra = {"zstd": "; zstd needs more working memory to decompress (192 KB against 64 KB in the kernel's "
                     "own decompressor, init/Kconfig)",
             "xz": "; XZ decompresses slowly on small cores", "none": "; no integrity check by the decompressor"}
    return more + extra.get(name, "") + "; a rebuild and a new image layout on the board"


def _change(name: str) -> Change:
    if name == "none":
        return Change(ChangeKind.MANUAL, "kernel image: none",
                      "boot the uncompressed kernel Image (arm64: booti Image; arm: a uImage of "
                      "arch/arm/boot/Image made with mkimage -C none; x86: CONFIG_KERNEL_UNCOMPRESSED=y)")
    ext = {"gzip": "gz", "zstd": "zst", "xz": "lzma"}.get(name, name)
    lib = {"gzip": "CONFIG_GZIP", "lzo": "CONFIG_LZO", "lz4": "CONFIG_LZ4", "xz": "CONFIG_LZMA (U-Boot has no xz: "
           "use lzma, about as fast)", "zstd": "CONFIG_ZSTD"}[name]
    return Change(ChangeKind.MANUAL, f"kernel image: {name}",
                  f"compress the kernel image with {name} and let U-Boot decompress it: in a FIT, "
                  f'compression = "{name}" in the kernel node of the .its; with booti, Image.{ext} plus the '
                  f"variables kernel_comp_addr_r and kernel_comp_size; U-Boot built with {lib}")
