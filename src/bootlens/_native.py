"""The one door to the native core, ``bootlens._scan`` (native/, Rust, PyO3): every module
that calls it gets it from :func:`native_module`, so an install without it fails here, in one
line, whatever runs first. Its column types are registered as the sequences they behave as.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from importlib import import_module
from types import ModuleType


def _load() -> ModuleType:
    """The native core (native/), required: a build without it is a broken install, said in one line."""
    try:
        # by name: the package's __getattr__ (its lazy public calls) would answer for a missing _scan
        return import_module(f"{__package__}._scan")
    except ImportError as e:
        raise SystemExit(f"bootlens: its native module bootlens._scan does not load ({e}); reinstall bootlens "
                         "with cargo present (Debian: apt-get install cargo rustc; or https://rustup.rs)") from None


_native = _load()
MutableSequence.register(_native.TextColumn)
MutableSequence.register(_native.TimeColumn)
Sequence.register(_native.IndexColumn)


def native_module() -> ModuleType:
    """The native core, ``bootlens._scan``."""
    return _native
