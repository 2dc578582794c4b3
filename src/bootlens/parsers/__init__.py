"""Built-in parsers, one module per format, registered into :data:`REGISTRY`."""

from __future__ import annotations

from importlib import import_module

from .base import Parser, Registry
from ..core.options import MarkerSpec, ParseOptions

REGISTRY = Registry()

# The built-in parsers (each registered by the module of that name), in the order they run on a
# boot: that order breaks ties in a boot's "formats" (equal confidences) and sets the order of its
# warnings and of events on the same line. Stated here rather than left to import order, which
# any caller could change by importing a parser module before default_registry().
BUILTIN = ("firmware", "initcall", "kernel", "markers", "process", "systemd", "uboot", "userspace")

_loaded = False


def default_registry() -> Registry:
    """The registry with the built-in parsers (in :data:`BUILTIN` order), then any installed
    through entry points."""
    global _loaded
    if not _loaded:
        for name in BUILTIN:  # importing a module runs its @REGISTRY.register decorator
            import_module(f".{name}", __name__)
        # registration order is import order: put the built-ins first, in the stated order (a
        # dict merge keeps the first mapping's key order; the registry owns no reorder of its own)
        parsers = REGISTRY._parsers
        REGISTRY._parsers = {**{name: parsers[name] for name in BUILTIN}, **parsers}
        REGISTRY.load_entry_points()
        _loaded = True
    return REGISTRY


__all__ = ["BUILTIN", "REGISTRY", "MarkerSpec", "ParseOptions", "Parser", "Registry", "default_registry"]
