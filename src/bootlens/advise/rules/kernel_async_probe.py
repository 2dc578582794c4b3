"""Long synchronous device probes on the init thread -> ``driver_async_probe=``.

A driver registered from a built-in initcall probes its devices there and then, on the init
thread (``@ 1``), and every later initcall waits. ``driver_async_probe=drv1,drv2`` (Linux 5.1+)
moves those probes to async workers. The kernel still waits for every async probe before it
mounts the root filesystem and before it starts ``/init`` (wait_for_device_probe,
async_synchronize_full), so the most an async probe can save is the part of it that overlaps the
init thread's remaining work, and only if that work does not need the device. On one CPU only the
time the probe sleeps (waiting for hardware) can overlap, and the log does not show how much.

The driver's name comes from the probe line itself (``probe with driver``, newer kernels) or from
the device's own messages: ``dev_info()`` prefixes them with the bound driver's name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.model import Kind, ProbeDetail
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

MIN_PROBE_NS = 10_000_000  # shorter probes are not worth a change in probe order
# dev_printk names the bus, not a driver, for a device no driver has bound yet
BUSES = frozenset({"platform", "amba", "pci", "pci_bus", "i2c", "spi", "usb", "serio", "pnp", "acpi", "virtio",
                   "mdio_bus", "scsi", "sd", "mmc", "sdio", "hid", "input", "cpu", "soc", "regulator"})
LONG = K.Query(Kind.PROBE, ret=K.among(0), min_ns=MIN_PROBE_NS)  # the probes that succeeded and are long
TRADEOFF = ("devices appear later and in a less fixed order: names given by probe order (ttyS1, mmcblk1, "
            "spi/i2c bus numbers) can change between boots, and a later initcall that expects the device "
            "to exist will not find it; the kernel still waits for all async probes before starting "
            "/init, so nothing is saved unless other kernel work can run meanwhile")


def driver_of(boot: BootAnalysis, device: str, probe_driver: str | None) -> tuple[str | None, int | None]:
    """The driver bound to ``device`` and the line that names it."""
    if probe_driver:
        return probe_driver, None
    rx = re.compile(r"(\S+) " + re.escape(device) + r": ")
    for i in K.grep(boot, f" {device}: "):
        m = rx.match(boot.boot.lines.text[i])
        if m and m[1] not in BUSES:
            return m[1], K.line_no(boot, i)
    return None, None


def is_console(boot: BootAnalysis, device: str) -> bool:
    """True when the device's messages name the console (e.g. ``9000000.pl011: ttyAMA0 at MMIO``):
    probing the console UART late delays every message."""
    console = boot.boot.fact("console")
    if console is None:
        return False
    name = console.value.rstrip("0123456789")
    return any(name in boot.boot.lines.text[i] for i in K.grep(boot, f"{device}: "))


@REGISTRY.register
class AsyncProbe(Rule):
    """Long probes on the init thread that could run asynchronously."""

    id = "kernel.async_probe"
    title = "Long synchronous device probes"

    def needles_of(self, boot: BootAnalysis) -> Iterable[str]:
        """The messages of every device whose probe is long enough to matter (driver_of,
        is_console): one pass for all of them, not one grep per device."""
        for t in K.pick(boot, LONG).timed():
            d = t.event.detail
            assert isinstance(d, ProbeDetail)
            yield f" {d.device}: "
            yield f"{d.device}: "

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        already = set((K.arg(boot, "driver_async_probe") or "").split(","))
        long = K.pick(boot, LONG).timed()
        if not long:
            return
        # the built-in initcalls of the init thread (``@ 1``): the path user space waits for
        main = K.pick(boot, K.Query(Kind.INITCALL, returned=K.among(True), pid=K.among(K.MAIN_PID),
                                    module=K.among(None)))
        picked: list[tuple[K.Timed, str | None, int | None]] = []
        for t, host in zip(long, main.enclosing([t.start for t in long])):
            d = t.event.detail
            assert isinstance(d, ProbeDetail)
            if host is None:
                continue  # not on the init thread (already async)
            if is_console(boot, d.device):
                continue
            drv, drv_line = driver_of(boot, d.device, d.driver)
            if drv is not None and (drv in already or "*" in already):
                continue
            picked.append((t, drv, drv_line))
        if not picked:
            return
        picked.sort(key=lambda p: -p[0].duration)
        total = sum(t.duration for t, _, _ in picked)
        listing = ", ".join(f"{t.event.name} ({drv or 'driver not named in the log'}) {K.ms(t.duration)}"
                            for t, drv, _ in picked)
        ncpu, cpu_line = K.cpus(boot)
        end = K.stage_end(boot, "initcalls")
        saving: int | None = None
        if ncpu is not None and ncpu >= 2 and end is not None:
            parts = []
            for t, _, _ in picked:
                after = max(0, end - (t.end or end))
                parts.append((t, min(t.duration, after)))
            first_end = min((t.end or end) for t, _, _ in picked)
            saving = min(sum(p for _, p in parts), max(0, end - first_end))
            arithmetic = (
                f"probes on the init thread: {listing}. The kernel waits for async probes at the end of "
                "the initcalls, so each saves at most the init thread's work left after it: "
                + " + ".join(f"min({K.ms(t.duration)}, {K.ms(max(0, end - (t.end or end)))})" for t, _ in parts)
                + f" = {K.ms(saving)} with {ncpu} CPUs; an upper bound: nothing that runs meanwhile may "
                "wait for these devices")
            confidence = Confidence.LOW
        else:
            why = ("one CPU" if ncpu == 1 else "the CPU count is not in the log")
            arithmetic = (f"probes on the init thread: {listing} ({K.ms(total)}). Not estimated: {why}, so "
                          "only the time a probe sleeps waiting for its hardware could overlap other work, "
                          "and the log does not show how much that is")
            confidence = Confidence.LOW
        named = sorted({drv for _, drv, _ in picked if drv is not None})  # same order on every boot
        version = K.kernel_version(boot)
        if named and (version is None or version >= (5, 1)):
            change = Change(ChangeKind.CMDLINE, "driver_async_probe=" + ",".join(named),
                            "probe these drivers asynchronously with driver_async_probe= on the kernel "
                            "command line (Linux 5.1+), or set PROBE_PREFER_ASYNCHRONOUS in the drivers")
        else:
            change = Change(ChangeKind.MANUAL, "PROBE_PREFER_ASYNCHRONOUS",
                            "set .probe_type = PROBE_PREFER_ASYNCHRONOUS in these drivers' struct "
                            "device_driver (driver_async_probe= needs Linux 5.1 and the driver's name)")
        yield Finding(
            rule=self.id,
            title=f"{len(picked)} device probes run {K.ms(total)} on the init thread",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=arithmetic,
            confidence=confidence,
            tradeoff=TRADEOFF,
            change=change,
            evidence=evidence(boot.boot, [*(t.event.line_no for t, _, _ in picked[:3]),
                                          *(ln for _, _, ln in picked[:2]), cpu_line], K.EVIDENCE_MAX),
        )
