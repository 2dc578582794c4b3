"""check: boot-time budgets that gate a build (exit 0 met, 1 a budget failed, 2 bad input)."""

from __future__ import annotations

import sys

import click

from ..core.errors import BootlensError
from . import main
from .common import say, write_output


@main.command()
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--budget", "budget_path", required=True, metavar="FILE",
              help="The budget file (TOML): limits per total, stage, marker, initcall, probe, unit or process "
              "(docs/budget.md).")
@click.option("--marker", "markers", multiple=True, metavar="NAME=REGEX",
              help="Mark lines matching REGEX as NAME, as analyze does; 'ready' ends the boot (run folders "
              "remember theirs).")
@click.option("--junit", "junit", metavar="FILE", help="Write a JUnit XML report: one testcase per budget entry, "
              "its figures as properties ('-': standard output, instead of the table).")
@click.option("--summary", "summary", metavar="FILE", help="Append a Markdown summary to FILE, e.g. "
              "\"$GITHUB_STEP_SUMMARY\" (a GitHub job page) or a file a GitLab job publishes.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (docs/budget.md) instead of the "
              "table.")
def check(inputs: tuple[str, ...], budget_path: str, markers: tuple[str, ...], junit: str | None,
          summary: str | None, as_json: bool) -> None:
    """Check boots against a boot-time budget: exit 0 when every budget is met, 1 when one is not.

    INPUT is what analyze takes: console logs, recordings, run folders of repeated boots (their
    statistics: each budget's median, mean, min, max or percentile over the boots). A budget
    fails when its figure is over the limit, saying by how much, whether the excess is beyond
    the noise of the boots (the median's confidence interval lies above the limit), and the log
    lines of the worst boot; a figure no boot measured fails too, unless the budget says
    optional = true. Exit codes: 0 met, 1 a budget failed, 2 bad input or budget file.
    """
    from ..lab.budget import check_inputs, read_budget
    from ..core.options import MarkerSpec, ParseOptions
    from ..render.budget import check_json_obj, junit_xml, markdown

    try:
        budget = read_budget(budget_path)
        opts = ParseOptions(tuple(MarkerSpec.parse(m) for m in markers))
        result = check_inputs(budget, inputs, opts)
    except BootlensError as e:  # every error here is bad input: 2, never the "budget failed" 1
        say(f"bootlens: error: {e}")
        sys.exit(2)
    if junit:
        write_output(junit, junit_xml(result))
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(markdown(result))
        except OSError as e:
            say(f"bootlens: error: {summary}: cannot write: {e.strerror}")
            sys.exit(2)
    if junit == "-":
        pass  # the XML is the standard output
    elif as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(check_json_obj(result), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from rich.console import Console

        from ..render.budget import render_check

        render_check(result, Console(highlight=False))
    sys.stdout.flush()
    sys.exit(0 if result.passed else 1)
