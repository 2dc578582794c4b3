"""history, store and regress: the boot times kept between runs (docs/history.md).

The ``--db``/``--label`` pair is shared (:mod:`.storeopts`): :func:`db_option` and
:func:`label_option` declare it on any command, :func:`store_hook` stores what that command
measured (``run``, ``experiment``, ``analyze`` call it when ``--db`` or ``--label`` was given).
"""

from __future__ import annotations

import sys

import click

from ..core.errors import BootlensError
from . import main
from .common import exit_now as _exit_now, fail as _fail, write_output as _write_output
from .storeopts import db_option, label_option
from .storeopts import store_hook as store_hook  # its home before .storeopts (tests, plugins)


@main.command()
@db_option
@label_option("Only runs carrying this label (all of them when repeated), e.g. board=rpi4.")
@click.option("--figure", "figures", multiple=True, metavar="NAME",
              help="A figure to follow (default: the totals and stages): a stage or sub-stage (userspace, "
              "kernel_init), 'total', 'marker NAME', or KIND:NAME for an initcall, process, probe or unit "
              "(initcall:acpi_init, process:sleep).")
@click.option("--last", default=30, show_default=True, type=click.IntRange(1, 100_000),
              help="Show the latest N runs.")
@click.option("--html", "html", metavar="FILE", help="Also write a chart of the trends to FILE (one self-contained "
              "HTML page, no script, nothing fetched).")
@click.option("--json", "as_json", is_flag=True, help="Print the runs and trends as JSON (docs/history.md).")
def history(db: str | None, labels: tuple[str, ...], figures: tuple[str, ...], last: int, html: str | None,
            as_json: bool) -> None:
    """List stored runs and the trend of each figure over them.

    One line per run (id, when stored, boots, median total, labels), then a sparkline per
    figure: its median over each run's boots, oldest run first. Store runs with `bootlens
    store`, or `--db`/`--label` on run, experiment and analyze.
    """
    import shutil

    import orjson

    from ..history import Store, parse_labels
    from ..history.trends import trends
    from ..render.history import history_html, history_json, history_lines

    try:
        with Store(db, create=False) as s:  # reading: a mistyped --db is told, not made
            runs = s.runs(parse_labels(labels))[-last:]
            tr = trends(s, runs, figures)
    except BootlensError as e:
        _fail(e)
    if html:
        _write_output(html, history_html(runs, tr))
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(history_json(runs, tr), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    else:
        for line in history_lines(runs, tr, shutil.get_terminal_size((80, 24)).columns):
            click.echo(line)
    _exit_now()


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@db_option
@label_option("Label the stored run: board=, build=, commit=, config= or anything (repeatable). The kernel "
              "version is read from the boots (label kernel=) unless given.")
@click.option("--kind", type=click.Choice(["import", "run", "experiment"]), default="import", show_default=True,
              help="What the stored run was.")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME; 'ready' ends the boot (run folders remember theirs).")
def store(inputs: tuple[str, ...], db: str | None, labels: tuple[str, ...], kind: str,
          markers: tuple[str, ...]) -> None:
    """Analyse INPUTs and store each as one run in the history.

    An INPUT is a log, a recording or a run folder (its boots, measured to its ready marker):
    one stored run per INPUT, with all its boots. Prints each run's id.
    """
    from ..history import parse_labels, store_run
    from ..timeline.inputs import analyze_inputs
    from ..core.options import MarkerSpec, ParseOptions

    try:
        lab = parse_labels(labels)
        groups = analyze_inputs(list(inputs), ParseOptions(tuple(MarkerSpec.parse(m) for m in markers)))
        ids = [store_run(db, g, lab, kind) for g in groups]
    except BootlensError as e:
        _fail(e)
    for g, i in zip(groups, ids):
        click.echo(f"{i}\t{g.name} ({len(g.analysis.boots)} boot{'s' if len(g.analysis.boots) != 1 else ''})")
    _exit_now()


@main.command()
@click.argument("new", metavar="NEW")
@click.option("--reference", "reference", required=True, metavar="SELECTOR",
              help="The reference: stored run ids (12, or 3,4,5) or labels (board=rpi4,branch=main: every run "
              "carrying them); their boots are pooled.")
@click.option("--last", type=click.IntRange(1, 100_000), metavar="N",
              help="Of the runs --reference selects, only the latest N.")
@db_option
@click.option("--store", "store_new", is_flag=True, help="Also store NEW (an input) in the history, with --label.")
@label_option("With --store: label the stored new run (repeatable).")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="NEW as an input: mark lines matching REGEX as NAME; 'ready' ends the boot.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON (docs/history.md).")
def regress(new: str, reference: str, last: int | None, db: str | None, store_new: bool, labels: tuple[str, ...],
            markers: tuple[str, ...], as_json: bool) -> None:
    """Say what got slower in NEW than in the reference runs, by how much, with what confidence.

    NEW is a stored run id or an input (a log, a recording, a run folder). Every total, stage,
    marker, initcall, process, probe and unit is judged as `bootlens compare` judges it: a
    t-test and a practical floor, Benjamini-Hochberg across the names of a table.

    Exit codes: 0 nothing significantly slower; 1 something is (a regression); 2 bad input.
    """
    import orjson
    from pathlib import Path

    from ..history import HistoryError, Store, parse_labels
    from ..history.regress import Side, parse_selector, regress as judge_regress, select_reference
    from ..history.store import boot_record
    from ..render.history import regress_json, regress_lines

    try:
        parse_selector(reference)  # a bad selector is told before NEW is read
        lab = parse_labels(labels)
        if lab and not store_new:
            raise HistoryError("--label labels the new run stored with --store: add --store")
        as_id = new.isascii() and new.isdigit() and not Path(new).exists()
        if as_id and store_new:
            raise HistoryError(f"--store: NEW {new} is a stored run already")
        with Store(db, create=store_new) as s:  # without --store it only reads: a missing store is told
            if as_id:
                new_id: int | None = int(new)
                (run,) = s.runs(ids=[int(new)])
                new_boots = s.boots([run.id])
                new_side = Side(f"run {run.id}", (run.id,), len(new_boots))
            else:
                from ..history import store_run
                from ..timeline.inputs import analyze_inputs
                from ..core.options import MarkerSpec, ParseOptions

                (group,) = analyze_inputs([new], ParseOptions(tuple(MarkerSpec.parse(m) for m in markers)))
                new_boots = [boot_record(b) for b in group.analysis.boots]
                new_id = store_run(db, group, lab, "import") if store_new else None
                new_side = Side(new if new_id is None else f"{new} (stored as run {new_id})",
                                () if new_id is None else (new_id,), len(new_boots))
            ref_runs = select_reference(s, reference, last, exclude=new_id)
            ref_boots = s.boots([r.id for r in ref_runs])
            ids = ", ".join(str(r.id) for r in ref_runs)
            ref_side = Side(f"run{'s' if len(ref_runs) != 1 else ''} {ids}", tuple(r.id for r in ref_runs),
                            len(ref_boots))
            reg = judge_regress(ref_boots, new_boots, ref_side, new_side)
    except BootlensError as e:
        _fail(e)
    if as_json:
        sys.stdout.buffer.write(orjson.dumps(regress_json(reg), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    else:
        for line in regress_lines(reg):
            click.echo(line)
    sys.stdout.flush()
    sys.exit(1 if reg.slower else 0)
