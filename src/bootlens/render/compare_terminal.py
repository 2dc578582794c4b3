"""The terminal tables of repeated boots (``bootlens run --repeat``) and of ``bootlens compare``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..compare import Change, Comparison, Delta, NameDeltas, Significance
from ..lines import clip
from ..stats import SPREAD_WARN, Stat
from .terminal import _dur, _esc
from .visible import visible


def render_stats(stats: Sequence[Stat], console: Console, boots: int) -> None:
    """Per-stage and per-marker statistics over repeated boots."""
    t = Table(title=f"Statistics over {boots} boots", title_justify="left", show_edge=False)
    for col in ("quantity", "n", "min", "median", "max", "std dev", "spread"):
        t.add_column(col, justify="left" if col == "quantity" else "right")
    warn = []
    for s in stats:
        spread = f"{100 * s.spread:.1f}%"
        style = "yellow" if s.spread > SPREAD_WARN else ""
        t.add_row(Text(visible(s.name)), str(s.n), _dur(s.min), _dur(round(s.median)), _dur(s.max), _dur(round(s.stdev)),
                  Text(spread, style=style))
        if s.spread > SPREAD_WARN:
            warn.append(s.name.strip())
    console.print(t)
    if warn:
        console.print(f"[yellow]warning:[/] spread above {100 * SPREAD_WARN:.0f}% of the median for: "
                      f"{_esc(', '.join(warn))}; boot more times before trusting a difference")


# ---- bootlens compare -----------------------------------------------------------------------

# No vertical rules, one space of padding and only the first column wraps: a pair's table
# fits 80 columns.
_PAIR_TABLE: dict[str, Any] = {"box": box.SIMPLE_HEAD, "show_edge": False, "pad_edge": False,
                               "padding": (0, 0, 0, 1)}

_VERDICT_STYLE = {"significant": "bold", "not significant": "dim", "unknown": "yellow"}


def _short(ns: float | None, signed: bool = False) -> str:
    """A duration to four significant figures or so: 2.390 s, 348.7 ms, 987 µs."""
    if ns is None:
        return "—"
    sign = ("+" if ns > 0 else "−" if ns < 0 else "±") if signed else ("−" if ns < 0 else "")
    a = abs(ns)
    if a >= 1e9:
        body = f"{a / 1e9:.3f} s"
    elif a >= 1e6:
        body = f"{a / 1e6:.1f} ms"
    elif a >= 1e3:
        body = f"{a / 1e3:.0f} µs"
    else:
        body = f"{a:.0f} ns"
    return sign + body


def _verdict(d: Delta) -> Text:
    """The significance cell: yes / no / unknown (why)."""
    if d.change in (Change.NOT_MEASURED, Change.NOT_COMPARABLE):
        return Text(visible(d.reason), style="dim")
    if d.significance is Significance.SIGNIFICANT:
        slower = (d.delta_ns or 0) > 0
        return Text("yes", style="bold red" if slower else "bold green")
    if d.significance is Significance.NOT_SIGNIFICANT:
        return Text("no", style="dim")
    return Text(visible(f"unknown ({d.reason})"), style="yellow")


def _pct_cell(p: float | None) -> str:
    if p is None:
        return ""
    return (f"{p:+.0f}%" if abs(p) >= 100 else f"{p:+.1f}%").replace("-", "−")


def render_compare(c: Comparison, console: Console) -> None:
    """Every input against the first: per other input, the table of totals, stages and markers,
    then its largest initcall, process and probe differences. One pair per table keeps two
    inputs' columns within 80 characters, however many inputs there are."""
    inputs = c.inputs
    it = Table(title="Inputs", title_justify="left", show_edge=False, show_header=False)
    it.add_column("label", style="bold")
    it.add_column("input", overflow="fold")
    it.add_column("boots")
    for s in inputs:
        what = f"{'run folder' if s.folder else 'log'}, {s.boots} boot{'s' if s.boots != 1 else ''}"
        if s.partial:
            what += f", {s.partial} partial"
        it.add_row(s.label, Text(visible(s.name)), what + (" (baseline)" if s is inputs[0] else ""))
    console.print(it)
    base = inputs[0].label
    for p in c.pairs:
        other = inputs[p.other].label
        console.print()
        _figure_table(c, p.other, console)
        for nd in (p.initcalls, p.processes, p.probes):
            console.print()
            if nd.note is not None:
                console.print(Text(visible(f"{nd.kind.capitalize()}, {other} vs {base}: not compared ({nd.note})"),
                                   style="dim"))
            else:
                _name_table(nd, base, other, console)
    console.print()
    console.print(Text("spread: the larger max − min over the boots of the two inputs; a Δ of the medians "
                       "no larger than the spread is not significant (needs 2 boots or more on each side)",
                       style="dim"))


def _figure_table(c: Comparison, i: int, console: Console) -> None:
    """Totals, stages and markers of input ``i`` against the baseline."""
    base, other = c.inputs[0].label, c.inputs[i].label
    t = Table(title=f"Stages, {other} vs {base}: median over boots", title_justify="left", **_PAIR_TABLE)
    deltas = [f.deltas[i - 1] for f in c.figures]
    spread = _add_columns(t, "quantity", base, other, deltas)
    for d in deltas:
        t.add_row(Text(visible(d.name)), _median(d.baseline), _median(d.other), *_delta_cells(d, spread))
    console.print(t)


def _add_columns(t: Table, first: str, base: str, other: str, deltas: Sequence[Delta]) -> bool:
    """The columns of a pair table; the spread column only when some row has one (True)."""
    t.add_column(first, overflow="fold", min_width=12)
    spread = any(d.threshold_ns is not None for d in deltas)
    for col in (base, other, "Δ", "Δ%") + (("spread",) if spread else ()):
        t.add_column(col, justify="right", no_wrap=True, style="dim" if col == "spread" else "")
    t.add_column("significant", no_wrap=True)
    return spread


def _delta_cells(d: Delta, spread: bool) -> list[str | Text]:
    cells: list[str | Text] = [_short(d.delta_ns, signed=True), _pct_cell(d.delta_pct)]
    if spread:
        cells.append(_short(d.threshold_ns))
    cells.append(_verdict(d))
    return cells


def _median(s: Stat | None, absent: str = "—") -> str | Text:
    return Text(absent, style="dim") if s is None else _short(s.median)


def _counted(d: Delta) -> str:
    """A process name with how many ran per boot (median): "busybox ×2", "busybox ×2 → ×3"."""
    a, b = d.baseline_count, d.other_count
    if a is None and b is None:
        return d.name
    if a == b or b is None:
        return f"{d.name} ×{a:g}"
    return f"{d.name} ×{b:g}" if a is None else f"{d.name} ×{a:g} → ×{b:g}"


def _name_table(nd: NameDeltas, base: str, other: str, console: Console) -> None:
    """The largest per-name differences of one kind, one input against the baseline."""
    title = (f"{nd.kind.capitalize()}, {other} vs {base}: top {len(nd.rows)} of {nd.names} names by |Δ| "
             f"({nd.added} added, {nd.removed} removed, {nd.significant} significant)")
    t = Table(title=title, title_justify="left", **_PAIR_TABLE)
    spread = _add_columns(t, "name", base, other, nd.rows)
    for d in nd.rows:
        t.add_row(Text(visible(clip(_counted(d), 70))), _median(d.baseline, "absent"), _median(d.other, "absent"),
                  *_delta_cells(d, spread))
    console.print(t)
