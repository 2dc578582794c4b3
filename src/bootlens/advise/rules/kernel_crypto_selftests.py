"""The crypto manager's self-tests at boot -> ``cryptomgr.notests``.

How the tests run (Linux 5.16+, crypto/algapi.c, algboss.c, testmgr.c): every algorithm
registered while the kernel boots gets a test "larval"; the late_initcall
``crypto_algapi_init`` (crypto_start_tests) then tests them one at a time, each in its own
``cryptomgr_test`` kernel thread, and waits for each to finish. An algorithm looked up before
that (a certificate check in ``load_system_certificate_list``, a KDF self-check) has its test
run there and then, and the caller waits for it too. ``cryptomgr.notests`` makes ``alg_test``
return at once ("alg: self-tests disabled"): the threads still start and exit, but do nothing.

So with the process trace the saving is the threads' lifetimes less what an empty thread costs;
without it, only the ``crypto_algapi_init`` part is visible.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...timeline.analyze import BootAnalysis
from ...core.model import Kind
from .. import REGISTRY
from ..base import Change, ChangeKind, Confidence, Context, Finding, Rule
from ..evidence import evidence
from . import _kernel as K

# Share of crypto_algapi_init that cryptomgr.notests removed on the reference target
# (qemu-arm64, Linux 6.1, 6 boots each way): 422.4 ms -> 13.9 ms median, 96.7 %.
ALGAPI_SHARE_PERCENT = 97
MIN_SAVING_NS = 1_000_000  # below a millisecond the advice is not worth a command-line change

TRADEOFF = ("the kernel no longer checks its crypto implementations against known answers at boot: a "
            "broken hardware crypto driver or a miscompiled cipher would go unnoticed and give wrong "
            "results (disk encryption, IPsec, signature checks); not acceptable where FIPS 140 or a "
            "security policy requires the self-tests (with fips=1 the kernel ignores notests anyway)")


@REGISTRY.register
class CryptoSelftests(Rule):
    """Crypto self-tests run on the boot's critical path; ``cryptomgr.notests`` skips them."""

    id = "kernel.crypto_selftests"
    title = "Crypto self-tests at boot"
    needles = ("alg: self-tests disabled", "alg: ")

    def check(self, boot: BootAnalysis, ctx: Context) -> Iterable[Finding]:
        if K.arg(boot, "cryptomgr.notests") not in (None, "0", "n", "N") or K.grep(boot, "alg: self-tests disabled"):
            return
        if K.arg(boot, "fips") not in (None, "0"):
            return  # alg_test() ignores notests in FIPS mode
        algapi = K.first_initcall(boot, "crypto_algapi_init")
        threads = [t for t in K.kthreads(boot, "cryptomgr_test") if t.event.duration_ns is not None]
        alg_lines = K.grep(boot, "alg: ")
        change = Change(ChangeKind.CMDLINE, "cryptomgr.notests",
                        "add cryptomgr.notests to the kernel command line (or build the kernel with "
                        "CONFIG_CRYPTO_MANAGER_DISABLE_TESTS=y, which also skips starting the test threads)")
        if threads:
            yield self._from_threads(boot, threads, algapi, change)
        elif algapi is not None and algapi.duration * ALGAPI_SHARE_PERCENT // 100 >= MIN_SAVING_NS:
            saving = algapi.duration * ALGAPI_SHARE_PERCENT // 100
            yield Finding(
                rule=self.id,
                title=f"Crypto self-tests hold up kernel init for about {K.ms(saving)} "
                      f"(crypto_algapi_init ran {K.ms(algapi.duration)})",
                stage="kernel_init",
                saving_ns=saving,
                arithmetic=(
                    f"crypto_algapi_init ran {K.ms(algapi.duration)} (line {algapi.event.line_no}): it runs "
                    "the deferred self-test of every built-in algorithm and waits for each; with "
                    f"cryptomgr.notests it kept {100 - ALGAPI_SHARE_PERCENT}% on the reference target (the "
                    "test threads still start), so "
                    f"{K.ms(algapi.duration)} x {ALGAPI_SHARE_PERCENT}% = {K.ms(saving)}. Tests started "
                    "earlier by algorithm look-ups (e.g. in load_system_certificate_list) are not visible "
                    "without the process trace (trace_event=sched:sched_process_fork,sched:"
                    "sched_process_exit tp_printk), so this is a lower bound"),
                confidence=Confidence.MEDIUM,
                tradeoff=TRADEOFF,
                change=change,
                evidence=evidence(boot.boot, [algapi.event.line_no, algapi.event.end_line_no,
                                              *(K.line_no(boot, i) for i in alg_lines[:2])], K.EVIDENCE_MAX),
            )
        elif any(boot.boot.lines.text[i].startswith(("alg: No test for", "alg: self-tests for"))
                 for i in alg_lines):
            # Before Linux 5.16 each test ran when its algorithm registered, inside that
            # module's initcall: the time is real but spread where the log cannot attribute it.
            nos = [K.line_no(boot, i) for i in alg_lines]
            yield Finding(
                rule=self.id,
                title=f"Crypto self-tests run at boot ({len(nos)} 'alg:' lines)",
                stage="kernel_init",
                saving_ns=None,
                arithmetic=("not estimated: the tests run inside the initcalls that register each "
                            "algorithm, and without the process trace (trace_event=sched:"
                            "sched_process_fork,sched:sched_process_exit tp_printk, which shows each "
                            "cryptomgr_test thread) the log does not say how long they took"),
                confidence=Confidence.LOW,
                tradeoff=TRADEOFF,
                change=change,
                evidence=evidence(boot.boot, nos, K.EVIDENCE_MAX),
            )

    def _from_threads(self, boot: BootAnalysis, threads: list[K.Timed], algapi: K.Timed | None,
                      change: Change) -> Finding:
        """The estimate from each test thread's lifetime (fork to exit)."""
        total = sum(t.duration for t in threads)
        floor = min(t.duration for t in threads)
        n = len(threads)
        saving = max(0, total - n * floor)
        hosts = K.pick(boot, K.Query(Kind.INITCALL, returned=K.among(True))).enclosing([t.start for t in threads])
        where: dict[str, list[int]] = {}
        for t, host in zip(threads, hosts):
            label = f"during {host.event.name}" if host is not None else "with no initcall seen running"
            where.setdefault(label, []).append(t.duration)
        parts = sorted(where.items(), key=lambda kv: -sum(kv[1]))
        places = ", ".join(f"{len(d)} {label} ({K.ms(sum(d))})" for label, d in parts[:4])
        if len(parts) > 4:
            places += f", {sum(len(d) for _, d in parts[4:])} elsewhere"
        ncpu, _ = K.cpus(boot)
        one_cpu = ncpu == 1
        longest = sorted(threads, key=lambda t: -t.duration)[:3]
        nos: list[int | None] = []
        if algapi is not None:
            nos += [algapi.event.line_no, algapi.event.end_line_no]
        for t in longest:
            nos.append(t.event.end_line_no)
        return Finding(
            rule=self.id,
            title=f"{n} crypto self-tests take {K.ms(saving)} of kernel init",
            stage="kernel_init",
            saving_ns=saving,
            arithmetic=(
                f"{n} cryptomgr_test threads (one per algorithm test) lived {K.ms(total)} in all: {places}. "
                f"With cryptomgr.notests each thread still starts and exits; the shortest here lived "
                f"{K.ms(floor)}, so {K.ms(total)} - {n} x {K.ms(floor)} = {K.ms(saving)}"
                + ("" if one_cpu else
                   "; with more than one CPU, tests that ran beside unrelated initcalls may have "
                   "overlapped them, so this is an upper bound")),
            confidence=Confidence.HIGH if one_cpu else Confidence.MEDIUM,
            tradeoff=TRADEOFF,
            change=change,
            evidence=evidence(boot.boot, nos, K.EVIDENCE_MAX),
        )
