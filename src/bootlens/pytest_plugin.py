"""Deprecated path of the pytest plugin, kept for one release: the plugin is
:mod:`bootlens.lab.pytest_plugin` (loaded through the ``pytest11`` entry point when bootlens is
installed). ``pytest -p bootlens.pytest_plugin`` and ``pytest_plugins = ["bootlens.pytest_plugin"]``
still load it: this name is the same module object, so pytest never registers it twice."""

import sys
import warnings

from .lab import pytest_plugin as _plugin

warnings.warn("bootlens.pytest_plugin is now bootlens.lab.pytest_plugin; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _plugin
