"""bootlens: the boot-time workbench for embedded Linux.

The library is a pipeline of plain calls (see docs/architecture in the README):
``read_input`` -> ``split_boots`` -> parsers -> ``align`` -> ``analyze`` -> renderers.
``bootlens.timeline.analyze.analyze_paths`` runs the whole chain for the CLI.
"""

# A constant, not importlib.metadata.version("bootlens"): that lookup imports email, zipfile and
# the distribution scan, a third of the start-up of a small `bootlens analyze`.
# tests/test_startup.py checks it equals pyproject.toml's version and the installed metadata.
__version__ = "0.1.0"

__all__ = ["__version__"]
