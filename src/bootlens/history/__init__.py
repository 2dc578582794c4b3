"""The history of boot times: runs stored with labels (:mod:`.store`), trends over them
(:mod:`.trends`) and a new run judged against reference runs (:mod:`.regress`).

:func:`store_run` is the one call ``run``, ``experiment`` and ``analyze`` make to keep what
they measured (``--db``, ``--label``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..timeline.analyze import Analysis
from ..timeline.inputs import Group
from .store import HistoryError, Store, StoredRun, db_url, store_analysis


def store_run(db: str | None, what: Analysis | Group, labels: Mapping[str, str], kind: str = "run",
              source: str = "") -> int:
    """Store the boots of an analysis or an input group as one run with ``labels`` (kind run,
    experiment or import; ``source`` where it came from, e.g. the run folder) in the store at
    ``db`` (a URL, an SQLite file name, or None for the default file); returns the run's id.
    Raises HistoryError (exit code 2) when the store cannot be used."""
    if isinstance(what, Group):
        return store_analysis(db, what.analysis, labels, kind, source or what.name)
    return store_analysis(db, what, labels, kind, source)


def parse_labels(items: Mapping[str, str] | tuple[str, ...] | list[str]) -> dict[str, str]:
    """``--label KEY=VALUE`` options as a dict (a later KEY wins); HistoryError on one without '='."""
    if isinstance(items, Mapping):
        return dict(items)
    out: dict[str, str] = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k.strip():
            raise HistoryError(f"--label {it!r}: give KEY=VALUE, e.g. board=rpi4 or commit=1a2b3c")
        out[k.strip()] = v.strip()
    return out


__all__ = ["HistoryError", "Store", "StoredRun", "db_url", "parse_labels", "store_run"]
