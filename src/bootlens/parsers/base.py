"""The parser role: ``sniff`` says how sure a parser is that it has something to read in a
boot's lines, ``parse`` reads it.

A console log interleaves several formats (U-Boot, printk, initcall_debug, trace events, user
output), so every parser whose ``sniff`` is above zero reads the same lines; each reports only
what it understands.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..core import registry
from ..core.lines import Lines
from ..core.model import ParseResult
from ..core.options import MarkerSpec as MarkerSpec, ParseOptions as ParseOptions  # public here too (plugins import them from base)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import ClassVar


class Parser(ABC):
    """One log format. Subclasses are registered with :meth:`ParserRegistry.register`.

    ``needles`` and ``prefixes``: the keywords the framing pass indexes for this parser while it
    frames every line (substrings for :meth:`Lines.grep`, message prefixes for
    :meth:`Lines.starting`, which are far cheaper to index): those the parser asks of every
    input, in its ``sniff`` or on its common path. Any other keyword is found when asked, by one
    more pass over the lines.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    needles: ClassVar[tuple[str, ...]] = ()
    prefixes: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def sniff(self, lines: Lines, options: ParseOptions) -> float:
        """Confidence in [0, 1] that these lines hold something this parser reads."""

    @abstractmethod
    def parse(self, lines: Lines, options: ParseOptions) -> ParseResult:
        """Read the lines into events, facts and warnings; never raise on bad input."""


class ParserRegistry(registry.Registry[type[Parser]]):
    """Parser classes by name (:class:`bootlens.core.registry.Registry`); they run in the order of
    their names. Third-party parsers come through the ``bootlens.parsers`` entry-point group."""

    def __init__(self, package: str | None = None) -> None:
        super().__init__("parser", "name", "bootlens.parsers", package)

    def accepts(self, obj: object) -> bool:
        """A :class:`Parser` subclass."""
        return isinstance(obj, type) and issubclass(obj, Parser)

    def instances(self) -> list[Parser]:
        """One fresh instance of each parser, in the order of their names."""
        return [cls() for cls in self]

    def keywords(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Every parser's index keywords (:attr:`Parser.needles`, :attr:`Parser.prefixes`), each
        once, in the order of the parsers' names: what the framing pass indexes for them."""
        return (tuple(dict.fromkeys(n for cls in self for n in cls.needles)),
                tuple(dict.fromkeys(p for cls in self for p in cls.prefixes)))


Registry = ParserRegistry  # the name plugins and callers import
