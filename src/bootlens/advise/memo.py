"""Per-boot memoisation for the rules' shared questions.

Twenty rules ask the same things of one boot (its returned initcalls, its process tree); on a
boot with 100,000 events each answer costs a pass over all of them. A boot is immutable, so an
answer can be kept for it, matched by identity (hashing a boot would hash every event).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from ..timeline.analyze import BootAnalysis

T = TypeVar("T")
KEEP = 4  # boots remembered per function: a run folder's rules go boot by boot


def per_boot(fn: Callable[[BootAnalysis], T]) -> Callable[[BootAnalysis], T]:
    """``fn`` memoised for the last few boots it was asked about."""
    cache: list[tuple[BootAnalysis, T]] = []

    @functools.wraps(fn)
    def wrapper(ba: BootAnalysis) -> T:
        for b, v in cache:
            if b is ba:
                return v
        v = fn(ba)
        cache.insert(0, (ba, v))
        del cache[KEEP:]
        return v

    return wrapper
