"""What the user tells the parsers: user markers (``--marker NAME=REGEX``) and the parse options
that carry them. Values every stage passes along (capture's ready marker, a run folder's
run.json, the parsers), so they live in the core; :mod:`bootlens.parsers.base` re-exports them
for plugins."""

from __future__ import annotations

import re
from functools import lru_cache

from .errors import UsageError
from .model import NamedTuple

class MarkerSpec(NamedTuple):
    """A user marker: lines matching ``pattern`` become marker events called ``name``. (This and
    :class:`ParseOptions` are NamedTuples, not frozen dataclasses: built at every start-up, a
    NamedTuple class costs a fifth of a dataclass's.)"""

    name: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, spec: str) -> MarkerSpec:
        """Build from ``NAME=REGEX`` as given to ``--marker``."""
        name, sep, rx = spec.partition("=")
        if not sep or not name.strip() or not rx:
            raise UsageError(f"--marker {spec!r}: expected NAME=REGEX, e.g. ready='APP READY'")
        try:
            return cls.of(name, rx)
        except ValueError as e:
            raise UsageError(f"--marker {spec!r}: {e}") from None

    @classmethod
    def of(cls, name: str, rx: str) -> MarkerSpec:
        """Build from a name and a pattern (a run folder's run.json keeps them so); ValueError
        saying what is wrong, for the caller to say where it came from."""
        name = name.strip()
        if not name or not rx:
            raise ValueError("an empty name or pattern")
        try:
            return cls(name, re.compile(rx))
        except re.error as e:
            raise ValueError(f"bad regular expression: {e}") from None


    @property
    def literal(self) -> str | None:
        """The text the pattern matches when it is a plain string (no regex syntax), else None."""
        return _literal(self.pattern.pattern, self.pattern.flags)


_REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


@lru_cache(maxsize=256)
def _literal(pattern: str, flags: int) -> str | None:
    """:attr:`MarkerSpec.literal`, once per pattern: each boot's parsers ask for it (three times a
    boot, a million boots of a soak test: issue 29)."""
    if flags & ~(re.UNICODE) or not pattern or any(c in _REGEX_SYNTAX for c in pattern):
        return None
    return pattern


class ParseOptions(NamedTuple):
    """What the user told the parsers."""

    markers: tuple[MarkerSpec, ...] = ()
    # read the boot on the guest's own clocks only: a recording's host timestamps are set aside
    # (the deterministic mode, whose host times follow the host's load and not the guest)
    guest_clock: bool = False

    def needles(self) -> tuple[str, ...]:
        """Plain strings worth indexing while the input is framed (literal markers)."""
        return tuple(lit for m in self.markers if (lit := m.literal) is not None)
