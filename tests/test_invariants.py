"""A check that cannot be tuned to one log (issue 28, part 4): what every analysis must satisfy
on every real log bootlens has: the golden cases, the project's reference captures, the shared
corpus (wild/ and wild/more/) and the extra logs ($BOOTLENS_EXTRA_LOGS, when present).

- stages are ordered and do not overlap; a sub-stage lies inside its parent;
- kernel init starts at the kernel's first line when the log has it (never before it), or at
  the printk clock's zero when the log starts after it;
- a boot after the first was split at a reset signature (the reason names one);
- every measured figure carries its evidence, with the lines it rests on;
- no duration, silence or total is negative, and the stages inside the total never add up to
  more than the total; the total is the sum of its stages, or a stage says why not (not measured).

A log that breaks one is a bug in the class it belongs to, not in the test.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import CORPUS, GOLDEN, WILD

from bootlens.core.errors import InputError
from bootlens.core.model import Clock, Milestone, Stamp
from bootlens.core.options import ParseOptions
from bootlens.timeline.analyze import BootAnalysis
from bootlens.timeline.inputs import analyze_inputs
from bootlens.timeline.stages import ABSENT, MEASURED, NOT_MEASURED


def _logs() -> list[Path]:
    found = (sorted((GOLDEN / "analyze").glob("*.log")) + sorted((GOLDEN / "lava").glob("*.yaml"))
             + sorted(CORPUS.glob("*.log")))
    if WILD.is_dir():
        found += sorted(WILD.glob("*.log")) + sorted(WILD.glob("more/*.log"))
    extra = os.environ.get("BOOTLENS_EXTRA_LOGS")
    if extra and Path(extra).is_dir():
        found += sorted(p for p in Path(extra).rglob("*") if p.is_file() and p.suffix in (".log", ".svg"))
    return found


LOGS = _logs()
# a reset signature: what boots.split_boots writes as a later boot's reason (a new kernel start,
# a printk clock back to ~0 with a banner, a boot ROM or a program starting again, a journal's
# reboot line, a second bootstage report, a second systemd-analyze output)
RESET_WORDS = ("kernel start", "Linux version", "Booting Linux", "banner", "boot ROM", "reset", "restart",
               "Reboot", "reboot", "report", "systemd-analyze", "starts again", "new ", "record", "printk time")
SLACK_NS = 1_000_000  # 1 ms: two ends read on different clocks, each to its own tick


def _name(p: Path) -> str:
    return p.name if not p.is_relative_to(WILD) else str(p.relative_to(WILD))


def _analyses(path: Path) -> list[BootAnalysis]:
    try:
        return [b for g in analyze_inputs([str(path)], ParseOptions()) for b in g.analysis.boots]
    except InputError as e:  # a refusal is a one-line error, checked elsewhere; nothing to check here
        pytest.skip(f"refused: {e}")


def _check(b: BootAnalysis) -> list[str]:
    bad: list[str] = []
    top = [s for s in b.stages if s.parent is None and s.status == MEASURED and s.start_ns is not None]
    by = {s.name: s for s in b.stages}
    for s in b.stages:
        if s.status == MEASURED:
            if s.duration_ns is None or s.duration_ns < 0:
                bad.append(f"{s.name}: duration {s.duration_ns}")
                continue
            ev = s.evidence
            if ev is None:
                bad.append(f"{s.name}: measured without evidence")
            elif not ((ev.start and ev.start.line_no) or (ev.end and ev.end.line_no)):
                bad.append(f"{s.name}: evidence without a line")
        elif s.status not in (NOT_MEASURED, ABSENT):
            bad.append(f"{s.name}: status {s.status}")
    # ordered, not overlapping (in the order the stages are listed: the boot's order)
    for a, c in zip(top, top[1:]):
        assert a.start_ns is not None and c.start_ns is not None and a.duration_ns is not None
        if c.start_ns + SLACK_NS < a.start_ns + a.duration_ns:
            bad.append(f"{a.name} [{a.start_ns}, +{a.duration_ns}] overlaps {c.name} from {c.start_ns}")
    for s in b.stages:
        p = by.get(s.parent) if s.parent else None
        if p is None or s.status != MEASURED or p.status != MEASURED or s.start_ns is None or p.start_ns is None:
            continue
        assert s.duration_ns is not None and p.duration_ns is not None
        if s.start_ns + SLACK_NS < p.start_ns or s.start_ns + s.duration_ns > p.start_ns + p.duration_ns + SLACK_NS:
            bad.append(f"{s.name} outside its parent {p.name}")
    # kernel init starts at the kernel's first line, never before it
    ki = by.get("kernel_init")
    kstart = next((e for e in b.boot.events if e.name == Milestone.KERNEL_START), None)
    if ki is not None and ki.status == MEASURED and ki.start is not None and kstart is not None \
            and ki.start.what == Milestone.KERNEL_START and ki.start.line_no != kstart.line_no:
        bad.append(f"kernel init starts at line {ki.start.line_no}, the kernel's first line is {kstart.line_no}")
    if ki is not None and ki.status == MEASURED and ki.start_ns is not None and kstart is not None:
        t = b.alignment.to_axis(kstart.start)
        if t is not None and ki.start_ns + SLACK_NS < t and ki.start.what != "kernel clock start":  # type: ignore[union-attr]
            bad.append(f"kernel init starts at {ki.start_ns}, before the kernel's first line at {t}")
    # nothing starts after its own line arrived: a kernel start placed through the printk clock
    # lies no later than the host time of the kernel's first line
    if ki is not None and ki.start_ns is not None and kstart is not None and b.alignment.axis.value == "host":
        i = b.boot.lines.index_of(kstart.line_no)
        h = b.boot.lines.host[i] if 0 <= i < len(b.boot.lines) else None
        on_axis = b.alignment.to_axis(Stamp(Clock.HOST, h)) if h is not None else None
        if on_axis is not None and ki.start_ns > on_axis + SLACK_NS:
            bad.append(f"kernel init starts at {ki.start_ns}, after its first line arrived at {on_axis}")
    # the total: not negative, and the stages inside it add up to no more than it
    t = b.total
    if t.duration_ns is not None:
        if t.duration_ns < 0:
            bad.append(f"total {t.duration_ns} < 0")
        if t.evidence is None:
            bad.append("total measured without evidence")
        inside = [s for s in top if s.start_ns is not None and t.end_ns is not None
                  and s.start_ns + SLACK_NS >= t.start_ns and s.start_ns + (s.duration_ns or 0) <= t.end_ns + SLACK_NS]
        total_in = sum(s.duration_ns or 0 for s in inside)
        if total_in > t.duration_ns + SLACK_NS * max(1, len(inside)):
            bad.append(f"stages inside the total add up to {total_in} > total {t.duration_ns}")
        # ... and to the total itself, unless a stage says why not (not measured)
        unknown = [s.name for s in b.stages if s.parent is None and s.status == NOT_MEASURED]
        if total_in < t.duration_ns - SLACK_NS * max(1, len(inside)) and not unknown:
            bad.append(f"stages add up to {total_in}, the total is {t.duration_ns}, and every stage is measured")
    for si in b.silences:
        if si.duration_ns < 0:
            bad.append(f"negative silence after line {si.line_before}")
    if b.boot.index > 0 and not any(w in b.boot.split_reason for w in RESET_WORDS):
        bad.append(f"boot {b.boot.index + 1} split without a reset signature: {b.boot.split_reason!r}")
    return bad


@pytest.mark.parametrize("path", LOGS, ids=[_name(p) for p in LOGS])
def test_every_analysis_keeps_the_invariants(path: Path) -> None:
    problems = [f"boot {b.boot.index + 1}: {x}" for b in _analyses(path) for x in _check(b)]
    assert not problems, "\n".join(problems)


def test_the_check_covers_the_corpus() -> None:
    """At least the golden cases and reference captures; the shared corpus where it is."""
    assert len(LOGS) >= 10
    if WILD.is_dir():
        assert sum(1 for p in LOGS if p.is_relative_to(WILD)) >= 60


# --- the same invariants on mutations of the corpus's own logs (issue 28, class 11: how the
# classes were found). Each mutation is one a real capture shows: a line stamped seconds early
# by another CPU or an interleaved console, a few lines pasted from earlier in the log, and
# CRLF line ends (which must change no figure).

_STAMP = re.compile(rb"\[ *(\d+)\.(\d{6})\]")


def _stamped(data: bytes) -> list[int]:
    return [i for i, ln in enumerate(data.split(b"\n")) if _STAMP.search(ln)]


def _backwards(data: bytes) -> bytes:
    """The middle stamped line reads 4 s earlier (at least 0)."""
    lines = data.split(b"\n")
    i = _stamped(data)[len(_stamped(data)) // 2]
    m = _STAMP.search(lines[i])
    assert m is not None
    us = max(0, int(m[1]) * 1_000_000 + int(m[2]) - 4_000_000)
    lines[i] = lines[i][: m.start()] + b"[%5d.%06d]" % (us // 1_000_000, us % 1_000_000) + lines[i][m.end():]
    return b"\n".join(lines)


def _pasted(data: bytes) -> bytes:
    """Three stamped lines from the first quarter pasted again at three quarters."""
    lines = data.split(b"\n")
    st = _stamped(data)
    src = st[len(st) // 4: len(st) // 4 + 3]
    at = st[3 * len(st) // 4]
    return b"\n".join(lines[:at] + [lines[j] for j in src] + lines[at:])


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


MUTANTS = [p for p in LOGS if p.is_relative_to(WILD) and len(_stamped(p.read_bytes())) >= 40] if WILD.is_dir() else []


@pytest.mark.parametrize("mutate", [_backwards, _pasted, _crlf], ids=["backwards", "pasted", "crlf"])
@pytest.mark.parametrize("path", MUTANTS, ids=[_name(p) for p in MUTANTS])
def test_mutations_of_corpus_logs_keep_the_invariants(path: Path, mutate: object, tmp_path: Path) -> None:
    out = tmp_path / path.name
    out.write_bytes(mutate(path.read_bytes()))  # type: ignore[operator]
    problems = [f"boot {b.boot.index + 1}: {x}" for b in _analyses(out) for x in _check(b)]
    assert not problems, "\n".join(problems)
    if mutate is _crlf:  # line ends change no figure
        before = [(s.name, s.duration_ns) for b in _analyses(path) for s in b.stages]
        assert [(s.name, s.duration_ns) for b in _analyses(out) for s in b.stages] == before
