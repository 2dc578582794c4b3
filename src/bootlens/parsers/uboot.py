"""U-Boot, SPL and firmware console output: banners, autoboot, image loads, verification,
bootstage reports, ``Starting kernel ...`` and the EFI stub's messages.

These lines carry no clock of their own: on a host-timestamped capture they get the host time,
on a plain console they are seen but not timed (the bootstage report, when present, carries
U-Boot's own timer and is timed anyway). Some vendor builds stamp their own lines with their
timer (``[   0.114] Loading...``, ``[00.608]CPU:``: seconds and milliseconds since reset): those
stamps are read as the bootloader clock.

Banners (TPL, SPL, U-Boot proper, 1.x and vendor builds too) come from :mod:`.banners`; other
firmware and bootloaders are :mod:`.firmware`'s.
"""

from __future__ import annotations

import re

from ..core.lazyre import lazy
from ..core.lines import Lines
from ..core.numbers import BYTES_MAX, INT_MAX, INT_MIN, Tally, to_int
from ..core.model import (
    NS_PER_MS,
    NS_PER_US,
    Clock,
    Event,
    Fact,
    Kind,
    LoadDetail,
    Milestone,
    ParseResult,
    Stamp,
)
from . import REGISTRY
from .banners import BOOTLOADER, ROLE_MILESTONE, SPL, SPL_END, TPL, TPL_END, VPL, VPL_END, banner_of, version
from .base import Parser
from ..core.options import ParseOptions

# A vendor U-Boot's own stamp before the message: seconds and milliseconds of its timer.
SELF_STAMP = lazy(r"\[ *(\d{1,5})\.(\d{3})\] ?", re.ASCII)
_AUTOBOOT = lazy(
    r"(?:Hit any key to stop autoboot|Autobooting in|Press \S+ to (?:stop|abort) autoboot"
    r"|Hit m for menu or any (?:other )?key to stop autoboot"  # barebox
    r"|autoboot in)\D*(\d+)",
    re.IGNORECASE,
)
# The interactive prompt, alone or with what was typed: "=> ", "U-Boot> ", "ar7240> ", "# ",
# "MX6UL_VAR_DART(nand)==> " (not U-Boot's own "## Booting ..." messages)
_PROMPT = lazy(r"\s*[\w().=\-]*(?:=>|>|#)(?:\s|$)")
# barebox, stopped at its countdown: "type exit to get to the menu", then "barebox@Board:/ "
_BAREBOX_STOPPED = ("type exit to get to the menu", "barebox@")
_ENV_BOOTDELAY = lazy(r"\s*bootdelay=(-?\d+)\s*$")
_LOAD = lazy(r"(\d+) bytes read in (\d+) ms(?: \(([^)]*)\))?")
_VERIFY = lazy(r"Verifying (?:Checksum|Hash Integrity)")
_UNCOMPRESS = lazy(r"Uncompressing (?:Kernel Image|\S+)")
# qfw load (QEMU's fw_cfg): printed once both images are in memory, so it ends the load.
_QFW = lazy(r"loading kernel to address (?:0x)?[0-9a-fA-F]+ size ([0-9a-fA-F]+)"
                  r"(?: initrd (?:0x)?[0-9a-fA-F]+ size ([0-9a-fA-F]+))?")
# The image header U-Boot prints before booting: legacy "Image Type: ... (gzip compressed)",
# FIT "Type: Kernel Image" then "Compression: gzip compressed" and "Data Size: N Bytes".
_IMAGE_TYPE = lazy(r"\s*(?:Image )?Type:\s+(.*?)\s*$")
_COMPRESSED = lazy(r"\((\w+) compressed\)|\((uncompressed)\)")
_COMPRESSION = lazy(r"\s*Compression:\s+(\w+)")
_DATA_SIZE = lazy(r"\s*Data Size:\s+(\d+) Bytes")
# Images booted without a header: extlinux "Retrieving file: /Image.gz" (a kernel's file name
# only, not the initrd's or the device tree's), booti "Moving Image from 0x40080000 to ...",
# bootz "Kernel image @ 0x82000000 [ 0x000000 - 0x5c4b68 ]".
_BOOT_IMAGE = lazy(
    r"Retrieving file: (?:\S*/)?(?P<file>(?:[zbu]?Image|bzImage|vmlinu[xz])(?:[-.]\S*)?)\s*$"
    r"|(?P<moving>Moving Image from 0x)|(?P<bootz>Kernel image @ (?:0x)?[0-9a-fA-F]+ \[)")
_FILE_COMPRESSION = {"gz": "gzip", "lz4": "lz4", "lzma": "lzma", "lzo": "lzo", "zst": "zstd", "bz2": "bzip2",
                     "xz": "xz"}
_STARTING = lazy(r"Starting kernel \.\.\.")
# "go ADDR": a standalone program (a bare-metal payload, or another bootloader such as barebox
# chain-loaded from U-Boot), not the kernel: it ends nothing the stages measure.
_APPLICATION = lazy(r"## Starting (?:EFI )?application at (\S+)")
_EFI_STUB = lazy(r"EFI stub: (.*)")
BOOTSTAGE_HEAD = "Timer summary in microseconds"
_BOOTSTAGE_HEAD = lazy(r"Timer summary in microseconds \((\d+) records?\)")
# mark, elapsed, stage name: a record whose name did not survive (TPL's records stashed for
# U-Boot proper on a vboot Chromebook print "      0          0") has the two numbers only
_BOOTSTAGE_ROW = lazy(r"\s*([\d,]+)\s+([\d,]+)(?:\s+(\S.*?))?\s*$")
UNNAMED_RECORD = "(unnamed)"
_ACCUM_ROW = lazy(r"\s+([\d,]+)\s+(\S.*?)\s*$")

_KEYWORDS = ("U-Boot", "autoboot", "bytes read in", "Starting kernel", "EFI stub:", "Timer summary",
             "Verifying", "Autobooting")
# bootstage mark names (common/spl/spl.c, common/board_f.c, boot/bootm.c) that bound stages
BOOTSTAGE_MILESTONES = {"tpl": Milestone.TPL_START, "end tpl": TPL_END, "vpl": Milestone.VPL_START,
                        "end vpl": VPL_END, "spl": Milestone.SPL_START, "end spl": SPL_END, "board init f": Milestone.UBOOT_START,
                        "start kernel": Milestone.STARTING_KERNEL}


def _host(lines: Lines, i: int) -> Stamp | None:
    h = lines.host[i]
    return Stamp(Clock.HOST, h) if h is not None else None


def self_stamp(text: str) -> tuple[Stamp | None, str]:
    """A vendor bootloader's own ``[s.mmm]`` stamp (bootloader clock) and the text after it."""
    m = SELF_STAMP.match(text)
    if m is None:
        return None, text
    return Stamp(Clock.BOOTLOADER, int(m[1]) * 1_000_000_000 + int(m[2]) * NS_PER_MS), text[m.end():]


def _until_next(lines: Lines, i: int) -> int | None:
    """Host time from line i to the next line: how long U-Boot was silent after printing it."""
    here = lines.host[i]
    if here is None or i + 1 >= len(lines):
        return None
    nxt = lines.host[i + 1]
    return None if nxt is None else max(0, nxt - here)


def _untimed_by_kernel(lines: Lines) -> list[int]:
    """Indices of the lines without a printk timestamp: where bootloader output can be."""
    return lines.untimed()


@REGISTRY.register
class UBootParser(Parser):
    """U-Boot, its TPL and SPL: everything they print before the kernel takes over."""

    name = "uboot"
    description = "U-Boot/SPL banners, autoboot, image loads, bootstage report, Starting kernel"

    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        hits = 0
        texts = lines.text
        for i in _untimed_by_kernel(lines):
            t = texts[i]
            if any(k in t for k in _KEYWORDS):
                hits += 1
                if hits >= 3:
                    return 1.0
        return hits / 3

    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        events: list[Event] = []
        facts: list[Fact] = []
        warnings: list[str] = []
        tally = Tally("U-Boot")
        n = len(lines)
        in_kernel_image = False  # inside the header U-Boot prints for a kernel image
        resume = 0
        texts = lines.text
        for i in _untimed_by_kernel(lines):  # printk lines belong to the kernel parsers
            if i < resume:
                continue
            t = texts[i]
            no = lines.no(i)
            own, t = self_stamp(t) if "[" in t else (None, t)
            if "U-Boot" in t:
                self._banner(t, no, _host(lines, i) or own, events, facts)
            elif (m := _AUTOBOOT.search(t)) is not None:
                if (delay := tally.take(m[1], INT_MAX, field="autoboot delay", line_no=no)) is None:
                    continue
                st = _host(lines, i)
                events.append(Event(Kind.MILESTONE, Milestone.AUTOBOOT, st, None, no))
                events.append(
                    Event(Kind.BOOTLOADER, f"autoboot delay ({delay} s)", st, _until_next(lines, i), no,
                          no + 1 if i + 1 < n else None)
                )
                facts.append(Fact("bootdelay", str(delay), no))
                # A countdown that someone stopped (a lab, a person at the console) is followed
                # at once by the prompt, usually with a typed command ("=> setenv ...", "ath>
                # printenv", "U-Boot> ", "# "): the wait ended at the key press, it is no delay
                # of the boot. A booting countdown is followed by the boot command's output.
                j = next((k for k in range(i + 1, min(n, i + 4)) if texts[k].strip()), None)
                if j is not None and lines.kernel[j] is None and (
                        _PROMPT.match(texts[j]) or texts[j].startswith(_BAREBOX_STOPPED)):
                    facts.append(Fact("autoboot_interrupted", texts[j].strip(), lines.no(j)))
                    # printenv at the prompt says what an uninterrupted countdown would last
                    for k in range(j, min(n, j + 400)):
                        if lines.kernel[k] is None and (d := _ENV_BOOTDELAY.match(texts[k])) is not None:
                            env = tally.take(d[1], INT_MAX, INT_MIN, field="bootdelay", line_no=lines.no(k))
                            if env is not None:
                                facts.append(Fact("bootdelay_env", str(env), lines.no(k)))
                            break
            elif "bytes read in" in t and (m := _LOAD.search(t)) is not None:
                size = tally.take(m[1], BYTES_MAX, field="byte count", line_no=no)
                dur = tally.ns(m[2], NS_PER_MS, field="load time", line_no=no)
                if size is None or dur is None:
                    continue
                st = _host(lines, i)
                start = Stamp(Clock.HOST, st.ns - dur) if st is not None else None
                events.append(
                    Event(Kind.BOOTLOADER, f"load {_human(size)}", start, dur, no,
                          detail=LoadDetail(size, m[3]))
                )
            elif "loading kernel to address" in t and (m := _QFW.search(t)) is not None:
                facts.append(Fact("kernel_loader", "qfw", no))
                if (ksize := tally.hex(m[1], BYTES_MAX, field="byte count", line_no=no)) is not None:
                    facts.append(Fact("kernel_image_size", str(ksize), no))
                if m[2] and (isize := tally.hex(m[2], BYTES_MAX, field="byte count", line_no=no)) is not None:
                    facts.append(Fact("initrd_size", str(isize), no))
            elif "Type:" in t and (m := _IMAGE_TYPE.match(t)) is not None:
                in_kernel_image = "Kernel Image" in m[1]
                if in_kernel_image:
                    # legacy "Image Type:   ARM Linux Kernel Image (gzip compressed)"; a FIT
                    # sub-image says "Type:  Kernel Image" and its compression on the next line
                    legacy = t.lstrip().startswith("Image Type:")
                    facts.append(Fact("kernel_image_format", "uImage" if legacy else "FIT", no))
                    if legacy and " Linux " not in f" {m[1]} ":
                        facts.append(Fact("kernel_image_os", m[1].split(" Kernel Image")[0], no))
                if in_kernel_image and (c := _COMPRESSED.search(m[1])) is not None:
                    facts.append(Fact("kernel_compression", "none" if c[2] else c[1].lower(), no))
            elif ("Retrieving file:" in t or "Moving Image from" in t or "Kernel image @" in t) and (
                    m := _BOOT_IMAGE.search(t)) is not None:
                # booti / bootz / extlinux, which print no image header: the file name extlinux
                # retrieves ("/Image.gz"), booti's relocation of an arm64 Image, bootz's zImage
                if m["file"]:
                    name = m["file"]
                    fmt = next((f for f in ("zImage", "uImage", "bzImage", "vmlinuz", "vmlinux", "Image")
                                if name.startswith(f)), "Image")
                    facts.append(Fact("kernel_image_format", fmt, no))
                    ext = name.rpartition(".")[2] if "." in name else ""
                    if (comp := _FILE_COMPRESSION.get(ext)) is not None:
                        facts.append(Fact("kernel_compression", comp, no))
                elif m["moving"]:
                    facts.append(Fact("kernel_image_format", "Image", no))
                    # booti decompresses an Image.gz first ("Uncompressing Kernel Image"); an
                    # Image it moves without that is booted as it is
                    if not any(f.key == "kernel_compression" for f in facts) and not any(
                            e.name == "uncompress kernel" for e in events):
                        facts.append(Fact("kernel_compression", "none", no))
                else:
                    facts.append(Fact("kernel_image_format", "zImage", no))
            elif in_kernel_image and "Compression:" in t and (m := _COMPRESSION.match(t)) is not None:
                facts.append(Fact("kernel_compression", "none" if m[1] == "uncompressed" else m[1].lower(), no))
            elif in_kernel_image and "Data Size:" in t and (m := _DATA_SIZE.match(t)) is not None:
                if (dsize := tally.take(m[1], BYTES_MAX, field="byte count", line_no=no)) is not None:
                    facts.append(Fact("kernel_image_size", str(dsize), no))
                in_kernel_image = False  # the size ends what is said about this image
            elif _VERIFY.search(t):
                events.append(Event(Kind.BOOTLOADER, "verify image", _host(lines, i), _until_next(lines, i), no))
            elif "Uncompressing" in t and _UNCOMPRESS.search(t):
                # U-Boot's "Uncompressing Kernel Image ... OK" lasts until its next line; the
                # kernel's own decompressor ("Uncompressing Linux... done, booting the kernel.")
                # is followed by the kernel itself, silent until its console comes up (a quiet
                # kernel: seconds): the gap is no decompression time, not measured (the kernel
                # load stage bounds it)
                decompressor = t.lstrip().startswith("Uncompressing Linux")
                events.append(Event(Kind.BOOTLOADER, "uncompress kernel", _host(lines, i),
                                    None if decompressor else _until_next(lines, i), no))
            elif (m := _STARTING.search(t)) is not None:
                events.append(Event(Kind.MILESTONE, Milestone.STARTING_KERNEL, _host(lines, i) or own, None, no))
            elif "## Starting application" in t and (m := _APPLICATION.search(t)) is not None:
                events.append(Event(Kind.BOOTLOADER, f"start application at {m[1]}", _host(lines, i) or own,
                                    None, no))
                facts.append(Fact("application_start", m[1], no))
            elif "EFI stub:" in t and (m := _EFI_STUB.search(t)) is not None:
                if not any(e.name == Milestone.EFI_STUB for e in events):
                    events.append(Event(Kind.MILESTONE, Milestone.EFI_STUB, _host(lines, i), None, no))
                events.append(Event(Kind.BOOTLOADER, "EFI stub: " + m[1].strip(), _host(lines, i), None, no))
            elif "Timer summary" in t and (m := _BOOTSTAGE_HEAD.search(t)) is not None:
                resume = self._bootstage(lines, i, m[1], events, facts, warnings, tally)
        return ParseResult(tuple(events), tuple(facts), tuple(warnings) + tally.warnings())

    @staticmethod
    def _banner(t: str, no: int, st: Stamp | None, events: list[Event], facts: list[Fact]) -> None:
        """A TPL, SPL or U-Boot banner (mainline, 1.x, 2010-era and vendor builds)."""
        found = banner_of(t)
        if found is None or not found[0].name.startswith("U-Boot"):
            return
        b, m = found
        events.append(Event(Kind.MILESTONE, ROLE_MILESTONE[b.role], st, None, no))
        v = version(m)
        if b.role == BOOTLOADER:
            facts.append(Fact("bootloader", b.name, no))
            if v:
                facts.append(Fact("uboot_version", v, no))
                facts.append(Fact("bootloader_version", v, no))
        elif b.role in (SPL, VPL, TPL):
            facts.append(Fact(b.role, b.name, no))
            if v:
                facts.append(Fact(f"{b.role}_version", v, no))

    @staticmethod
    def _bootstage(
        lines: Lines, i: int, records: str, events: list[Event], facts: list[Fact], warnings: list[str],
        tally: Tally,
    ) -> int:
        """Read a ``bootstage report`` table starting at line i; return the index after it.

        A row whose mark or elapsed time is only commas is no row (the table ends there); one
        out of range is skipped and counted in ``tally``."""
        head_no = lines.no(i)
        i += 1
        n = len(lines)
        rows = unnamed = 0
        kern, texts = lines.kernel, lines.text
        while i < n and kern[i] is None:
            t = texts[i]
            if "Mark" in t and "Elapsed" in t:
                i += 1
                continue
            m = _BOOTSTAGE_ROW.match(t)
            if m is None:
                break
            mark_us, elapsed_us = m[1].replace(",", ""), m[2].replace(",", "")
            if not mark_us or not elapsed_us:
                break
            mark = tally.ns(mark_us, NS_PER_US, field="bootstage time", line_no=lines.no(i))
            elapsed = tally.ns(elapsed_us, NS_PER_US, field="bootstage time", line_no=lines.no(i))
            if mark is None or elapsed is None:
                i += 1
                continue
            # a row without a name is kept (its times are read all the same), never the report dropped
            name = m[3] or UNNAMED_RECORD
            unnamed += m[3] is None
            events.append(
                Event(Kind.BOOTSTAGE, name, Stamp(Clock.BOOTLOADER, mark - elapsed), elapsed, lines.no(i))
            )
            # stage boundaries on U-Boot's timer (microseconds since reset): they measure
            # TPL, VPL, SPL and U-Boot from reset even on a console without host times
            ms = BOOTSTAGE_MILESTONES.get(name.lower().replace("_", " "))
            if ms is not None:
                events.append(Event(Kind.MILESTONE, ms, Stamp(Clock.BOOTLOADER, mark), None, lines.no(i)))
            rows += 1
            i += 1
        while i < n and kern[i] is None and not texts[i].strip():
            i += 1
        if i < n and texts[i].strip().startswith("Accumulated time"):
            i += 1
            while i < n and (m := _ACCUM_ROW.match(texts[i])) is not None:
                us = m[1].replace(",", "")
                if us and tally.ns(us, NS_PER_US, field="bootstage time", line_no=lines.no(i)) is not None:
                    facts.append(Fact(f"bootstage_accumulated:{m[2]}", us, lines.no(i)))
                i += 1
        if unnamed:
            warnings.append(f"bootstage report at line {head_no}: {unnamed} of its {rows} rows have no stage name "
                            f"(kept as '{UNNAMED_RECORD}')")
        if rows == 0:
            shown = to_int(records, INT_MAX)
            warnings.append(f"bootstage report at line {head_no} ({'?' if shown is None else shown} records) "
                            "has no readable rows")
        return i


def bootstage_reports(lines: Lines) -> list[tuple[int, tuple[str, ...]]]:
    """Where each bootstage report starts and what its first records say, in line order.

    A report is one boot's record (its marks count from that boot's reset), so a capture of several
    (``bootstage report`` typed after each of several boots) holds several boots
    (:func:`bootlens.timeline.boots.split_boots`). The start is the report's head, or the command
    line typed for it just before; the records are the first two after reset, as printed: a report
    typed twice in one boot repeats them, another boot's differs."""
    out: list[tuple[int, tuple[str, ...]]] = []
    texts, kern = lines.text, lines.kernel
    n = len(lines)
    for i in lines.grep(BOOTSTAGE_HEAD):
        if kern[i] is not None or _BOOTSTAGE_HEAD.search(texts[i]) is None:
            continue
        records: list[str] = []
        for j in range(i + 1, min(n, i + 5)):
            m = _BOOTSTAGE_ROW.match(texts[j])
            if m is not None and m[1] != "0":
                records.append(" ".join(texts[j].split()))
            elif m is None and "Mark" not in texts[j]:
                break
        start = i
        if i > 0 and texts[i - 1].rstrip().endswith("bootstage report"):
            start = i - 1
        out.append((start, tuple(records[:2])))
    return out


def _human(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"

