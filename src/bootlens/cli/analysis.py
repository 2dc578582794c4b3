"""analyze, report, compare, advise and export: the commands that read what was captured."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..core.errors import BootlensError, InputError, UsageError
from .analyzecmd import run_analyze, side_setups, with_side_inputs
from .common import exit_now as _exit_now, fail as _fail, write_output as _write_output
from .group import main
from .storeopts import store_options  # not .history: its commands (start-up)

F = TypeVar("F", bound=Callable[..., Any])


def side_options(f: F) -> F:
    """The side formats' own options (``FORMAT.options`` of each folder of sources/: a logic
    analyzer capture's --channel, --align and --align-bound), in the formats' order."""
    from ..sources.base import formats

    for fmt in reversed(formats()):
        for o in reversed(fmt.options):
            if o.multiple:
                f = click.option(o.flag, o.dest, multiple=True, metavar=o.metavar, help=o.help)(f)
            elif o.default is not None:
                f = click.option(o.flag, o.dest, default=o.default, show_default=True, metavar=o.metavar,
                                 type=click.FloatRange(o.minimum) if o.minimum is not None else float, help=o.help)(f)
            else:
                f = click.option(o.flag, o.dest, metavar=o.metavar, help=o.help)(f)
    return f


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="FILE... | -")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md) instead of tables.")
@click.option("--summary", is_flag=True, help="Print one line per boot, as systemd-analyze does: 'Startup finished "
              "in 2.498s (bootloader) + ... = 8.850s (power-on → ready)' (docs/analyze.md).")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 10_000),
              help="How many initcalls, probes and processes to list.")
@click.option("--all-boots", is_flag=True, help="Print every boot in full; by default an input of more than 20 "
              "boots is summarised: how many, the median total, the first, slowest and last boots.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot, e.g. --marker ready='APP READY' "
              "(run folders remember theirs).")
@click.option("--critical-chain", "chain", is_flag=True, help="Print the chain of what waited for what, from "
              "ready down to power-on: systemd-analyze critical-chain's tree, extended below systemd (kernel, "
              "bootloader) and above the default target (the application).")
@click.option("--systemd-dump", "dump", metavar="FILE", help="`systemd-analyze dump` of the same system: the "
              "units' After= dependencies make the chain exact instead of an estimate.")
@click.option("--systemd-analyze", "collected", metavar="DIR", multiple=True, help="A folder of systemd-analyze "
              "outputs of the same boot (`bootlens target boot --collect DIR` writes one), read as if each file "
              "were given: time, blame, critical-chain, dump, plot.")
@side_options
@store_options("each INPUT as one run (kind import)")
def analyze(inputs: tuple[str, ...], as_json: bool, summary: bool, top: int, all_boots: bool, markers: tuple[str, ...],
            chain: bool, dump: str | None, collected: tuple[str, ...], db: str | None, labels: tuple[str, ...],
            **side: Any) -> None:
    """Analyse boot logs: stages on one axis, top initcalls, probes and processes, silences.

    FILE is a console log (serial capture, grabserial -t/-T, dmesg, journalctl -k -o
    short-monotonic), a recording from `bootlens capture` or a run folder from `bootlens run`
    (its boots, measured to the ready marker it was run with); '-' reads standard input. One
    file may hold several boots; past 20, a summary replaces them (--all-boots). Each boot
    opens with its headline, what took how long from where to where; warnings go to standard
    error.

    Told apart by their content, other FILEs add to that boot: systemd-analyze time, blame,
    critical-chain, dump and plot outputs (set beside bootlens's own figures; the dump's
    After= map drives --critical-chain; a plot's units are placed when the log has none) and a
    bootchart archive (its processes and CPU/IO samples). A boot-data file (grab-boot-data.sh)
    is a boot of its own; a bootchart given alone, too, and systemd-analyze outputs given
    without a log are a boot of systemd's own figures. A logic analyzer capture (sigrok CSV or
    VCD, Saleae CSV) adds its channels' edges, with --channel roles and an --align event
    (docs/logic.md).
    """
    run_analyze(inputs, as_json, summary, top, markers, chain, dump, collected, db, labels, all_boots, **side)


@main.command()
@click.argument("recording", metavar="RECORDING")
@click.option("--format", "fmt", type=click.Choice(["text", "grabserial"]), default="text", show_default=True,
              help="text: the bytes as received; grabserial: '[elapsed delta] ' before each line (grabserial -t).")
@click.option("--no-wire", is_flag=True, help="Do not correct line times for time on the wire (baud rate).")
@click.option("--restart", is_flag=True, help="grabserial: count times from each line that matched the capture's "
              "--start pattern, as grabserial -m shows them.")
@click.option("-o", "--output", metavar="FILE", help="Write here instead of standard output.")
def export(recording: str, fmt: str, no_wire: bool, restart: bool, output: str | None) -> None:
    """Turn a recording into plain text or grabserial -t format."""
    from ..capture.recording import NotARecording, read_recording, to_grabserial

    try:
        rec = read_recording(recording)
    except NotARecording as e:  # e.g. a console log: say what export reads
        _fail(InputError(e.source, f"{e.reason}: export reads a recording written by `bootlens capture -o FILE` "
                         "(a console log is text already)"))
    except BootlensError as e:
        _fail(e)
    for w in rec.warnings:
        click.echo(f"bootlens: warning: {w}", err=True)
    if rec.bad_records:
        click.echo(f"bootlens: warning: {rec.bad_records} damaged records skipped", err=True)
    data = rec.data if fmt == "text" else to_grabserial(rec, wire=not no_wire, restart=restart)
    _write_output(output or "-", data, (recording,))



@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("-o", "--output", metavar="FILE", help="Where to write (default: report.html, report.svg or "
              "report.perfetto.json in the current folder; '-' for standard output).")
@click.option("--format", "fmt", type=click.Choice(["html", "svg", "perfetto"]), default="html", show_default=True,
              help="html: interactive, self-contained report; svg: static boot graph; perfetto: Chrome Trace "
              "Event JSON for ui.perfetto.dev and chrome://tracing.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
@click.option("--top", default=25, show_default=True, type=click.IntRange(1, 10_000),
              help="Rows in the tables of top initcalls and processes.")
@click.option("--boot", "boot", type=click.IntRange(1), metavar="N",
              help="Open the page on boot N of the first input; of an input of more than 20 boots, keep boot N "
              "whole too (default: the slowest that measured its total, else the last; README, Report).")
@side_options
def report(inputs: tuple[str, ...], output: str | None, fmt: str, markers: tuple[str, ...], top: int,
           boot: int | None, **side: Any) -> None:
    """Write a report of one or more boots: INPUT is a log, a recording or a run folder.

    The HTML report is one file that works offline: the whole boot on one zoomable timeline,
    the stages, the top initcalls and processes, and the log itself. An input of more than 20
    boots is read a boot at a time: its first, slowest and last boots are kept whole (and
    --boot N), its headline, statistics and findings are over every boot.
    """
    from ..render.many import condense, condensed
    from ..timeline.inputs import stream_inputs
    from ..core.options import MarkerSpec, ParseOptions

    default = {"html": "report.html", "svg": "report.svg", "perfetto": "report.perfetto.json"}[fmt]
    out = output or default
    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        setups = side_setups(side)
        streams = stream_inputs(list(inputs), opts, top, side=setups)
        if setups:  # side files add to the boots: each input analysed whole, then checked
            with_side_inputs([s.whole() for s in streams], setups, side)
        # an input of many boots is read one boot at a time; a few of them are kept (render/many.py)
        groups, many = condensed(condense(s.name, s.inputs, s.folder, s.boots, s.group, boot) for s in streams)
        if fmt == "html":
            from ..render.html import render_html_pieces

            data: bytes | Sequence[Any] = render_html_pieces(groups, many=many, boot=boot)
        elif fmt == "svg":
            from ..render.svg import render_svg

            data = render_svg(groups, many)
        else:
            from ..render.perfetto import render_perfetto

            data = render_perfetto(groups, many)
    except BootlensError as e:
        _fail(e)
    if boot is not None:
        for i, g in enumerate(groups):
            n = many[i].boots if i in many else len(g.analysis.boots)
            if boot > n:
                click.echo(f"bootlens: warning: --boot {boot}: {g.name} has {n:,} boot{'s' if n != 1 else ''}",
                           err=True)
    _write_output(out, data, inputs)
    if out != "-":
        boots = sum(many[i].boots if i in many else len(g.analysis.boots) for i, g in enumerate(groups))
        kept = f" ({sum(len(groups[i].analysis.boots) for i in many)} of them whole)" if many else ""
        click.echo(f"bootlens: {fmt} report of {boots:,} boot{'s' if boots != 1 else ''}{kept} -> {out}", err=True)
    _exit_now()  # the analysis is not torn down object by object (exits.exit_now)


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="BASELINE INPUT...")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md, "
              "'bootlens compare --json') instead of tables.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1, 10_000),
              help="Rows in the tables of initcall, process and probe differences.")
@click.option("--html", metavar="FILE", help="Also write the HTML compare report (a waterfall of the stage "
              "differences, sortable tables) to FILE; '-' writes only it, to standard output.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
def compare(inputs: tuple[str, ...], as_json: bool, top: int, markers: tuple[str, ...], html: str | None) -> None:
    """Compare boots: each INPUT against the first, the baseline.

    An INPUT is a log, a recording or a run folder (repeated boots, from `bootlens run
    --repeat N`). Per total, stage and marker: the median over each input's boots and the
    difference to the baseline; then the initcalls, user processes and probes that changed most.
    Each median comes with the interval that holds it; each difference with a verdict: yes when
    a t-test gives p < 0.0005 and it is at least 1 ms and 1% of the baseline, no when it is under
    that or within the noise, or "need N more" boots a side to decide it.
    """
    from ..stats.compare import compare_groups
    from ..timeline.inputs import analyze_inputs
    from ..core.options import MarkerSpec, ParseOptions

    if len(inputs) < 2:
        _fail(UsageError("compare needs at least two inputs: a baseline and one to compare with it"))
    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        result = compare_groups(analyze_inputs(list(inputs), opts), top)
    except BootlensError as e:
        _fail(e)
    if html:
        from ..render.html import render_compare_html

        _write_output(html, render_compare_html(result), inputs)
        if html != "-":
            click.echo(f"bootlens: compare report -> {html}", err=True)
        if html == "-" or as_json:
            return
    if as_json:
        from ..render.compare_json import write_compare_json

        write_compare_json(result, sys.stdout.buffer)
        _exit_now()
    from rich.console import Console

    from ..render.compare_terminal import render_compare

    render_compare(result, Console(highlight=False))


@main.command("advise")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract (docs/json.md, "
              "'bootlens advise --json') instead of the listing.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
@click.option("--baud", type=click.IntRange(50, 20_000_000), metavar="RATE",
              help="The console's line rate, for the console rules (default: what a recording's header "
                   "says; unknown otherwise, and those rules give no number).")
def advise_cmd(inputs: tuple[str, ...], as_json: bool, markers: tuple[str, ...], baud: int | None) -> None:
    """Say what to change to boot faster, with the saving each change would bring.

    INPUT is a log, a recording or a run folder. Every rule (docs/advise.md) reads each boot and
    reports findings worst first: the estimated saving and the arithmetic behind it from this
    boot's own data, its confidence, the concrete change (kernel command line, U-Boot variable,
    init script, Kconfig) and its trade-off. The findings of an input of several boots (a run
    folder, a log of many boots) are merged: one set, each finding with the boots it applied to
    and its median saving (min and max). Warnings go to standard error, each once, counted.
    Where the log cannot support a figure, the finding says why.
    """
    from ..advise import default_registry, listed_ids
    from ..advise.summary import advise_streams
    from ..core.options import MarkerSpec, ParseOptions

    try:
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        streams = advise_streams(list(inputs), opts, baud)  # each input read; its boots advised as written
    except BootlensError as e:
        _fail(e)
    from ..render.advise_terminal import warning_lines

    if as_json:
        from ..render.advise_json import write_advise_json_stream

        try:
            result = write_advise_json_stream(streams, listed_ids(default_registry()), sys.stdout.buffer)
        except BootlensError as e:  # a boot past the first that cannot be analysed: the document is cut
            _fail(e)
        sys.stdout.buffer.flush()
        for w in warning_lines(result):  # each once, counted over the boots, never in the document
            click.echo(w, err=True)
        _exit_now()
    from rich.console import Console
    from rich.text import Text

    from ..render.advise_terminal import render_advise

    try:
        for st in streams:  # only the counts and merged findings are kept (advise.summary.Merger)
            for _ in st.boots():
                pass
        result = [st.result() for st in streams]
    except BootlensError as e:
        _fail(e)
    render_advise(result, Console(highlight=False))
    err = Console(stderr=True, highlight=False)
    for w in warning_lines(result):  # after the listing: its summary opens the first screen
        err.print(Text(w, style="yellow"), soft_wrap=not err.is_terminal)
