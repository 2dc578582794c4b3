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

    from ..timeline.inputs import Group, GroupStream


def run_analyze(inputs: tuple[str, ...], as_json: bool, summary: bool, top: int, markers: tuple[str, ...],
                chain: bool, dump: str | None, collected: tuple[str, ...], db: str | None, labels: tuple[str, ...],
                all_boots: bool = False, **side: object) -> None:
    """Analyse ``inputs`` and print (the options as ``bootlens analyze --help`` says them; ``side``:
    the side formats' own options, by their ``dest``); ends the process (os._exit after the
    output, or exit code 2 with a one-line error)."""
    from ..timeline.inputs import stream_inputs
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
        # each log's boots analysed as they are printed (a log of a million boots: issue 29)
        streams = stream_inputs(list(inputs), opts, top, collected, side=setups)
        if setups or db or labels or chain:  # these read every boot: each input analysed whole
            groups = with_side_inputs([s.whole() for s in streams], setups, side)
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
    from itertools import chain as joined

    if as_json:
        from ..render.jsonout import write_json_stream

        try:
            write_json_stream(tuple(st for g in streams for st in g.inputs), joined.from_iterable(g.boots for g in streams),
                              sys.stdout.buffer)
        except BootlensError as e:  # a boot past the first that cannot be analysed: the document is cut
            _fail(e)
        sys.stdout.buffer.flush()
        _exit_now()
    if summary:  # for scripts: the lines on standard output, and one line on standard error at most
        _print_summary(streams)
        _exit_now()
    from rich.console import Console  # only the tables need rich: keep --json start-up lean

    from ..render.terminal import render_streams

    try:
        render_streams(streams, Console(highlight=False), top, Console(stderr=True, highlight=False), all_boots)
    except BootlensError as e:
        _fail(e)
    _exit_now()


def _print_summary(streams: list[GroupStream]) -> None:
    """analyze --summary over streaming inputs: a line per boot as it comes (`` · SOURCE boot N``
    after each when there are several boots), then on standard error how many warnings there were."""
    from itertools import chain, islice

    from ..render.terminal import summary_line, tally_warning_lines
    from ..render.visible import visible
    from ..timeline.tally import BootTally

    boots = chain.from_iterable(g.boots for g in streams)
    head = list(islice(boots, 2))
    many = len(head) > 1
    tallies: dict[str, BootTally] = {}
    warned = sum(len(st.warnings) for g in streams for st in g.inputs)
    for b in chain(head, boots):
        src = b.boot.source
        t = tallies.get(src)
        if t is None:
            t = tallies[src] = BootTally(keep=0)
        t.add(b)
        echo(summary_line(b) + (visible(f" · {src} boot {b.boot.index + 1}") if many else ""))
    warned += sum(len(tally_warning_lines(t)) for t in tallies.values())
    if warned:
        echo(f"bootlens: {warned} warning{'s' if warned != 1 else ''} (without --summary: each one)", err=True)


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
