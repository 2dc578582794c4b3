"""bootlens: the boot-time workbench for embedded Linux.

The library is a pipeline of plain calls (see docs/architecture in the README):
``read_input`` -> ``split_boots`` -> parsers -> ``align`` -> ``analyze`` -> renderers.
``bootlens.analyze.analyze_paths`` runs the whole chain for the CLI.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bootlens")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+src"

__all__ = ["__version__"]
