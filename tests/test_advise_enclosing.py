"""advise/rules/_kernel.Enclosing gives what the plain scan enclosing() gives, on nested,
overlapping, tied and unplaced calls (it replaced a scan of every call per probe)."""

from __future__ import annotations

import random

from bootlens.advise.rules._kernel import Enclosing, Timed, enclosing
from bootlens.core.model import Event, Kind


def _call(i: int, start: int | None, dur: int | None) -> Timed:
    return Timed(Event(kind=Kind.INITCALL, name=f"f{i}", start=None, line_no=i + 1, duration_ns=dur), start)


def test_same_as_the_scan() -> None:
    r = random.Random(14)
    for _ in range(200):
        calls = []
        for i in range(r.randrange(0, 30)):
            start = None if r.random() < 0.1 else r.randrange(0, 1000)
            dur = None if r.random() < 0.1 else r.choice([0, r.randrange(1, 50), r.randrange(1, 600)])
            calls.append(_call(i, start, dur))
        index = Enclosing(calls)
        for at in [None, -1, *range(0, 1700, 7)]:
            assert index(at) is enclosing(calls, at), (calls, at)


def test_innermost_and_first_of_equals() -> None:
    outer, inner, twin = _call(0, 100, 500), _call(1, 200, 50), _call(2, 200, 50)
    index = Enclosing([outer, inner, twin])
    assert index(210) is inner  # nested: the innermost; equal twins: the first listed
    assert index(150) is outer and index(600) is None and index(99) is None
