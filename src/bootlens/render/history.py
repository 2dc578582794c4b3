"""``bootlens history`` and ``bootlens regress`` output: the stored runs with a sparkline per
figure in the terminal, a self-contained HTML chart, and the regress verdicts (text and JSON).

The chart is inline SVG drawn here (a point per run at the median of its boots, a bar from the
min to the max, the run's labels in each point's tooltip): the page has no script at all, and
its Content-Security-Policy allows no network access, as the report's (render/html.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from .. import __version__
from ..stats.compare import RULE
from ..history.regress import Regression, Row, Side
from ..history.store import StoredRun
from ..history.trends import Trend
from .compare_json import SIGNIFICANCE_RULE, stat_dict, verdict_dict
from ..core.lines import clip
from ..core.units import short
from .fit import mid_clip
from .visible import visible

SPARKS = "▁▂▃▄▅▆▇█"
SCHEMA_VERSION = 1


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, its height the value between the smallest and the largest
    ('▁' to '█'); a space where a run did not measure it, '▄' throughout when all are equal."""
    known = [v for v in values if v is not None]
    if not known:
        return " " * len(values)
    lo, hi = min(known), max(known)
    if hi == lo:
        return "".join(" " if v is None else SPARKS[3] for v in values)
    top = len(SPARKS) - 1
    return "".join(" " if v is None else SPARKS[round((v - lo) / (hi - lo) * top)] for v in values)


def labels_text(run: StoredRun) -> str:
    """k=v k=v, sorted by key."""
    return " ".join(f"{k}={v}" for k, v in sorted(run.labels.items()))


def history_lines(runs: Sequence[StoredRun], trends: Sequence[Trend], width: int = 80) -> list[str]:
    """The runs, oldest first (id, date, boots, median total, labels), then a sparkline per
    figure over them with its first and last median and the smallest and largest."""
    if not runs:
        return ["no stored runs (store some with `bootlens store`, or `--db` on run)"]
    out = [f"{'id':>5}  {'stored (UTC)':16}  {'kind':6}  {'boots':>5}  {'total':>9}  labels"]
    for r in runs:
        head = f"{r.id:>5}  {r.created:%Y-%m-%d %H:%M}  {r.kind:6}  {r.boots:>5}  {short(r.total):>9}  "
        labels = labels_text(r)
        room = max(width - len(head), 20)
        out.append(visible(head + clip(labels, room)))
    names = {r.total_name for r in runs if r.total_name}
    if len(names) == 1:
        out.append(f"total: the median {names.pop()} over a run's boots")
    if trends:
        out.append("")
        out.append(f"trends over {len(runs)} run{'s' if len(runs) != 1 else ''} (median per run, oldest first):")
        name_w = min(max(len(t.label) for t in trends), 28)
        spark_w = max(8, width - name_w - 40)
        for t in trends:
            meds = [None if s is None else s.median for s in t.stats][-spark_w:]
            known = [m for m in meds if m is not None]
            rng = f"{short(min(known))}–{short(max(known))}" if known else "not measured"
            last = next((m for m in reversed(meds) if m is not None), None)
            out.append(visible(f"{mid_clip(t.label, name_w):<{name_w}}  {sparkline(meds)}  now {short(last)}, "
                               f"range {rng}"))
    return out


def history_json(runs: Sequence[StoredRun], trends: Sequence[Trend]) -> dict[str, Any]:
    """``bootlens history --json``: the runs and each trend's statistics per run (seconds)."""
    return {
        "schema_version": SCHEMA_VERSION, "kind": "history", "bootlens_version": __version__,
        "runs": [{"id": r.id, "created": r.created.isoformat(), "kind": r.kind, "source": r.source,
                  "labels": r.labels, "boots": r.boots, "total_name": r.total_name,
                  "total_median_s": None if r.total is None else r.total / 1e9} for r in runs],
        "trends": [{"kind": t.kind, "name": t.name, "label": t.label, "runs": [stat_dict(s) for s in t.stats]}
                   for t in trends],
    }


# --- the HTML chart ---------------------------------------------------------------------------

_W, _H, _PAD_L, _PAD_R, _PAD_T, _PAD_B = 760, 180, 70, 16, 14, 30


def _chart(t: Trend, runs: Sequence[StoredRun]) -> str:
    """One figure's SVG: a bar min..max and a point at the median per run, x = the runs in order."""
    pts = [(i, s) for i, s in enumerate(t.stats) if s is not None]
    if not pts:
        return f"<p>{escape(visible(t.label))}: not measured in these runs</p>"
    lo = float(min(s.min for _, s in pts))
    hi = float(max(s.max for _, s in pts))
    if hi == lo:
        lo, hi = lo * 0.9, hi * 1.1 + 1
    n = len(runs)
    inner_w, inner_h = _W - _PAD_L - _PAD_R, _H - _PAD_T - _PAD_B

    def x(i: int) -> float:
        return _PAD_L + (inner_w * (i + 0.5) / n)

    def y(v: float) -> float:
        return _PAD_T + inner_h * (1 - (v - lo) / (hi - lo))

    parts = [f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" '
             f'aria-label="{escape(visible(t.label))}">',
             f'<line x1="{_PAD_L}" y1="{_PAD_T}" x2="{_PAD_L}" y2="{_H - _PAD_B}" class="axis"/>',
             f'<line x1="{_PAD_L}" y1="{_H - _PAD_B}" x2="{_W - _PAD_R}" y2="{_H - _PAD_B}" class="axis"/>']
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(f'<text x="{_PAD_L - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{escape(short(v))}</text>')
    path = " ".join(f"{'M' if k == 0 else 'L'}{x(i):.1f},{y(s.median):.1f}" for k, (i, s) in enumerate(pts))
    parts.append(f'<path d="{path}" class="line"/>')
    step = max(1, n // 12)
    for i, s in pts:
        r = runs[i]
        tip = (f"run {r.id} · {r.created:%Y-%m-%d %H:%M} · {labels_text(r)}\n{t.label}: median {short(s.median)} "
               f"over {s.n} boot{'s' if s.n != 1 else ''} ({short(s.min)}–{short(s.max)})")
        parts.append(f'<g><title>{escape(visible(tip))}</title>'
                     f'<line x1="{x(i):.1f}" y1="{y(s.min):.1f}" x2="{x(i):.1f}" y2="{y(s.max):.1f}" class="range"/>'
                     f'<circle cx="{x(i):.1f}" cy="{y(s.median):.1f}" r="3.5" class="point"/></g>')
    for i in range(0, n, step):
        parts.append(f'<text x="{x(i):.1f}" y="{_H - _PAD_B + 16}" text-anchor="middle">{runs[i].id}</text>')
    parts.append("</svg>")
    return "".join(parts)


_CSS = """body{font:14px system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fff}
h1{font-size:1.3em}h2{font-size:1.05em;margin:1.4em 0 .3em}table{border-collapse:collapse}
td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left}td.n{text-align:right}
svg text{font-size:11px;fill:#555}.axis{stroke:#999}.line{fill:none;stroke:#3b6fb6;stroke-width:1.5}
.range{stroke:#9bb7e0;stroke-width:3}.point{fill:#3b6fb6}"""


def history_html(runs: Sequence[StoredRun], trends: Sequence[Trend]) -> bytes:
    """The chart page: the runs' table, then one chart per figure. No script, nothing fetched."""
    csp = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    rows = "".join(
        f"<tr><td class=n>{r.id}</td><td>{r.created:%Y-%m-%d %H:%M}</td><td>{escape(r.kind)}</td>"
        f"<td class=n>{r.boots}</td><td class=n>{escape(short(r.total))}</td>"
        f"<td>{escape(visible(labels_text(r)))}</td></tr>" for r in runs)
    charts = "".join(f"<h2>{escape(visible(t.label))}</h2>{_chart(t, runs)}" for t in trends)
    return "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n",
        f"<title>bootlens history · {len(runs)} runs</title>\n<style>{_CSS}</style>\n</head><body>\n",
        f"<h1>bootlens history: {len(runs)} run{'s' if len(runs) != 1 else ''}</h1>\n",
        "<p>Each point: the median over a run's boots; its bar: the fastest to the slowest boot. "
        "Hover a point for the run's labels.</p>\n",
        "<table><tr><th>id</th><th>stored (UTC)</th><th>kind</th><th>boots</th><th>total</th><th>labels</th></tr>",
        rows, "</table>\n", charts, f"\n<p>bootlens {escape(__version__)}</p>\n</body></html>\n",
    )).encode()


# --- regress ---------------------------------------------------------------------------------------

def _row_text(r: Row) -> str:
    d = r.delta
    pct = "" if d.delta_pct is None else f" ({d.delta_pct:+.1f}%)".replace("-", "−")
    base = "—" if d.baseline is None else short(d.baseline.median)
    new = "—" if d.other is None else short(d.other.median)
    what = r.kind if r.kind not in ("total", "marker") else ""
    name = f"{what} {d.name.strip()}".strip()
    extra = f", {d.change.value}" if d.change.value in ("added", "removed") else ""
    if d.baseline_count is not None and d.other_count is not None and d.baseline_count != d.other_count:
        extra += f", ran {d.baseline_count:g} → {d.other_count:g} times a boot"
    return visible(f"  {name}: {base} → {new}, {short(d.delta_ns, signed=True)}{pct}{extra}; {d.reason}")


def regress_lines(reg: Regression) -> list[str]:
    """What got slower, by how much and with what confidence; then what these boots cannot
    decide yet, and what got faster."""
    ref, new = reg.reference, reg.new
    out = [visible(f"reference: {ref.name} ({ref.boots} boot{'s' if ref.boots != 1 else ''}); "
                   f"new: {new.name} ({new.boots} boot{'s' if new.boots != 1 else ''})")]
    slower = reg.slower
    if slower:
        out.append(f"REGRESSION: {len(slower)} figure{'s' if len(slower) != 1 else ''} significantly slower:")
        out += [_row_text(r) for r in slower]
    else:
        out.append("no regression: nothing significantly slower")
    if reg.undecided:
        out.append(f"slower, but not decided by these boots ({len(reg.undecided)}):")
        out += [_row_text(r) for r in reg.undecided[:10]]
        if len(reg.undecided) > 10:
            out.append(f"  … and {len(reg.undecided) - 10} more (--json lists every row)")
    if reg.faster:
        out.append(f"faster ({len(reg.faster)}):")
        out += [_row_text(r) for r in reg.faster[:10]]
        if len(reg.faster) > 10:
            out.append(f"  … and {len(reg.faster) - 10} more (--json lists every row)")
    if reg.missing:
        out.append(visible("not measured in the new run: " + ", ".join(r.delta.name.strip() for r in reg.missing)))
    notes = [t.note for t in reg.tables if t.note]
    if notes:
        out.append("not compared: " + "; ".join(notes))
    out.append(f"rule: {RULE}")
    return out


def _row_dict(r: Row) -> dict[str, Any]:
    d = r.delta
    out = {"kind": r.kind, "name": d.name.strip(), "reference": stat_dict(d.baseline), "new": stat_dict(d.other),
           **verdict_dict(d)}
    if d.baseline_count is not None or d.other_count is not None:
        out["reference_count"] = d.baseline_count
        out["new_count"] = d.other_count
    return out


def regress_json(reg: Regression) -> dict[str, Any]:
    """``bootlens regress --json``: the sides, the verdict, and every judged row (seconds)."""
    def side(s: Side) -> dict[str, Any]:
        return {"name": s.name, "runs": list(s.runs), "boots": s.boots}

    return {
        "schema_version": SCHEMA_VERSION, "kind": "regress", "bootlens_version": __version__,
        "reference": side(reg.reference), "new": side(reg.new),
        "regression": bool(reg.slower),
        "slower": [_row_dict(r) for r in reg.slower],
        "undecided": [_row_dict(r) for r in reg.undecided],
        "faster": [_row_dict(r) for r in reg.faster],
        "missing": [_row_dict(r) for r in reg.missing],
        "rows": [_row_dict(r) for r in reg.rows],
        "notes": {t.kind: t.note for t in reg.tables if t.note},
        "significance_rule": SIGNIFICANCE_RULE,
    }
