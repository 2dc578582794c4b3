"""The ``bootlens`` command: parse arguments, call one library function, print.

One module per family of commands: :mod:`.analysis` (analyze, report, compare, advise,
export), :mod:`.capturecmd` (capture), :mod:`.boot` (target, run, experiment, optimize).
"""

from __future__ import annotations

import click

from .. import __version__
from ..lines import native_available
from .common import QuietPipeGroup


@click.group(cls=QuietPipeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, prog_name="bootlens",
    message=f"%(prog)s, version %(version)s (native accelerator: {'on' if native_available() else 'off'})",
)
def main() -> None:
    """bootlens: the boot-time workbench for embedded Linux.

    Puts the bootloader, the kernel and user space on one time axis, from power-on to
    application ready, and tells you where the time goes.
    """


from . import analysis, boot, capturecmd  # noqa: E402,F401  (each registers its commands on main)
