"""The parser role: ``sniff`` says how sure a parser is that it has something to read in a
boot's lines, ``parse`` reads it.

A console log interleaves several formats (U-Boot, printk, initcall_debug, trace events, user
output), so every parser whose ``sniff`` is above zero reads the same lines; each reports only
what it understands.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator

from ..core.plugins import entry_points  # not importlib.metadata's: that import is a third of start-up
from ..core.lines import Lines
from ..core.model import ParseResult
from ..core.options import MarkerSpec as MarkerSpec, ParseOptions as ParseOptions  # public here too (plugins import them from base)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import ClassVar, TypeVar


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

