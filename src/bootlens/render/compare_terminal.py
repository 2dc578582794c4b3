"""The terminal tables of repeated boots (``bootlens run --repeat``) and of ``bootlens compare``.

Built for 80 columns, like the other tables (render/fit.py ``fit_table``): every row one
line, the quantity's name whole ("total (power-on → ready)"), the numbers in their short form.
A median comes with its order-statistic interval (stats.median_interval) and the level that
interval has for that many boots; a difference with its verdict (compare.judge): "yes (p 3e-05)",
"no (p 0.4)", "no (< floor)", "no (≤ 4 ms tick)" (within the clock's tick) or "need 4 more" boots
a side.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from ..stats.compare import ALPHA, FLOOR_NS, FLOOR_REL, Change, Comparison, Delta, NameDeltas, Significance
from ..stats.figures import SPREAD_WARN, Stat
from ..core.ticks import tick_text
from .fit import fit_table, mid_clip
from ..core.units import SHORT, duration, short, short_range, unit_of
from .visible import visible


def level(s: Stat) -> str:
    """The interval's confidence, as few digits as tell it: 75%, 93.8%, 96.9%."""
    pct = 100 * s.ci_level
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 0.05 else f"{pct:.1f}%"


def interval(s: Stat | None) -> str:
    """The median's interval, its unit said once: '10.359–14.173 s'; '—' for one boot."""
    if s is None or s.n < 2:
        return "—"
    return short_range(s.ci_low, s.ci_high)


def median_with_interval(s: Stat | None) -> str:
    """'12.599 [10.359–14.173] s', '0.868 [0.512–1.222] s': the median, then its interval, all
    three in the unit of the largest, said once (at most 24 characters below 1000 s)."""
    if s is None:
        return "—"
    if s.n < 2:
        return short(s.median)
    unit = unit_of(max(abs(s.median), abs(s.ci_high), abs(s.ci_low)))

    def f(x: float) -> str:
        return duration(x, {unit: SHORT[unit]}, sep=None).replace("-", "−")

    return f"{f(s.median)} [{f(s.ci_low)}–{f(s.ci_high)}] {unit}"


def render_stats(stats: Sequence[Stat], console: Console, boots: int) -> None:
    """Per-stage and per-marker statistics over repeated boots: the median, the interval that
    holds the true median at the level shown, the standard deviation and the spread."""
    rows: list[list[str | Text]] = []
    noisy = []
    for s in stats:
        spread = f"{100 * s.spread:.1f}%"
        style = "yellow" if s.spread > SPREAD_WARN else ""
        rows.append([Text(visible(s.name)), str(s.n), short(s.median), interval(s), level(s) if s.n > 1 else "",
                     short(s.stdev) if s.n > 1 else "", Text(spread if s.n > 1 else "", style=style)])
        if s.spread > SPREAD_WARN:
            noisy.append(visible(s.name.strip()))
    cols = (("quantity", "left"), ("n", "right"), ("median", "right"), ("interval", "right"), ("conf.", "right"),
            ("std dev", "right"), ("spread", "right"))
    console.print(fit_table(f"Statistics over {boots} boots: the median and the interval that holds it", cols, rows,
                            console.width, flex=(0,), keep=tuple(range(len(cols)))))
    ns = sorted({s.n for s in stats if s.n > 1})
    if ns:
        how = "; ".join(f"{n} boots: {'min–max' if n < 9 else 'inner boots'}" for n in ns)
        console.print(Text(f"interval: holds the true median at the confidence shown ({how})", style="dim"))
    if noisy:
        console.print(Text(f"spread above {100 * SPREAD_WARN:.0f}% of the median for: {', '.join(noisy)}; boot more "
                           "times before trusting a difference (bootlens compare tests it)", style="yellow"))


# ---- bootlens compare -----------------------------------------------------------------------


def p_text(p: float | None) -> str:
    """A p-value in a table cell: 'p 4e-20', 'p 0.02', 'p 0.4'; '' when there is none."""
    if p is None:
        return ""
    if p == 0:
        return "no noise"
    return f"p {p:.0e}".replace("e-0", "e-") if p < 0.001 else f"p {p:.1g}" if p < 0.1 else f"p {p:.1f}"


def verdict(d: Delta) -> Text:
    """The verdict cell: yes (p) / no (p) / no (< floor) / need N more / why there is none."""
    if d.change is Change.NOT_MEASURED:
        side = d.reason.rsplit(" ", 1)[-1] if d.reason.startswith("not measured in ") else ""
        return Text(f"not in {side}" if side else "not measured", style="dim")
    if d.change is Change.NOT_COMPARABLE:
        return Text(visible(d.reason), style="dim")
    if d.significance is Significance.SIGNIFICANT:
        slower = (d.delta_ns or 0) > 0
        return Text(f"yes ({p_text(d.p_value)})", style="bold red" if slower else "bold green")
    if d.significance is Significance.NOT_SIGNIFICANT:
        if d.reason.startswith("within the clock's") and d.tick_ns:
            return Text(f"no (≤ {tick_text(d.tick_ns)} tick)", style="dim")
        under = d.reason.startswith("under the floor")
        return Text("no (< floor)" if under else f"no ({p_text(d.p_value)})" if d.p_value is not None else "no",
                    style="dim")
    n = d.need_boots
    return Text(f"need {n} more" if n is not None else "unknown", style="yellow")


def _pct_cell(p: float | None) -> str:
    if p is None:
        return ""
    return (f"{p:+.0f}%" if abs(p) >= 100 else f"{p:+.1f}%").replace("-", "−")


def headline(c: Comparison, i: int, width: int) -> list[Text]:
    """'B vs A · power-on → ready: 12.827 s → 10.574 s (−2.253 s, −17.6%)', then the verdict on
    the same line when it fits, else on the next: the total first, as the tables below give it."""
    d = next((f.deltas[i - 1] for f in c.figures if f.name.startswith("total ")
              and f.deltas[i - 1].change is Change.CHANGED), None)
    if d is None or d.baseline is None or d.other is None:
        return []
    what = d.name[len("total ("):-1] if d.name.startswith("total (") and d.name.endswith(")") else d.name
    pct = _pct_cell(d.delta_pct)
    head = (f"{c.inputs[i].label} vs {c.inputs[0].label} · {visible(what)}: {short(d.baseline.median)} → "
            f"{short(d.other.median)} ({short(d.delta_ns, signed=True)}{f', {pct}' if pct else ''})")
    r = visible(d.reason)
    tail = f"significant ({r})" if d.significance is Significance.SIGNIFICANT else \
        f"not significant: {r}" if d.significance is Significance.NOT_SIGNIFICANT else r
    style = verdict(d).style or ""
    if len(head) + 2 + len(tail) <= width:
        return [Text(head + ": ", style="bold") + Text(tail, style=style)]
    return [Text(head, style="bold"), Text("  " + tail, style=style)]


def render_compare(c: Comparison, console: Console) -> None:
    """Every input against the first: the headline (total) per other input, the inputs, then
    per other input the table of totals, stages and markers and its largest initcall, process
    and probe differences, then the medians with their intervals and the legend. One pair per
    table keeps the columns within 80 characters, however many inputs there are."""
    inputs = c.inputs
    for i in range(1, len(inputs)):
        for line in headline(c, i, console.width):
            console.print(line)
    rows: list[list[str | Text]] = []
    for s in inputs:
        what = f"{'run folder' if s.folder else 'log'}, {s.boots} boot{'s' if s.boots != 1 else ''}"
        if s.partial:
            what += f", {s.partial} partial"
        rows.append([Text(s.label, style="bold"), what + (" (baseline)" if s is inputs[0] else ""),
                     Text(visible(s.name))])
    console.print(fit_table("Inputs", (("", "left"), ("what", "left"), ("input", "left")), rows, console.width,
                            keep=(0, 1, 2), wrap=2))
    base = inputs[0].label
    for p in c.pairs:
        other = inputs[p.other].label
        console.print()
        _figure_table(c, p.other, console)
        for nd in (p.initcalls, p.processes, p.probes, p.units):
            if nd.kind == "units" and nd.note is not None and nd.note.endswith("either input"):
                continue  # no systemd on either side: nothing to say (one side without: said below)
            console.print()
            if nd.note is not None:
                console.print(Text(visible(f"{nd.kind.capitalize()}, {other} vs {base}: not compared ({nd.note})"),
                                   style="dim"))
            else:
                _name_table(nd, base, other, console)
    console.print()
    _intervals(c, console)
    console.print(Text(
        f"verdict: yes when a t-test gives p < {ALPHA} and |Δ| is at least max({FLOOR_NS // 1_000_000} ms, "
        f"{FLOOR_REL:.0%} of {base}); no when |Δ| is under that floor, within the clock's tick (≤ 4 ms tick: "
        "jiffies at HZ=250) or within the noise; need N more: the boots a side that would decide it at the noise "
        "seen (per-name p adjusted for the number of names)",
        style="dim"))


def _figure_table(c: Comparison, i: int, console: Console) -> None:
    """Totals, stages and markers of input ``i`` against the baseline."""
    base, other = c.inputs[0].label, c.inputs[i].label
    deltas = [f.deltas[i - 1] for f in c.figures]
    rows = [[Text(visible(d.name)), _median(d.baseline), _median(d.other), short(d.delta_ns, signed=True)
             if d.delta_ns is not None else "", _pct_cell(d.delta_pct), verdict(d)] for d in deltas]
    console.print(fit_table(f"Stages, {other} vs {base}: median over boots", _columns("quantity", base, other), rows,
                            console.width, flex=(0,), keep=(0, 1, 2, 3, 5)))


def _columns(first: str, base: str, other: str) -> tuple[tuple[str, str], ...]:
    return ((first, "left"), (base, "right"), (other, "right"), ("Δ", "right"), ("Δ%", "right"),
            ("verdict", "left"))


def _median(s: Stat | None, absent: str = "—") -> str | Text:
    return Text(absent, style="dim") if s is None else short(s.median)


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
    top = len(nd.rows) - nd.more_significant
    more = f" and {nd.more_significant} more significant" if nd.more_significant else ""
    title = (f"{nd.kind.capitalize()}, {other} vs {base}: top {top} of {nd.names} by |Δ|{more} "
             f"({nd.added} added, {nd.removed} removed, {nd.significant} significant)")
    rows = [[Text(visible(mid_clip(_counted(d), 70))), _median(d.baseline, "absent"), _median(d.other, "absent"),
             short(d.delta_ns, signed=True), _pct_cell(d.delta_pct), verdict(d)] for d in nd.rows]
    console.print(fit_table(title, _columns("name", base, other), rows, console.width, flex=(0,),
                            keep=(0, 1, 2, 3, 5)))


def _intervals(c: Comparison, console: Console) -> None:
    """Each input's medians with their intervals, two inputs to a table (80 columns)."""
    labels = [s.label for s in c.inputs]
    for k in range(0, len(labels), 2):
        idx = list(range(k, min(k + 2, len(labels))))
        rows: list[list[str | Text]] = []
        for f in c.figures:
            rows.append([Text(visible(f.name)), *(median_with_interval(f.stats[j]) for j in idx)])
        heads = []
        for j in idx:
            lv = sorted({level(s) for f in c.figures if (s := f.stats[j]) is not None and s.n > 1})
            n = c.inputs[j].boots
            heads.append((f"{labels[j]}: {n} boot{'s' if n != 1 else ''}" + (f", {lv[0]}" if len(lv) == 1 else ""),
                          "right"))
        console.print(fit_table("Medians [intervals that hold them at the confidence shown]",
                                (("quantity", "left"), *heads), rows, console.width, flex=(0,),
                                keep=tuple(range(len(idx) + 1))))
        console.print()
