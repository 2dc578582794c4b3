"""The advisor's questions to a native block's rows (native/src/model/query.rs ``pick`` and its
``Picked``) give what the Python path of advise/rules/_kernel.py gives (``Query.test`` over the
events, the path of a boot without a block and of the events outside one), on real logs: each
boot once with its events a native block and once as a plain tuple; the rules' findings too."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS, GOLDEN, WILD_LOGS

from bootlens.advise import advise
from bootlens.advise.rules import _kernel as K
from bootlens.timeline.analyze import BootAnalysis, analyze_paths
from bootlens.core.model import Clock, Event, Events, InitcallDetail, Kind, ProbeDetail, Stamp

INPUTS = sorted(CORPUS.glob("*.log")) + sorted(GOLDEN.glob("*/*.log")) + WILD_LOGS


def _replace(obj: object, **kw: object) -> object:
    rep = getattr(obj, "_replace", None) or getattr(obj, "replace")
    return rep(**kw)


def _plain(ba: BootAnalysis) -> BootAnalysis:
    """The same boot with its events a plain tuple (no native block)."""
    boot = _replace(ba.boot, events=tuple(ba.boot.events))
    return _replace(ba, boot=boot, times=tuple(ba.times))  # type: ignore[return-value]


def _block_boots(log: Path) -> list[BootAnalysis]:
    return [b for b in analyze_paths([str(log)]).boots
            if isinstance(b.boot.events, Events) and b.boot.events.block is not None]


def _queries(ba: BootAnalysis) -> list[K.Query]:
    """Queries of every filter, some of them on this boot's own values."""
    inits = [e for e in ba.boot.events if e.kind is Kind.INITCALL]
    names = sorted({e.name for e in inits})[:3]
    rets = sorted({e.detail.ret for e in ba.boot.events if isinstance(e.detail, (InitcallDetail, ProbeDetail))},
                  key=lambda r: (r is None, r or 0))[:3]
    times = sorted(t for t in ba.times if t is not None)
    mid = (times[len(times) // 3], times[2 * len(times) // 3]) if times else (0, 1)
    q, p = K.Query(Kind.INITCALL), K.Query(Kind.PROBE)
    return [
        q, p, K.Query(Kind.FIXUP),
        q._replace(returned=K.among(True)), q._replace(returned=K.among(False)),
        q._replace(returned=K.among(True), pid=K.among(K.MAIN_PID, None)),
        q._replace(pid=K.other_than(K.MAIN_PID), module=K.other_than(None)),
        q._replace(module=K.among(None), ret=K.among(*rets)), q._replace(ret=K.other_than(0, -19, -6)),
        q._replace(names=K.among(*names)), q._replace(names=K.other_than(*names), min_ns=1_000_000),
        q._replace(name_has="_init"), q._replace(starts=mid), q._replace(min_ns=0),
        p._replace(ret=K.among(0)), p._replace(ret=K.among(19, 6, -19, -6, 517, -517)), p._replace(ret=K.other_than(0)),
        p._replace(name_has=":"), p._replace(min_ns=10_000_000), p._replace(starts=mid),
    ]


def _same(ba: BootAnalysis, plain: BootAnalysis, q: K.Query) -> None:
    got, want = K.pick(ba, q), K.pick(plain, q)
    assert want._native is None
    assert got.located() == want.located() and len(got) == len(want), q
    assert got.names() == want.names() and got.total() == want.total() and got.first() == want.first(), q
    for n in (0, 1, 3, 1000):
        assert got.longest(n) == want.longest(n), (q, n)
    some = set(sorted(want.names())[::2])
    assert got.keep(some).located() == want.keep(some).located(), q
    ats: list[int | None] = [None, -1, *(t.start for t in K.pick(plain, K.Query(Kind.PROBE)).timed())]
    ats += [t for t in plain.times[:: max(1, len(plain.times) // 200)]]
    assert got.enclosing(ats) == want.enclosing(ats), q


@pytest.mark.parametrize("log", INPUTS, ids=lambda p: p.name)
def test_picks_are_the_python_picks(log: Path) -> None:
    boots = _block_boots(log)
    for ba in boots:
        plain = _plain(ba)
        for q in _queries(ba):
            _same(ba, plain, q)


def test_events_of_a_block_kind_outside_the_block(tmp_path: Path) -> None:
    """An initcall and a probe outside the block (another parser's, appended) are picked beside
    its rows, in log order, as the plain events' Python path picks them."""
    log = CORPUS / "qemu-x86_64-initcall.console.log"
    (ba,) = _block_boots(log)[:1]
    evs = ba.boot.events
    last = max(t for t in ba.times if t is not None)
    extra = (Event(Kind.INITCALL, "outside_init", Stamp(Clock.KERNEL, 1), 5_000_000, 10**9, 10**9,
                   InitcallDetail(None, None, -19, True)),
             Event(Kind.PROBE, "outside.dev", Stamp(Clock.KERNEL, 2), 7_000_000, 10**9 + 1, 10**9 + 1,
                   ProbeDetail("outside.dev", None, 0)))
    both = _replace(ba, boot=_replace(ba.boot, events=evs + extra), times=(*ba.times, last - 3_000_000, last))
    assert isinstance(both.boot.events, Events) and both.boot.events.block is not None  # type: ignore[attr-defined]
    plain = _plain(both)  # type: ignore[arg-type]
    for q in _queries(both):  # type: ignore[arg-type]
        _same(both, plain, q)  # type: ignore[arg-type]
    got = K.pick(both, K.Query(Kind.INITCALL, names=K.among("outside_init")))  # type: ignore[arg-type]
    assert [t.event for t in got.timed()] == [extra[0]] and got._native is not None and not len(got._native)


def test_a_probe_detail_has_only_ret() -> None:
    with pytest.raises(ValueError):
        K.Query(Kind.PROBE, pid=K.among(1)).fields()


@pytest.mark.parametrize("log", INPUTS, ids=lambda p: p.name)
def test_findings_are_those_of_the_plain_events(log: Path) -> None:
    """Every rule says the same of a boot whose events are a native block and of the same events
    as a tuple (the rules' one code path, over columns or over Python events)."""
    for ba in _block_boots(log):
        assert advise(ba) == advise(_plain(ba))


def _shapes_log(tmp_path: Path) -> Path:
    """What the kernel rules look for, each more than once: built-in initcalls that failed (one
    name also succeeded), slow ones with probes and crypto test threads inside, probes that found
    nothing (functions of a card that works among them), deferred and long ones on the init
    thread, and initcalls outside the init thread."""
    out: list[tuple[float, str]] = [(0.0, "Linux version 6.1.0 (x@y) #1 SMP"), (0.001, "smp: Brought up 1 node, 2 CPUs")]
    t = 0.1

    def call(name: str, us: int, ret: int = 0, pid: int = 1, inside: tuple[str, ...] = ()) -> None:
        nonlocal t
        out.append((t, f"calling  {name}+0x0/0x40 @ {pid}"))
        for k, line in enumerate(inside):
            out.append((t + (k + 1) * us / 1e6 / (len(inside) + 2), line))
        out.append((t + us / 1e6, f"initcall {name}+0x0/0x40 returned {ret} after {us} usecs"))
        t += us / 1e6 + 1e-5

    for i in range(3):
        call(f"xen_init_{i}", 2500, -19)
        call("acpi_thing", 1500, -6 if i else 0)
        call(f"async_{i}", 15000, 0, pid=7 + i)
    call("raid6_select_algo", 4000)
    call("big_init", 50000, inside=("big: hello", "probe of slow.dev returned 0 after 15000 usecs",
                                    "probe of other.dev returned 0 after 26000 usecs"))
    call("crypto_algapi_init", 30000, inside=tuple(
        f"sched_process_fork: comm=kthreadd pid=2 child_comm=cryptomgr_test child_pid={300 + k}" for k in range(2)))
    call("rtc_hctosys", 3000)
    for k in range(2):
        out.append((t + k * 1e-3, f"sched_process_exit: comm=cryptomgr_test pid={300 + k} prio=120"))
    call("mmc_init", 9000, inside=("probe of mmc1:0001:1 returned -19 after 3000 usecs",
                                   "probe of mmc1:0001:2 returned 0 after 10 usecs",
                                   "probe of 1-1:1.0 returned -19 after 2000 usecs",
                                   "probe of gone.dev returned -19 after 5000 usecs",
                                   "probe of defer.dev returned 517 after 2000 usecs",
                                   "probe of defer.dev returned -517 after 2000 usecs"))
    out.append((t, "Run /init as init process"))
    log = tmp_path / "shapes.log"
    log.write_text("".join(f"[{s:12.6f}] {m}\n" for s, m in sorted(out, key=lambda x: x[0])))
    return log


def test_the_kernel_rules_shapes(tmp_path: Path) -> None:
    (ba,) = _block_boots(_shapes_log(tmp_path))
    plain = _plain(ba)
    for q in _queries(ba):
        _same(ba, plain, q)
    found = advise(ba)
    assert found == advise(plain)
    assert {"kernel.absent_hardware", "kernel.slow_initcalls", "kernel.crypto_selftests", "kernel.async_probe",
            "kernel.rtc_hctosys"} <= {f.rule for f in found}
    assert any("mostly the probe of other.dev" in f.arithmetic for f in found)
