"""The Rust accelerator (native/) against the Python reference implementations.

Every native function must give exactly what its Python counterpart gives: on the corpus, on
every golden case, on a generated initcall-heavy log and on randomly mutated lines.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from conftest import CORPUS, GOLDEN

from bootlens import lines as L
from bootlens.analyze import analyze_paths
from bootlens.model import Clock, Kind
from bootlens.parsers import MarkerSpec, ParseOptions
from bootlens.parsers.initcall import NATIVE_TYPES, NEEDLES, InitcallParser, scan_initcalls_py
from bootlens.render.jsonout import event_dict, render_json

native = L.native_module()

if os.environ.get("CI") and native is None:  # CI must exercise the accelerator, not skip it
    pytest.fail("the native accelerator did not build (is cargo installed?)", pytrace=False)
pytestmark = pytest.mark.skipif(native is None, reason="native accelerator not built")

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
    out = []
    for _ in range(n):
        s = list(rnd.choice(src))
        for _ in range(rnd.randint(0, 4)):
            pos = rnd.randrange(len(s) + 1)
            op = rnd.random()
            if op < 0.4:
                s.insert(pos, rnd.choice(alphabet))
            elif op < 0.8 and s:
                del s[min(pos, len(s) - 1)]
            elif s:
                s[min(pos, len(s) - 1)] = rnd.choice(alphabet)
        out.append("".join(s))
    return "\n".join(out) + "\n"


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


def frame_both(text: str, framing: str) -> tuple[L.Lines, L.Lines]:
    return L.frame_text(text, framing, L.INDEX_NEEDLES, L.INDEX_PREFIXES), L.frame_text_py(text, framing)


@pytest.mark.parametrize("framing", ["plain", "journalctl", "grabserial-t"])
@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_frame(name: str, text: str, framing: str) -> None:
    nat, py = frame_both(text, framing)
    assert nat.text == py.text
    assert nat.kernel == py.kernel
    assert nat.host == py.host
    for needle in L.INDEX_NEEDLES:  # the index built while framing equals a plain grep
        assert nat.grep(needle) == L.grep_py(py.text, [needle])[0], needle
    for prefix in L.INDEX_PREFIXES:
        assert nat.starting(prefix) == [i for i, t in enumerate(py.text) if t.startswith(prefix)], prefix


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_columns_helpers(name: str, text: str) -> None:
    lines = L.frame_text_py(text, "grabserial-t" if "grabserial" in name else "plain")
    assert L.steps_back(lines.kernel) == L.steps_back_py(lines.kernel)
    for col in (lines.kernel, lines.host):
        assert L.gaps(col, 10) == L.gaps_py(col, 10)
    assert L.grep(lines.text, ["call", "usecs", "é"]) == L.grep_py(lines.text, ["call", "usecs", "é"])


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_initcall_scan_and_events(name: str, text: str) -> None:
    lines = L.frame_text_py(text, "plain")
    cands = lines.grep(*NEEDLES)
    assert native.initcalls(lines.text, cands) == scan_initcalls_py(lines.text, cands)
    built, unfinished, bad, first_bad, oor = native.initcall_events(
        lines.text, cands, lines.kernel, lines.host, lines.first, NATIVE_TYPES)
    ref = InitcallParser.events_py(lines)
    assert (list(built), unfinished, bad, first_bad, oor) == ref
    assert [type(e) for e in built] == [type(e) for e in ref[0]]


@pytest.mark.parametrize(("name", "text"), CASES, ids=IDS)
def test_initcall_json(name: str, text: str) -> None:
    lines = L.frame_text_py(text, "plain")
    events, *_ = InitcallParser.events_py(lines)
    times = [None if e.start is None else e.start.ns for e in events]
    from bootlens.align import Alignment

    al = Alignment(Clock.KERNEL, "kernel_start", (), offsets={Clock.KERNEL: 0})
    fast = native.dump_initcalls(events, times, Kind.INITCALL, Clock.KERNEL)
    assert len(fast) == len(events)
    for f, e, t in zip(fast, events, times):
        if f is not None:
            assert json.loads(f) == json.loads(json.dumps(event_dict(e, al, t)))
    if "initcall" in name or name == "generated":
        assert any(f is not None for f in fast)


def test_whole_json_document_is_the_same_without_the_accelerator(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "gen.log"
    log.write_text(generated(5000))
    opts = ParseOptions((MarkerSpec.parse("ready=APP READY"),))
    paths = [str(log), str(CORPUS / "qemu-arm64-uboot-initcall.grabserial-t.log")]
    with_native = json.loads(render_json(analyze_paths(paths, opts)))
    monkeypatch.setattr(L, "_native", None)
    without = json.loads(render_json(analyze_paths(paths, opts)))
    assert with_native == without


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
        assert L.grep(col, ["rewr", "st"]) == [[2], [0, 1, 4]] and L.starting(col, ["r", "n"]) == [[2], [1]]
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
    assert L.gaps(k, 1) == L.gaps_py(k.tolist(), 1) and L.steps_back(k) == L.steps_back_py(k.tolist())
