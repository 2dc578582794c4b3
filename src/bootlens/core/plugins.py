"""Third-party plugins (parsers, rules) published under an entry-point group, found cheaply.

``importlib.metadata.entry_points`` imports email, zipfile, csv and tempfile and reads every
installed distribution's metadata: a third of the start-up of ``bootlens analyze`` on a small
log, paid on every run though almost no installation has a bootlens plugin. :func:`entry_points`
first looks for the group's name in the ``entry_points.txt`` files on ``sys.path`` (what
importlib.metadata reads too) and asks importlib.metadata only when one names it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any


def _named_anywhere(group: str) -> bool:
    """True if some ``*.dist-info``/``*.egg-info`` on sys.path declares ``[group]``, or if a
    sys.path entry is not a plain folder (a zip: only importlib.metadata can look inside)."""
    header = f"[{group}]"
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True  # a zip archive on sys.path
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                    if header in f.read():
                        return True
            except OSError:  # no entry points, or an .egg-info file rather than a folder
                continue
    return False


def entry_points(group: str) -> Any:
    """``importlib.metadata.entry_points(group=group)``, or an empty tuple when no installed
    distribution declares the group."""
    if not _named_anywhere(group):
        return ()
    from importlib.metadata import entry_points as _entry_points

    return _entry_points(group=group)
