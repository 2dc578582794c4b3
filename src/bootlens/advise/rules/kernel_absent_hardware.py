"""Time spent looking for hardware that is not there.

- Built-in initcalls that returned -ENODEV or -ENXIO found nothing to drive (a Xen or ACPI
  driver on a device-tree board, a SoC driver for another SoC): ``initcall_blacklist=`` skips
  them. Only initcalls that *failed* are proposed: one that returned 0 may have registered
  something another part of the kernel needs.
- Device probes that returned -ENODEV/-ENXIO (printed as 19/6 since Linux 5.13, which reports
  probe errors as positive numbers) tried a device the board does not have: remove the driver or
  disable the device-tree node.
- Probes that returned -EPROBE_DEFER (517) ran before a supplier (clock, regulator, GPIO) was
  ready and will run again: the failed attempts are wasted.

A -ENODEV probe is not absent hardware when the device works: another driver bound it (a probe
of it returned 0), or it is one function of a device that works (:func:`working_family`): SDIO
functions ``mmc1:0001:N`` of a Wi-Fi card whose other function probed or whose driver talks to
it, USB interfaces ``1-1:1.N``, PCI functions ``0000:00:1f.N``, and children named after a
parent that probed (``PARENT:child``). A driver declining one function of a card that is there
is no node to disable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.model import Kind
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from . import _kernel as K

ENODEV, ENXIO, EPROBE_DEFER = 19, 6, 517
# one function of a device, and the device: SDIO "mmc1:0001:2", USB interface "1-1.2:1.0", PCI "0000:00:1f.3"
_FUNCTION = re.compile(r"(mmc\d+:[0-9a-fA-F]{4}):\d+|(\d+-[\d.]+):\d+\.\d+|([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.[0-7]")
MIN_SAVING_NS = 1_000_000  # under a millisecond in all, not worth the risk of a change
MAX_BLACKLIST_CHARS = 1024  # the command line holds 2048 bytes on most architectures

BLACKLIST_TRADEOFF = (
    "an initcall that failed did not set anything up, but check the list before shipping it: a "
    "function name can also match an initcall another kernel build needs (same name, different "
    "config), and blacklisting an initcall other code depends on can break the boot. With a "
    "non-empty initcall_blacklist every initcall's name is looked up (kallsyms) before it runs, which "
    "costs a little on each of them. Removing the drivers from the kernel config is the clean fix")


@REGISTRY.register
class AbsentHardware(Rule):
    """Initcalls and probes that found no hardware, and probes deferred for a missing supplier."""

    id = "kernel.absent_hardware"
    title = "Probing hardware that is not there"

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        yield from self._initcalls(boot)
        yield from self._probes(boot)

    def _initcalls(self, boot: BootAnalysis) -> Iterable[Finding]:
        already = set((K.arg(boot, "initcall_blacklist") or "").split(","))
        returned = K.Query(Kind.INITCALL, returned=K.among(True))
        absent = (-ENODEV, -ENXIO)
        failed = K.pick(boot, returned._replace(ret=K.among(*absent), module=K.among(None))).timed()
        if failed:
            # the blacklist matches names: a name shared with an initcall that succeeded is not safe
            succeeded = K.pick(boot, returned._replace(ret=K.other_than(*absent))).names()
            failed = [t for t in failed if t.event.name not in already and t.event.name not in succeeded]
        total = sum(t.duration for t in failed)
        if total < MIN_SAVING_NS:
            return
        # Every failed initcall, in log order: the same list on every boot of this kernel and board
        # (which of them took more than 0 us varies from boot to boot); the longest are kept if
        # the list would not fit on the command line.
        names = list(dict.fromkeys(t.event.name for t in failed))
        if sum(len(n) + 1 for n in names) > MAX_BLACKLIST_CHARS:
            longest = sorted(failed, key=lambda t: -t.duration)
            keep: set[str] = set()
            size = 0
            for t in longest:
                if t.event.name not in keep and size + len(t.event.name) + 1 <= MAX_BLACKLIST_CHARS:
                    keep.add(t.event.name)
                    size += len(t.event.name) + 1
            names = [n for n in names if n in keep]
        chosen = [t for t in failed if t.event.name in set(names)]
        saving = sum(t.duration for t in chosen)
        timed = sorted((t for t in chosen if t.duration > 0), key=lambda t: -t.duration)
        terms = " + ".join(f"{t.event.name} {K.ms(t.duration)}" for t in timed[:5])
        if len(timed) > 5:
            terms += f" + {len(timed) - 5} more ({K.ms(sum(t.duration for t in timed[5:]))})"
        zero = len(chosen) - len(timed)
        left = ""
        if len(chosen) < len(failed):
            left = (f"; {len(failed) - len(chosen)} shorter ones ({K.ms(total - saving)}) are left out to keep "
                    "the command line short")
        yield Finding(
            rule=self.id,
            title=f"{len(failed)} built-in initcalls returned -ENODEV/-ENXIO after {K.ms(total)} in all",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=(f"measured time of the failed initcalls: {terms} = {K.ms(saving)}"
                        + (f" ({zero} more returned within a microsecond)" if zero else "") + left
                        + K.coarse_note(boot, timed)),
            confidence=Confidence.MEDIUM,
            tradeoff=BLACKLIST_TRADEOFF,
            change=Change(ChangeKind.CMDLINE, "initcall_blacklist=" + ",".join(names),
                          "skip these initcalls with initcall_blacklist= on the kernel command line, or "
                          "better, disable their drivers in the kernel config (they are for hardware or "
                          "hypervisors this board does not have)"),
            evidence=K.event_evidence(boot, timed[:3]),
        )

    def _probes(self, boot: BootAnalysis) -> Iterable[Finding]:
        probes = K.Query(Kind.PROBE)
        absent = K.pick(boot, probes._replace(ret=K.among(ENODEV, ENXIO, -ENODEV, -ENXIO)))
        tried = absent.names()
        if tried:  # less those of devices that work, or of a device with a function that works
            # every form of _FUNCTION has a colon: the names without one are no function
            functions = {n: _FUNCTION.fullmatch(n) for n in K.pick(boot, probes._replace(name_has=":")).names()}
            working = working_devices(boot, functions)
            # the parents of the working functions: asked only about a failed name with a colon
            parents = {_parent(w, functions) for w in working if ":" in w} if any(":" in n for n in tried) else set()
            absent = absent.keep({n for n in tried if not working_family(n, working, parents)})
        total = absent.total()
        if total >= MIN_SAVING_NS:
            longest = absent.longest(5)
            terms = " + ".join(f"{t.event.name} {K.ms(t.duration)}" for t in longest)
            if len(absent) > 5:
                terms += f" + {len(absent) - 5} more"
            devices = ", ".join(sorted(absent.names()))
            yield Finding(
                rule=self.id,
                title=f"{len(absent)} device probes found no hardware ({K.ms(total)})",
                stage="kernel_init",
                saving_ns=total,
                arithmetic=f"measured probe times that returned -ENODEV/-ENXIO: {terms} = {K.ms(total)}",
                confidence=Confidence.MEDIUM,
                tradeoff=("none if the hardware is really absent on every unit of the product; a driver "
                          "removed from the kernel is gone for board variants that have the part"),
                change=Change(ChangeKind.MANUAL, f"disable: {devices}",
                              "set status = \"disabled\" on these devices' device-tree nodes, or remove "
                              "the drivers that probe them from the kernel config"),
                evidence=K.event_evidence(boot, longest[:4]),
            )
        deferred = K.pick(boot, probes._replace(ret=K.among(EPROBE_DEFER, -EPROBE_DEFER)))
        wasted = deferred.total()
        if wasted >= MIN_SAVING_NS:
            devs = sorted(deferred.names())
            yield Finding(
                rule=self.id,
                title=f"{len(deferred)} probes were deferred (-EPROBE_DEFER) and must run again ({K.ms(wasted)})",
                stage="kernel_init",
                saving_ns=wasted,
                arithmetic=(f"measured time of the {len(deferred)} deferred attempts on {len(devs)} devices "
                            f"({', '.join(devs[:5])}{', ...' if len(devs) > 5 else ''}) = {K.ms(wasted)}; "
                            "the attempt that finally succeeds is still needed"),
                confidence=Confidence.LOW,
                tradeoff=("probe order follows link order and device-tree dependencies; changing it can "
                          "expose drivers that relied on the retry"),
                change=Change(ChangeKind.MANUAL, "probe suppliers first",
                              "make the suppliers these devices wait for (clocks, regulators, GPIO, PHYs) "
                              "built-in and probed before them: keep fw_devlink=on (the default since "
                              "5.x) so the driver core orders probes by device-tree links"),
                evidence=K.event_evidence(boot, deferred.timed()[:4]),
            )


def working_devices(boot: BootAnalysis, functions: dict[str, re.Match[str] | None]) -> set[str]:
    """Devices the log shows working: a probe of them returned 0, or a driver prints about them
    (``rtw_8821cs mmc3:0001:1: Firmware version ...``: the second word, with its colon, names the
    device a bound driver talks to). ``functions``: the :data:`_FUNCTION` match of each probed
    name that has a colon (no other name can match)."""
    probes = K.Query(Kind.PROBE)
    out = K.pick(boot, probes._replace(ret=K.among(0))).names()
    families = {m[0] for m in functions.values() if m is not None}
    if families:
        # only the functions of the cards and buses whose probes failed are worth a look
        failed = K.pick(boot, probes._replace(ret=K.other_than(0))).names()
        texts = boot.boot.lines.text
        for name in families:
            parent = _parent(name)
            for i in K.grep(boot, f" {parent}"):
                words = texts[i].split(maxsplit=2)
                if len(words) >= 2 and words[1].endswith(":") and words[1][:-1].startswith(parent) \
                        and words[0] != "probe" and words[1][:-1] not in failed:
                    out.add(words[1][:-1])
    return out


def _parent(name: str, functions: dict[str, re.Match[str] | None] | None = None) -> str:
    """The device ``name`` is a function of (``mmc3:0001:1`` -> ``mmc3``), or ``name``;
    ``functions``: :data:`_FUNCTION` matches already made, by name."""
    if ":" not in name:  # every form of _FUNCTION has one
        return name
    m = functions[name] if functions is not None and name in functions else _FUNCTION.fullmatch(name)
    return next(g for g in m.groups() if g) if m is not None else name


def working_family(name: str, working: set[str], parents: set[str] | None = None) -> bool:
    """True if ``name`` works, or is a function (or a ``PARENT:child``) of a device that works.

    ``parents``: the parents of the working devices that have a colon (``{_parent(w) for w in
    working if ":" in w}``: one without is its own parent), computed once by a caller that asks
    for many names (a log of thousands of failed probes would otherwise cost working x failed
    steps).
    """
    if name in working:
        return True
    if ":" not in name:  # its own parent, and no PARENT: in it
        return False
    if parents is None:
        parents = {_parent(w) for w in working if ":" in w}
    parent = _parent(name)
    # name is not in working, so a working device with the same parent is another function
    if parent != name and (parent in working or parent in parents):
        return True
    return any(name[:i] in working for i, c in enumerate(name) if c == ":")
