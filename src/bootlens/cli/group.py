"""The ``bootlens`` click group: its options (--version, --config, --no-config), the lazy
table of commands (a command's module imported when the command runs) and the collector's
resumption; :mod:`bootlens.cli` hands :data:`main` out from here."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator
from typing import Any

import click

from .. import __version__
from . import COMMAND_PROCESS, COMMANDS, load_all
from .common import QuietPipeGroup, apply_config


class LazyCommands(dict[str, click.Command]):
    """``main.commands``: filled by each module as it is imported; reading it as a whole (click's
    "did you mean", ``bootlens.toml``'s key check, tests) imports every module first, so it is
    always complete to whoever looks at all of it."""

    def _all(self) -> None:
        if dict.__len__(self) < len(COMMANDS):
            load_all()

    def __iter__(self) -> Iterator[str]:
        self._all()
        return super().__iter__()

    def __len__(self) -> int:
        self._all()
        return super().__len__()

    def __getitem__(self, name: str) -> click.Command:
        if not super().__contains__(name):
            self._all()
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        if not super().__contains__(name):
            self._all()
        return super().__contains__(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def keys(self) -> Any:
        self._all()
        return super().keys()

    def values(self) -> Any:
        self._all()
        return super().values()

    def items(self) -> Any:
        self._all()
        return super().items()


class LazyGroup(QuietPipeGroup):
    """The root group: imports a command's module when the command is looked up, and lists the
    commands with their short help from :data:`COMMANDS` without importing anything."""

    group_class: Any = QuietPipeGroup  # ``target``'s subcommands are its own, not in COMMANDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is not None and not dict.__contains__(self.commands, cmd_name):
            importlib.import_module(f"{__package__}.{entry[0]}")
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(n) for n in COMMANDS)
        # the command's own shortening of its help (click.Command.get_short_help_str, public; the
        # function behind it, click.utils.make_default_short_help, is deprecated since click 8.5)
        rows = [(n, click.Command(n, help=COMMANDS[n][1]).get_short_help_str(limit)) for n in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """--version (the native core is required: there is no "accelerator on/off" to report)."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"bootlens, version {__version__}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
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
    if ctx.invoked_subcommand != "analyze":
        resume_gc()
    apply_config(ctx, config_path or None, no_config)


def resume_gc() -> None:
    """The collector back on after the start-up pause (for commands that run long: run,
    experiment, report). The import-time objects go to the permanent generation first, so no
    collection walks them again (what ``gc.freeze`` is for)."""
    if COMMAND_PROCESS and not gc.isenabled():
        gc.freeze()
        gc.enable()
