"""Built-in console parsers, one module per format: each registers its parser into
:data:`REGISTRY` on import, and :func:`default_registry` imports every module of this package. A new
console format is one new module here, declaring its index keywords (:class:`Parser`)."""

from __future__ import annotations

from .base import Parser, ParserRegistry, Registry
from ..core.options import MarkerSpec, ParseOptions

# The parsers run in the order of their names, whatever a caller imported first: that order
# breaks ties in a boot's "formats" (equal confidences) and sets the order of its warnings and
# of events on the same line.
REGISTRY = ParserRegistry(__name__)


def default_registry() -> ParserRegistry:
    """The registry with the built-in parsers (every module of this package) and any installed
    through entry points."""
    return REGISTRY.load()


__all__ = ["REGISTRY", "MarkerSpec", "ParseOptions", "Parser", "ParserRegistry", "Registry", "default_registry"]
