"""The ``bootlens`` command: parse arguments, call one library function, print."""

from __future__ import annotations

import os
import sys

import click

from . import __version__
from .errors import BootlensError
from .lines import native_available


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, prog_name="bootlens",
    message=f"%(prog)s, version %(version)s (native accelerator: {'on' if native_available() else 'off'})",
)
def main() -> None:
    """bootlens: the boot-time workbench for embedded Linux.

    Puts the bootloader, the kernel and user space on one time axis, from power-on to
    application ready, and tells you where the time goes.
    """


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="FILE... | -")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md) instead of tables.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 10_000),
              help="How many initcalls, probes and processes to list.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot, e.g. --marker ready='APP READY'.")
def analyze(inputs: tuple[str, ...], as_json: bool, top: int, markers: tuple[str, ...]) -> None:
    """Analyse boot logs: stages on one axis, top initcalls, probes and processes, silences.

    FILE is a console log (serial capture, grabserial -t/-T, dmesg, journalctl -k -o
    short-monotonic); '-' reads standard input. One file may hold several boots.
    """
    from .analyze import analyze_paths
    from .parsers import MarkerSpec, ParseOptions

    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        result = analyze_paths(list(inputs), opts, top)
    except BootlensError as e:
        _fail(e)
    if as_json:
        from .render.jsonout import write_json

        write_json(result, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        _exit_now()
    else:
        from rich.console import Console  # only the tables need rich: keep --json start-up lean

        from .render.terminal import render_terminal

        render_terminal(result, Console(highlight=False), top)


def _exit_now() -> None:
    """Exit 0 without tearing down the analysis: freeing a big log's millions of objects one by
    one takes longer than the OS takes to reclaim the whole process."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _fail(e: BootlensError) -> None:
    click.echo(f"bootlens: error: {e}", err=True)
    sys.exit(e.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
