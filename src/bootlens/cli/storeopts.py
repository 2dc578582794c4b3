"""``--db`` and ``--label``, the options every measuring command shares with the history
commands, and :func:`store_hook`, which stores what the command measured (``run``,
``experiment``, ``analyze`` call it when ``--db`` or ``--label`` was given).

Apart from :mod:`.history` (which imports them back) for start-up: ``analyze`` declares these
options at import, and importing :mod:`.history` for them also built its three commands. click
is imported by the decorators, not here: ``analyze``'s fast path (:mod:`.fastpath`) stores
through :func:`store_hook` without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..core.errors import BootlensError
from .exits import fail as _fail, say as _say

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from ..timeline.analyze import Analysis
    from ..timeline.inputs import Group

    F = TypeVar("F", bound=Callable[..., Any])

DB_HELP = ("The history store: an SQLite file, or a URL (sqlite:///FILE, postgresql://USER@HOST/DB for a lab's "
           "shared history). Default: $XDG_DATA_HOME/bootlens/history.sqlite, else "
           "~/.local/share/bootlens/history.sqlite.")


def db_option(f: F) -> F:
    """``--db URL`` (also from the environment variable BOOTLENS_DB)."""
    import click

    return click.option("--db", "db", metavar="URL", envvar="BOOTLENS_DB", help=DB_HELP)(f)


def label_option(help_text: str) -> Callable[[F], F]:
    """``--label KEY=VALUE``, repeatable."""
    def deco(f: F) -> F:
        import click

        return click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help=help_text)(f)
    return deco


def store_options(what: str) -> Callable[[F], F]:
    """``--db`` and ``--label`` on a command that measures (run, experiment, analyze): given
    either, it also stores ``what`` in the history. BOOTLENS_DB is not read here: storing must
    be asked for on the command line, never happen because the environment has a variable."""
    def deco(f: F) -> F:
        import click

        f = click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
                         help=f"Store {what} in the history with this label (repeatable), e.g. board=rpi4 "
                         "commit=abc123; --db alone stores without labels (docs/history.md).")(f)
        return click.option("--db", "db", metavar="URL", help=f"Store {what} in this history store. " + DB_HELP)(f)
    return deco


def wants_store(db: str | None, labels: tuple[str, ...]) -> bool:
    """Whether a measuring command was asked to store what it measured."""
    return bool(db) or bool(labels)


def store_hook(db: str | None, labels: tuple[str, ...] | Mapping[str, str], what: Analysis | Group,
               kind: str = "run", source: str = "") -> int:
    """Store ``what`` as one run and say so on standard error; a store that cannot be used is a
    one-line error (exit code 2). Returns the run's id."""
    from ..history import parse_labels, store_run

    try:
        run_id = store_run(db, what, parse_labels(labels), kind, source)
    except BootlensError as e:
        _fail(e)
    _say(f"bootlens: stored as run {run_id}")
    return run_id
