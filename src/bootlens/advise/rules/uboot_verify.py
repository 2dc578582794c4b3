"""U-Boot verifying image checksums or hashes before booting them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.kindpos import located
from ...core.model import Kind
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence, line_text, secs

# a signature in the verify line ("sha256,rsa2048:dev+ OK", "ecdsa256"): verified boot
_SIGNED = re.compile(r"\b(?:rsa|ecdsa)\d*\b|,\s*(?:rsa|ecdsa)", re.IGNORECASE)


@REGISTRY.register
class ImageVerify(Rule):
    """``Verifying Checksum ... OK`` (legacy uImage, CRC32 over the whole image) and ``Verifying
    Hash Integrity ... OK`` (FIT hashes) read every byte of the image once more; ``verify=no``
    skips both."""

    id = "uboot.image_verify"
    title = "U-Boot image verification"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        b = boot.boot
        verifies = [e for _, e in located(b.events, Kind.BOOTLOADER) if e.name == "verify image"]
        if not verifies:
            return
        nos = [e.line_no for e in verifies]
        signed = any(_SIGNED.search(line_text(b, no)) for no in nos)
        timed = [e for e in verifies if e.duration_ns is not None]
        saving: int | None = None
        if timed and len(timed) == len(verifies):
            saving = sum(e.duration_ns or 0 for e in timed)
            parts = " + ".join(f"{secs(e.duration_ns or 0)} (line {e.line_no})" for e in timed)
            arithmetic = (f"each verification timed from its line to the next one (host arrival times): "
                          f"{parts} = {secs(saving)}; verify=no removes them")
        elif timed:
            arithmetic = (f"no estimate: only {len(timed)} of {len(verifies)} verifications are timed "
                          "(the log has host timestamps for some lines only)")
        else:
            arithmetic = ("no estimate: the log has no host timestamps on U-Boot's lines, so the time "
                          "between a verification and the next line is unknown (capture with bootlens "
                          "capture or grabserial -t)")
        if signed:
            # verify=no would also switch off signature checking: never advise that
            saving = None
            measured = arithmetic.removeprefix("no estimate: ").replace("; verify=no removes them", "")
            arithmetic = ("no estimate: the image is signed (verified boot), so the check must stay and what "
                          f"faster hashing saves depends on the hardware; {measured}")
            change = Change(ChangeKind.MANUAL, "hash acceleration",
                            "keep verification (the FIT is signed); make hashing faster instead: "
                            "CONFIG_SHA_HW_ACCEL / the SoC's crypto engine, or a faster hash algorithm "
                            "in the .its (sha256 rather than sha512 on 32-bit cores)")
            tradeoff = "none for security; needs a U-Boot rebuild"
            confidence = Confidence.LOW
        else:
            change = Change(ChangeKind.UBOOT_ENV, "verify=no",
                            "set the U-Boot variable verify=no (setenv verify no; saveenv)")
            tradeoff = ("a corrupted kernel image (flash wear, an interrupted update) is no longer caught "
                        "by U-Boot: the kernel crashes instead of U-Boot refusing it; with an A/B update "
                        "scheme keep it on the fallback path")
            confidence = Confidence.HIGH
        yield Finding(
            rule=self.id,
            title=f"U-Boot verifies {len(verifies)} image checksum{'s' if len(verifies) != 1 else ''} "
                  "before booting" + (" (signed image)" if signed else ""),
            stage="bootloader",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=confidence,
            tradeoff=tradeoff,
            change=change,
            evidence=evidence(b, nos),
        )
