"""The ``bootlens`` console script: ``bootlens analyze ...`` without click when it can be.

click with what it imports (inspect, uuid, datetime, platform) was ~30 ms CPU of the ~120 ms
that ``bootlens analyze`` of a 2,000-line log took, four times what bootgraph.pl takes for the
whole job (docs/performance.md, step 18). :func:`analyze_kwargs` reads the command line with
:mod:`.analyze_options`, a table generated from the click command (each option is declared once,
in :mod:`.analysis`; tests/test_startup.py regenerates the table and checks that these keyword
arguments are click's for many command lines), and :func:`main` runs the same
:func:`.analyzecmd.run_analyze` the click command calls. Anything else goes to click unchanged, so
help, errors and every other command stay click's: another command, --help, an option not in
the table or a value the table's type refuses, a missing FILE, a bootlens.toml that applies
(BOOTLENS_CONFIG, --config, or one found from the working directory) or shell completion.
"""

from __future__ import annotations

import os
import sys

from .exits import echo, guarded, output_failed

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any


def _value(kind: str, text: str, lo: float | None, hi: float | None) -> Any:
    """``text`` as an option of ``kind`` takes it, or None where click could answer otherwise
    (click's int() and float() take more spellings, " 5", "1_0", "1e3": those go to click)."""
    if kind == "text":
        return text
    digits = text.replace(".", "", 1) if kind == "float" else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    v = int(text) if kind == "int" else float(text)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        return None  # click's "not in the range" error
    return v


def analyze_kwargs(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments the click command ``analyze`` would be called with for
    ``bootlens ARGS`` (as click parses them: options and files in any order, ``--opt=value``,
    ``--`` ending the options, the last value of a repeated option that is not multiple), or
    None when click must read them."""
    from .analyze_options import ARGUMENT, DEFAULTS, OPTIONS

    i, n = 0, len(args)
    no_config = i < n and args[i] == "--no-config"
    i += no_config
    if i >= n or args[i] != "analyze":
        return None
    i += 1
    given: dict[str, Any] = {}
    files: list[str] = []
    only_files = False
    while i < n:
        tok = args[i]
        i += 1
        if only_files or tok[:1] != "-" or tok == "-":
            files.append(tok)
            continue
        if tok == "--":
            only_files = True
            continue
        opt, eq, text = tok.partition("=") if tok[:2] == "--" else (tok, "", "")
        spec = OPTIONS.get(opt)
        if spec is None:  # --help, -h, an unknown option: click's to answer
            return None
        name, kind, multiple, lo, hi = spec
        if kind == "flag":
            if eq:
                return None  # click: "option does not take a value"
            given[name] = True
            continue
        if not eq:
            if i >= n:
                return None  # click: "option requires an argument"
            text = args[i]
            i += 1
        v = _value(kind, text, lo, hi)
        if v is None:
            return None
        if multiple:
            given[name] = (*given.get(name, ()), v)
        else:
            given[name] = v
    if not files and ARGUMENT[1]:
        return None  # click: "missing argument"
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # click's shell completion (_BOOTLENS_COMPLETE=...)
    if not no_config:
        if "BOOTLENS_CONFIG" in os.environ:
            return None
        from ..core.config import find_config

        try:
            if find_config(os.getcwd()) is not None:
                return None  # its defaults, and the line saying which came from it, are click's
        except OSError:
            return None
    return {ARGUMENT[0]: tuple(files), **DEFAULTS, **given}


def main() -> None:
    """``bootlens``: analyze through the fast path when :func:`analyze_kwargs` can read the
    command line, else the click group; either way the same exit codes and output, standard
    output's failures ended by :func:`.exits.guarded` (the click group's own main is guarded)."""
    kwargs = analyze_kwargs(sys.argv[1:])
    if kwargs is None:
        from .group import main as group

        group()
        return
    from .analyzecmd import run_analyze

    def run() -> None:
        # what click's standalone main does around a command
        try:
            run_analyze(**kwargs)
        except BrokenPipeError as e:
            code = output_failed(e)
            if code is not None:
                sys.exit(code)
            # some other pipe: click's own ending, whose wrapper click 8.2 made private (the
            # public name is a deprecated alias, gone in click 9)
            import click.utils as click_utils

            wrap = getattr(click_utils, "_PacifyFlushWrapper", None) or getattr(click_utils, "PacifyFlushWrapper")
            sys.stdout = wrap(sys.stdout)
            sys.stderr = wrap(sys.stderr)
            sys.exit(1)
        except (KeyboardInterrupt, EOFError):
            echo(err=True)
            echo("Aborted!", err=True)
            sys.exit(1)

    guarded(run)
    sys.exit(0)
