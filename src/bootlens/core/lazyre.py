"""Regular expressions compiled on first use: :func:`lazy`.

Start-up (issue 14, part 4): the parsers' module-level patterns cost ``bootlens analyze`` of a
small log ~10 ms of ``re.compile`` at import on a slow machine (a banner table alone holds 28),
though most logs never reach most of them (a kernel log meets no GRUB, no SBL1, no barebox).
A :class:`LazyPattern` stands where the ``re.Pattern`` stood, with the same methods; its first
use compiles and puts the compiled pattern's bound methods in the instance's ``__dict__``, where
they shadow the class's: every later ``rx.match(t)`` is the C method itself, as fast as on a
compiled pattern (no Python call per line on a million-line log).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class LazyPattern:
    """``re.compile(pattern, flags)``, done on first use; ``.pattern`` and ``.flags`` without it."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if it was not yet)."""
        rx: re.Pattern[str] | None = self.__dict__.get("_rx")
        if rx is None:
            rx = re.compile(self.pattern, self.flags)
            self.__dict__["_rx"] = rx
            # from now on these names are the compiled pattern's own methods (the instance's
            # __dict__ wins over the class's plain functions below)
            self.__dict__.update((name, getattr(rx, name)) for name in _METHODS)
        return rx

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As :meth:`re.Pattern.match`."""
        return self.compiled.match(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As :meth:`re.Pattern.search`."""
        return self.compiled.search(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As :meth:`re.Pattern.fullmatch`."""
        return self.compiled.fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        """As :meth:`re.Pattern.finditer`."""
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        """As :meth:`re.Pattern.findall`."""
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        """As :meth:`re.Pattern.sub`."""
        return self.compiled.sub(repl, string, count)

    def subn(self, repl: Any, string: str, count: int = 0) -> tuple[str, int]:
        """As :meth:`re.Pattern.subn`."""
        return self.compiled.subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[Any]:
        """As :meth:`re.Pattern.split`."""
        return self.compiled.split(string, maxsplit)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}{', ' + str(self.flags) if self.flags else ''})"


def lazy(pattern: str, flags: int = 0) -> LazyPattern:
    """A pattern compiled on first use; a bad pattern raises then (a test compiles them all:
    tests/test_startup.py)."""
    return LazyPattern(pattern, flags)
