"""What every command of the ``bootlens`` command line shares: the group class that ends quietly
on a closed pipe and says a usage error in one line, and bootlens.toml's defaults; the exit
codes, the one-line error and writing an output file live in :mod:`.exits` (no click)."""

from __future__ import annotations

import os
from typing import Any

import click

from ..core.errors import BootlensError
# what ends a command, without click (the fast path of ``analyze`` shares them); imported back
# here, their home before
from .exits import (EXIT_ERROR as EXIT_ERROR, EXIT_NOT_READY as EXIT_NOT_READY, echo as echo, exit_now as exit_now,
                    fail as fail, guarded as guarded, is_devnull as is_devnull, output_failed as output_failed,
                    release_closed_outputs as release_closed_outputs, say as say, write_output as write_output)


class OneLineUsageError(click.UsageError):
    """A usage error (unknown option, missing argument, bad value) said in one line, as every
    other bootlens error is: ``bootlens: error: capture: no such option --buad (did you mean
    --baud?)``; click's own is four lines (usage, a hint, a blank line, the error)."""

    exit_code = EXIT_ERROR  # on the class: click 8.5 declares it a ClassVar

    @classmethod
    def of(cls, e: click.UsageError) -> OneLineUsageError:
        """Click's error in one line."""
        return e if isinstance(e, OneLineUsageError) else cls(one_line_message(e), e.ctx)

    def show(self, file: Any = None) -> None:
        say(f"bootlens: error: {self.message}")


# an option of one command typed on another that says the same thing its own way
SAME_MEANING = {"--marker": "--ready"}


def one_line_message(e: click.UsageError) -> str:
    """Click's message for ``e``, on one line, with the command it is about."""
    possibilities = getattr(e, "possibilities", None)
    if isinstance(e, click.NoSuchOption):
        msg = f"no such option {e.option_name}"
        meant = SAME_MEANING.get(e.option_name)
        if meant is not None and e.ctx is not None and any(meant in p.opts for p in e.ctx.command.params):
            possibilities = [meant]
    elif isinstance(e, click.exceptions.NoSuchCommand):
        msg = f"no such command {e.command_name!r}"
    else:
        msg = " ".join(e.format_message().split())
        msg = msg[:1].lower() + (msg[1:-1] if msg.endswith(".") and not msg.endswith("..") else msg[1:])
        possibilities = None
    if possibilities:
        msg += f" (did you mean {' or '.join(sorted(possibilities))}?)"
    names = []
    c = e.ctx
    while c is not None and c.parent is not None:  # the root's name is the program's, not a command
        names.append(c.info_name or "")
        c = c.parent
    path = " ".join(reversed(names))
    if path:
        msg = f"{path}: {msg}"
    if possibilities is None and not isinstance(e, click.NoSuchOption):
        msg += f" (see bootlens {path + ' ' if path else ''}-h)"
    return msg




class QuietPipeGroup(click.Group):
    """Every command ends quietly when its reader goes away (``bootlens analyze big.log | head
    -1``, ``bootlens --help | head -3``), as ``cat`` does: no traceback, no "Broken pipe", exit 0
    (click alone exits 1); in one line when standard output fails otherwise (``> /dev/full``:
    :func:`.exits.guarded`); a usage error is one line (:class:`OneLineUsageError`)."""

    group_class = type  # ``target`` and any other subgroup behave the same

    def main(self, *args: Any, **kwargs: Any) -> Any:
        return guarded(lambda: super(QuietPipeGroup, self).main(*args, **kwargs))

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except OSError as e:  # --help into a closed pipe or /dev/full
            raise click.exceptions.Exit(_output_failed(e)) from None
        except click.UsageError as e:
            raise OneLineUsageError.of(e) from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except OSError as e:  # before click's main, which ends a closed pipe with exit 1
            ctx.exit(_output_failed(e))
        except click.UsageError as e:
            raise OneLineUsageError.of(e) from None


def _output_failed(e: OSError) -> int:
    """:func:`.exits.output_failed`'s exit code, or ``e`` raised again when it is not standard
    output's."""
    code = output_failed(e)
    if code is None:
        raise e
    return code


# --- bootlens.toml -------------------------------------------------------------------------

CONFIG_META = "bootlens.core.config"  # ctx.meta key: the configuration file in use (a Path)


class BootlensCommand(click.Command):
    """A command that says, in one line on standard error, which of its options came from
    ``bootlens.toml`` and from which file (its --help says it too)."""

    def invoke(self, ctx: click.Context) -> Any:
        cfg = ctx.meta.get(CONFIG_META)
        if cfg is not None:
            from click.core import ParameterSource

            used = [f"--{opt_name(p)}" for p in self.params
                    if p.name and ctx.get_parameter_source(p.name) is ParameterSource.DEFAULT_MAP]
            if used:
                say(f"bootlens: {', '.join(used)} from {cfg}")
        return super().invoke(ctx)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        cfg = ctx.meta.get(CONFIG_META)
        if cfg is not None:
            formatter.write_paragraph()
            formatter.write(f"Defaults shown include those of {cfg}.\n")  # unwrapped: a path is copied whole


QuietPipeGroup.command_class = BootlensCommand


def opt_name(p: click.Parameter) -> str:
    """An option's long name without dashes: its key in bootlens.toml."""
    longs = [o for o in p.opts if o.startswith("--")]
    return (longs[0] if longs else p.opts[0]).lstrip("-")


def apply_config(ctx: click.Context, explicit: str | None, disabled: bool) -> None:
    """Find and read bootlens.toml (or ``explicit``), check every key against the options of
    the commands (:mod:`.configschema`), and make its values the defaults of the command about
    to run (click's ``default_map``); a bad value is a one-line error naming the file and the
    key, keys no command has are one warning line."""
    if disabled:  # before the imports: --no-config need not import the reader
        return
    from ..core.config import find_config, read_config

    if explicit:
        from pathlib import Path

        path: Path | None = Path(explicit)
    else:
        path = find_config(os.getcwd())  # os, not pathlib: most runs find no file (start-up)
    if path is None:
        return
    from .configschema import config_default_map

    assert isinstance(ctx.command, click.Group)
    try:
        ctx.default_map, unknown = config_default_map(ctx.command, read_config(path))
    except BootlensError as e:
        fail(e)
    if unknown:
        from ..core.errors import printable

        say(f"bootlens: warning: {printable(str(path))}: unknown key{'s' if len(unknown) > 1 else ''} ignored: "
            + "; ".join(unknown))
    ctx.meta[CONFIG_META] = path
