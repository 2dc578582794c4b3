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

This package imports no click: the click group :data:`main` lives in :mod:`.group` (read here
on first use), and the console script's :func:`.fastpath.main` runs ``bootlens analyze`` without
click when every argument is one of analyze's (docs/performance.md, step 18).
"""

from __future__ import annotations

import gc
import os
import sys

# Start-up: the cyclic collector paused from here, before click and the command's imports, when
# this process is the ``bootlens`` command (not a test or a program importing the CLI): every import
# allocates thousands of objects and the collector's passes over them were ~15-20 ms CPU of a
# 2,000-line ``analyze --json`` (~120 ms; docs/performance.md, step 15). :func:`main` turns it
# back on (the import-time objects frozen out of its walks) for every command but ``analyze``,
# which ends in os._exit (exits.exit_now) and pauses it anyway over its big structures.
COMMAND_PROCESS = os.path.basename(sys.argv[0]).startswith("bootlens") if sys.argv else False
if COMMAND_PROCESS:
    gc.disable()

import importlib  # after the pause: these imports are its point

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

    from .group import LazyCommands as LazyCommands, LazyGroup as LazyGroup, main as main, resume_gc as resume_gc

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


_GROUP_NAMES = ("main", "LazyGroup", "LazyCommands", "resume_gc")


def __getattr__(name: str) -> Any:
    """``bootlens.cli.main`` (the click group) and its helpers, from :mod:`.group` on first use."""
    if name in _GROUP_NAMES:
        return getattr(importlib.import_module(f"{__name__}.group"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
