"""``bootlens check``'s outputs: the terminal table, JUnit XML, a Markdown summary and JSON.

- Terminal: one row per budget entry (figure, statistic, limit, verdict), then each failure's
  sentence and the worst boot's log lines.
- JUnit XML (``--junit``): one ``<testcase>`` per entry, classname ``bootlens.budget.<kind>``; a
  failing entry has a ``<failure>`` whose message names the stage (or marker, initcall, ...) and
  the figure; each testcase's ``<properties>`` hold its figures (statistic, median, interval,
  boots, limit), the suite's hold every total, stage and marker median. GitLab's test report,
  Jenkins and GitHub test-report actions read it.
- Markdown (``--summary``): a heading, the table and the failures with their lines; what
  ``$GITHUB_STEP_SUMMARY`` shows on a GitHub job page, and what a GitLab job can publish (an
  artifact, or a merge-request note).
- JSON (``--json``): docs/budget.md, ``"kind": "check"``, the head of docs/json.md.

Pure functions of the :class:`~bootlens.lab.budget.Check`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import __version__
from ..lab.budget import Check, Result, Verdict
from ..core.errors import printable
from ..stats.figures import CI_TARGET, Stat
from .fit import fit_table
from ..core.units import short, short_range
from .visible import visible

SCHEMA_VERSION = 1
KIND = "check"
_MARK = {Verdict.PASS: "✓", Verdict.FAIL: "✗", Verdict.NOT_MEASURED: "✗", Verdict.SKIPPED: "–"}
_STYLE = {Verdict.PASS: "green", Verdict.FAIL: "bold red", Verdict.NOT_MEASURED: "bold red", Verdict.SKIPPED: "dim"}


def headline(c: Check, name_only: bool = False) -> str:
    """One line: how many budgets failed, over how many boots, from which file (``name_only``:
    its name without the folder, for an 80-column title)."""
    source = Path(c.budget.source).name if name_only else c.budget.source
    bad = len(c.failures)
    n = len(c.results)
    boots = f"{c.boots} boot{'s' if c.boots != 1 else ''}"
    if bad:
        return f"{printable(source)}: {bad} of {n} budget{'s' if n != 1 else ''} failed ({boots})"
    return f"{printable(source)}: {'the budget' if n == 1 else f'all {n} budgets'} met ({boots})"


def _value(r: Result) -> str:
    return "—" if r.value_ns is None else short(r.value_ns)


def _verdict_text(r: Result) -> str:
    if r.verdict is Verdict.FAIL and r.beyond_noise is False:
        return "fail (noise)"
    return r.verdict.value


def _over(r: Result) -> str:
    return "" if r.over_ns is None else short(r.over_ns, signed=True)


def render_check(c: Check, console: Console) -> None:
    """The table, then each failure's sentence and the log lines behind it."""
    rows: list[list[str | Text]] = []
    for r in c.results:
        e = r.entry
        rows.append([Text(_MARK[r.verdict], style=_STYLE[r.verdict]), Text(visible(e.label)), e.statistic,
                     _value(r), short(e.max_ns), _over(r), "" if r.stat is None else str(r.stat.n),
                     Text(_verdict_text(r), style=_STYLE[r.verdict])])
    cols = (("", "left"), ("budget", "left"), ("stat", "left"), ("value", "right"), ("limit", "right"),
            ("over", "right"), ("boots", "right"), ("verdict", "left"))
    console.print(fit_table(headline(c, name_only=True), cols, rows, console.width, flex=(1,), keep=tuple(range(len(cols))),
                            wrap=7))
    for r in c.results:
        if r.verdict is Verdict.PASS and "within the noise" not in r.detail:
            continue
        console.print()
        console.print(Text(f"{_MARK[r.verdict]} ", style=_STYLE[r.verdict]) + Text(visible(f"{r.figure}: {r.detail}")))
        if r.failed and r.worst:
            console.print(Text(f"  worst boot: {visible(r.worst)}", style="dim"), overflow="ellipsis", no_wrap=True)
        if r.failed:
            for ev in r.evidence:
                console.print(Text(f"  {visible(str(ev))}", style="dim"), overflow="ellipsis", no_wrap=True)
    if c.passed and not any("within the noise" in r.detail for r in c.results):
        return
    console.print(Text("value: the statistic over the boots that measured the figure; fail (noise): over, but the "
                       f"median's interval ({CI_TARGET:.0%}, or the level the boots allow) reaches below the limit, "
                       "so more boots could still pass", style="dim"))


# --- JSON --------------------------------------------------------------------------------------


def _s(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def _stat(s: Stat | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"n": s.n, "median_s": s.median / 1e9, "min_s": s.min / 1e9, "max_s": s.max / 1e9,
            "mean_s": s.mean / 1e9, "stdev_s": s.stdev / 1e9,
            "median_ci_s": None if s.n < 2 else [s.ci_low / 1e9, s.ci_high / 1e9],
            "median_ci_level": None if s.n < 2 else round(s.ci_level, 6), "tick_s": s.tick_ns / 1e9}


def result_dict(r: Result) -> dict[str, Any]:
    """One entry checked."""
    e = r.entry
    return {
        "kind": e.kind, "name": e.name, "label": e.label, "budget_line": e.line_no,
        "statistic": e.statistic, "max_s": e.max_ns / 1e9, "optional": e.optional, "from": e.origin,
        "verdict": r.verdict.value, "failed": r.failed, "figure": r.figure,
        "value_s": _s(r.value_ns), "over_s": _s(r.over_ns),
        "over_pct": None if r.over_ns is None or not e.max_ns else round(100 * r.over_ns / e.max_ns, 3),
        "beyond_noise": r.beyond_noise, "boots": r.boots, "stats": _stat(r.stat), "detail": r.detail,
        "worst_boot": r.worst,
        "evidence": [{"source": ev.source, "line": ev.line_no, "what": ev.what, "text": ev.text} for ev in r.evidence],
    }


def check_json_obj(c: Check) -> dict[str, Any]:
    """The whole check as a JSON-ready dict (docs/budget.md)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "generator": f"bootlens {__version__}",
        "budget": c.budget.source,
        "inputs": list(c.inputs),
        "boots": c.boots,
        "passed": c.passed,
        "failed": len(c.failures),
        "results": [result_dict(r) for r in c.results],
        "figures": [{"name": s.name.strip(), "sub_stage": s.name.startswith("  "), "stats": _stat(s)}
                    for s in c.figures],
    }


# --- JUnit XML ---------------------------------------------------------------------------------


def _props(parent: ET.Element, items: list[tuple[str, str]]) -> None:
    props = ET.SubElement(parent, "properties")
    for k, v in items:
        ET.SubElement(props, "property", name=k, value=v)


def _figure_props(prefix: str, s: Stat) -> list[tuple[str, str]]:
    out = [(f"{prefix}.median_s", f"{s.median / 1e9:.6f}"), (f"{prefix}.boots", str(s.n))]
    if s.n >= 2:
        out += [(f"{prefix}.median_ci_s", f"{s.ci_low / 1e9:.6f}..{s.ci_high / 1e9:.6f}"),
                (f"{prefix}.median_ci_level", f"{s.ci_level:.4f}"),
                (f"{prefix}.min_s", f"{s.min / 1e9:.6f}"), (f"{prefix}.max_s", f"{s.max / 1e9:.6f}")]
    return out


def junit_xml(c: Check, suite: str = "bootlens budget") -> bytes:
    """The check as a JUnit XML document (one testsuite in a testsuites element)."""
    root = ET.Element("testsuites", name="bootlens check", tests=str(len(c.results)),
                      failures=str(len(c.failures)), errors="0")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(c.results)), failures=str(len(c.failures)),
                       errors="0", skipped=str(sum(r.verdict is Verdict.SKIPPED for r in c.results)), time="0")
    _props(ts, [("budget", c.budget.source), ("boots", str(c.boots)), *[("input", i) for i in c.inputs],
                *[p for s in c.figures for p in _figure_props(s.name.strip(), s)]])
    for r in c.results:
        e = r.entry
        # the classname is the report's own name for a budget entry, not a module path (CI dashboards group on it)
        tc = ET.SubElement(ts, "testcase", classname=f"bootlens.budget.{e.kind}",
                           name=f"{e.label} <= {short(e.max_ns)} ({e.statistic})", time="0")
        if not Path(c.budget.source).is_absolute():  # GitLab links a repository path, #L<line> to the line
            tc.set("file", f"{c.budget.source}#L{e.line_no}" if e.line_no else c.budget.source)
        items = [("figure", r.figure), ("statistic", e.statistic), ("limit_s", f"{e.max_ns / 1e9:.6f}"),
                 ("verdict", r.verdict.value), ("boots", str(r.boots))]
        if r.value_ns is not None:
            items.append(("value_s", f"{r.value_ns / 1e9:.6f}"))
        if r.over_ns is not None:
            items.append(("over_s", f"{r.over_ns / 1e9:.6f}"))
        if r.beyond_noise is not None:
            items.append(("beyond_noise", str(r.beyond_noise).lower()))
        if r.stat is not None:
            items += _figure_props("figure", r.stat)
        _props(tc, items)
        body = "\n".join([f"{r.figure}: {r.detail}", *([f"worst boot: {r.worst}"] if r.worst else []), *map(str, r.evidence)])
        if r.failed:
            f = ET.SubElement(tc, "failure", message=f"{r.figure}: {r.detail}", type=r.verdict.value)
            f.text = body
        elif r.verdict is Verdict.SKIPPED:
            ET.SubElement(tc, "skipped", message=r.detail)
        else:
            ET.SubElement(tc, "system-out").text = body
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


# --- Markdown ----------------------------------------------------------------------------------


def _md(text: str) -> str:
    """Text safe in a Markdown table cell."""
    return visible(text).replace("|", "\\|").replace("\n", " ")


def markdown(c: Check) -> str:
    """The check as GitHub/GitLab-flavoured Markdown: heading, table, failures with their lines."""
    icon = "✅" if c.passed else "❌"
    out = [f"### {icon} Boot-time budget: {_md(headline(c))}", "",
           "| | budget | statistic | value | limit | over | boots | verdict |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for r in c.results:
        e = r.entry
        out.append(f"| {_MARK[r.verdict]} | {_md(e.label)} | {e.statistic} | {_value(r)} | {short(e.max_ns)} | {_over(r)} | "
                   f"{'' if r.stat is None else r.stat.n} | {_md(_verdict_text(r))} |")
    shown = [r for r in c.results if r.failed]
    if shown:
        out += ["", "#### What failed", ""]
        for r in shown:
            out.append(f"- **{_md(r.figure)}**: {_md(r.detail)}")
            if r.worst:
                out.append(f"  - worst boot: `{_md(r.worst)}`")
            for ev in r.evidence:
                out.append(f"  - `{printable(ev.source)}:{ev.line_no}` ({_md(ev.what)})"
                           + (f": `{_md(ev.text).replace('`', chr(39))}`" if ev.text else ""))
    if c.figures:
        out += ["", "<details><summary>Every figure (median over the boots)</summary>", "",
                "| figure | boots | median | interval |", "|---|---:|---:|---:|"]
        for s in c.figures:
            ci = "" if s.n < 2 else f"{short_range(s.ci_low, s.ci_high)} ({s.ci_level:.0%})"
            out.append(f"| {_md(s.name.strip())} | {s.n} | {short(s.median)} | {ci} |")
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
