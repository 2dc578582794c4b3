"""The ``bootlens`` command: parse arguments, call one library function, print.

One module per family of commands: :mod:`.analysis` (analyze, report, compare, advise,
export), :mod:`.capturecmd` (capture), :mod:`.boot` (target, run, experiment, optimize, with
:mod:`.labgridcmd`'s options for TARGET labgrid), :mod:`.check` (check --budget),
:mod:`.history` (store, history, regress).

A command's module is imported only when that command runs (:class:`LazyGroup`): start-up is
most of what ``bootlens analyze`` of a small log costs, and importing every family (labgrid
glue, QEMU targets, the history store) for one command doubled it. ``--help`` lists every
command from :data:`COMMANDS` without importing any; tests/test_startup.py checks the table
against the commands the modules register.
"""

from __future__ import annotations

import gc
import os
import sys

# Start-up: the cyclic collector paused from here, before click and the command's imports, when
# this process is the ``bootlens`` command (not a test or a program importing the CLI): every import
# allocates thousands of objects and the collector's passes over them were ~15-20 ms CPU of a
# 2,000-line ``analyze --json`` (~120 ms; docs/architecture.md, step 15). :func:`main` turns it
# back on (the import-time objects frozen out of its walks) for every command but ``analyze``,
# which ends in os._exit (common.exit_now) and pauses it anyway over its big structures.
COMMAND_PROCESS = os.path.basename(sys.argv[0]).startswith("bootlens") if sys.argv else False
if COMMAND_PROCESS:
    gc.disable()

import importlib  # after the pause: these imports are its point
from collections.abc import Iterator
from typing import Any

import click

from .. import __version__
from .common import QuietPipeGroup, apply_config

# command -> (module under bootlens.cli that registers it on ``main``, its short help as click
# derives it from the docstring). A new command module: add its commands here.
COMMANDS: dict[str, tuple[str, str]] = {
    "advise": ("analysis", "Say what to change to boot faster, with the saving each change would bring."),
    "analyze": ("analysis", "Analyse boot logs: stages on one axis, top initcalls, probes and processes, silences."),
    "capture": ("capturecmd", "Capture a console with host timestamps into a recording (docs/recording.md)."),
    "check": ("check", "Check boots against a boot-time budget: exit 0 when every budget is met, 1 when one is not."),
    "compare": ("analysis", "Compare boots: each INPUT against the first, the baseline."),
    "experiment": ("boot", "Measure what each change saves: boot the baseline, each change alone and all changes "
                   "together, --repeat times each (interleaved), and set each saving next to the advisor's estimate."),
    "export": ("analysis", "Turn a recording into plain text or grabserial -t format."),
    "history": ("history", "List stored runs and the trend of each figure over them."),
    "optimize": ("boot", "Find and keep the changes that make TARGET boot faster."),
    "regress": ("history", "Say what got slower in NEW than in the reference runs, by how much, with what confidence."),
    "report": ("analysis", "Write a report of one or more boots: INPUT is a log, a recording or a run folder."),
    "run": ("boot", "Boot TARGET repeatedly, capture each boot from power-on, analyse."),
    "store": ("history", "Analyse INPUTs and store each as one run in the history."),
    "target": ("boot", "The built-in reference targets (real Debian kernels under QEMU; a Debian 12 systemd image)."),
}
MODULES = tuple(sorted({m for m, _ in COMMANDS.values()}))


def load_all() -> None:
    """Import every command module (each registers its commands on :data:`main`)."""
    for m in MODULES:
        importlib.import_module(f"{__name__}.{m}")


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
            importlib.import_module(f"{__name__}.{entry[0]}")
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
