"""A kernel built for the boot it serves: only the Kconfig symbols the traced boot used.

Needs ``initcall_debug`` (which initcalls ran, what they returned, which devices probed) and a
kernel source tree matching the booted kernel (``Context.kernel_source``: ``optimize
--rebuild-kernel`` on a target that can boot a kernel bootlens builds). :mod:`bootlens.kbuild.derive`
maps each initcall to the symbols that build it and keeps what ran and served the boot; the
change starts from ``allnoconfig`` and switches those on (:mod:`bootlens.kbuild.build`).

Two findings: a kernel of everything that ran and served the boot (every subsystem that
initialised itself stays), and a minimal one of what the product itself used (the drivers that
bound its devices, its console, the initramfs, the filesystems its scripts mount, the formats
of the programs it ran: :attr:`bootlens.kbuild.derive.Derivation.needed`). ``optimize`` tries
both; they cannot be combined (each builds the kernel from nothing), so the one that saved more
is kept.

The estimate is what the log times: the initcalls of the main init thread that a kernel of the
used symbols alone does not build (drivers that bound no device, initcalls that failed with
-ENODEV). A smaller kernel also loads and relocates faster and sets up less outside initcalls;
that part has no figure in the log, so the estimate is a floor (low confidence).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.model import Event, Kind
from ...kbuild.build import ALLNOCONFIG
from ...timeline.analyze import BootAnalysis
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

if TYPE_CHECKING:
    from ...kbuild.derive import Derivation

MIN_NS = 1_000_000


@REGISTRY.register
class KernelFromBoot(Rule):
    """Kconfig symbols that built nothing this boot used."""

    id = "kernel.from_boot"
    title = "Kernel configuration: what the boot did not use"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        if not ctx.kernel_source:
            return
        from ...kbuild.derive import derive
        from ...kbuild.sourcemap import load_or_index

        if sum(1 for _ in K.events(boot, Kind.INITCALL)) < 20:  # no initcall_debug: nothing to map
            return
        sm = load_or_index(Path(ctx.kernel_source))
        running = {k.removeprefix("CONFIG_"): v for k, v in ctx.kconfig.items()}
        d = derive(boot.boot, sm, running, ctx.rootfs_files, " ".join(K.cmdline(boot)), ctx.initramfs_head)
        if not d.used:
            return
        ran = self._finding(boot, d, d.symbols, d.dropped, sm.version, minimal=False)
        if ran is not None:
            yield ran
        needed = d.needed
        if needed and len(needed) < len(d.used):
            small = self._finding(boot, d, needed, d.left_out(set(needed)), sm.version, minimal=True)
            if small is not None:
                yield small

    def _finding(self, boot: BootAnalysis, d: Derivation, symbols: list[str], out: list[tuple[Event, str]],
                 version: str, minimal: bool) -> Finding | None:
        main = [(e, why) for e, why in out if getattr(e.detail, "pid", None) in (1, None)]
        saving = sum(e.duration_ns or 0 for e, _ in main)
        if saving < MIN_NS:
            return None
        top = sorted(main, key=lambda x: -(x[0].duration_ns or 0))[:K.EVIDENCE_MAX]
        unmapped = f"; {len(d.unmapped)} initcalls no source file defines were left to allnoconfig" \
            if d.unmapped else ""
        plat = f"; SoC family symbols left out ({', '.join(d.platforms)})" if d.platforms else ""
        if minimal:
            what = (f"the {len(symbols)} symbols of what the product used: the drivers that bound its devices, its "
                    "console, the initramfs, the filesystems its scripts mount, the programs' formats")
            title = (f"{len(out)} initcalls served nothing the product used ({K.ms(saving)} on the init thread); a "
                     f"kernel of the {len(symbols)} symbols of its devices, console, filesystems and programs leaves "
                     "them out")
            value = f"allnoconfig + {len(symbols)} symbols the product used"
            tradeoff = ("only what this boot's devices, console, filesystems and programs need: every subsystem that "
                        "only initialised itself (networking, security modules, tracing, crypto, ...) is gone; a "
                        "product that uses one later (a network, a policy) must add it back (kernel.diff)")
        else:
            what = f"the {len(symbols)} symbols that built what ran and served the boot"
            title = (f"{len(out)} initcalls served nothing this boot used ({K.ms(saving)} on the init thread); a "
                     f"kernel of the {len(symbols)} symbols it used leaves them out")
            value = f"allnoconfig + {len(symbols)} symbols the boot used"
            tradeoff = ("the kernel supports only what this boot used: hardware, filesystems or features the "
                        "product uses later (hotplug, a network, modules) must be added back to the config "
                        "(kernel.diff in the run folder lists every line)")
        return Finding(
            rule=self.id,
            title=title,
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=(f"{d.initcalls} built-in initcalls returned 0; mapped to their source files and kbuild "
                        f"lines ({version or 'the source tree'}): {what} (a driver counts when it bound a device); "
                        f"{len(out)} initcalls are not built then (drivers that bound no device, -ENODEV and other "
                        f"errors{', subsystems that only initialised themselves' if minimal else ''}); those on the "
                        f"init thread took {K.ms(saving)} in all (initcall_debug's figures){unmapped}{plat}; a "
                        "smaller kernel also loads and starts faster, which the log does not time: a floor"),
            confidence=Confidence.LOW,
            tradeoff=tradeoff,
            change=Change(ChangeKind.KCONFIG, value,
                          f"build the kernel from allnoconfig with only {what} (and what they depend on); the run "
                          "folder's kernel.diff gives the lines for a product's defconfig",
                          kconfig=(ALLNOCONFIG, *(f"CONFIG_{s}=y" for s in symbols))),
            evidence=evidence(boot.boot, [e.end_line_no or e.line_no for e, _ in top], K.EVIDENCE_MAX),
        )
