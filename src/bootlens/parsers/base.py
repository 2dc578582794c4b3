"""The parser role: ``sniff`` says how sure a parser is that it has something to read in a
boot's lines, ``parse`` reads it.

A console log interleaves several formats (U-Boot, printk, initcall_debug, trace events, user
output), so every parser whose ``sniff`` is above zero reads the same lines; each reports only
what it understands.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator

from ..plugins import entry_points  # not importlib.metadata's: that import is a third of start-up
from ..errors import UsageError
from ..lines import Lines
from ..model import NamedTuple, ParseResult

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/architecture.md step 23)
if TYPE_CHECKING:
    from typing import ClassVar, TypeVar


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
        name = name.strip()
        if not sep or not name or not rx:
            raise UsageError(f"--marker {spec!r}: expected NAME=REGEX, e.g. ready='APP READY'")
        try:
            return cls(name, re.compile(rx))
        except re.error as e:
            raise UsageError(f"--marker {spec!r}: bad regular expression: {e}") from None


    @property
    def literal(self) -> str | None:
        """The text the pattern matches when it is a plain string (no regex syntax), else None."""
        p = self.pattern
        if p.flags & ~(re.UNICODE) or not p.pattern or any(c in _REGEX_SYNTAX for c in p.pattern):
            return None
        return p.pattern


_REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


class ParseOptions(NamedTuple):
    """What the user told the parsers."""

    markers: tuple[MarkerSpec, ...] = ()

    def needles(self) -> tuple[str, ...]:
        """Plain strings worth indexing while the input is framed (literal markers)."""
        return tuple(lit for m in self.markers if (lit := m.literal) is not None)


class Parser(ABC):
    """One log format. Subclasses are registered with :meth:`Registry.register`."""

    name: ClassVar[str]
    description: ClassVar[str]

    @abstractmethod
    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        """Confidence in [0, 1] that these lines hold something this parser reads."""

    @abstractmethod
    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        """Read the lines into events, facts and warnings; never raise on bad input."""


if TYPE_CHECKING:
    P = TypeVar("P", bound=type[Parser])


class Registry:
    """A set of parser classes, filled by the :meth:`register` decorator."""

    def __init__(self) -> None:
        self._parsers: dict[str, type[Parser]] = {}

    def register(self, cls: P) -> P:
        """Class decorator; registering a name twice is an error."""
        if cls.name in self._parsers:
            raise ValueError(f"parser {cls.name!r} is already registered")
        self._parsers[cls.name] = cls
        return cls

    def __iter__(self) -> Iterator[type[Parser]]:
        return iter(self._parsers.values())

    def __len__(self) -> int:
        return len(self._parsers)

    def names(self) -> list[str]:
        """Registered parser names, in registration order."""
        return list(self._parsers)

    def instances(self) -> list[Parser]:
        """One fresh instance of each parser."""
        return [cls() for cls in self._parsers.values()]

    def load_entry_points(self, group: str = "bootlens.parsers") -> None:
        """Register third-party parsers published under an entry-point group."""
        for ep in entry_points(group=group):
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Parser):
                self.register(obj)
            elif callable(obj):  # a function taking the registry
                register_fn: Callable[[Registry], None] = obj
                register_fn(self)

