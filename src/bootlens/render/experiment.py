"""``bootlens experiment`` and ``bootlens optimize`` in the terminal and as JSON (docs/json.md).

Pure functions of a result. Everything that comes from a log or a rule (titles, arithmetic,
file names) goes through rich ``Text`` objects, which never interpret markup.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import orjson
from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from .. import __version__
from ..stats.compare import ALPHA, Significance
from ..experiment.experiment import (
    AGREEMENT, ALL_SPEC, Agreement, ExperimentResult, Measured, OptimizeResult, Outcome, Round, Setup,
)
from ..core.lines import clip
from ..core.model import Clock
from ..experiment.configs import EQUALISED, change_dict
from ..kbuild.build import ALLNOCONFIG
from .compare_json import SIGNIFICANCE_RULE, compare_json_obj, stat_dict
from .compare_terminal import p_text, render_compare
from .fit import fit_table
from ..core.units import short, short_range
from .visible import visible

SCHEMA_VERSION = 1
AGREEMENT_RULE = f"within ±{AGREEMENT:.0%}: |saving_s - estimate.saving_s| <= {AGREEMENT} x estimate.saving_s"

_AGREE_STYLE = {Agreement.WITHIN: "green", Agreement.OUTSIDE: "yellow"}


# --- terminal ------------------------------------------------------------------------------
# Built for 80 columns: a headline first (what the changes did to power-on → ready), tables
# whose key cells stay on one line (the configuration, its figure) with the prose column last,
# where it wraps; the details indented under their change.


def _applied(s: Setup) -> Text:
    """A configuration in a line or two: what it adds, sets and lays over (long values clipped)."""
    parts = []
    if s.append:
        parts.append(f"cmdline: {clip(s.append, 60)}")
    if s.uboot_env:
        parts.append("uboot-env: " + clip(" ".join(f"{k}={v}" for k, v in s.uboot_env), 60))
    if s.files:
        parts.append("overlay: " + clip(", ".join(p for p, _, _ in s.files), 60))
    if s.kconfig:
        base = "allnoconfig + " if s.kconfig[0] == ALLNOCONFIG else ""
        n = len(s.kconfig) - (1 if base else 0)
        parts.append(f"kernel: {base}{n} Kconfig line{'s' if n != 1 else ''}")
    if s.direct:
        parts.append("boot path: direct")
    t = Text("; ".join(parts) or "as built")
    if s.equalised:
        t.append(" (+ env image*)", style="dim")
    return t


def _total(m: Measured) -> str:
    t = m.total
    if t is None:
        return "not measured"
    return short(t.median) if t.n < 2 else f"{short(t.median)} ({short_range(t.min, t.max)})"


def _say(console: Console, text: str | Text, indent: int = 0, style: str = "") -> None:
    """A line of prose, wrapped under its own indent."""
    body = text if isinstance(text, Text) else Text(text, style=style)
    console.print(Padding(body, (0, 0, 0, indent)) if indent else body)


def _change_headline(console: Console, o: Outcome | None, base: Measured, what: str) -> None:
    """'power-on → ready: 7.380 s → 3.156 s (−57.2%, significant) with 2 changes kept': the
    figures on the first line, whole; what they are for after them, or under them if it would
    not fit."""
    b = base.total
    if clock_of(base) == "guest":  # --deterministic: say so where the figures are
        what += " (guest's clock)"
    if o is None or b is None or o.measured.total is None:
        head, what = f"power-on → ready: {short(b.median) if b else 'not measured'} (median)", "; " + what
    else:
        pct = "" if o.saving_pct is None else f"{-o.saving_pct:+.1f}%, ".replace("-", "−")
        head = f"power-on → ready: {short(b.median)} → {short(o.measured.total.median)} ({pct}{o.significance.value})"
        what = " " + what
    if cell_len(head + what) <= console.width:
        console.print(Text(head + what, style="bold"))
    else:
        console.print(Text(head, style="bold"))
        _say(console, Text(what.lstrip(" ;"), style="bold"))


def _configurations(ms: list[Measured], console: Console) -> None:
    rows: list[list[str | Text]] = []
    for m in ms:
        ready = Text(f"{m.ready_boots}/{m.boots}", style="" if m.ready_boots == m.boots else "bold red")
        rows.append([Text(visible(m.setup.name)), ready, _total(m), _applied(m.setup)])
    cols = (("configuration", "left"), ("ready", "right"), ("power-on → ready", "right"), ("applied", "left"))
    on = " on the guest's clock" if ms and all(clock_of(m) == "guest" for m in ms) else ""
    console.print(fit_table(f"Configurations (power-on → ready{on}: median (min–max))", cols, rows, console.width,
                            flex=(0,), wrap=3))
    eq = next((m.setup for m in ms if m.setup.equalised), None)
    if eq is not None:
        _say(console, "* " + EQUALISED.format(dict(eq.env_image).get("bootdelay")), style="dim")


def _sig(o: Outcome) -> Text:
    if o.significance is Significance.SIGNIFICANT:
        return Text("yes", style="bold green" if (o.saving_ns or 0) > 0 else "bold red")
    if o.significance is Significance.NOT_SIGNIFICANT:
        return Text("no", style="dim")
    if o.need_boots is not None:  # the boots cannot decide yet: how many more a side would
        return Text(f"need {o.need_boots}", style="yellow")
    return Text("?", style="yellow")  # not measured: the details say why


def _agree(o: Outcome) -> Text:
    """The ±30% verdict: yes/no with the measured saving's distance from the estimate."""
    if o.agreement not in (Agreement.WITHIN, Agreement.OUTSIDE):
        return Text("—", style="dim")
    text = "yes" if o.agreement is Agreement.WITHIN else "no"
    if o.estimate and o.estimate.saving_ns and o.saving_ns is not None and \
            o.significance is Significance.SIGNIFICANT:
        text += f" {(o.saving_ns - o.estimate.saving_ns) / o.estimate.saving_ns:+.0%}".replace("-", "−")
    return Text(text, style=_AGREE_STYLE.get(o.agreement, "dim"))


def _savings_table(title: str, outs: list[Outcome], console: Console, kept: list[bool] | None = None,
                   decided: list[str] | None = None) -> None:
    rows: list[list[str | Text]] = []
    for i, o in enumerate(outs):
        pct = "" if o.saving_pct is None else f"{o.saving_pct:.1f}%".replace("-", "−")
        est = o.estimate.saving_ns if o.estimate else None
        row: list[str | Text] = [Text(visible(o.name)), short(o.saving_ns), pct, Text(p_text(o.p_value).removeprefix("p "), style="dim"),
                                 _sig(o), short(est), _agree(o)]
        if kept is not None:
            row.append(Text("yes", style="bold green") if kept[i] else Text("no", style="dim"))
        if decided is not None:  # the figure optimize's verdict was made on (its stage, or the total)
            row.append(Text(visible(decided[i]), style="" if kept and kept[i] else "dim"))
        rows.append(row)
    cols = [("change", "left"), ("saving", "right"), ("Δ%", "right"), ("p", "right"), ("signif.", "left"),
            ("estimate", "right"), ("±30%", "left")] + ([("kept", "left")] if kept is not None else []) \
        + ([("on", "left")] if decided is not None else [])
    flex = (0, len(cols) - 1) if decided is not None else (0,)  # the change's name, and the stage's
    console.print(fit_table(title, cols, rows, console.width, flex=flex, keep=tuple(range(len(cols)))))


def _details(o: Outcome, console: Console, decision: str | None = None) -> None:
    head = Text(visible(o.name), style="bold")
    if o.spec:
        head.append(f"  ({visible(clip(o.spec, 100))})", style="dim")
    _say(console, head)
    for n in o.measured.setup.notes:
        _say(console, f"note: {n}", 2, "dim")
    if decision:
        _say(console, decision, 2)
    e = o.estimate
    if e is not None:
        fig = "no figure" if e.saving_ns is None else short(e.saving_ns)
        _say(console, f"estimate: {fig} from {e.rule}, {e.confidence.value} confidence, {e.source}", 2)
        _say(console, visible(e.title), 4, "dim")
        _say(console, visible(f"arithmetic: {e.arithmetic}"), 4, "dim")
        if o.stage_saving_ns is not None:
            _say(console, f"measured in its stage ({e.stage}): {short(o.stage_saving_ns)}", 2)
    elif o.spec != ALL_SPEC:
        _say(console, "estimate: none (no rule proposes this change)", 2, "dim")
    if o.explanation:
        _say(console, f"why: {o.explanation}", 2, "yellow" if o.agreement is Agreement.OUTSIDE else "")


def render_experiment(r: ExperimentResult, console: Console) -> None:
    """The headline, the configurations, the savings table, then each change's estimate and
    explanation."""
    outs = list(r.changes) + ([r.together] if r.together else [])
    if r.together is not None:
        _change_headline(console, r.together, r.baseline, f"with all {len(r.changes)} changes")
    elif r.changes:
        _change_headline(console, r.changes[0], r.baseline, f"with {visible(r.changes[0].name)}")
    _say(console, f"Experiment on {r.target}: {r.repeat} boot{'s' if r.repeat != 1 else ''} per configuration, "
         f"interleaved; run folders in {r.folder}/")
    console.print()
    _configurations([r.baseline] + [o.measured for o in outs], console)
    console.print()
    _savings_table("Savings (baseline median − configuration median)", outs, console)
    console.print()
    for o in outs:
        _details(o, console)
    for n in r.notes:
        _say(console, f"note: {n}", style="dim")
    _legend(console)


def _legend(console: Console, optimize: bool = False) -> None:
    on = ("; kept, on: a change is kept when the stage it targets is significantly shorter (signif.'s rule, in "
          "that stage), no other stage is longer and the total is not worse (95% upper bound under max(1 ms, "
          "2%)), or else when the total is significantly shorter") if optimize else ""
    _say(console, f"signif.: yes when a t-test gives p < {ALPHA} and the saving is at least max(1 ms, 1% of the "
         "baseline); no under that or within the noise; need N: more boots a side would decide it (--repeat "
         f"auto boots them); ±30%: the measured saving is within ±{AGREEMENT:.0%} of the estimate (and by how "
         f"much it differs){on}", style="dim")


def render_optimize(r: OptimizeResult, console: Console) -> None:
    """The headline, then per round what was tried and kept (with each change's estimate
    against its measurement), the final configuration and the before/after comparison."""
    kept = len(r.final.changes) if r.final is not None else 0
    if r.final_outcome is not None:
        _change_headline(console, r.final_outcome, r.baseline, f"with {kept} change{'s' if kept != 1 else ''} kept")
    else:
        _change_headline(console, None, r.baseline, "no change saved time significantly")
    n = len(r.rounds)
    _say(console, f"Optimize {r.target}: {n} round{'s' if n != 1 else ''}, up to {r.repeat} boot"
         f"{'s' if r.repeat != 1 else ''} per configuration, interleaved; run folders in {r.folder}/")
    for rnd in r.rounds:
        console.print()
        if n > 1:
            on = (f": on top of {', '.join(lb for lb, _ in rnd.applied)}, kept before" if rnd.applied
                  else ": the target as it is")
            console.print(Text(visible(f"Round {rnd.number}{on} (run folders in {rnd.folder}/)"), style="bold"))
        _round(rnd, console, n > 1)
    console.print()
    _final_config(r, console)
    if r.comparison is not None:
        console.print()
        console.print(Text("Before (A: baseline) and after (B: final configuration)", style="bold"))
        render_compare(r.comparison, console)
    if r.final_outcome is not None:
        o = r.final_outcome
        base = r.baseline.total
        after = o.measured.total
        console.print()
        if base is not None and after is not None and o.saving_ns is not None:
            _say(console, Text(f"power-on → ready (median): {short(base.median)} → {short(after.median)}, "
                               f"{short(o.saving_ns)} or {o.saving_pct or 0:.1f}% less ({o.significance.value}); "
                               f"{o.measured.ready_boots} of {o.measured.boots} boots reached ready", style="bold"))
        if r.final_baseline is not None:
            _say(console, f"the target as it was ({r.final_baseline.folder}) and the final configuration "
                          f"({o.measured.folder}) booted again side by side, {o.measured.boots} boots each")
        if r.sum_single_ns is not None:
            guest = all(clock_of(x.baseline) == "guest" for x in r.rounds)
            _say(console, f"the kept changes saved {short(r.sum_single_ns)} one by one"
                          + (" on the guest's clock" if guest else "")
                          + (", each against the configuration of its round" if n > 1 else ""))
        if o.explanation:
            _say(console, f"why: {o.explanation}")
    console.print()
    for note in r.notes:
        _say(console, f"note: {note}", style="dim")
    _legend(console, optimize=True)


def _round(rnd: Round, console: Console, several: bool) -> None:
    """One round: its findings, configurations, savings, what was not tried, each change's
    estimate against its measurement."""
    _say(console, f"{len(rnd.findings)} findings on the boot with tracing on ({rnd.advise_folder}): "
         f"{len(rnd.tried)} tried automatically, {len(rnd.not_tried)} not tried")
    console.print()
    _configurations([rnd.baseline] + [t.outcome.measured for t in rnd.tried], console)
    console.print()
    if rnd.tried:
        _savings_table("Each change alone (baseline median − median with the change"
                       + (", guest's clock)" if clock_of(rnd.baseline) == "guest" else ")"),
                       [t.outcome for t in rnd.tried], console, [t.kept for t in rnd.tried],
                       [t.verdict.on if t.verdict is not None else "total" for t in rnd.tried])
        console.print()
    if rnd.not_tried:
        rows: list[list[str | Text]] = [
            [Text(visible(f.rule)), Text(visible(f"{f.change.kind.value}: {f.change.value}")), short(f.saving_ns),
             Text(visible(why))] for f, why in rnd.not_tried]
        cols = (("rule", "left"), ("change", "left"), ("estimate", "right"), ("why", "left"))
        console.print(fit_table("Not tried", cols, rows, console.width, flex=(1, 0), wrap=3))
        console.print()
    if rnd.tried:
        console.print(Text("Per change: estimate against measurement", style="bold"))
        for tr in rnd.tried:
            _details(tr.outcome, console, tr.decision)
    if several:
        o = rnd.kept_outcome
        if o is None or rnd.kept is None:
            _say(console, f"round {rnd.number} kept nothing", style="bold")
        elif o.saving_ns is not None:
            mine = [lb for lb, _ in rnd.kept.changes[len(rnd.applied):]]
            _say(console, Text(visible(f"round {rnd.number} kept {', '.join(mine)}: {short(o.saving_ns)} or "
                                       f"{o.saving_pct or 0:.1f}% less than its baseline ({o.significance.value})"),
                               style="bold"))


def _final_config(r: OptimizeResult, console: Console) -> None:
    s = r.final
    if s is None:
        console.print(Text("Final configuration: unchanged (no change saved time significantly)", style="bold"))
        return
    console.print(Text(f"Final configuration ({len(s.changes)} change{'s' if len(s.changes) != 1 else ''} kept)",
                       style="bold"))
    if s.append:
        _say(console, f"kernel command line: add  {s.append}", 2)
    if s.uboot_env:
        _say(console, "U-Boot: " + "; ".join(f"setenv {k} {v}" for k, v in s.uboot_env) + "; saveenv", 2)
    if s.files:
        where = f" (in {r.final_overlay}/)" if r.final_overlay else ""
        _say(console, "root filesystem: " + ", ".join(p for p, _, _ in s.files) + where, 2)
    if s.kconfig:
        where = f": {r.final_kernel} and its diff {r.final_kernel.with_suffix('.diff')}" if r.final_kernel else ""
        _say(console, f"kernel: built from {len(s.kconfig)} Kconfig lines{where}", 2)
    if s.direct:
        _say(console, "boot path: the kernel starts with no bootloader stage (falcon mode; QEMU -kernel, no -bios)", 2)
    for label, c in s.changes:
        _say(console, visible(f"{label}: {c.description}"), 2, "dim")
    for n in s.notes:
        _say(console, f"note: {n}", 2, "dim")


# --- JSON ------------------------------------------------------------------------------------


def _ns(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def setup_dict(s: Setup) -> dict[str, Any]:
    """A configuration: what it applies."""
    return {"name": s.name, "changes": [change_dict(lb, c) for lb, c in s.changes], "append": s.append,
            "uboot_env": dict(s.uboot_env), "env_image": dict(s.env_image),
            "overlay_files": [p for p, _, _ in s.files], "uboot_env_equalised": s.equalised,
            "notes": list(s.all_notes()), "kconfig": list(s.kconfig), "direct": s.direct}


def clock_of(m: Measured) -> str:
    """The clock a configuration's figures are on: "guest" when its boots were read on the
    guest's own clocks (--deterministic), else "host"."""
    guest = bool(m.analysis.boots) and all(b.alignment.axis is not Clock.HOST for b in m.analysis.boots)
    return "guest" if guest else "host"


def measured_dict(m: Measured) -> dict[str, Any]:
    """A configuration's boots."""
    return {"configuration": setup_dict(m.setup), "folder": str(m.folder), "boots": m.boots,
            "ready_boots": m.ready_boots, "clock": clock_of(m), "total": stat_dict(m.total),
            "stages": {k: stat_dict(v) for k, v in m.stats.items() if not k.startswith(("total ", "marker ", " "))}}


def outcome_dict(o: Outcome) -> dict[str, Any]:
    """A configuration against the baseline."""
    e = o.estimate
    return {
        "name": o.name, "spec": o.spec, **measured_dict(o.measured),
        "saving_s": _ns(o.saving_ns), "saving_pct": None if o.saving_pct is None else round(o.saving_pct, 3),
        "spread_s": _ns(o.spread_ns), "significance": o.significance.value, "reason": o.reason,
        "p_value": o.p_value, "test": o.test, "need_boots": o.need_boots,
        "estimate": None if e is None else {
            "rule": e.rule, "title": e.title, "saving_s": _ns(e.saving_ns), "arithmetic": e.arithmetic,
            "confidence": e.confidence.value, "stage": e.stage, "source": e.source, "traced": e.traced},
        "stage_saving_s": _ns(o.stage_saving_ns),
        "stage_significance": None if o.stage_significance is None else o.stage_significance.value,
        "stage_p_value": o.stage_p_value, "agreement": o.agreement.value, "explanation": o.explanation,
    }


def _head(kind: str, target: str, folder: str, repeat: int, max_repeat: int | None) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "generator": f"bootlens {__version__}",
            "target": target, "folder": folder, "repeat": repeat, "max_repeat": max_repeat,
            "significance_rule": SIGNIFICANCE_RULE, "agreement_rule": AGREEMENT_RULE}


def experiment_json_obj(r: ExperimentResult) -> dict[str, Any]:
    """``bootlens experiment --json`` (docs/json.md)."""
    return {**_head("experiment", r.target, str(r.folder), r.repeat, r.max_repeat),
            "baseline": measured_dict(r.baseline),
            "changes": [outcome_dict(o) for o in r.changes],
            "all": None if r.together is None else outcome_dict(r.together),
            "sum_of_single_savings_s": _ns(r.sum_single_ns), "notes": list(r.notes), "seed": r.seed}


def _finding_dict(f: Any) -> dict[str, Any]:
    return {"rule": f.rule, "title": f.title, "stage": f.stage, "saving_s": _ns(f.saving_ns),
            "confidence": f.confidence.value, "change": change_dict(f.rule, f.change),
            "automatic": f.change.automatic}


def _verdict_dict(t: Any) -> dict[str, Any] | None:
    v = t.verdict
    return None if v is None else {"keep": v.keep, "decided_on": v.on, "boots": v.boots, "need_boots": v.need_boots,
                                   "reason": v.reason}


def _tried_dicts(rnd: Round) -> list[dict[str, Any]]:
    return [{**outcome_dict(t.outcome), "rule": t.finding.rule, "kept": t.kept, "decision": t.decision,
             "verdict": _verdict_dict(t), "round": rnd.number} for t in rnd.tried]


def tried_rows(r: OptimizeResult) -> list[dict[str, Any]]:
    """Each change optimize tried, for the before/after page: its estimate beside what it saved
    (in the total and in the estimate's stage), how far apart they are, and the verdict with the
    figure and boots that decided it."""
    rows = []
    for rnd in r.rounds:
        for t in rnd.tried:
            o, e, v = t.outcome, t.outcome.estimate, t.verdict
            est = e.saving_ns if e is not None else None
            rows.append({
                "round": rnd.number, "rule": t.finding.rule, "change": o.spec, "kept": t.kept,
                "estimate_s": _ns(est), "saving_s": _ns(o.saving_ns), "stage": e.stage if e is not None else None,
                "stage_saving_s": _ns(o.stage_saving_ns),
                "error_pct": None if not est or o.saving_ns is None else round((o.saving_ns - est) / est * 100, 1),
                "decided_on": v.on if v is not None else "total", "boots": v.boots if v is not None else o.measured.boots,
                "clock": clock_of(o.measured), "decision": t.decision})
    return rows


def round_dict(rnd: Round) -> dict[str, Any]:
    """One round of optimize: on top of what, what it tried and kept."""
    return {
        "number": rnd.number, "applied": [change_dict(lb, c) for lb, c in rnd.applied], "folder": str(rnd.folder),
        "advise_folder": str(rnd.advise_folder), "repeat": rnd.repeat,
        "findings": [_finding_dict(f) for f in rnd.findings],
        "not_tried": [{**_finding_dict(f), "why": why} for f, why in rnd.not_tried],
        "baseline": measured_dict(rnd.baseline), "tried": _tried_dicts(rnd),
        "kept": None if rnd.kept is None or rnd.kept_outcome is None else {
            **outcome_dict(rnd.kept_outcome), "configuration": setup_dict(rnd.kept)},
        "sum_of_single_savings_s": _ns(rnd.sum_single_ns),
    }


def optimize_json_obj(r: OptimizeResult) -> dict[str, Any]:
    """``bootlens optimize --json`` (docs/json.md): round 1's findings at the top, every round's
    tries in ``tried``, each round whole in ``rounds``; ``baseline`` is what ``final`` is against."""
    return {
        **_head("optimize", r.target, str(r.folder), r.repeat, r.max_repeat), "advise_folder": str(r.advise_folder),
        "findings": [_finding_dict(f) for f in r.findings],
        "not_tried": [{**_finding_dict(f), "why": why} for f, why in r.not_tried],
        "baseline": measured_dict(r.baseline),
        "tried": [t for rnd in r.rounds for t in _tried_dicts(rnd)],
        "final": None if r.final is None or r.final_outcome is None else {
            **outcome_dict(r.final_outcome), "configuration": setup_dict(r.final),
            "overlay_dir": None if r.final_overlay is None else str(r.final_overlay),
            "kernel_config": None if r.final_kernel is None else str(r.final_kernel)},
        "final_side_by_side": r.final_baseline is not None,
        "sum_of_single_savings_s": _ns(r.sum_single_ns),
        "rounds": [round_dict(rnd) for rnd in r.rounds],
        "comparison": None if r.comparison is None else compare_json_obj(r.comparison),
        "notes": list(r.notes),
        "seed": r.seed,
    }


def write_json_obj(obj: dict[str, Any], out: BinaryIO) -> None:
    """Serialise a document with orjson, indented, newline-terminated."""
    out.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2))
    out.write(b"\n")
