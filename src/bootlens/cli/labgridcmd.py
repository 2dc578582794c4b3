"""TARGET ``labgrid`` of run, experiment and optimize: the options that say where the labgrid
target is (docs/labgrid.md). The commands themselves are :mod:`.boot`'s; this module gives them
the options, which :meth:`bootlens.lab.labgrid.LabgridTarget.from_options` reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

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
