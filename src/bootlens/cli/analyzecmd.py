"""``bootlens analyze``'s work, without click: the click command (:mod:`.analysis`) and the
fast path (:mod:`.fastpath`, the console script's ``analyze`` without click, ~25 ms of a small
log's start-up) both call :func:`run_analyze` with the same arguments."""

from __future__ import annotations

import sys

from ..core.errors import BootlensError, UsageError
from .exits import echo, exit_now as _exit_now, fail as _fail

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..timeline.inputs import Group


def run_analyze(inputs: tuple[str, ...], as_json: bool, summary: bool, top: int, markers: tuple[str, ...],
                chain: bool, dump: str | None, collected: tuple[str, ...], db: str | None, labels: tuple[str, ...],
                **side: object) -> None:
    """Analyse ``inputs`` and print (the options as ``bootlens analyze --help`` says them; ``side``:
    the side formats' own options, by their ``dest``); ends the process (os._exit after the
    output, or exit code 2 with a one-line error)."""
    from ..timeline.analyze import Analysis
    from ..timeline.inputs import analyze_inputs
    from ..core.options import MarkerSpec, ParseOptions

    if as_json and summary:
        _fail(UsageError("--json and --summary: choose one"))
    if chain and summary:
        _fail(UsageError("--critical-chain and --summary: choose one"))
    if dump is not None and not chain:
        _fail(UsageError("--systemd-dump is read for --critical-chain: add it"))
    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        setups = side_setups(side)
        groups = with_side_inputs(analyze_inputs(list(inputs), opts, top, collected, side=setups), setups, side)
    except BootlensError as e:
        _fail(e)
    if db or labels:  # storeopts.wants_store, imported only then (start-up)
        from .storeopts import store_hook

        for g in groups:
            if g.analysis.boots:
                store_hook(db, labels, g, "import", g.name)
    if chain:
        _print_chains(groups, dump, as_json)
        _exit_now()
    if as_json:
        from ..render.jsonout import write_json

        whole = Analysis(tuple(st for g in groups for st in g.analysis.inputs),
                         tuple(b for g in groups for b in g.analysis.boots))
        write_json(whole, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        _exit_now()
    from ..render.terminal import render_groups, summary_lines, warning_lines

    if summary:  # for scripts: the lines on standard output, and one line on standard error at most
        warned = sum(len(warning_lines(g.analysis, g.name if g.folder else None)) for g in groups)
        if warned:
            echo(f"bootlens: {warned} warning{'s' if warned != 1 else ''} (without --summary: each one)",
                 err=True)
        for line in summary_lines([b for g in groups for b in g.analysis.boots]):
            echo(line)
        _exit_now()
    from rich.console import Console  # only the tables need rich: keep --json start-up lean

    render_groups(groups, Console(highlight=False), top, Console(stderr=True, highlight=False))
    _exit_now()


def side_setups(values: Mapping[str, object]) -> dict[str, object]:
    """The side formats' options the user gave (``--channel``, ...), as each format's setup."""
    from ..sources.base import configured

    return configured(values)


def with_side_inputs(groups: list[Group], setups: Mapping[str, object], values: Mapping[str, object]) -> list[Group]:
    """The groups, once checked that each side format given options had an input of it to apply
    them to (a one-line UsageError naming the options and what the format reads)."""
    from ..sources.base import REGISTRY, given_flags

    for name in setups:
        fmt = REGISTRY[name]
        kinds = (fmt.name, *fmt.kinds)
        if not any(b.supplement is not None and any(b.supplement.part(k) is not None for k in kinds)
                   for g in groups for b in g.analysis.boots):
            raise UsageError(f"{given_flags(fmt, values)}: no {fmt.what} among the inputs"
                             + (f" ({fmt.forms})" if fmt.forms else ""))
    return groups


def _print_chains(groups: list[Group], dump: str | None, as_json: bool) -> None:
    """analyze --critical-chain: each boot's chain (a tree, or JSON), warnings on standard error."""
    import shutil

    import orjson

    from ..timeline.chain import critical_chain
    from ..sources.systemd_analyze.deps import deps_from_dump
    from ..render.chain_text import chain_dict, chain_lines
    from ..render.terminal import warning_lines

    after = None
    if dump is not None:
        from ..sources.systemd_analyze.reader import read_dump

        try:
            with open(dump, encoding="utf-8", errors="replace") as f:
                d = read_dump(f.read())
        except OSError as e:
            _fail(UsageError(f"--systemd-dump {dump}: {e.strerror or e}"))
        if not d.units:
            _fail(UsageError(f"--systemd-dump {dump}: no '-> Unit' sections: not a systemd-analyze dump"))
        after = deps_from_dump(d.units)
    from ..render.side.systemd_analyze import systemd_chain_dict, systemd_chain_lines
    from ..sources.supplements import deps_of

    boots = [b for g in groups for b in g.analysis.boots]
    # --systemd-dump wins over a dump given as an input (or in --systemd-analyze DIR)
    chains = [critical_chain(b, after if after is not None else deps_of(b.supplement)) for b in boots]
    if as_json:
        doc = {"schema_version": 1, "critical_chains": [
            chain_dict(b, c) | systemd_chain_dict(b, c) for b, c in zip(boots, chains)]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    else:
        width = shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 10_000
        for i, (b, c) in enumerate(zip(boots, chains)):
            if i:
                echo()
            if len(boots) > 1:
                echo(f"{b.boot.source} boot {b.boot.index + 1}")
            for line in chain_lines(b, c, width) + systemd_chain_lines(b, c):
                echo(line)
    for g in groups:
        for w in warning_lines(g.analysis, g.name if g.folder else None):
            echo(w, err=True)
