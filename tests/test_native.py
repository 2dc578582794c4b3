"""The native core (native/): the one implementation of printk/grabserial framing, the keyword
index, the column helpers and the initcall scan (docs/performance.md).

What the golden tests do not check is checked here, on the corpus, every golden case, a generated
initcall-heavy log and randomly mutated lines: framing only peels prefixes off (each message is
the end of its raw line), the index is what a plain search of the messages finds, every number the
initcall scan uses is in range, the native JSON of an event is what event_dict says; and by hand
the edge cases (out-of-range stamps and numbers, bounds, a broken install).
"""

from __future__ import annotations

import json
from pathlib import Path
import random
import re
import subprocess
import sys
from typing import Any

import pytest
from conftest import CORPUS, GOLDEN, INDEX_NEEDLES, INDEX_PREFIXES, SHARED_CORPUS

from bootlens.read import reader as L
from bootlens.core import lines as LC
from bootlens.core import numbers as N
from bootlens.core.model import Clock, Event, InitcallDetail, Kind, ProbeDetail, Stamp
from bootlens.parsers.initcall import NATIVE_TYPES, NEEDLES
from bootlens.render.jsonout import event_dict

native = LC.native_module()

INPUTS = sorted(CORPUS.glob("*.log")) + sorted(GOLDEN.glob("*/*.log"))


def generated(n: int = 20_000, seed: int = 7) -> str:
    """An initcall_debug log with the shapes the fast paths must get right or leave alone."""
    rnd = random.Random(seed)
    names = ["pl011_init", "init_sd", "a+b_weird", "x[y]", "ümlaut_init", "foo+0x1/0x2", "+0x0/0x1", "z"]
    mods = [None, "sd_mod", "ahci", "bad mod"]
    out, t, pending = [], 0, []
    for _ in range(n):
        t += rnd.randint(1, 900)
        ts = f"[{t // 1_000_000:5d}.{t % 1_000_000:06d}] "
        r = rnd.random()
        if r < 0.35 or not pending:
            fn, mod = rnd.choice(names), rnd.choice(mods)
            off = rnd.choice(["+0x0/0x30", "", "+0xZZ/0x1", "+0x10/0xab"])
            m = f" [{mod}]" if mod else ""
            out.append(f"{ts}calling  {fn}{off}{m} @ {rnd.choice([1, 1, 1, 45, 123])}")
            pending.append((fn, off, m))
        elif r < 0.75:
            fn, off, m = pending.pop(rnd.randrange(len(pending)))
            pre = rnd.choice(["", "", "", "sdc:"])
            unit = rnd.choice(["usecs", "usecs", "msecs"])
            out.append(f"{ts}{pre}initcall {fn}{off}{m} returned {rnd.choice([0, -19, 0])} after "
                       f"{rnd.randint(0, 90000)} {unit}")
        elif r < 0.8:
            out.append(f"{ts}probe of dev{rnd.randint(0, 9)}.x returned 0 after {rnd.randint(0, 5000)} usecs")
        elif r < 0.83:
            dev = f"pci 0000:00:0{rnd.randint(0, 3)}.0"
            q = rnd.choice(["quirk_a", "quirk_callback"])
            out.append(f"{ts}{dev}: calling  {q}+0x0/0x20 @ 1")
            out.append(f"{ts}{dev}: {q}+0x0/0x20 took {rnd.randint(0, 99)} usecs")
        elif r < 0.85:
            out.append(f"{ts}initcall 0xc0{rnd.randint(100000, 999999)} ran for {rnd.randint(0, 9)} msecs: old_init+0x0/0x20")
        elif r < 0.87:
            out.append(f"{ts}initcall broken returned x after y usecs")
        else:
            out.append(f"{ts}ordinary message {rnd.random():.6f} [not a stamp] <6>")
    return "\n".join(out) + "\n"


def mutated(seed: int = 11, n: int = 3000) -> str:
    """Corpus lines with random edits: digits, brackets, spaces and non-ASCII in odd places."""
    rnd = random.Random(seed)
    src = (CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log").read_text(errors="replace").splitlines()
    alphabet = "0123456789[]. <>-+xTC\té/:@"
    return "\n".join(edited(rnd, rnd.choice(src), alphabet) for _ in range(n)) + "\n"


def edited(rnd: random.Random, line: str, alphabet: str, least: int = 0) -> str:
    """``line`` with ``least`` to 4 random edits: a character of ``alphabet`` put in, one taken out,
    or one replaced."""
    s = list(line)
    for _ in range(rnd.randint(least, 4)):
        pos = rnd.randrange(len(s) + 1)
        op = rnd.random()
        if op < 0.4:
            s.insert(pos, rnd.choice(alphabet))
        elif op < 0.8 and s:
            del s[min(pos, len(s) - 1)]
        elif s:
            s[min(pos, len(s) - 1)] = rnd.choice(alphabet)
    return "".join(s)


def initcall_events(lines: LC.Lines, cands: Any) -> tuple[list[Event], int, int, int, int]:
    """The oracle of the native block (native/src/model/build.rs ``initcall_block``): the events
    made of the initcall scan's rows (``initcalls``), built here in Python by the rules the block
    follows, sorted stably by line (calls, probes, fixups). A line's time is its printk time,
    else its host time. Returns (events, unfinished, not understood, first bad, out of range)."""
    calls, probes, fixups, bad, first_bad, oor = native.initcalls(lines.text, cands)
    kernel, host, first = lines.kernel, lines.host, lines.first

    def at(i: int, minus: int) -> Stamp | None:
        k, h = kernel[i], host[i]
        if k is not None:
            return Stamp(Clock.KERNEL, k - minus)
        return None if h is None else Stamp(Clock.HOST, h - minus)

    out: list[Event] = []
    unfinished = 0
    for name, module, ci, ri, dur, pid, ret in calls:
        if ri < 0:  # never returned
            unfinished += 1
            out.append(Event(Kind.INITCALL, name, at(ci, 0), None, first + ci, None,
                             InitcallDetail(pid, module, None, False)))
        elif ci >= 0:
            out.append(Event(Kind.INITCALL, name, at(ci, 0), dur, first + ci, first + ri,
                             InitcallDetail(pid, module, ret, True)))
        else:  # a return without its call: it started a duration before
            out.append(Event(Kind.INITCALL, name, at(ri, dur or 0), dur, first + ri, first + ri,
                             InitcallDetail(None, module, ret, True)))
    for dev, drv, _, ri, dur, ret in probes:
        out.append(Event(Kind.PROBE, dev, at(ri, dur), dur, first + ri, first + ri, ProbeDetail(dev, drv, ret)))
    for dev, quirk, si, ri, dur, _ in fixups:
        start, line = (at(si, 0), si) if si >= 0 else (at(ri, dur), ri)
        out.append(Event(Kind.FIXUP, quirk or "", start, dur, first + line, first + ri, ProbeDetail(dev, None, 0)))
    out.sort(key=lambda e: e.line_no)
    return out, unfinished, bad, first_bad, oor


def texts() -> list[tuple[str, str]]:
    out = []
    for p in INPUTS:
        text, _ = L.clean_text(p.read_bytes())
        out.append((p.name, text))
    out.append(("generated", generated()))
    out.append(("mutated", mutated()))
    return out


CASES = texts()
IDS = [name for name, _ in CASES]


@pytest.mark.parametrize("framing", ["plain", "journalctl", "grabserial-t"])
@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_frame_peels_prefixes_and_indexes(name: str, text: str, framing: str) -> None:
    """One column entry a line; each message is the end of its raw line (framing only takes
    prefixes off); a line with a printk time shows that time in what was taken off; the index
    built while framing is what a plain search of the messages finds."""
    raw = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    msgs, kern, host, _, hits, starts = native.frame(text, framing, list(INDEX_NEEDLES), list(INDEX_PREFIXES))
    assert len(msgs) == len(kern) == len(host) == len(raw)
    for r, m, k in zip(raw, msgs, kern):
        assert r.endswith(m), (r, m)
        if k is not None and k < 2**63 - 1:
            assert f"{k // 10**9}.{k % 10**9 // 1000:06d}]" in r[: len(r) - len(m)], (r, k)
    texts = list(msgs)
    for needle, got in zip(INDEX_NEEDLES, hits):
        assert got == [i for i, t in enumerate(texts) if needle in t], needle
    for prefix, got in zip(INDEX_PREFIXES, starts):
        assert got == [i for i, t in enumerate(texts) if t.startswith(prefix)], prefix
    assert LC.grep(texts, ["call", "é"]) == [[i for i, t in enumerate(texts) if n in t] for n in ("call", "é")]


def test_gaps_and_steps_back_by_hand() -> None:
    """None is skipped, ties go to the earlier position, n bounds the answer."""
    v = [None, 5, 3, None, 10, 10, 2, None, 30, 31]
    assert LC.steps_back(v) == [(2, 1), (6, 5)]
    assert LC.gaps(v, 2) == [(28, 6, 8), (7, 2, 4)]
    assert LC.gaps(v, 100) == [(28, 6, 8), (7, 2, 4), (1, 8, 9), (0, 4, 5), (-2, 1, 2), (-8, 5, 6)]
    assert LC.gaps([None, 4, None], 3) == [] and LC.steps_back([]) == []
    assert LC.gaps([1, 3, 5], 1) == [(2, 0, 1)]  # equal gaps: the earlier one


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_initcall_events_are_sane(name: str, text: str) -> None:
    """Every event of the block comes from a line that names it, in line order, with numbers in
    range; what was not used is counted (as the rows count it)."""
    lines = L.frame_text(text, "plain")
    cands = lines.grep(*NEEDLES)
    calls, probes, fixups, bad, first_bad, oor = native.initcalls(lines.text, cands)
    block, unfinished, bad2, first_bad2, oor2 = native.initcall_block(
        lines.text, cands, lines.kernel, lines.host, lines.first, NATIVE_TYPES)
    built = list(block)
    assert (bad2, first_bad2, oor2) == (bad, first_bad, oor)
    assert len(built) == len(calls) + len(probes) + len(fixups)
    assert unfinished == sum(1 for c in calls if c[3] < 0)
    assert [e.line_no for e in built] == sorted(e.line_no for e in built)
    for e in built:
        assert type(e) is Event and e.kind in (Kind.INITCALL, Kind.PROBE, Kind.FIXUP)
        assert e.duration_ns is None or 0 <= e.duration_ns <= N.TIME_NS_MAX
        end = e.end_line_no if e.end_line_no is not None else e.line_no
        assert e.name in lines.text[lines.index_of(end)] or e.kind is Kind.PROBE
    if bad:
        assert first_bad in cands
    if name == "generated":
        assert bad > 0 and unfinished > 0 and any(e.kind is Kind.FIXUP for e in built)


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_initcall_json(name: str, text: str) -> None:
    """The native JSON of a timed initcall is what event_dict writes for it."""
    lines = L.frame_text(text, "plain")
    block, *_ = native.initcall_block(lines.text, lines.grep(*NEEDLES), lines.kernel, lines.host, lines.first,
                                      NATIVE_TYPES)
    events = list(block)
    times = [None if e.start is None else e.start.ns for e in events]
    from bootlens.timeline.align import Alignment

    al = Alignment(Clock.KERNEL, "kernel_start", (), offsets={Clock.KERNEL: 0})
    fast = native.dump_initcalls(events, times, Kind.INITCALL, Clock.KERNEL)
    assert len(fast) == len(events)
    for f, e, t in zip(fast, events, times):
        if f is not None:
            assert json.loads(f) == json.loads(json.dumps(event_dict(e, al, t)))
    if "initcall" in name or name == "generated":
        assert any(f is not None for f in fast)


def test_initcall_scan_by_hand() -> None:
    """Pairing, module inits, the old forms, probes, fixups, a line not understood, numbers out of
    range: each row checked by hand."""
    text = "\n".join([
        "calling  a_init+0x0/0x10 @ 1",                                 # 0
        "calling  m_init+0x0/0x10 [sd_mod] @ 45",                       # 1
        "initcall a_init+0x0/0x10 returned 0 after 12 usecs",           # 2
        "sdc:initcall m_init+0x0/0x10 [sd_mod] returned -19 after 3 msecs",  # 3
        "initcall 0xc0123456 ran for 7 msecs: old_init+0x0/0x20",       # 4
        "initcall broken returned x after y usecs",                     # 5: not understood
        f"calling  big+0x0/0x1 @ {N.PID_MAX + 1}",                      # 6: pid out of range
        f"initcall huge+0x0/0x1 returned 0 after {'9' * 25} usecs",     # 7: duration out of range
        "probe of 9000000.pl011 returned 0 after 88 usecs",             # 8
        "pci 0000:00:01.3: calling  quirk_a+0x0/0x30 @ 1",              # 9
        "pci 0000:00:01.3: quirk_a+0x0/0x30 took 4 usecs",              # 10
        "calling  never_init+0x0/0x10 @ 1",                             # 11: unfinished
    ]) + "\n"
    lines = L.frame_text(text, "plain")
    calls, probes, fixups, bad, first_bad, oor = native.initcalls(lines.text, lines.grep(*NEEDLES))
    assert calls == [("a_init", None, 0, 2, 12_000, 1, 0), ("m_init", "sd_mod", 1, 3, 3_000_000, 45, -19),
                     ("old_init", None, -1, 4, 7_000_000, None, 0), ("never_init", None, 11, -1, None, 1, None)]
    assert probes == [("9000000.pl011", None, -1, 8, 88_000, 0)]
    assert fixups == [("pci 0000:00:01.3", "quirk_a", 9, 10, 4_000, 0)]
    assert (bad, first_bad, oor) == (1, 5, 2)


def test_a_probed_device_name_may_hold_spaces() -> None:
    """dev_name() is free text: "probe of Device ID probe.0 returned 0 after 40754 usecs" (our own
    boot of the qemu-x86_64-systemd target, tests/golden/initcall/README.md) is a probe of
    "Device ID probe.0", not a line dropped unread; every probe line of the excerpt is one."""
    from bootlens.timeline.analyze import analyze_paths

    log = GOLDEN / "initcall" / "qemu-x86_64-systemd-probe-names.log"
    probes = [e for e in analyze_paths([str(log)]).boots[0].boot.events if e.kind == Kind.PROBE]
    assert len(probes) == log.read_bytes().count(b"probe of") == 14
    spaced = [(e.name, e.duration_ns, e.line_no, e.detail.ret) for e in probes if " " in e.name]  # type: ignore[union-attr]
    assert spaced == [("Device ID probe.0", 40_754_000, 19, 0), ("Device ID probe.0", 13_176_000, 24, 0)]


def test_prefix_readers_are_the_documented_patterns() -> None:
    """read/prefix.rs's readers of the printk, grabserial -t and -T prefixes (the one implementation,
    used by frame and by the framings framed in Python) and its framing detection answer as the
    formats' patterns (written here as the oracle, with re.ASCII) on every line of every corpus,
    wild and golden log and on 200,000 made lines of the characters that matter."""
    import re

    # (Amlogic's "@cpu" after the time: "[    5.434249@0]")
    printk = re.compile(r"[ \t]*(?:<(\d{1,3})>)?\[ *(\d{1,10})\.(\d{6})(?:@\d{1,4})?\](?:\[ *[TC]\d+\])? ?", re.ASCII)
    gs_t = re.compile(r"\[ *(\d{1,10})\.(\d{6}) +(-?)(\d+)\.(\d{6})\] ?", re.ASCII)
    gs_sys = re.compile(r"\[(\d\d):(\d\d):(\d\d)\.(\d{6})(?: +-?\d+\.\d{6})?\] ?", re.ASCII)
    journal = re.compile(r"\S+ kernel: |\S+ (?=[^\s\[:]+(?:\[\d+\])?: )", re.ASCII)
    journal_kernel = re.compile(r"\S+ kernel: ", re.ASCII)

    def detect(sample: list[str]) -> str | None:
        n = len(sample)
        if sum(1 for x in sample if gs_t.match(x)) * 2 >= n:
            return "grabserial-t"
        if sum(1 for x in sample if gs_sys.match(x)) * 2 >= n:
            return "grabserial-T"
        j = k = 0
        for x in sample:
            m = printk.match(x)
            if m and journal.match(x, m.end()):
                j += 1
                k += journal_kernel.match(x, m.end()) is not None
        return "journalctl" if j * 2 >= n and k else None

    rnd = random.Random(14)
    made = ["".join(rnd.choice("[]0123456789.: -<>\tTCkernelhost[1]@\u00e9") for _ in range(rnd.randint(0, 40)))
            for _ in range(200_000)]
    made += ["[12:34:56.123456 0.000100] x", "[12:34:56.123456] x", "[12:34:56.1234567] x", "  <6>[    1.234567][  T12] m",
             "<1234>[ 1.000000] x", "[12345678901.000000] x", "[    1.234567] host kernel: m", "[1.000000   -0.000100] x",
             "\u00e9[    1.234567] x", "[    5.434249@0] x", "[    5.434249@12345] x", "[    5.434249@] x"]
    texts = [p.read_bytes().decode("utf-8", "replace") for p in INPUTS + sorted((CORPUS / "wild").glob("**/*.log"))]
    lines = [x for t in texts for x in t.split("\n")] + made
    for x in lines:
        for pos in (0, 1, 3):
            m = printk.match(x, pos) if pos <= len(x) else None
            want = None if m is None else (m.end(), int(m[2] + m[3]) * 1000)
            assert native.printk_prefix(x, pos) == want, (x, pos)
        h = gs_sys.match(x)
        want = None if h is None else (h.end(), ((int(h[1]) * 60 + int(h[2])) * 60 + int(h[3])) * 10**9 + int(h[4]) * 1000)
        assert native.grabserial_sys_prefix(x) == want, x
        g = gs_t.match(x)
        assert native.grabserial_t_delta(x) == (None if g is None else (g[3] == "-", g[4] + g[5])), x
    heads = [[x for x in t[: 1 << 16].split("\n")[:1600] if x.strip()][:400] for t in texts]
    heads += [[rnd.choice(made[-9:] + made[:50]) for _ in range(rnd.randint(1, 6))] for _ in range(3000)]
    said = [detect(h) for h in heads if h]
    assert [native.detect_framing(h) for h in heads if h] == said
    assert {"grabserial-t", "grabserial-T", "journalctl", None} <= set(said)  # each answer is tested


def test_initcall_numbers_at_every_bound_are_used_only_in_range() -> None:
    """Digit runs at and around every bound the scan applies (issue 10): what is used is in
    range, the rest is counted."""
    nums = ["0", "1", "00", "-0", "-1", "007", "9" * 25, "9" * 4301, "0" * 30 + "12"]
    for v in (N.PID_MAX, N.INT_MAX, -N.INT_MIN, N.TIME_NS_MAX // 1000, N.TIME_NS_MAX // 1_000_000, 2**63 - 1,
              2**63, 2**64 - 1, 2**64, 10**19, 10**20):
        for d in (-1, 0, 1):
            nums += [str(v + d), "-" + str(v + d)]
    texts = ["Booting Linux on physical CPU 0x0"]
    for a in nums:
        for b in ("0", "5", str(N.TIME_NS_MAX), "9" * 25):
            n = len(texts)
            texts += [f"calling  f{n}+0x0/0x10 @ {a}", f"initcall f{n}+0x0/0x10 returned {a} after {b} usecs",
                      f"initcall g{n} returned 0 after {a} msecs", f"probe of dev{n} returned {a} after {b} usecs",
                      f"x y: probe with driver d returned {b} after {a} usecs",
                      f"pci 0000:00:01.{n}: calling  q+0x0/0x30 @ 1", f"pci 0000:00:01.{n}: q+0x0/0x30 took {a} usecs"]
    lines = L.frame_text("\n".join(texts) + "\n", "plain")
    calls, probes, fixups, bad, first_bad, oor = native.initcalls(lines.text, lines.grep(*NEEDLES))
    assert oor > 0
    for fn, mod, ci, ri, dur, pid, ret in calls:
        assert dur is None or 0 <= dur <= N.TIME_NS_MAX
        assert pid is None or 0 <= pid <= N.PID_MAX
        assert ret is None or N.INT_MIN <= ret <= N.INT_MAX
    for _, _, _, _, dur, ret in probes + fixups:
        assert 0 <= dur <= N.TIME_NS_MAX and N.INT_MIN <= ret <= N.INT_MAX
    assert native.BOUNDS == (N.TIME_NS_MAX, N.PID_MAX, N.INT_MIN, N.INT_MAX)


def test_a_broken_install_says_so_in_one_line() -> None:
    """Without bootlens._scan (a broken install) the command says what is wrong in one line."""
    code = "import sys; sys.modules['bootlens._scan'] = None; sys.argv = ['bootlens', 'analyze', '-']; " \
           "from bootlens.cli import main; main()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, input="x\n", timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("bootlens: its native module bootlens._scan does not load") and "apt-get install cargo" in line


def test_text_column_is_a_sequence_of_the_messages() -> None:
    """frame() holds the input once (str or ASCII bytes) and gives each message on demand: the
    list operations the parsers use give what a list of str gives."""
    body = "[    1.000000] first\nno stamp\n[    2.500000] <é> third\n\n[    3.000000] last"
    want = ["first", "no stamp", "<é> third", "", "last"]
    for src in (body, body + "\n", body.encode()):
        cols = native.frame(src, "plain", ["t"], ["l"])
        col = cols[0]
        assert type(col).__name__ == "TextColumn" and len(col) == 5
        assert col == want and list(col) == want and not (col != want)
        assert [col[i] for i in range(-5, 5)] == want + want
        assert col[1:3] == want[1:3] and col[::2] == want[::2] and col[3:] == want[3:]
        assert cols[4] == [[0, 1, 2, 4]] and cols[5] == [[4]]
        with pytest.raises(IndexError):
            col[5]
        col[2] = "rewritten"
        assert col[2] == "rewritten" and col[1:3] == ["no stamp", "rewritten"]
        assert LC.grep(col, ["rewr", "st"]) == [[2], [0, 1, 4]] and LC.starting(col, ["r", "n"]) == [[2], [1]]
    with pytest.raises(ValueError):
        native.frame(b"caf\xe9\n", "plain")


def test_time_column_is_a_sequence_of_optional_times() -> None:
    """frame()'s kernel and host columns hold i64 (8 bytes a line) and answer as a list of
    int | None does, plus the whole-column questions settle and the parsers ask."""
    cols = native.frame("[    1.000000] a\nb\n[    0.500000] c\n[9999999999.000000] d\n", "plain")
    k, h = cols[1], cols[2]
    assert type(k).__name__ == "TimeColumn" and len(k) == 4
    assert k == [1_000_000_000, None, 500_000_000, 2**63 - 1]  # over i64: kept as out of range
    assert list(h) == [None] * 4 and h.count(None) == 4 and k.count(None) == 1
    assert k[-2] == 500_000_000 and k[1:3] == [None, 500_000_000] and k[::2] == [1_000_000_000, 500_000_000]
    assert k.index(None) == 1 and k.nones() == [1] and h.nones() == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        k.index(None, 2)
    assert k.drop_outside(2**60) == 1 and k[3] is None
    k[1] = 7
    k[0] = None
    k[2] = 10**30  # too large for i64: out of range, as numbers.TIME_NS_MAX says
    assert k.tolist() == [None, 7, 2**63 - 1, None]
    with pytest.raises(TypeError):
        k[0] = "1.0"
    with pytest.raises(IndexError):
        k[4]
    assert LC.gaps(k, 1) == [(2**63 - 8, 1, 2)] and LC.steps_back(k) == []


# --- the columnar initcall block (native/src/model/, model.Events) ---


def _block_and_events(text: str) -> tuple[LC.Lines, object, tuple[Event, ...]]:
    lines = L.frame_text(text, "plain")
    cands = lines.grep(*NEEDLES)
    block, *rest = native.initcall_block(lines.text, cands, lines.kernel, lines.host, lines.first, NATIVE_TYPES)
    built, *rest2 = initcall_events(lines, cands)
    assert rest == rest2  # unfinished, not understood, first bad, out of range
    return lines, block, tuple(built)


def test_block_rows_put_in_line_order_in_place_over_long_cycles() -> None:
    """The block's rows come in the scan's order (calls as they return, then probes, fixups and
    unfinished calls) and are put in line order in place, a cycle of the permutation at a time:
    nested calls returning in reverse, probes and fixups between them, unfinished calls and a
    row already in place give long and short cycles; the rows are the oracle's (sorted
    stably by line)."""
    for depth in (1, 2, 3, 17, 200):
        rows, t = [], 0
        for k in range(depth):
            t += 1
            rows.append(f"[{t // 1000000:5d}.{t % 1000000:06d}] calling  f{k} @ {k + 1}")
            if k % 5 == 2:
                rows.append(f"[{t // 1000000:5d}.{t % 1000000:06d}] probe of d{k} returned 0 after {k} usecs")
            if k % 7 == 3:
                rows.append(f"[{t // 1000000:5d}.{t % 1000000:06d}] pci 0000:00:0{k % 10}.0: calling  q{k}+0x0/0x20 @ 1")
        for k in reversed(range(depth)):
            t += 1
            if k % 4 != 1:  # every fourth never returns
                rows.append(f"[{t // 1000000:5d}.{t % 1000000:06d}] initcall f{k} returned 0 after {k + 1} usecs")
            if k % 7 == 3:
                rows.append(f"[{t // 1000000:5d}.{t % 1000000:06d}] pci 0000:00:0{k % 10}.0: q{k}+0x0/0x20 took {k} usecs")
        _, block, built = _block_and_events("\n".join(rows) + "\n")
        assert len(block) == len(built) > 0
        assert list(block) == list(built), depth
        assert [e.line_no for e in block] == sorted(e.line_no for e in block)


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_block_rows_equal_the_events_built_the_old_way(name: str, text: str) -> None:
    """Every row of the block, by index (also negative), by slice and by iteration, is the Event
    oracle builds for it from the scan's rows (initcall_events, above), field by field."""
    _, block, built = _block_and_events(text)
    assert len(block) == len(built)
    assert list(block) == list(built)
    assert all(type(e) is Event for e in block)
    for i in range(0, len(built), max(1, len(built) // 50)):
        assert block[i] == built[i] and block[i - len(built)] == built[i]
    assert block[1:7] == built[1:7] and block[::-3] == built[::-3] and block[5:2] == ()
    if built:
        assert block[-1] == built[-1]
        with pytest.raises(IndexError):
            block[len(built)]
        with pytest.raises(IndexError):
            block[-len(built) - 1]


def test_events_of_a_real_log_merge_every_kind_in_line_order() -> None:
    """A corpus boot's Events: the block's rows and the other parsers' events in line order,
    equal to the stable sort the parsers' events had before; kinds, counts and the longest
    events as the plain Python over that tuple gives them; the axis times as to_axis."""
    from bootlens.timeline.analyze import _top
    from bootlens.timeline.align import align
    from bootlens.timeline.boots import boots_from_lines
    from bootlens.core.model import Events
    from bootlens.parsers import ParseOptions, default_registry

    path = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    lines, stats = L.read_path(str(path), ParseOptions().needles())
    boot = boots_from_lines(stats.source, lines, stats, ParseOptions())[0]
    ev = boot.events
    assert isinstance(ev, Events) and ev.block is not None
    old: list[Event] = []
    for parser in default_registry().instances():
        if parser.sniff(boot.lines, ParseOptions()) > 0:
            res = parser.parse(boot.lines, ParseOptions())
            old.extend(res.events)
    old.sort(key=lambda e: e.line_no)
    assert ev == tuple(old) and tuple(old) == ev and list(ev) == old and len(ev) == len(old)
    kinds = {e.kind for e in old}
    assert {Kind.INITCALL, Kind.MILESTONE} <= kinds and len(kinds) >= 3
    plain = Events.of(tuple(old))
    assert plain.block is None and plain == ev
    for k in Kind:
        assert ev.of_kind(k) == [e for e in old if e.kind is k] == plain.of_kind(k)
        assert ev.count(k) == plain.count(k) == sum(e.kind is k for e in old)
        assert ev.count(k, True) == sum(e.kind is k and e.duration_ns is not None for e in old)
        assert ev.top(k, 7) == _top([e for e in old if e.kind is k], 7) == plain.top(k, 7)
    al = align(boot)
    times = al.times(ev)
    assert list(times) == [al.to_axis(e.start) for e in old] == list(al.times(tuple(old)))
    assert ev.block.untimed(times) == [i for i, t in enumerate(times) if t is None]
    assert ev[3:9] == tuple(old[3:9]) and ev[-2] == old[-2]
    extra = (Event(Kind.MARKER, "x", None, None, 0),)
    assert list(ev + extra) == old + list(extra) and ev + () is ev


def test_events_merge_ties_by_parser_order() -> None:
    """On a line that holds rows, the events of parsers that ran before the initcall parser go
    first, the others after the rows: what a stable sort in parser order gives."""
    text = "[    0.100000] calling  a_init+0x0/0x4 @ 1\n[    0.200000] initcall a_init+0x0/0x4 returned 0 after 5 usecs\n"
    lines, block, built = _block_and_events(text)
    early = Event(Kind.MILESTONE, "early", None, None, 1)
    late = Event(Kind.MARKER, "late", None, None, 1)
    after = Event(Kind.MARKER, "after", None, None, 5)
    # ranks: the parsers' places in the run (the rows' parser at 1, for every row kind)
    merged = block.merged([early, late, after], [0, 2, 2], [1, 1, 1, 1])
    assert list(merged) == [early, built[0], late, after]
    assert merged.other_positions() == [0, 2, 3] and merged.row_count() == 1


def test_block_json_is_what_the_event_tuples_give() -> None:
    """The JSON of a boot whose events are an Events with a block is byte for byte the JSON of
    the same boot with its events as a plain tuple (the path without columns)."""
    import io

    from bootlens.timeline.analyze import analyze_paths
    from bootlens.render.jsonout import write_json

    a = analyze_paths([str(CORPUS / "qemu-x86_64-initcall.console.log")])
    b0 = a.boots[0]
    assert b0.boot.events.block is not None  # type: ignore[union-attr]
    plain_boot = b0.boot.replace(events=tuple(b0.boot.events))
    plain = a._replace(boots=(b0._replace(boot=plain_boot, times=tuple(b0.times)),))
    out1, out2 = io.BytesIO(), io.BytesIO()
    write_json(a, out1, chunk=7)
    write_json(plain, out2, chunk=7)
    assert out1.getvalue() == out2.getvalue()
    # initcalls, device probes and PCI fixups: each kind's rows are written natively from the block
    for kind in (b"initcall", b"probe", b"fixup"):
        assert b'{"kind":"' + kind + b'"' in out1.getvalue(), kind


def test_json_seconds_are_the_shortest_decimal_of_the_double() -> None:
    """start_s and duration_s as json.rs writes them: the shortest decimal that reads back as
    ns / 1e9 (Python's repr digits, written without an exponent), at every magnitude, negative
    times too, on both sides of the integer fast path's bound (10^15 ns)."""
    from decimal import Decimal

    from bootlens.core.model import InitcallDetail, Stamp

    def positional(x: float) -> str:
        s = format(Decimal(repr(x)), "f")
        return s if "." in s else s + ".0"

    rnd = random.Random(5)
    values = [0, 1, 9, 10, 999_999_999, 1_000_000_000, 10**15 - 1, 10**15, 10**15 + 1, 2**53 - 1, 2**53 + 1,
              10**17 + 3, 2**60, -1, -10**15, -123_456_789_012]
    values += [rnd.randrange(10 ** rnd.randint(1, 18)) * rnd.choice([1, -1]) for _ in range(3000)]
    det = InitcallDetail(1, None, 0, True)
    events = [Event(Kind.INITCALL, "f", Stamp(Clock.KERNEL, 0), abs(v), 1, 2, det) for v in values]
    out = native.dump_initcalls(events, values, Kind.INITCALL, Clock.KERNEL)
    for v, raw in zip(values, out):
        assert raw is not None
        text = raw.decode()
        start = text.split('"start_s":')[1].split(",")[0]
        dur = text.split('"duration_s":')[1].split(",")[0]
        assert start == positional(v / 1e9), v
        assert dur == positional(abs(v) / 1e9), v


# --- the report's passes over the block (brief H-report2) ---------------------------------------


def _replace(obj: object, **kw: object) -> object:
    """``obj`` with some fields changed, whether it is a model record (Boot) or a NamedTuple."""
    rep = getattr(obj, "_replace", None) or getattr(obj, "replace")
    return rep(**kw)


def test_block_fields_are_the_events_transposed() -> None:
    """EventBlock.fields: every event's kind, name, duration, line, end line and detail, column
    by column, as zip(*events) gives them (the rows and the other events merged in order)."""
    from bootlens.timeline.boots import boots_from_lines
    from bootlens.core.model import Events
    from bootlens.parsers import ParseOptions

    path = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    lines, stats = L.read_path(str(path), ParseOptions().needles())
    ev = boots_from_lines(stats.source, lines, stats, ParseOptions())[0].events
    assert isinstance(ev, Events) and ev.block is not None and ev.block.others()
    cols = [list(c) for c in zip(*ev)]
    got = ev.block.fields()
    assert len(got) == 6 and all(type(c) is list for c in got)
    assert list(got) == cols[:2] + cols[3:]
    assert got[0][0] is cols[0][0] and None in got[2]  # the Kind members themselves; an unfinished call


def test_report_data_of_a_block_is_what_the_event_tuple_gives() -> None:
    """The report's data (timeline columns, findings) of a boot whose events are a native block is
    the data of the same boot with its events as a plain tuple (the path without columns)."""
    from bootlens.timeline.analyze import analyze_paths
    from bootlens.timeline.inputs import Group
    from bootlens.render.html_data import report_data

    for name in ("qemu-x86_64-initcall.console.log", "qemu-arm64-uboot-initcall.grabserial-t.log"):
        a = analyze_paths([str(CORPUS / name)])
        b0 = a.boots[0]
        assert b0.boot.events.block is not None  # type: ignore[union-attr]
        plain_boot = _replace(b0.boot, events=tuple(b0.boot.events))
        plain = _replace(a, boots=(_replace(b0, boot=plain_boot, times=tuple(b0.times)),))
        d1 = report_data([Group(name, a, False)], 25)
        d2 = report_data([Group(name, plain, False)], 25)  # type: ignore[arg-type]
        assert json.dumps(d1, sort_keys=True) == json.dumps(d2, sort_keys=True)
        assert d1["boots"][0]["ev"]["s"] and d1["findings"]


def test_block_row_groups_are_the_rows_by_kind_and_pid() -> None:
    """EventBlock.row_groups: the block's rows with an axis time grouped by (kind, initcall pid),
    in first-seen order, and the count of those without one, as a pass over the events gives."""
    from bootlens.timeline.align import align
    from bootlens.timeline.boots import boots_from_lines
    from bootlens.core.model import BLOCK_KINDS, Events, InitcallDetail
    from bootlens.parsers import ParseOptions

    path = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    lines, stats = L.read_path(str(path), ParseOptions().needles())
    boot = boots_from_lines(stats.source, lines, stats, ParseOptions())[0]
    ev = boot.events
    assert isinstance(ev, Events) and ev.block is not None
    times = list(align(boot).times(ev))
    times[5] = None  # an untimed row too
    rows = set(ev.block.positions(0)) | set(ev.block.positions(1)) | set(ev.block.positions(2))
    want: dict[tuple[int, int | None], list[int]] = {}
    unplaced = 0
    for i, e in enumerate(ev):
        if i not in rows:
            continue
        if times[i] is None:
            unplaced += 1
            continue
        pid = e.detail.pid if isinstance(e.detail, InitcallDetail) else None
        want.setdefault((BLOCK_KINDS[e.kind], pid), []).append(i)
    groups, n = ev.block.row_groups(times)
    assert n == unplaced >= 1 and [((k, p), pos) for k, p, pos in groups] == list(want.items())
    assert ev.block.row_groups(times[:10])[0] == [(k, p, [i for i in pos if i < 10]) for k, p, pos in groups
                                                   if any(i < 10 for i in pos)]


def test_block_report_columns_are_the_python_columns() -> None:
    """EventBlock.report_columns: start and duration in rounded us (below zero too), line and end
    line of the events at some positions, rows and other events alike, as the Python columns of
    render/html_columns.py give them; an event without an axis time is refused."""
    from bootlens.timeline.align import align
    from bootlens.timeline.boots import boots_from_lines
    from bootlens.core.model import Events
    from bootlens.parsers import ParseOptions

    path = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    lines, stats = L.read_path(str(path), ParseOptions().needles())
    boot = boots_from_lines(stats.source, lines, stats, ParseOptions())[0]
    ev = boot.events
    assert isinstance(ev, Events) and ev.block is not None
    times = [None if t is None else t - 1_234_567 for t in align(boot).times(ev)]  # some below zero
    order = [i for i in range(len(ev)) if times[i] is not None][::-1]
    assert set(order) & set(ev.block.other_positions()) and min(t for t in times if t is not None) < 0

    def us(v: int) -> int:
        return (v + 500) // 1000 if v >= 0 else (v - 500) // 1000

    want = ([us(times[i]) for i in order],  # type: ignore[arg-type]
            [-1 if ev[i].duration_ns is None or ev[i].duration_ns < 0 else (ev[i].duration_ns + 500) // 1000  # type: ignore[operator]
             for i in order],
            [ev[i].line_no for i in order], [ev[i].end_line_no or 0 for i in order])
    assert ev.block.report_columns(order, times) == want
    assert -1 in want[1] and 0 in want[3]
    times[order[0]] = None
    with pytest.raises(ValueError):
        ev.block.report_columns(order, times)


def test_block_events_at_are_the_events_there() -> None:
    """EventBlock.events_at: the events at some positions (negative ones too) in one call."""
    from bootlens.timeline.boots import boots_from_lines
    from bootlens.core.model import Events
    from bootlens.parsers import ParseOptions

    path = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    lines, stats = L.read_path(str(path), ParseOptions().needles())
    ev = boots_from_lines(stats.source, lines, stats, ParseOptions())[0].events
    assert isinstance(ev, Events) and ev.block is not None
    at = [0, 3, ev.block.other_positions()[0], len(ev) - 1, -1, 3]
    assert ev.block.events_at(at) == [ev[i] for i in at] and ev.block.events_at([]) == []
    with pytest.raises(IndexError):
        ev.block.events_at([len(ev)])


# --- the initcall scan, json_chunk, union and top after brief H-initcall (step 13) ----------------


def test_initcall_pairing_of_a_name_called_again_before_it_returned() -> None:
    """The pending calls are stacks per (function, module) chained through reused slots: the
    same name open three deep (and the same name with a module, apart) pairs last-called-first,
    a freed slot serves a later call, the ones left open come out in line order."""
    text = "\n".join([
        "calling  f @ 1",                                  # 0
        "calling  f @ 2",                                  # 1
        "calling  f [m] @ 3",                              # 2
        "calling  f @ 4",                                  # 3
        "initcall f returned 0 after 1 usecs",             # 4: pairs with 3
        "initcall f [m] returned 1 after 2 usecs",         # 5: pairs with 2
        "calling  g+0x0/0x4 @ 5",                          # 6: reuses a freed slot
        "initcall f returned 2 after 3 usecs",             # 7: pairs with 1
        "initcall g returned 3 after 4 usecs",             # 8: pairs with 6 (offset dropped)
        "initcall h returned 4 after 5 msecs",             # 9: never called
        "calling  g @ 6",                                  # 10: open
        "calling  f [m] @ 7",                              # 11: open
    ]) + "\n"
    lines = L.frame_text(text, "plain")
    calls, probes, fixups, bad, first_bad, oor = native.initcalls(lines.text, lines.grep(*NEEDLES))
    assert calls == [("f", None, 3, 4, 1_000, 4, 0), ("f", "m", 2, 5, 2_000, 3, 1), ("f", None, 1, 7, 3_000, 2, 2),
                     ("g", None, 6, 8, 4_000, 5, 3), ("h", None, -1, 9, 5_000_000, None, 4),
                     ("f", None, 0, -1, None, 1, None), ("g", None, 10, -1, None, 6, None),
                     ("f", "m", 11, -1, None, 7, None)]
    assert (probes, fixups, bad, oor) == ([], [], 0, 0)


def test_index_union_is_the_sorted_set_union() -> None:
    """IndexColumn.union (a linear merge of u32 runs; a sort past 4G) against sorted(set(...)):
    no column, one, empty ones, overlapping and equal ones, a wide one."""
    rnd = random.Random(13)
    for _ in range(200):
        cols = [sorted(rnd.sample(range(m), rnd.randint(0, min(m, 40))))
                for m in [rnd.choice([5, 50, 5000]) for _ in range(rnd.randint(0, 5))]]
        if cols and rnd.random() < 0.3:
            cols.append(list(cols[0]))
        got = native.IndexColumn.union([native.IndexColumn(c) for c in cols])
        assert got.tolist() == sorted(set().union(*cols)), cols
    wide = native.IndexColumn.union([native.IndexColumn([1, 2**32 + 5]), native.IndexColumn([0, 1])])
    assert wide.tolist() == [0, 1, 2**32 + 5]


def test_block_top_is_the_longest_first_ties_to_the_earlier() -> None:
    """EventBlock.top (a heap of the n best seen, then a sort of the n) against a full sort of
    the rows' (duration, position), every n from 0 to past the number of rows."""
    _, block, built = _block_and_events(generated(3000, seed=3))
    ties = False
    for kind, k in ((0, Kind.INITCALL), (1, Kind.PROBE)):
        rows = [(e.duration_ns, i) for i, e in enumerate(built) if e.kind is k and e.duration_ns is not None]
        want = sorted(rows, key=lambda r: (-r[0], r[1]))
        ties |= len({d for d, _ in rows}) < len(rows)
        for n in (0, 1, 2, 7, 100, len(rows) - 1, len(rows), len(rows) + 5):
            assert block.top(kind, n) == want[:n], (kind, n)
    assert ties  # equal durations, so the tie order is tested


@pytest.mark.parametrize("chunk", [1, 2, 5, 64, 100_000])
def test_block_json_chunks_of_any_size_are_the_event_tuples_json(chunk: int) -> None:
    """json_chunk from any start (its cursor over the rows and the other events) gives the bytes
    the Event tuples give, on a real log with other events between the rows."""
    import io

    from bootlens.timeline.analyze import analyze_paths
    from bootlens.render.jsonout import write_json

    a = analyze_paths([str(CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log")])
    b0 = a.boots[0]
    assert b0.boot.events.block is not None and b0.boot.events.block.other_positions()  # type: ignore[union-attr]
    plain_boot = b0.boot.replace(events=tuple(b0.boot.events))
    plain = a._replace(boots=(b0._replace(boot=plain_boot, times=tuple(b0.times)),))
    out1, out2 = io.BytesIO(), io.BytesIO()
    write_json(a, out1, chunk=chunk)
    write_json(plain, out2, chunk=chunk)
    assert out1.getvalue() == out2.getvalue() and b'"initcall"' in out1.getvalue()
    assert b'{"kind":"probe"' in out1.getvalue()


@pytest.mark.parametrize("framing", ["plain", "journalctl", "grabserial-t"])
def test_frame_needle_index_across_search_blocks(framing: str) -> None:
    """The needles are searched a block of lines at a time (read/frame.rs Block): a needle only in a
    line's prefix, one spanning a line end, the empty needle, a line longer than a block, a hit
    on the first and last line of a block and of the input are all indexed as a per-line search
    of the messages finds them."""
    rng = random.Random(5)
    parts = ["[    1.000000] call", "x call", "[ 12.345678] [T9] usecs", "<6>[    0.000001] ab",
             "h kernel: login:", "[ 1.000000    0.500000] ]e", "é call é", "", "a", "\r"]
    rows = [rng.choice(parts) for _ in range(9000)]
    rows[2047:2049] = ["call", "call"]  # around the line bound of a block
    rows[5000] = "c" * 70_000 + "call"  # longer than a block's bytes
    for text in ("\n".join(rows), "\n".join(rows) + "\n", "call", "", "\n"):
        needles = ["call", "", "a\nb", "0]", "1.0", " [", "é", "e", "ll", "]"]
        msgs, _, _, _, hits, _ = native.frame(text, framing, needles, [])
        texts = list(msgs)
        for needle, got in zip(needles, hits):
            assert list(got) == [i for i, t in enumerate(texts) if needle in t], (needle, text[:20])


def test_clean_as_is_is_the_three_checks_it_replaces() -> None:
    """clean_as_is (one pass) says what lines._frame_owned asked in three: ASCII or BOM-less
    UTF-8, no CR, no control character; on random bytes, each byte class alone, a bad byte
    after the first 4 KiB block, and a multibyte character cut at the end."""
    def old(d: bytes) -> bool:
        return ((d.isascii() or (native.is_utf8(d) and not d.startswith(b"\xef\xbb\xbf")))
                and b"\r" not in d and not native.has_control(d))

    rng = random.Random(3)
    pool = [b"a", b"\n", b"\t", b"\r", b"\x00", b"\x1b", b"\x7f", b"\x80", b"\xff", "é".encode(),
            "€".encode(), b"\xef\xbb\xbf", b" ", b"\x0c"]
    cases = [b"", b"abc\n", b"\xef\xbb\xbfabc", "é\n".encode(), "é".encode()[:1], b"x" * 5000 + b"\r",
             b"x" * 5000 + b"\x7f", b"x" * 5000 + "é".encode(), b"x" * 4095 + "é".encode()]
    cases += [p * 3 for p in pool]
    cases += [b"".join(rng.choice(pool) for _ in range(rng.randrange(1, 40))) for _ in range(3000)]
    for d in cases:
        assert native.clean_as_is(d) == old(d), d
def test_located_gives_each_kinds_positions_as_a_walk_over_every_event() -> None:
    """kindpos.located (the chain's and the rules' look-ups of a few kinds): the (position,
    event) pairs of one kind, as enumerating every event gives them, with the native block
    (its kinds from the position columns, the others grouped) and without; first() the first
    named one with a time, as next() over every event did."""
    from bootlens.timeline.boots import boots_from_lines
    from bootlens.core.kindpos import first, located
    from bootlens.core.model import Events
    from bootlens.parsers import ParseOptions

    path = CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"
    lines, stats = L.read_path(str(path), ParseOptions().needles())
    ev = boots_from_lines(stats.source, lines, stats, ParseOptions())[0].events
    assert isinstance(ev, Events) and ev.block is not None
    plain = tuple(ev)
    seen = 0
    for k in Kind:
        want = [(i, e) for i, e in enumerate(plain) if e.kind is k]
        assert located(ev, k) == want == located(plain, k)
        seen += len(want)
    assert seen == len(plain)
    ms = [e for e in plain if e.kind is Kind.MILESTONE]
    assert ms and first(ev, Kind.MILESTONE, ms[-1].name) == plain.index(next(e for e in ms if e.name == ms[-1].name))
    times = [None] * len(plain)
    assert first(ev, Kind.MILESTONE, ms[0].name, times) is None and first(ev, Kind.MILESTONE, "no such milestone") is None


def _frame_cols(text: str | bytes, framing: str, split: int) -> list[object]:
    msgs, kern, host, longest, hits, starts = native.frame(text, framing, list(INDEX_NEEDLES) + ["é", ""],
                                                           list(INDEX_PREFIXES), split)
    return [list(msgs), list(kern), list(host), longest, [list(h) for h in hits], [list(s) for s in starts]]


@pytest.mark.parametrize("framing", ["plain", "journalctl", "grabserial-t"])
def test_frame_on_two_threads_is_one_threads_at_every_cut(framing: str) -> None:
    """frame on two threads (the input cut at a line end, each half's lines counted, then
    framed alone into its own part of the columns, the second half's line numbers from the
    first half's count) gives the columns of one thread wherever the cut falls: after
    every line of a small log (empty lines, a missing or doubled final newline, a longest line
    on either side, keyword hits on both sides), and at a few cuts of the generated log."""
    rows = ["[    1.000000] calling  a_init @ 1", "", "x call é" + "é" * 30, "[ 1.000000    0.500000] usecs",
            "h kernel: login: probe", "<6>[    0.000001] initcall a_init returned 0 after 5 usecs", "a"]
    for text in ("\n".join(rows), "\n".join(rows) + "\n", "\n".join(rows) + "\n\n", "\n".join(rows[::-1])):
        want = _frame_cols(text, framing, 0)
        for k in range(1, len(text.encode()) + 2):
            assert _frame_cols(text, framing, k) == want, (k, text[:30])
            assert _frame_cols(text.encode(), framing, k) == want, k
    big = generated(3000)
    want = _frame_cols(big, framing, 0)
    for k in (1, 777, len(big) // 2, len(big) - 3):
        assert _frame_cols(big, framing, k) == want, k
    assert _frame_cols(big, framing, -1) == want  # below the threshold: one thread


def test_frame_on_two_threads_counts_and_checks_each_half_in_stretches() -> None:
    """Two threads first count each half's lines and check it is UTF-8 a 64 KiB stretch at a
    time, then write each half's lines in place: over 64 KiB halves of multi-byte characters
    (a character across a stretch's end), at cuts around the middle and near either end, the
    columns are one thread's; bytes that are not UTF-8 in either half (a bad byte, a cut
    sequence before a newline, a truncated one at the end) are refused at every cut, as by one
    thread."""
    line = "[    0.000001] é€😀 calling  x @ 1 usecs " + "ü" * 7
    text = "\n".join(f"{line}{k}" for k in range(6000)) + "\n"
    raw = text.encode()
    assert len(raw) > 4 * 65536
    want = _frame_cols(raw, "plain", 0)
    for k in (1, 65535, 65536, 65537, len(raw) // 2 - 1, len(raw) // 2, len(raw) - 70000, len(raw) - 2):
        assert _frame_cols(raw, "plain", k) == want, k
    for bad in (raw[:70001] + b"\xff" + raw[70002:], raw[:-40000] + b"\xe2\x82\n" + raw[-39997:],
                raw + b"\xf0\x9f"):
        for k in (0, 1, 70000, 70005, len(bad) // 2, len(bad) - 39000, len(bad) - 1):
            with pytest.raises(ValueError, match="not UTF-8"):
                native.frame(bad, "plain", [], [], k)
    small = "é\n\xff".encode("latin-1"), b"a\n\xc3", b"\xc3\n\n"
    for bad in small:
        for k in range(0, len(bad) + 2):
            with pytest.raises(ValueError, match="not UTF-8"):
                native.frame(bad, "plain", [], [], k)


def _block_at(lines: LC.Lines, split: int) -> tuple[list[Event], list[object], bytes]:
    cands = lines.grep(*NEEDLES)
    block, *rest = native.initcall_block(lines.text, cands, lines.kernel, lines.host, lines.first, NATIVE_TYPES, split)
    pieces, _ = block.json_chunk([0] * len(block), 0, len(block), True) if len(block) else ([], 0)
    return list(block), rest, b"".join(p if isinstance(p, bytes) else str(p).encode() for p in pieces)


def test_initcall_scan_on_two_threads_is_one_threads_at_every_cut() -> None:
    """The initcall scan on two threads (each half of the candidate lines scanned alone, then
    joined: returns without a call in the second half paired with the first half's latest open
    call of that name, fixup `took` lines with its open fixup calls, names renumbered) gives the
    rows of one thread wherever the cut falls, for every cut of a log whose calls, returns,
    fixups (one out of range), probes, bad and out-of-range lines cross it, and at a few cuts
    of the generated log."""
    text = "\n".join([
        "[    0.000001] calling  f @ 1",
        "[    0.000002] calling  f @ 2",
        "[    0.000003] calling  f [m] @ 3",
        "[    0.000004] pci 0000:00:01.0: calling  quirk_a+0x0/0x20 @ 1",
        "[    0.000005] calling  g+0x0/0x4 @ 5",
        "[    0.000006] initcall f returned 0 after 1 usecs",
        "[    0.000007] calling  bad @ 99999999",
        "[    0.000008] pci 0000:00:02.0: calling  quirk_b+0x0/0x20 @ 1",
        "[    0.000009] calling  q @ 1",
        "[    0.000010] initcall h returned 4 after 5 msecs",
        "[    0.000011] pci 0000:00:02.0: quirk_b+0x0/0x20 took 99999999999999999999 usecs",
        "[    0.000012] probe of dev1.x returned 0 after 7 usecs",
        "[    0.000013] initcall f [m] returned 1 after 2 usecs",
        "[    0.000014] initcall g returned 3 after 4 usecs",
        "[    0.000015] pci 0000:00:01.0: quirk_a+0x0/0x20 took 9 usecs",
        "[    0.000016] pci 0000:00:02.0: quirk_b+0x0/0x20 took 8 usecs",
        "[    0.000017] calling  new_one [k] @ 4",
        "[    0.000018] initcall broken returned x after y usecs",
        "[    0.000019] initcall f returned 2 after 3 usecs",
        "[    0.000020] initcall new_one [k] returned 0 after 3 usecs",
        "[    0.000021] initcall f returned 5 after 3 usecs",
        "[    0.000022] calling  g @ 6",
        "[    0.000023] initcall q returned 0 after 1 usecs",
        "[    0.000024] calling  f [m] @ 7",
    ]) + "\n"
    lines = L.frame_text(text, "plain")
    n = len(lines.grep(*NEEDLES))
    want = _block_at(lines, 0)
    assert want[1] == [2, 1, 17, 2] and len(want[0]) == 13  # unfinished, bad, first bad, out of range
    for k in range(1, n + 1):
        assert _block_at(lines, k) == want, k
    big = L.frame_text(generated(4000), "plain")
    want = _block_at(big, 0)
    n = len(big.grep(*NEEDLES))
    for k in (1, 333, n // 2, n - 1):
        assert _block_at(big, k) == want, k
    assert _block_at(big, -1) == want  # below the threshold: one thread
# --- the report's data natively (brief H-html, native/src/render/report.rs) ---------------------


def _report_boot(log: Path) -> tuple[object, object]:
    """(BootAnalysis, analysis) of the first boot of ``log``, its events a native block."""
    from bootlens.timeline.analyze import analyze_paths

    a = analyze_paths([str(log)])
    b0 = a.boots[0]
    assert b0.boot.events.block is not None  # type: ignore[union-attr]
    return b0, a


def _overlap_log(tmp_path: Path) -> Path:
    """Initcalls that overlap (no calling line: one row, many lanes), instants among them, async
    ones, one that never returned, probes, PCI fixups and processes."""
    out = []
    for i in range(600):
        t = 0.5 + i * 1e-5 + (i % 7) * 1e-4
        out.append(f"[{t + 1e-3:12.6f}] initcall fn_{i % 50}+0x0/0x40 returned {i % 3 - 1} after {(i * 37) % 1500} usecs")
        if i % 5 == 0:
            out.append(f"[{t + 2e-3:12.6f}] calling  as_{i}+0x0/0x40 @ {2 + i % 3}")
            out.append(f"[{t + 3e-3:12.6f}] initcall as_{i}+0x0/0x40 returned 0 after {i % 4} usecs")
        if i % 9 == 0:
            out.append(f"[{t + 4e-3:12.6f}] probe of dev{i} returned {-(i % 3)} after {i * 3} usecs")
        if i % 40 == 0:
            out.append(f"[{t + 5e-3:12.6f}] pci 0000:00:{i % 32:02x}.0: calling  quirk_{i}+0x0/0x10 @ 1")
            out.append(f"[{t + 5.1e-3:12.6f}] pci 0000:00:{i % 32:02x}.0: quirk_{i}+0x0/0x10 took {i} usecs")
    out.append(f"[{1.0:12.6f}] calling  never_back+0x0/0x40 @ 1")
    for pid in range(100, 140):  # processes: other events, outside the block
        t = 0.52 + pid * 1e-4
        out.append(f"[{t:12.6f}] sched_process_fork: comm=sh pid=1 child_comm=sh child_pid={pid}")
        if pid % 3:
            out.append(f"[{t + 1e-5:12.6f}] sched_process_exec: filename=/bin/app{pid % 4} pid={pid} old_pid={pid}")
        if pid % 5:
            out.append(f"[{t + 2e-3:12.6f}] sched_process_exit: comm=app pid={pid} prio=120")
    log = tmp_path / "overlap.log"
    log.write_text("\n".join(sorted(out, key=lambda x: float(x[1:13]))) + "\n")
    return log


def test_report_lanes_are_the_python_lanes(tmp_path: Path) -> None:
    """report_lanes (the packing of one timeline row, natively) gives render/html_columns.py's
    _lanes of the same events: first fit, sorted by start, duration and position; one lane per
    thread."""
    from bootlens._scan import report_lanes
    from bootlens.render.html_columns import _lanes

    b0, _ = _report_boot(_overlap_log(tmp_path))
    ev, times = b0.boot.events, b0.times  # type: ignore[attr-defined]
    dd = [-1 if e.duration_ns is None else e.duration_ns for e in ev]
    placed = [i for i in range(len(ev)) if times[i] is not None]
    rng = random.Random(17)
    many = 0
    for key in ((1, "initcalls", "initcall", "initcall"), (2, "initcalls · pid 2", "initcall", "initcall_async")):
        for idx in (placed, rng.sample(placed, len(placed) // 2), sorted(rng.sample(placed, 40)), placed[:1], []):
            want = _lanes(key, list(idx), times, dd)
            flat, lens = report_lanes(ev.block, list(idx), times, key[1] != "initcalls")
            assert [len(x) for x in want] == lens and [i for x in want for i in x] == flat
            many = max(many, len(lens))
    assert many > 5
    with pytest.raises(ValueError):
        report_lanes(ev.block, [len(ev) + 3], times, False)


def test_report_columns_all_are_the_python_columns(tmp_path: Path) -> None:
    """report_columns_all (the event columns and the string table, natively) gives what
    render/html_columns.py's _columns gives for the same order, the table growing in the same
    order from the same start; a row's detail text as _detail makes it."""
    from bootlens._scan import report_columns_all
    from bootlens.render.html_columns import _columns, _detail, _Names, _texts_exec

    b0, _ = _report_boot(_overlap_log(tmp_path))
    ev, times = b0.boot.events, b0.times  # type: ignore[attr-defined]
    order = [i for i in range(len(ev)) if times[i] is not None][::-1]
    kinds, enames, _, durs, line_nos, end_nos, dets = zip(*ev)
    dd = [-1 if d is None else d for d in durs]
    py, nat = _Names(), _Names()
    for names in (py, nat):
        names("already there")
    want = _columns(order, times, dd, enames, line_nos, end_nos, dets, py)
    others = ev.block.others()
    texts, x = _texts_exec([e.detail for e in others], [e.name for e in others])
    got = report_columns_all(ev.block, order, times, [e.name for e in others], texts, x, nat.items,
                             lambda d: _detail(d, ""))
    assert dict(zip("sdnlexi", got)) == want and nat.items == py.items and nat.index == py.index
    # as_json: a page piece of orjson's text of the same columns, the same table, and whether a
    # duration is negative
    import orjson

    js = _Names()
    js("already there")
    piece, negative = report_columns_all(ev.block, order, times, [e.name for e in others], texts, x, js.items,
                                         lambda d: _detail(d, ""), as_json=True)
    assert bytes(piece) == orjson.dumps(want) and js.items == py.items and negative == (min(want["d"]) < 0)
    assert {"device dev9, returned 0", "device dev36, returned 0", "pid 1, never returned", "pid 2, returned 0"} <= set(nat.items)
    with pytest.raises(ValueError):
        report_columns_all(ev.block, order, times, ["x"] * (len(others) + 1), texts, x, nat.items, lambda d: "")
    # the table is looked up natively, not in _Names.index (which catches up when asked): a second
    # boot's strings already there keep their places; a str with a lone surrogate (no UTF-8) is
    # one string too, and other strings given twice are stored once
    again = report_columns_all(ev.block, order, times, [e.name for e in others], texts, x, nat.items,
                               lambda d: _detail(d, ""))
    assert again == got and nat.items == py.items
    odd = ["\udcff", "\udcff", ev[0].name, "already there"][:len(others)] + ["\udcfe"] * max(0, len(others) - 4)
    report_columns_all(ev.block, order, times, odd, odd, x, nat.items, lambda d: _detail(d, ""))
    assert nat.items[:len(py.items)] == py.items and set(nat.items[len(py.items):]) == set(odd) - set(py.items)
    assert len(set(nat.items)) == len(nat.items) and nat.index == {s: k for k, s in enumerate(nat.items)}


def test_report_on_lines_and_places(tmp_path: Path) -> None:
    """report_on_lines: the positions of the events on some lines, ascending, as a walk over the
    events finds them; report_places: an index's place in an order, -1 when not in it."""
    from bootlens._scan import report_on_lines, report_places

    b0, _ = _report_boot(_overlap_log(tmp_path))
    ev = b0.boot.events  # type: ignore[attr-defined]
    lines = {ev[3].line_no, ev[len(ev) // 2].line_no, ev[-1].line_no, 10**9}
    assert report_on_lines(ev.block, sorted(lines)) == [i for i, e in enumerate(ev) if e.line_no in lines]
    assert report_on_lines(ev.block, []) == []
    assert report_places([5, 9, 2, 7], [2, 3, 5]) == [2, -1, 0]


def test_report_data_natively_is_the_tuples_data(tmp_path: Path) -> None:
    """The report's data of a boot whose events are a native block (rows, lanes, columns, string
    table, top lists, chain) is the data of the same boot as a plain tuple of events: overlapping
    initcalls, probes, fixups and a process trace."""
    from bootlens.timeline.inputs import Group
    from bootlens.render.html_data import report_data

    for log in (_overlap_log(tmp_path), CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"):
        b0, a = _report_boot(log)
        plain_boot = _replace(b0.boot, events=tuple(b0.boot.events))  # type: ignore[attr-defined]
        plain = _replace(a, boots=(_replace(b0, boot=plain_boot, times=tuple(b0.times)),))  # type: ignore[attr-defined]
        d1 = report_data([Group(log.name, a, False)], 25)  # type: ignore[arg-type]
        d2 = report_data([Group(log.name, plain, False)], 25)  # type: ignore[arg-type]
        assert json.dumps(d1) == json.dumps(d2)
        rows = d1["boots"][0]["rows"]
        assert max(len(r["lanes"]) for r in rows) > 1 or "overlap" not in log.name
        assert "processes" in {r["title"] for r in rows} or "overlap" not in log.name


def test_timed_at_is_the_python_timed_rows(tmp_path: Path) -> None:
    """timed_at (the advisor's Timed rows built natively) gives what the Python path gives for the
    same events as a tuple: each kind's events with their axis times (None where unplaced)."""
    from bootlens._scan import timed_at
    from bootlens.advise.rules._kernel import Timed, _ByKind

    b0, _ = _report_boot(_overlap_log(tmp_path))
    times = list(b0.times)  # type: ignore[attr-defined]
    times[3] = None
    b1 = _replace(b0, times=times)
    plain = _replace(b1, boot=_replace(b0.boot, events=tuple(b0.boot.events)))  # type: ignore[attr-defined]
    for kind in (Kind.INITCALL, Kind.PROBE, Kind.FIXUP, Kind.PROCESS):
        got = _ByKind(b1).timed(kind)  # type: ignore[arg-type]
        assert got == _ByKind(plain).timed(kind) and got and all(type(t) is Timed for t in got)  # type: ignore[arg-type]
    ev = b0.boot.events  # type: ignore[attr-defined]
    assert timed_at(ev.block, [3, -1], times, Timed) == [Timed(ev[3], None), Timed(ev[-1], times[-1])]
    with pytest.raises(IndexError):
        timed_at(ev.block, [len(ev)], times, Timed)


def test_report_line_times_are_the_python_axis_times() -> None:
    """report_line_times (each log line's axis time in the report, natively) gives
    render/html_data.py's _axis_times for every case of offsets: host or kernel times alone, both
    (host first), none, times below the origin rounded away from zero, lines without a time,
    unequal lengths."""
    import orjson

    from bootlens._scan import report_line_times
    from bootlens.parsers import ParseOptions
    from bootlens.render.html_data import _axis_times

    lines, _ = L.read_path(str(CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log"), ParseOptions().needles())
    assert type(lines.host).__name__ == "TimeColumn"  # a native column, read without a copy
    assert report_line_times(lines.host, lines.kernel, -5, 7) == _axis_times(list(lines.host), list(lines.kernel), -5, 7)

    rng = random.Random(5)
    host = [None if rng.random() < 0.3 else rng.randrange(-3_000_000, 10**12) for _ in range(3000)]
    kernel = [None if rng.random() < 0.3 else rng.randrange(-3_000_000, 10**12) for _ in range(3000)]
    host[:4] = [1500, 2500, -1500, -2500]  # halves: away from zero
    for h_off in (None, 0, -7_654_321):
        for k_off in (None, 0, 1_234_499):
            want = _axis_times(host, kernel, h_off, k_off)
            assert report_line_times(host, kernel, h_off, k_off) == want
            assert bytes(report_line_times(host, kernel, h_off, k_off, True)) == orjson.dumps(want)  # a page piece
            assert report_line_times(host[:10], kernel, h_off, k_off) == _axis_times(host[:10], kernel, h_off, k_off)
    assert report_line_times(host, kernel, 0, None)[:4] == [2, 3, -2, -3]


def test_process_json_is_orjsons_bytes(tmp_path: Path) -> None:
    """The native JSON of a process event (json.rs write_process) is orjson's bytes of
    event_dict, byte for byte; a value it would write otherwise (a tab or newline in a string,
    a time of 10^15 ns or more, a bool for an int, an estimated start, another clock, another
    detail type) is left to event_dict."""
    import orjson

    from bootlens.timeline.align import Alignment
    from bootlens.core.model import ProcessDetail, Stamp, UnitDetail

    al = Alignment(Clock.KERNEL, "kernel_start", (), offsets={Clock.KERNEL: 0})
    det = ProcessDetail(12, 1, "sh", "/bin/busybox", False, 200_000, True, 3)
    ev = Event(Kind.PROCESS, "busybox", Stamp(Clock.KERNEL, 1_500_000), 7_000, 10, 12, det)
    fast_cases = [
        (ev, 1_500_000),
        (ev._replace(end_line_no=None, duration_ns=None), 0),
        (ev._replace(end_line_no=10), 123_456_789_012),
        (ev._replace(detail=det._replace(ppid=None, exe=None, exec_ns=None, kthread=True, exited=False)), 5),
        (ev._replace(name='a "q" \\ é \u2028 \x7f', detail=det._replace(comm="ü\\\"")), 5),
        (ev._replace(detail=det._replace(exec_ns=10**15 - 1, pid=2**40, forks=0)), 10**15 - 1),
        (ev._replace(duration_ns=-5), -7),
    ]
    rnd = random.Random(14)
    values = [0, 1, 5, 10, 1200, 1234, 9999, 10_000, 99_999, 10**15 - 1, -1, -7000, -10_000, -(10**15 - 1)]
    values += [rnd.randrange(10 ** rnd.randint(1, 15)) * rnd.choice([1, -1]) for _ in range(2000)]
    fast_cases += [(ev._replace(duration_ns=v, detail=det._replace(exec_ns=-v)), v) for v in values]
    slow_cases = [
        (ev._replace(name="a\tb"), 5),
        (ev._replace(detail=det._replace(comm="x\ny")), 5),
        (ev._replace(detail=det._replace(exec_ns=10**15)), 5),
        (ev, 10**15),
        (ev._replace(duration_ns=True), 5),
        (ev._replace(detail=det._replace(forks=True)), 5),
        (ev._replace(detail=det._replace(kthread=1)), 5),
        (ev._replace(start=Stamp(Clock.KERNEL, 0, True, 5)), 5),
        (ev._replace(start=Stamp(Clock.HOST, 0)), 5),
        (ev._replace(start=None), 5),
        (ev._replace(detail=UnitDetail("a", "b", "done", "x")), 5),
        (ev._replace(kind=Kind.UNIT), 5),
    ]
    cases = fast_cases + slow_cases
    out = native.dump_initcalls([e for e, _ in cases], [t for _, t in cases], Kind.INITCALL, Clock.KERNEL)
    for (e, t), raw in zip(fast_cases, out):
        assert raw == orjson.dumps(event_dict(e, al, t)), e
    assert out[len(fast_cases):] == [None] * len(slow_cases)
    # every process event of the corpus logs that have them, through analyze's own writer
    from bootlens.timeline.analyze import analyze_paths

    logs = [p for p in sorted(CORPUS.rglob("*.log")) if b"sched_process_" in p.read_bytes()]
    assert logs
    for log in logs:
        for b in analyze_paths([str(log)]).boots:
            evs = [e for e in b.boot.events if e.kind is Kind.PROCESS]
            times = [b.alignment.to_axis(e.start) for e in evs]
            got = native.dump_initcalls(evs, times, Kind.INITCALL, b.alignment.axis)
            for e, t, raw in zip(evs, times, got):
                if raw is not None:
                    assert raw == orjson.dumps(event_dict(e, b.alignment, t)), (log, e)


def test_report_process_texts() -> None:
    """report_process_texts: a process's tooltip text (the words _detail had in Python, kept
    here as the reference) and its exec time in us rounded as _us, for every shape of detail: no
    parent, an empty or no exe, a kernel thread, no children, still running, ints past i64, a
    bool for an int, a lone surrogate in a string; other details (a subclass too) are left to
    Python (None, -1, their position in ``rest``)."""
    from typing import NamedTuple

    from bootlens.core.model import ProbeDetail, ProcessDetail
    from bootlens.render.html_columns import _detail, _texts_exec, _us

    def reference(d: ProcessDetail) -> str:
        parts = [f"pid {d.pid}", f"parent {d.ppid}" if d.ppid is not None else "",
                 f"exec {d.exe}" if d.exe else "", "kernel thread" if d.kthread else "",
                 f"{d.forks} children" if d.forks else "", "" if d.exited else "still running at the end"]
        return ", ".join(p for p in parts if p)

    class Sub(ProcessDetail):
        pass

    class Odd(NamedTuple):
        pid: int

    base = ProcessDetail(12, 1, "sh", "/bin/busybox", False, 1_499, True, 3)
    procs = [base, base._replace(ppid=None), base._replace(exe=""), base._replace(exe=None),
             base._replace(kthread=True, exited=False, forks=0), base._replace(pid=2**70, forks=-2**65),
             base._replace(pid=True, ppid=False, forks=True), base._replace(exe="/bin/\udcff x"),
             base._replace(exec_ns=None), base._replace(exec_ns=-1_500), base._replace(exec_ns=-1_499),
             base._replace(exec_ns=500), base._replace(exec_ns=499), base._replace(exec_ns=0),
             base._replace(exec_ns=2**62), base._replace(exe="é ü \u202e", ppid=-3)]
    others = [ProbeDetail("dev0", None, 0), None, Sub(*base), Odd(1)]
    dets = procs + others
    texts, x, rest = native.report_process_texts(dets, ProcessDetail)
    assert texts[:len(procs)] == [reference(d) for d in procs]
    assert x[:len(procs)] == [-1 if d.exec_ns is None else _us(d.exec_ns) or 0 for d in procs]
    assert texts[len(procs):] == [None] * len(others) and x[len(procs):] == [-1] * len(others)
    assert rest == list(range(len(procs), len(dets)))
    assert [_detail(d, "n") for d in procs] == [reference(d) for d in procs]
    assert _detail(Sub(*base), "n") == reference(base)
    t, xs = _texts_exec(dets, ["n"] * len(dets))
    assert t == [reference(d) for d in procs] + ["device dev0, returned 0", "", reference(base), _detail(Odd(1), "n")]
    assert xs == x[:len(procs)] + [-1, -1, 1, -1]


def _page_escaped(raw: bytes) -> bytes:
    """The page's escapes made by replace passes (render/html.py _embed's before page.rs)."""
    for a, b in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                 ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029")):
        raw = raw.replace(a, b)
    return raw


def test_text_piece() -> None:
    """text_piece: a page piece of orjson's JSON array, with the page's escapes, of lines that
    visible() leaves as they are (ASCII, no control character but a tab or a newline), from a
    list or a TextColumn, the same as bytes or written to a file a chunk at a time; None when a
    line has anything else (the report then goes through visible())."""
    import io

    import orjson

    from bootlens.render.visible import visible

    plain = ["", "a", 'q"uote\\back\tslash', "<script>&", "~ !", "x\ny"]
    assert bytes(native.text_piece(plain)) == _page_escaped(orjson.dumps(plain)) and [visible(s) for s in plain] == plain
    assert bytes(native.text_piece([])) == b"[]"
    for odd in ("\x7f", "\r", "\x00", "é", "\u202e", "\x1b[0m"):
        assert native.text_piece(["a", "b" + odd]) is None
    lines = L.frame_text("[    0.000000] one \"two\" <b>\n[    0.000001] \\three\tfour&\nplain\n", "plain")
    assert bytes(native.text_piece(lines.text)) == _page_escaped(orjson.dumps(list(lines.text)))
    many = [f"line {i} <{i % 7}> & more text to pass a megabyte" for i in range(60_000)]
    f = io.BytesIO()
    native.text_piece(many).write_to(f)
    assert f.getvalue() == bytes(native.text_piece(many)) == _page_escaped(orjson.dumps(many))
    # each chunk is lent as a view, released once written: a file that kept it cannot read the
    # buffer written over after; a file that wrote less than it was given is an error
    kept: list[Any] = []

    class Keeper:
        def write(self, b: Any) -> int:
            kept.append(b)
            return len(b)

    class Short:
        def write(self, b: Any) -> int:
            return len(b) - 1

    native.text_piece(many).write_to(Keeper())
    assert len(kept) > 1
    with pytest.raises(ValueError):
        bytes(kept[0])
    with pytest.raises(OSError):
        native.text_piece(many).write_to(Short())
    changed = ["a", "b"]
    piece = native.text_piece(changed)
    changed[1] = "\u202e"  # not plain any more: the piece says so, it does not write it unescaped
    with pytest.raises(ValueError):
        bytes(piece)


def test_page_escape_is_the_replace_passes() -> None:
    """page_escape: the page's escapes of orjson's text in one pass, as the replace passes made
    them, for every character near the ones escaped (U+2020..U+2030 share U+2028's first bytes)."""
    import orjson

    rng = random.Random(11)
    alphabet = "ab<>&\"\\\u2028\u2029\u2020\u2027\u202a\u2030\u0080é€😀"
    for _ in range(400):
        raw = orjson.dumps(["".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(3)])
        assert native.page_escape(raw) == _page_escaped(raw)
    assert native.page_escape(b"") == b"" and native.page_escape(b"\xe2\x80") == b"\xe2\x80"


# --- the kernel-symbol reader of ftrace's initcall events (native/src/parse/symbol.rs) ---------

# What parsers/ftrace.py read the fields of initcall_start/initcall_finish with before the native
# core's one grammar of kernel symbols read them (the oracle; `match`: from the fields' start).
OLD_FUNC = re.compile(r"func=(\S+?)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?(?: \[([^\]\s]+)\])?(?: ret=(-?\d+))?\s*$",
                      re.ASCII)


def _old_func(fields: str) -> tuple[str, str | None, str | None] | None:
    m = OLD_FUNC.match(fields)
    return None if m is None else (m[1], m[2], m[3])


def _func_fields() -> list[str]:
    """The `func=` fields of every line that has one in the golden cases and the corpora (the
    text from `func=` on), and one made of every kernel symbol of their initcall_debug lines."""
    out: list[str] = []
    symbol = re.compile(r"(?:calling  |initcall )(\S+(?: \[[^\]]*\])?)(?: @ | returned )")
    roots = [GOLDEN, CORPUS, SHARED_CORPUS]
    for path in sorted({p for root in roots if root.is_dir() for p in root.rglob("*") if p.is_file()}):
        for line in path.read_bytes().decode("utf-8", "replace").splitlines():
            if "func=" in line:
                out.append(line[line.index("func="):])
            if (m := symbol.search(line)) is not None:
                out.append(f"func={m[1]}")
                out.append(f"func={m[1]} ret=-19")
    return out


FUNC_MADE = [
    "func=fuse_init+0x0/0x30 [fuse] ret=0", "func=fuse_init+0x0/0x30 [fuse]", "func=fuse_init", "func=a ret=-5",
    "func=a+0x1/0x2+0x3/0x4", "func=a+0x1/0x2+0x3/0x4 [m] ret=1", "func=x+0xZZ/0x1", "func=x+0x/0x1",
    "func=x+0x10/0xab ret=", "func=x [bad mod] ret=1", "func=x [m]] ret=1", "func=x [] ret=0", "func=[x] ret=0",
    "func=x [m", "func=", "func= ret=0", "func=  ", "func=x  ret=0", "func=x ret=0 more", "func=x ret=+1",
    "func=x ret=99999999999999999999999", "func=x ret=-0", "func=x\t", "func=x \n", "func=x\x0b\x0c\r\n",
    "func=ümlaut+0x0/0x1 [mödule] ret=3", "func=a\u00a0b", "func=a\u2028 ret=0", "func=+0x0/0x1", "func=++0x0/0x1",
    "func=a+0x0/0x1 [m] [n]", "func=a [m] ret=0 [n]", "func=A+0X0/0X1", "func=a+0x0/0x1 ret=0\n", " func=a",
    "func=a]b+0x0/0x1 [c]", "func=a[b]+0x0/0x1", "func=a ret=1 ret=2", "func=a+0x00000/0xffffffffffffffff",
]


def test_initcall_func_reads_what_the_old_pattern_read() -> None:
    """native initcall_func is the old `_FUNC` pattern of parsers/ftrace.py, group for group, on
    every func= field and kernel symbol of the golden cases and corpora, the made edge cases,
    and 20,000 random edits of them."""
    real = _func_fields()
    assert sum(f.startswith("func=fuse_len_args") for f in real) == 2  # rostedt-initcall.txt
    assert len(real) > 1000
    rnd = random.Random(26)
    alphabet = "0x+/[] -\tmé\u00a0\u0663fa9\n\x0b"
    made = list(FUNC_MADE)
    made += [edited(rnd, rnd.choice(real + FUNC_MADE), alphabet, least=1) for _ in range(20_000)]
    read = 0
    for fields in real + made:
        want = _old_func(fields)
        assert native.initcall_func(fields) == want, fields
        read += want is not None
    assert read > len(real)  # most real ones read, some edits too
    assert native.initcall_func("func=fuse_init+0x0/0x30 [fuse] ret=0") == ("fuse_init", "fuse", "0")
    assert native.initcall_func("func=a+0x1/0x2+0x3/0x4 [m]") == ("a+0x1/0x2", "m", None)
    assert native.initcall_func("func=x [bad mod] ret=1") is None
