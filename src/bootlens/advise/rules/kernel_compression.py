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

from ...analyze import BootAnalysis
from ...model import Kind, LoadDetail
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence, secs, size


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
DEFAULT_ALGORITHM = "gzip"  # init/Kconfig: "default KERNEL_GZIP"; U-Boot's mkimage -C gzip
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
    ksize = b.fact("kernel_image_size")
    loader = b.fact("kernel_loader")
    if loader is not None and loader.value == "qfw" and ksize is not None:
        initrd = b.fact("initrd_size")
        total = int(ksize.value) + (int(initrd.value) if initrd is not None else 0)
        auto = next((e for e in b.events if e.kind is Kind.BOOTLOADER and e.name.startswith("autoboot delay")), None)
        delay = b.fact("bootdelay")
        end = lines.host[lines.index_of(loader.line_no)]
        read_ns = None
        how = f"QEMU fw_cfg load printed at line {loader.line_no} (not timed: no host timestamps)"
        if auto is not None and auto.start is not None and delay is not None and end is not None:
            # qfw prints its line once both images are read; the countdown before it lasts
            # bootdelay seconds: what is left is the read (an upper bound: it includes the
            # boot script's own work)
            read_ns = end - auto.start.ns - int(delay.value) * 1_000_000_000
            how = (f"kernel + initrd read through QEMU's fw_cfg: line {loader.line_no} arrived "
                   f"{secs(end - auto.start.ns)} after the autoboot prompt (line {auto.line_no}), less the "
                   f"{delay.value} s countdown = at most {secs(read_ns)}")
            if read_ns <= 0:
                read_ns = None
        return KernelLoad(int(ksize.value), total, read_ns, how, (loader.line_no,) + ((auto.line_no,) if auto else ()),
                          qfw=True)
    loads = [e for e in b.events if e.kind is Kind.BOOTLOADER and isinstance(e.detail, LoadDetail)]
    if not loads:
        return None
    big = max(loads, key=lambda e: (e.detail.size_bytes if isinstance(e.detail, LoadDetail) else 0))
    assert isinstance(big.detail, LoadDetail)
    got = big.detail.size_bytes
    image = int(ksize.value) if ksize is not None and int(ksize.value) <= got else got
    what = (f"the image holding the kernel ({image:,}-byte kernel, Data Size at line {ksize.line_no})"
            if image != got and ksize is not None else "the largest image read, taken as the kernel")
    how = f"{got:,} bytes read in {secs(big.duration_ns or 0)} at line {big.line_no}: {what}"
    return KernelLoad(image, got, big.duration_ns or None, how,
                      (big.line_no,) + ((ksize.line_no,) if ksize is not None and image != got else ()))


def _arch(boot: BootAnalysis) -> str | None:
    """arm64, arm, x86, or None, from lines every kernel of that architecture prints."""
    b = boot.boot
    version = b.fact("kernel_version")
    if version is not None and any(s in version.value for s in ("arm64", "aarch64")):
        return "arm64"
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


def _decompression(boot: BootAnalysis) -> tuple[str, str, int | None, int | None, tuple[int, ...]]:
    """(where, algorithm, measured ns, upper bound ns, lines): where the current image is
    decompressed (none, bootloader, kernel) and with what, as far as the log tells."""
    b = boot.boot
    comp = b.fact("kernel_compression")
    texts = b.lines.text
    i = _early(boot, "Uncompressing Linux", "EFI stub: Decompressing")
    if i is not None:
        kl = next((s for s in boot.stages if s.name == "kernel_load"), None)
        bound = kl.duration_ns if kl is not None else None
        return "kernel", DEFAULT_ALGORITHM, None, bound, (b.lines.no(i),)
    unc = next((e for e in b.events if e.kind is Kind.BOOTLOADER and e.name == "uncompress kernel"), None)
    if unc is not None and not texts[b.lines.index_of(unc.line_no)].lstrip().startswith("Uncompressing Linux"):
        algo = comp.value if comp is not None and comp.value != "none" else DEFAULT_ALGORITHM
        return "bootloader", algo, unc.duration_ns, None, (unc.line_no,)
    if comp is not None and comp.value != "none":
        return "bootloader", comp.value, None, None, (comp.line_no,)
    arch = _arch(boot)
    if arch in ("arm", "x86"):
        # arm32 boots a self-decompressing zImage (silent without DEBUG_LL), x86 a bzImage
        kl = next((s for s in boot.stages if s.name == "kernel_load"), None)
        return "kernel", DEFAULT_ALGORITHM, None, kl.duration_ns if kl is not None else None, ()
    return "none", "none", None, None, ()


@REGISTRY.register
class KernelCompression(Rule):
    """Pick the kernel compression that gets the image into memory fastest on this storage."""

    id = "kernel.compression"
    title = "kernel image compression"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        load = _kernel_load(boot)
        if load is None:
            return
        where, algo, measured, bound, dlines = _decompression(boot)
        cur = codec(algo) or codec(DEFAULT_ALGORITHM)
        assert cur is not None
        b = boot.boot
        arch = _arch(boot)
        ev = evidence(b, *load.lines, *dlines)
        if load.read_ns is None:
            yield Finding(
                rule=self.id, title="kernel image compression: the image load is not timed",
                stage="bootloader", saving_ns=None,
                arithmetic=f"no estimate: {load.how}; without the read time the storage bandwidth is unknown",
                confidence=Confidence.LOW, tradeoff="—",
                change=Change(ChangeKind.MANUAL, "measure the load",
                              "capture the console with host timestamps (bootlens capture) to time the load"),
                evidence=ev)
            return
        read_bw = load.read_bytes / load.read_ns  # bytes per ns = GB/s
        stored = load.size_bytes
        size_u = stored * cur.ratio
        table_dec = size_u / (cur.decompress_mb_s * 1e6) * 1e9 if cur.decompress_mb_s else 0.0
        # scale the table's speeds to this CPU where the log times the current decompression
        if cur.decompress_mb_s and measured:
            factor = measured / table_dec
            dec_note = (f"{cur.name} decompression measured {secs(measured)} (table: {secs(table_dec)}), "
                        f"so this CPU decompresses {1 / factor:.2f}x the table's speed")
            cur_dec = float(measured)
        elif cur.decompress_mb_s and bound is not None and bound < table_dec:
            factor = bound / table_dec
            dec_note = (f"{cur.name} decompression cannot take longer than the whole kernel_load stage "
                        f"({secs(bound)}; table: {secs(table_dec)}), speeds scaled by {1 / factor:.2f}")
            cur_dec = float(bound)
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
        saving = int(current - b_total)
        model = ", ".join(f"{c.name} {secs(tr)}" + (f" + {secs(td)}" if td else "") for c, tr, td, _ in rows)
        cur_txt = {"none": f"the image is not compressed ({arch or 'unknown'} kernel booted as is)",
                   "bootloader": f"U-Boot decompresses it ({cur.name}" + ("" if b.fact("kernel_compression")
                                                                          else ", assumed") + ")",
                   "kernel": f"the kernel decompresses itself ({cur.name} assumed: the Kconfig default)"}[where]
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
            stage="kernel_load" if where == "kernel" else "bootloader",
            saving_ns=None if load.qfw else saving,
            arithmetic=qemu_note + arithmetic,
            confidence=Confidence.LOW,
            tradeoff=_tradeoff(bc.name, size_u / bc.ratio - stored),
            change=_change(bc.name, where, arch),
            evidence=ev,
        )


def _tradeoff(name: str, growth: float) -> str:
    more = (f"the stored image grows by {size(growth)}" if growth > 0 else f"the stored image shrinks by {size(-growth)}")
    extra = {"zstd": "; zstd needs more working memory to decompress (192 KB against 64 KB in the kernel's "
                     "own decompressor, init/Kconfig)",
             "xz": "; XZ decompresses slowly on small cores", "none": "; no integrity check by the decompressor"}
    return more + extra.get(name, "") + "; a rebuild and a new image layout on the board"


def _change(name: str, where: str, arch: str | None) -> Change:
    if where == "kernel" and arch in ("arm", "x86") and name != "none":
        return Change(ChangeKind.KCONFIG, f"CONFIG_KERNEL_{name.upper()}=y",
                      f"rebuild the kernel with CONFIG_KERNEL_{name.upper()}=y (General setup -> Kernel "
                      "compression mode)")
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
