"""The ``bootlens`` command: parse arguments, call one library function, print.

One module per family of commands: :mod:`.analysis` (analyze, report, compare, advise,
export), :mod:`.capturecmd` (capture), :mod:`.boot` (target, run, experiment, optimize, with
:mod:`.labgridcmd`'s options for TARGET labgrid), :mod:`.check` (check --budget),
:mod:`.history` (store, history, regress).
"""

from __future__ import annotations

import click

from .. import __version__
from ..lines import native_available
from .common import QuietPipeGroup, apply_config


@click.group(cls=QuietPipeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, prog_name="bootlens",
    message=f"%(prog)s, version %(version)s (native accelerator: {'on' if native_available() else 'off'})",
)
@click.option("--config", "config_path", metavar="FILE", envvar="BOOTLENS_CONFIG",
              help="Take option defaults from FILE (default: bootlens.toml in the working directory or the "
              "nearest parent, up to the top of the repository).")
@click.option("--no-config", "no_config", is_flag=True, help="Read no bootlens.toml.")
@click.pass_context
def main(ctx: click.Context, config_path: str | None, no_config: bool) -> None:
    """bootlens: the boot-time workbench for embedded Linux.

    Puts the bootloader, the kernel and user space on one time axis, from power-on to
    application ready, and tells you where the time goes.

    Exit codes: 0 done; 2 an error (bad input or option, a console or target that cannot be
    used); 3 a boot never reached its ready marker (run, experiment, optimize).
    """
    apply_config(ctx, config_path or None, no_config)


from . import analysis, boot, capturecmd, check, history  # noqa: E402,F401  (each registers its commands on main)
