"""Built-in parsers, one module per format, registered into :data:`REGISTRY`."""

from __future__ import annotations

from .base import MarkerSpec, ParseOptions, Parser, Registry

REGISTRY = Registry()

_loaded = False


def default_registry() -> Registry:
    """The registry with the built-in parsers and any installed through entry points."""
    global _loaded
    if not _loaded:
        # Importing the modules runs their @REGISTRY.register decorators.
        from . import firmware, initcall, kernel, markers, process, systemd, uboot, userspace  # noqa: F401

        REGISTRY.load_entry_points()
        _loaded = True
    return REGISTRY


__all__ = ["REGISTRY", "MarkerSpec", "ParseOptions", "Parser", "Registry", "default_registry"]
