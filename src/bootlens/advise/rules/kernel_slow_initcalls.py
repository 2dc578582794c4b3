"""The slowest initcalls left, with a known remedy where there is one.

Known remedies (each checked against the kernel source for what the initcall does):

- ``ip_auto_config``: kernel IP autoconfiguration (``ip=dhcp``): waits for a carrier ("Waiting up to
  N more seconds for network.") and a DHCP answer on the init thread. Without an NFS root,
  ``ip=off`` and configuring the network in user space takes it off the critical path; with one,
  a static ``ip=`` removes the DHCP exchange.
- ``raid6_select_algo``: benchmarks every RAID6 syndrome implementation ("raid6: ... MB/s");
  ``CONFIG_RAID6_PQ_BENCHMARK=n`` takes the first usable one instead.
- ``calibrate_xor_blocks``: "xor: measuring software checksum speed"; the users of the xor
  library (MD RAID4/5/6, btrfs, async_tx) built as modules move the benchmark off the boot.
- ``floppy_init``: probes for a floppy controller PCs no longer have, with timeouts.
- ``kprobe_trace_self_tests_init``, ``event_trace_self_tests_init``: ftrace start-up self tests
  (``CONFIG_FTRACE_STARTUP_TEST``), meant for kernel developers.

Other initcalls of 10 ms or more on the init thread are listed, without a figure: whether one can
become a module loaded after the application is ready, or be deferred, is a property of the
product, not of the log. Initcalls other rules advise on (crypto self-tests, initramfs unpacking)
are left to them, and test threads seen running inside an initcall are not counted as its own time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...timeline.analyze import BootAnalysis
from ...core.model import Kind
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

MIN_NS = 10_000_000
GENERIC_MAX = 5
OWNED = frozenset({"crypto_algapi_init", "populate_rootfs"})  # kernel.crypto_selftests, initramfs rule


@dataclass(frozen=True, slots=True)
class Remedy:
    """What to do about one known initcall."""

    change: Change
    tradeoff: str
    confidence: Confidence
    why: str  # what the time is, for the arithmetic


REMEDIES: dict[str, Remedy] = {
    "raid6_select_algo": Remedy(
        Change(ChangeKind.KCONFIG, "CONFIG_RAID6_PQ_BENCHMARK=n",
               "rebuild without CONFIG_RAID6_PQ_BENCHMARK: the RAID6 library then takes the first usable "
               "implementation instead of timing them all"),
        "the implementation picked by preference may be slower than the fastest on this CPU (RAID6 parity "
        "for md and btrfs)", Confidence.MEDIUM, "the RAID6 gen()/xor() benchmark"),
    "calibrate_xor_blocks": Remedy(
        Change(ChangeKind.KCONFIG, "CONFIG_XOR_BLOCKS=m",
               "build the users of the xor library (CONFIG_MD_RAID456, CONFIG_BTRFS_FS, CONFIG_ASYNC_XOR) as "
               "modules so that the checksum benchmark runs when one is loaded, not at boot"),
        "the benchmark runs when the first user is loaded instead (RAID or btrfs mount later in boot)",
        Confidence.MEDIUM, "the xor checksum benchmark"),
    "floppy_init": Remedy(
        Change(ChangeKind.KCONFIG, "CONFIG_BLK_DEV_FD=n",
               "remove the floppy driver (CONFIG_BLK_DEV_FD=n; as a module: modprobe.blacklist=floppy)"),
        "no floppy drive support", Confidence.HIGH, "probing for a floppy controller"),
    "kprobe_trace_self_tests_init": Remedy(
        Change(ChangeKind.KCONFIG, "CONFIG_FTRACE_STARTUP_TEST=n",
               "rebuild without CONFIG_FTRACE_STARTUP_TEST (tracer self tests for kernel developers)"),
        "ftrace is no longer self-tested at boot", Confidence.HIGH, "the kprobe tracer self test"),
    "event_trace_self_tests_init": Remedy(
        Change(ChangeKind.KCONFIG, "CONFIG_FTRACE_STARTUP_TEST=n",
               "rebuild without CONFIG_FTRACE_STARTUP_TEST (tracer self tests for kernel developers)"),
        "ftrace is no longer self-tested at boot", Confidence.HIGH, "the trace event self tests"),
}


@REGISTRY.register
class SlowInitcalls(Rule):
    """Slow initcalls on the init thread: a known remedy, or a pointer to the candidates."""

    id = "kernel.slow_initcalls"
    title = "Slow initcalls"
    needles = ("more seconds for network", "Sending DHCP requests", "IP-Config: Got DHCP answer")

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        # the initcalls on the init thread (or on no thread named) this rule can say something
        # about: the known ones by name, and the others of 10 ms or more (own time is at most that)
        on_main = K.Query(Kind.INITCALL, returned=K.among(True), pid=K.among(K.MAIN_PID, None))
        known = ("ip_auto_config", *REMEDIES)
        calls = K.picked(boot, on_main._replace(names=K.among(*known)),
                         on_main._replace(names=K.other_than(*known, *OWNED), module=K.among(None), min_ns=MIN_NS))
        tests = K.kthreads(boot, "cryptomgr_test")
        own: dict[int, int] = {}  # line_no -> the initcall's time less test threads inside it
        if tests:
            for t in calls:
                inside = sum(x.duration for x in tests if K.enclosing([t], x.start) is not None)
                own[t.event.line_no] = max(0, t.duration - inside)
        else:  # no test thread: an initcall's own time is its time (a sum per call cost 2 us)
            own.update([(t.event.line_no, max(0, t.event.duration_ns or 0)) for t in calls])
        generic: list[K.Timed] = []
        for t in calls:
            name = t.event.name
            if name == "ip_auto_config":
                f = self._ipconfig(boot, t)
                if f is not None:
                    yield f
            elif name in REMEDIES:
                if t.duration >= MIN_NS // 10:
                    yield self._known(boot, t, REMEDIES[name])
            elif own[t.event.line_no] >= MIN_NS:
                generic.append(t)
        if generic:
            yield self._generic(boot, generic, own)

    def _known(self, boot: BootAnalysis, t: K.Timed, r: Remedy) -> Finding:
        return Finding(
            rule=self.id,
            title=f"{t.event.name} takes {K.ms(t.duration)}: {r.why}",
            stage="kernel_init",
            saving_ns=t.duration,
            arithmetic=f"{t.event.name} measured at line {t.event.end_line_no}: {K.ms(t.duration)}, all of it "
                       f"{r.why}, which the change removes from the boot",
            confidence=r.confidence,
            tradeoff=r.tradeoff,
            change=r.change,
            evidence=K.event_evidence(boot, [t]),
        )

    def _ipconfig(self, boot: BootAnalysis, t: K.Timed) -> Finding | None:
        ip = K.arg(boot, "ip")
        if t.duration < MIN_NS or ip in (None, "off", "none"):
            return None
        texts = boot.boot.lines.text
        waits = [i for i in K.grep(boot, "more seconds for network") if texts[i].startswith("Waiting up to")]
        dhcp = [i for i in K.grep(boot, "Sending DHCP requests")]
        answer = [i for i in K.grep(boot, "IP-Config: Got DHCP answer")]
        nos = [t.event.line_no, t.event.end_line_no, *(K.line_no(boot, i) for i in waits[:1] + dhcp[:1] + answer[:1])]
        nfs = (K.arg(boot, "root") or "") == "/dev/nfs" or K.arg(boot, "nfsroot") is not None
        if not nfs:
            return Finding(
                rule=self.id,
                title=f"Kernel IP autoconfiguration (ip={ip}) holds up boot for {K.ms(t.duration)}",
                stage="kernel_init",
                saving_ns=t.duration,
                arithmetic=(f"ip_auto_config measured at line {t.event.end_line_no}: {K.ms(t.duration)} on the "
                            "init thread (carrier wait and DHCP); the root filesystem is not on NFS, so with "
                            f"ip=off none of it happens in the kernel: saving {K.ms(t.duration)}"
                            + (f"; it waited for a carrier ({len(waits)} 'Waiting up to ... for network' lines)"
                               if waits else "")),
                confidence=Confidence.MEDIUM,
                tradeoff=("the network is not configured when user space starts: bring it up from an init "
                          "script (udhcpc in the background) or a network manager, after or beside the "
                          "application"),
                change=Change(ChangeKind.CMDLINE, "ip=off",
                              "drop ip= from the kernel command line (ip=off) and configure the network in "
                              "user space, in the background"),
                evidence=evidence(boot.boot, nos, K.EVIDENCE_MAX),
            )
        saving = K.span(boot, dhcp[0], answer[0]) if dhcp and answer else None
        return Finding(
            rule=self.id,
            title=f"Kernel IP autoconfiguration for the NFS root takes {K.ms(t.duration)}",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=(f"ip_auto_config: {K.ms(t.duration)}; the DHCP exchange from 'Sending DHCP requests' "
                        f"(line {K.line_no(boot, dhcp[0])}) to the answer (line {K.line_no(boot, answer[0])}) "
                        f"took {K.ms(saving)}, which a static address removes; the carrier wait stays"
                        if saving is not None else
                        f"ip_auto_config: {K.ms(t.duration)}; the log does not separate the carrier wait from "
                        "the DHCP exchange, so the part a static address saves is not estimated"),
            confidence=Confidence.MEDIUM,
            tradeoff="the board's address is fixed in its command line (one configuration per board)",
            change=Change(ChangeKind.MANUAL, "ip=<client>:<server>:<gw>:<netmask>::<dev>:off",
                          "give the NFS-root board a static address on the command line "
                          "(ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:off) instead "
                          "of DHCP; set carrier_timeout= to bound the carrier wait"),
            evidence=evidence(boot.boot, nos, K.EVIDENCE_MAX),
        )

    def _generic(self, boot: BootAnalysis, generic: list[K.Timed], own: dict[int, int]) -> Finding:
        generic.sort(key=lambda t: -own[t.event.line_no])
        top = generic[:GENERIC_MAX]

        def describe(t: K.Timed) -> str:
            mine = own[t.event.line_no]
            out = f"{t.event.name} {K.ms(mine)}"
            if mine < t.duration:
                out += f" (of {K.ms(t.duration)}, the rest crypto test threads)"
            big = None  # the longest probe that started while it ran
            if t.start is not None and t.end is not None:
                big = next(iter(K.pick(boot, K.Query(Kind.PROBE, starts=(t.start, t.end))).longest(1)), None)
            if big is not None and 2 * big.duration >= mine:
                out += f" (mostly the probe of {big.event.name}, {K.ms(big.duration)})"
            return out

        listing = ", ".join(describe(t) for t in top)
        total = sum(own[t.event.line_no] for t in top)
        return Finding(
            rule=self.id,
            title=f"{len(generic)} more initcalls take 10 ms or more on the init thread ({K.ms(total)} for the "
                  f"top {len(top)})",
            stage="kernel_init",
            saving_ns=None,
            arithmetic=(f"measured: {listing}" + K.coarse_note(boot, top)
                        + ". Not estimated: none has a known switch; what a module or a deferred initcall "
                        "saves depends on whether anything before the application needs it"),
            confidence=Confidence.LOW,
            tradeoff=("a driver built as a module must be loaded by user space (modprobe, mdev/udev), and "
                      "whatever needs it before that fails"),
            change=Change(ChangeKind.MANUAL, "build as modules or defer",
                          f"build the code behind {', '.join(t.event.name for t in top)} as modules loaded "
                          "after the application is ready, or defer the work (late_initcall, a workqueue) if "
                          "the product does not need it at boot"),
            evidence=K.event_evidence(boot, top[:3]),
        )
