"""TARGET ``labgrid`` of run, experiment and optimize: the options that say where the labgrid
target is (docs/labgrid.md). The commands themselves are :mod:`.boot`'s; this module gives them
the options and turns the values into a :class:`~bootlens.lab.labgrid.LabgridSpec`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..lab.labgrid import LabgridSpec

F = TypeVar("F", bound=Callable[..., None])


def labgrid_options(f: F) -> F:
    """--env, --role, --place and --coordinator, for TARGET labgrid."""
    opts = [
        click.option("--env", "lg_env", metavar="FILE", type=click.Path(dir_okay=False),
                     help="TARGET 'labgrid': the labgrid environment file (its role's ConsoleProtocol is read; "
                     "its PowerProtocol, DigitalOutputProtocol relay or QEMUDriver boots it)."),
        click.option("--role", "lg_role", default="main", show_default=True, metavar="NAME",
                     help="TARGET 'labgrid': the target's role in --env."),
        click.option("--place", "lg_place", metavar="NAME", help="TARGET 'labgrid': the labgrid place (replaces "
                     "--env's RemotePlace name; acquire it first: labgrid-client -p NAME acquire)."),
        click.option("--coordinator", "lg_coordinator", metavar="HOST:PORT", help="TARGET 'labgrid': the labgrid "
                     "coordinator (default: --env's coordinator_address, else LG_COORDINATOR)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def labgrid_spec(name: str, lg_env: str | None, lg_role: str, lg_place: str | None, lg_coordinator: str | None,
                 **board: str | None) -> LabgridSpec | None:
    """The labgrid target for TARGET labgrid (None for any other TARGET); a labgrid option
    typed for another TARGET, or a board's option (--port, --power-cycle) for labgrid, is a
    mistake."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    typed = [p for p in ("lg_env", "lg_role", "lg_place", "lg_coordinator")
             if ctx.get_parameter_source(p) is ParameterSource.COMMANDLINE]
    if name != "labgrid":
        if typed:
            raise UsageError(f"--{typed[0].removeprefix('lg_')} is for TARGET labgrid")
        return None
    for param, value in board.items():
        if value is not None and ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE:
            raise UsageError(f"--{param.replace('_', '-')} is for TARGET board; labgrid's environment file "
                             "names the console and the power switch")
    if not lg_env:
        raise UsageError("TARGET labgrid needs --env (a labgrid environment file; docs/labgrid.md)")
    import logging

    # labgrid's client logs through the root logger with logging.error(), which installs a stderr
    # handler when there is none: its failures reach us as exceptions, said in one line by the CLI
    if not logging.getLogger().handlers:
        logging.getLogger().addHandler(logging.NullHandler())
    from ..lab.labgrid import LabgridSpec

    return LabgridSpec(lg_env, lg_role, lg_place, lg_coordinator)
