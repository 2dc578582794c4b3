"""``bootlens experiment`` and ``bootlens optimize``: apply changes to a target, boot each
configuration N times and measure what every change saves, next to the advisor's estimate.

A change is an :class:`~bootlens.advise.base.Change`. Three kinds can be applied by bootlens:
a kernel command-line argument (appended), a U-Boot variable (an environment image in QEMU's
flash, or the board's hook) and files laid over the root filesystem (an overlay directory).
Several changes make one :class:`Setup` (:func:`combine`); two that set the same file, U-Boot
variable or kernel argument conflict and the later one wins, which the setup's notes say.

Measurement
-----------
Every configuration (the baseline, each change alone, all changes together) boots ``repeat``
times, interleaved round by round and rotating (baseline, A, B, all; A, B, all, baseline; ...)
so that a slow minute on a shared machine hits every configuration alike instead of one block,
and no configuration always boots first. The measured saving of a configuration is
median(baseline total) - median(its total), power-on to ready; its significance is
:func:`bootlens.stats.compare.judge`'s rule (a t-test at p < 0.001 and a floor of max(1 ms, 1%)).

With ``max_repeat`` (``--repeat auto``) the rounds go on past ``repeat`` while some change's
verdict is "need N more boots": the next batch is the largest N asked for, booted by the
baseline and the undecided configurations only (still interleaved: a decided one needs no more
boots, and on a slow target each boot is minutes; optimize does not ask for boots of a change
that made the boot slower, which it keeps in no case), until every verdict is decided
(significant, or not significant) or ``max_repeat`` boots a configuration. Looking at
the data between batches and stopping when decided raises the false-positive rate above the
test's 0.001 by at most the number of looks (a few: each batch jumps to the projected N), so
it stays under 1% with the default cap of 10.
Conditions stay equal: when any configuration sets a U-Boot variable, the others boot with an
environment image too, holding U-Boot's default ``bootdelay``: attaching the image has a cost
of its own, which must not count as a saving.

An estimate agrees with a measurement when |measured - estimate| <= 30% of the estimate.
"""

from __future__ import annotations

import stat
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from ..advise import RuleRegistry, advise, default_registry
from ..advise.base import Change, ChangeKind, Confidence, Context, Finding
from ..timeline.analyze import Analysis, BootAnalysis
from .testbed import Bench, BoardBench, QemuBench
from ..stats.compare import Change as CompareChange, Comparison, Significance, compare_groups, figure_delta
from ..core.errors import printable
from ..timeline.inputs import Group, analyze_folder
from ..stats.figures import Stat, diff_interval, statistics_of
from .configs import (
    HOOK_KIND, NOT_AUTOMATIC, RESERVED, ExperimentError, Setup, TrySpec, change_dict, change_key, combine,
    equalise, overlay_change, parse_try, read_applied, valid_name, write_overlay,
)

TRACE_APPEND = ("initcall_debug ignore_loglevel trace_event=sched:sched_process_fork,"
                "sched:sched_process_exec,sched:sched_process_exit tp_printk")
AGREEMENT = 0.30  # an estimate agrees when it is within 30% of the measured saving
ALL_SPEC = "every change above"  # the spec shown for changes applied together
FINAL_SPEC = "the kept changes together"

Progress = Callable[[int, int, str, float], None]  # (boots done, boots planned, what, seconds)

__all__ = ["AGREEMENT", "ALL_SPEC", "FINAL_SPEC", "TRACE_APPEND", "Agreement", "Bench", "BoardBench", "Estimate",
           "ExperimentError", "ExperimentResult", "Measured", "OptimizeResult", "Outcome", "QemuBench", "Setup",
           "Round", "Tried", "TrySpec", "agreement", "change_dict", "combine", "equalise", "experiment", "optimize",
           "outcome", "overlay_change", "parse_try", "read_applied", "write_overlay"]


# --- measurements ------------------------------------------------------------------------


class Agreement(StrEnum):
    """Estimate against measurement."""

    WITHIN = "within ±30%"
    OUTSIDE = "outside ±30%"
    NO_ESTIMATE = "no estimate"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True, slots=True)
class Measured:
    """One configuration's boots: ``stats`` per total, stage and marker (runs.boot_figures)."""

    setup: Setup
    folder: Path
    analysis: Analysis
    stats: dict[str, Stat]
    boots: int
    ready_boots: int  # boots that reached the ready marker

    @property
    def total(self) -> Stat | None:
        """Power-on (or first byte) to ready over the boots that reached it."""
        return next((s for n, s in self.stats.items() if n.startswith("total ")), None)


@dataclass(frozen=True, slots=True)
class Estimate:
    """The advisor's figure for a change; ``source`` says which boots it comes from."""

    rule: str
    title: str
    saving_ns: float | None
    arithmetic: str
    confidence: Confidence
    stage: str
    source: str
    traced: bool  # made on the boot with tracing on (the product boots gave no figure)
    traced_stage_ns: int | None = None  # then: the stage's duration on that boot


@dataclass(frozen=True, slots=True)
class Traced:
    """The boot with the kernel's tracing on, and the advisor's findings on it."""

    folder: Path
    boot: BootAnalysis | None
    findings: tuple[Finding, ...]

    def stage_ns(self, name: str) -> int | None:
        """A top-level stage's duration on this boot."""
        b = self.boot
        return None if b is None else next((x.duration_ns for x in b.stages if x.name == name), None)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A configuration against the baseline: saving = median(baseline) - median(it)."""

    name: str
    measured: Measured
    saving_ns: float | None
    saving_pct: float | None
    significance: Significance
    spread_ns: int | None  # the larger max - min of the two sides
    reason: str
    estimate: Estimate | None
    stage_saving_ns: float | None  # the same difference within the estimate's stage
    agreement: Agreement
    explanation: str | None
    spec: str = ""  # the --try text, or the finding's change for optimize
    p_value: float | None = None  # the test's two-sided p; None with fewer than 2 boots a side
    need_boots: int | None = None  # UNKNOWN: more boots a side the verdict needs
    test: str | None = None  # "student" | "welch"
    stage_significance: Significance | None = None  # the verdict on stage_saving_ns (compare's rule)
    stage_p_value: float | None = None


def measure(setup: Setup, folder: Path) -> Measured:
    """Analyse a configuration's run folder; a recording with no boot in it (a silent console)
    or without the ready marker counts as a boot that did not reach ready (runs.analyze_run)."""
    from ..targets.runs import analyze_run

    run = analyze_run(folder)
    a = run.analysis
    stats = {s.name: s for s in statistics_of(a.boots)}
    return Measured(setup, folder, a, stats, run.recordings, run.ready_count)


def agreement(estimate_ns: float | None, saving_ns: float | None) -> Agreement:
    """Within ±30% when |measured - estimate| <= 0.3 x estimate."""
    if saving_ns is None:
        return Agreement.NOT_MEASURED
    if estimate_ns is None or estimate_ns <= 0:
        return Agreement.NO_ESTIMATE
    return Agreement.WITHIN if abs(saving_ns - estimate_ns) <= AGREEMENT * estimate_ns else Agreement.OUTSIDE


def _s(ns: float) -> str:
    return f"{ns / 1e9:.3f} s"


def explain(m: Measured, saving: float | None, sig: Significance, spread: int | None, est: Estimate | None,
            stage_saving: float | None, agree: Agreement, rate_limited: bool,
            base_stage: Stat | None = None, base_n: int = 0, reason: str = "",
            interval: tuple[float, float] | None = None, stage_p: float | None = None) -> str | None:
    """Why a measurement does not confirm its estimate, from the data at hand; None when it
    does. ``reason`` is the verdict's (compare.judge); ``interval`` the 95% interval of the
    saving (stats.diff_interval), None when unknown; ``stage_p`` the p-value of the saving in
    the estimate's stage when that is significant there, else None."""
    why: list[str] = []
    there = "" if stage_p is None else f", significant there (p = {stage_p:.2g})"
    if m.ready_boots < m.boots:
        why.append(f"{m.boots - m.ready_boots} of {m.boots} boots did not reach the ready marker")
    if saving is not None and sig is Significance.UNKNOWN:
        why.append(f"these boots cannot decide yet: {reason}; --repeat auto boots until they can")
    elif saving is not None and sig is Significance.NOT_SIGNIFICANT:
        said = reason.replace("under the floor", "under the floor of 1 ms or 1% of the baseline", 1)
        why.append(f"the difference is {said.replace('within the noise', 'within the noise of these boots', 1)}")
    elif saving is not None and saving < 0:
        why.append("the change made the boot slower")
    if there and sig is not Significance.SIGNIFICANT and est is not None and stage_saving is not None and \
            not (agree is Agreement.OUTSIDE and est.saving_ns is not None and saving is not None
                 and agreement(est.saving_ns, stage_saving) is Agreement.WITHIN):
        why.append(f"in its stage ({est.stage}) it saved {_s(stage_saving)}{there}: the other stages' noise hides "
                   "it in the total")
    if agree is Agreement.OUTSIDE and est is not None and est.saving_ns is not None and saving is not None:
        if stage_saving is not None and agreement(est.saving_ns, stage_saving) is Agreement.WITHIN:
            rest = stage_saving - saving
            why.append(f"in its stage ({est.stage}) it saved {_s(stage_saving)}{there}, within ±30% of the estimate; "
                       f"the other stages took {_s(abs(rest))} {'longer' if rest > 0 else 'less'} than the "
                       "baseline's, which the change does not explain: run-to-run noise")
        if est.traced:
            traced_ns, base_ns = est.traced_stage_ns, base_stage.median if base_stage is not None else None
            if traced_ns is None or base_ns is None:
                why.append("estimated on the boot with tracing on, which prints far more on the console than the "
                           "product configuration and can run slower")
            elif traced_ns > base_ns * (1 + AGREEMENT):
                why.append(f"estimated on the boot with tracing on, whose {est.stage} took {_s(traced_ns)} against "
                           f"{_s(base_ns)} without tracing: the traced boot is slower there")
        if not rate_limited and "baud" in est.arithmetic.lower():
            why.append("the estimate prices console output at a serial line's rate; this console is not rate "
                       "limited (QEMU), so the printing costs less here (boot with --baud to model a line)")
        if interval is not None and interval[0] <= est.saving_ns <= interval[1] and sig is Significance.SIGNIFICANT:
            why.append(f"the estimate is inside the 95% interval of the measured saving ({_s(interval[0])} to "
                       f"{_s(interval[1])}): these boots cannot tell the two apart")
        if est.confidence is Confidence.LOW:
            why.append("the estimate rests on a model (low confidence), not on a measured delay")
        if len(why) == 0:
            n = min(m.boots, base_n)
            why.append(f"measured {_s(saving)} against an estimate of {_s(est.saving_ns)}; nothing in the "
                       f"recorded boots explains the difference ({n} boots a side)")
    return "; ".join(why) or None


def outcome(name: str, base: Measured, m: Measured, est: Estimate | None, rate_limited: bool,
            spec: str = "") -> Outcome:
    """One configuration against the baseline, with the estimate verdict."""
    d = figure_delta("total", base.total, m.total, ("baseline", name))
    saving = None if d.delta_ns is None else -d.delta_ns
    stage_saving = stage_sig = stage_p = None
    if est is not None and est.stage in base.stats and est.stage in m.stats:
        stage_saving = base.stats[est.stage].median - m.stats[est.stage].median
        sd = figure_delta(est.stage, base.stats[est.stage], m.stats[est.stage])
        stage_sig, stage_p = sd.significance, sd.p_value
    agree = agreement(est.saving_ns if est else None, saving)
    # mean(base) - mean(m): the saving's interval
    interval = diff_interval(m.total, base.total) if base.total is not None and m.total is not None else None
    why = explain(m, saving, d.significance, d.threshold_ns, est, stage_saving, agree, rate_limited,
                  base.stats.get(est.stage) if est is not None else None, base.boots, d.reason, interval,
                  stage_p if stage_sig is Significance.SIGNIFICANT and (stage_saving or 0) > 0 else None)
    return Outcome(name, m, saving, None if d.delta_pct is None else -d.delta_pct, d.significance,
                   d.threshold_ns, d.reason, est, stage_saving, agree, why, spec, d.p_value, d.need_boots, d.test,
                   stage_sig, stage_p)


def needs(base: Measured, others: Sequence[Measured], gains_only: bool = False) -> dict[int, int]:
    """Index in ``others`` -> the boots a side its verdict against the baseline still asks
    for ("need N more boots"); a verdict that is decided or cannot be (a configuration whose
    boots missed the ready line is not kept whatever its figures) is left out, and with
    ``gains_only`` so is a configuration slower than the baseline (optimize keeps no such one)."""
    out: dict[int, int] = {}
    for i, m in enumerate(others):
        if m.ready_boots < m.boots or base.ready_boots < base.boots:
            continue
        d = figure_delta("total", base.total, m.total)
        if gains_only and (d.delta_ns is None or d.delta_ns >= 0):
            continue
        if d.significance is Significance.UNKNOWN and d.change is CompareChange.CHANGED:
            out[i] = d.need_boots or 1
    return out


def undecided(base: Measured, others: Sequence[Measured], gains_only: bool = False) -> int | None:
    """The most boots a side that some configuration's verdict still asks for (:func:`needs`);
    None when every verdict is decided or cannot be."""
    n = needs(base, others, gains_only)
    return max(n.values()) if n else None


def findings_per_boot(a: Analysis, ctx: Context, registry: RuleRegistry) -> list[list[Finding]]:
    """The advisor's findings for every boot of a run folder."""
    return [advise(b, ctx, registry) for b in a.boots]


def estimate_for(change: Change, rule: str | None, baseline: Sequence[Sequence[Finding]],
                 traced: Traced | None) -> Estimate | None:
    """The advisor's estimate for a change (a finding with this change, from ``rule`` when
    given): the median figure over the baseline boots; else, when they give no figure (process
    and initcall rules need the trace), the traced boot's; else a figureless finding."""
    key = change_key(change)

    def hit(fs: Sequence[Finding]) -> Finding | None:
        return next((f for f in fs if (rule is None or f.rule == rule) and change_key(f.change) == key), None)

    hits = [f for fs in baseline if (f := hit(fs)) is not None]
    vals = [f.saving_ns for f in hits if f.saving_ns is not None]
    if vals:
        med = statistics.median(vals)
        f = min(hits, key=lambda f: abs((f.saving_ns if f.saving_ns is not None else -1e18) - med))
        return Estimate(f.rule, f.title, med, f.arithmetic, f.confidence, f.stage,
                        f"median over {len(vals)} of {len(baseline)} baseline boots", False)
    t = hit(traced.findings) if traced is not None else None
    if t is not None and (t.saving_ns is not None or not hits):
        where = "on the boot with tracing on (" + ("the baseline boots give no figure" if hits else
                                                   "the baseline boots do not show it") + ")"
        return Estimate(t.rule, t.title, t.saving_ns, t.arithmetic, t.confidence, t.stage, where, True,
                        traced.stage_ns(t.stage) if traced is not None else None)
    if hits:
        f = hits[0]
        return Estimate(f.rule, f.title, None, f.arithmetic, f.confidence, f.stage,
                        f"seen in {len(hits)} of {len(baseline)} baseline boots, without a figure", False)
    return None


# --- running -------------------------------------------------------------------------------


class _Counter:
    """Boots done and planned, reported through the caller's progress function."""

    def __init__(self, bench: Bench, progress: Progress | None, total: int) -> None:
        self.bench, self.progress, self.total, self.done = bench, progress, total, 0

    def boot(self, setup: Setup, folder: Path, index: int) -> None:
        t = time.monotonic()
        self.bench.boot(setup, folder, index)
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, f"{setup.name} {index}", time.monotonic() - t)

    def rounds(self, plan: Sequence[tuple[Setup, Path]], repeat: int, max_repeat: int | None = None,
               base: Measured | None = None, gains_only: bool = False) -> tuple[list[Measured], int]:
        """Boot every configuration ``repeat`` times, interleaved round by round, the order
        rotating from one round to the next; with ``max_repeat``, more rounds while a verdict
        against the baseline (``base``, else the plan's first) asks for more boots, up to
        ``max_repeat`` (module docstring): those rounds boot only the undecided configurations
        and the baseline, still interleaved (``gains_only``: a slower one is not undecided for
        optimize). Returns the measurements and the most boots a configuration got."""
        for s, folder in plan:
            self.bench.check(s)
        for s, folder in plan:
            self.bench.prepare(s, folder)
        booted = [0] * len(plan)
        active = list(range(len(plan)))
        target = repeat
        while True:
            for i in range(min(booted[k] for k in active), target):
                turn = [k for k in active if booted[k] <= i]
                r = i % len(turn) if turn else 0  # each round starts one configuration later: none always boots first
                for k in [*turn[r:], *turn[:r]]:
                    s, folder = plan[k]
                    booted[k] += 1
                    self.boot(s, folder, booted[k])
            measured = [measure(s, folder) for s, folder in plan]
            done = max(booted)
            if max_repeat is None or done >= max_repeat:
                return measured, done
            ref, others, shift = (base, measured, 0) if base is not None else (measured[0], measured[1:], 1)
            need = needs(ref, others, gains_only)
            if not need:
                return measured, done
            more = {i + shift for i in need}
            active = sorted(more | ({0} if base is None else set()))
            target = min(max(max(booted[k] for k in active) + 1,
                             min(booted[k] for k in more) + max(need.values())), max_repeat)
            self.total += sum(target - booted[k] for k in active)


def fresh_folder(out: Path) -> None:
    """The run's folder must be new or empty: old boot-N.rec files would join the statistics."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExperimentError(f"{printable(str(out))}: exists and is not empty; give a new folder with -o")
    out.mkdir(parents=True, exist_ok=True)


def _traced(bench: Bench, counter: _Counter, out: Path, ctx: Context, registry: RuleRegistry,
            applied: Sequence[tuple[str, Change]] = ()) -> Traced:
    """One boot with the kernel's tracing on (and the ``applied`` changes), to advise on
    (initcall and process rules need the tracing)."""
    folder = out / "advise"
    s = combine("advise", [*applied, ("tracing", Change(ChangeKind.CMDLINE, TRACE_APPEND,
                                                         "kernel tracing for the advisor"))])
    bench.prepare(s, folder)
    counter.boot(s, folder, 1)
    a = analyze_folder(folder)
    b = a.boots[0] if a.boots else None
    return Traced(folder, b, tuple(advise(b, ctx, registry)) if b is not None else ())


@dataclass(frozen=True, slots=True)
class ExperimentResult:
    """``bootlens experiment``: the baseline, each change alone, all together."""

    target: str
    folder: Path
    repeat: int  # boots per configuration, as booted (with --repeat auto: where it stopped)
    baseline: Measured
    changes: tuple[Outcome, ...]
    together: Outcome | None  # None with a single change
    sum_single_ns: float | None  # the single changes' measured savings added up
    notes: tuple[str, ...]
    max_repeat: int | None = None  # --repeat auto: the cap (--max-repeat); None: a fixed --repeat


def experiment(bench: Bench, specs: Sequence[TrySpec], out: Path, repeat: int,
               registry: RuleRegistry | None = None, progress: Progress | None = None,
               max_repeat: int | None = None) -> ExperimentResult:
    """Boot the baseline, each change and all changes together ``repeat`` times each; with
    ``max_repeat``, more until every verdict is decided or that many (module docstring)."""
    reg = registry or default_registry()
    if not specs:
        raise ExperimentError("nothing to try: give --try NAME=CHANGE")
    seen: set[str] = set()
    for sp in specs:
        if sp.name in seen:
            raise ExperimentError(f"--try {sp.name}: the name is used twice")
        seen.add(sp.name)
        if sp.rule is not None and sp.rule not in reg.ids():
            raise ExperimentError(f"--try {sp.name}=rule:{printable(sp.rule)}: unknown rule; known: "
                                  f"{', '.join(reg.ids()) or 'none'}")
    fresh_folder(out)
    ctx = bench.context()
    together = len(specs) > 1
    counter = _Counter(bench, progress, repeat * (1 + len(specs) + together))
    notes: list[str] = []
    traced: Traced | None = None
    try:
        if any(sp.change is None for sp in specs):
            counter.total += 1
            traced = _traced(bench, counter, out, ctx, reg)
            notes.append(f"rule changes come from the advisor's findings on a boot with tracing on ({traced.folder})")
        resolved = [sp if sp.change is not None else _resolve(sp, traced, notes) for sp in specs]
        labelled = [(sp.name, sp.change) for sp in resolved if sp.change is not None]
        setups = [combine("baseline", [])] + [combine(n, [(n, c)]) for n, c in labelled]
        if together:
            setups.append(combine("all", labelled))
        setups = equalise(setups, bench.default_bootdelay())
        measured, rounds = counter.rounds([(s, out / s.name) for s in setups], repeat, max_repeat)
        _auto_note(notes, repeat, rounds, max_repeat, undecided(measured[0], measured[1:]))
        base = measured[0]
        per_boot = findings_per_boot(base.analysis, ctx, reg)
        ests = [estimate_for(c, sp.rule, per_boot, traced) for sp, (_, c) in zip(resolved, labelled)]
        if traced is None and any(e is None or e.saving_ns is None for e in ests):
            # initcall and process rules need the kernel's tracing to put a figure on a change
            counter.total += 1
            traced = _traced(bench, counter, out, ctx, reg)
            notes.append(f"the advisor put no figure on some changes from the product boots: one more boot, with "
                         f"tracing on ({traced.folder}), for its initcall and process rules")
            ests = [estimate_for(c, sp.rule, per_boot, traced) for sp, (_, c) in zip(resolved, labelled)]
    finally:
        bench.finish()
    outs = [outcome(sp.name, base, m, est, bench.rate_limited, sp.spec)
            for sp, m, est in zip(resolved, measured[1:], ests)]
    single = [o.saving_ns for o in outs]
    sum_single = sum(x for x in single if x is not None) if all(x is not None for x in single) else None
    all_out = None
    if together:
        all_out = outcome("all", base, measured[-1], None, bench.rate_limited, ALL_SPEC)
        all_out = replace(all_out, explanation=_overlap(all_out, sum_single, all_out.explanation))
    else:
        notes.append("a single change: no 'all' configuration (it would be the same)")
    return ExperimentResult(bench.name, out, rounds, base, tuple(outs), all_out, sum_single, tuple(notes),
                            max_repeat)


def _auto_note(notes: list[str], repeat: int, rounds: int, max_repeat: int | None, need: int | None,
               what: str = "boots per configuration") -> None:
    """What --repeat auto did, in the notes."""
    if max_repeat is None:
        return
    if need is not None:
        notes.append(f"--repeat auto: stopped at the cap, {rounds} {what} (--max-repeat {max_repeat}); some "
                     f"verdicts still need about {need} more boots a side")
    elif rounds > repeat:
        notes.append(f"--repeat auto: {rounds} {what} ({repeat} first, then more until every verdict was decided)")
    else:
        notes.append(f"--repeat auto: {repeat} {what} decided every verdict")


def _resolve(sp: TrySpec, traced: Traced | None, notes: list[str]) -> TrySpec:
    """A ``rule:RULE_ID`` spec with the change of that rule's first automatic finding."""
    mine = [f for f in (traced.findings if traced is not None else ()) if f.rule == sp.rule]
    if not mine:
        raise ExperimentError(f"--try {sp.name}=rule:{sp.rule}: the rule found nothing to change in this "
                              "target's boot")
    f = next((f for f in mine if f.change.automatic), mine[0])
    if not f.change.automatic:
        raise ExperimentError(f"--try {sp.name}=rule:{sp.rule}: its change ({f.change.kind.value} "
                              f"{f.change.value!r}) {NOT_AUTOMATIC[f.change.kind]}; experiment cannot apply it")
    if len(mine) > 1:
        notes.append(f"{sp.name}: rule {sp.rule} made {len(mine)} findings; trying the first: {f.title}")
    return replace(sp, change=f.change)


def _overlap(o: Outcome, sum_single: float | None, why: str | None) -> str | None:
    """For changes applied together: the measured saving against the single savings' sum."""
    if o.saving_ns is None or sum_single is None or sum_single <= 0:
        return why
    if agreement(sum_single, o.saving_ns) is Agreement.WITHIN:
        text = f"the single savings add up: {_s(sum_single)} alone, {_s(o.saving_ns)} together"
    elif o.saving_ns < sum_single:
        text = (f"the savings overlap: {_s(sum_single)} measured one by one, {_s(o.saving_ns)} together (a change "
                "that shortens a stage leaves less for the next one to save there)")
    else:
        text = f"together they save more than one by one: {_s(sum_single)} alone, {_s(o.saving_ns)} together"
    return f"{why}; {text}" if why else text


# --- optimize ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tried:
    """A finding tried alone: kept when it saves significantly and every boot reached ready."""

    finding: Finding
    outcome: Outcome
    kept: bool
    decision: str  # why kept or not


@dataclass(frozen=True, slots=True)
class Round:
    """One round of ``optimize``: advise on a traced boot of the configuration so far, try each
    automatic finding alone on top of it, keep the significant ones."""

    number: int  # 1, 2, ...
    applied: tuple[tuple[str, Change], ...]  # kept in earlier rounds: every configuration here has them
    folder: Path
    advise_folder: Path
    findings: tuple[Finding, ...]  # every finding on the traced boot
    not_tried: tuple[tuple[Finding, str], ...]  # (finding, why)
    baseline: Measured  # the configuration so far (round 1: the target as it is)
    tried: tuple[Tried, ...]
    kept: Setup | None  # ``applied`` with this round's kept changes; None when it kept none
    kept_outcome: Outcome | None  # ``kept`` against this round's baseline
    sum_single_ns: float | None  # this round's kept changes' savings, measured one by one
    repeat: int  # boots per configuration, as booted


@dataclass(frozen=True, slots=True)
class OptimizeResult:
    """``bootlens optimize``: what each round tried and kept, the final configuration. With a
    single round ``final_outcome`` is against that round's baseline; after several, the target as
    it was and the final configuration are booted again side by side (``final_baseline``)."""

    target: str
    folder: Path
    repeat: int  # boots per configuration tried, as booted (with --repeat auto: the most any round booted)
    rounds: tuple[Round, ...]
    final: Setup | None  # every kept change together; None when nothing was kept
    final_outcome: Outcome | None
    final_overlay: Path | None
    sum_single_ns: float | None
    comparison: Comparison | None
    notes: tuple[str, ...]
    max_repeat: int | None = None  # --repeat auto: the cap (--max-repeat); None: a fixed --repeat
    final_baseline: Measured | None = None  # the target as it was, booted beside the final configuration

    # round 1, which starts from the target as it is
    @property
    def advise_folder(self) -> Path:
        return self.rounds[0].advise_folder

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.rounds[0].findings

    @property
    def not_tried(self) -> tuple[tuple[Finding, str], ...]:
        return self.rounds[0].not_tried

    @property
    def baseline(self) -> Measured:
        """The measurement the final outcome is against."""
        return self.final_baseline or self.rounds[0].baseline

    @property
    def tried(self) -> tuple[Tried, ...]:
        return tuple(t for r in self.rounds for t in r.tried)


def _candidate_names(findings: Sequence[Finding]) -> list[str]:
    """Folder names: the rule id, numbered when a rule made several findings."""
    names: list[str] = []
    for f in findings:
        n, k = f.rule, 2
        while n in names or n in RESERVED or not valid_name(n):
            n = f"{f.rule if valid_name(f.rule) else 'rule'}-{k}"
            k += 1
        names.append(n)
    return names


def with_files(ctx: Context, setup: Setup | None) -> Context:
    """The rule context with a configuration's regular overlay files laid over the target's:
    the advisor reads the unit files and scripts that boot, not the stock ones."""
    if setup is None or not setup.files:
        return ctx
    laid = {p.lstrip("/"): d for p, d, mode in setup.files if not stat.S_ISLNK(mode)}
    return replace(ctx, rootfs_files={**ctx.rootfs_files, **laid})


def optimize(bench: Bench, out: Path, repeat: int, registry: RuleRegistry | None = None,
             progress: Progress | None = None, max_repeat: int | None = None, rounds: int = 1) -> OptimizeResult:
    """Advise on a traced boot, try every automatic finding alone, keep the significant ones
    that still reach ready, then boot them all together; with ``max_repeat``, each step boots
    more until its verdicts are decided or that many (module docstring). With ``rounds`` > 1,
    while a round kept something, the next one advises on a traced boot of what was kept and
    tries the new findings on top of it (a change can only show once another one is in: the
    application's console output matters once it starts early); the target as it was and the
    final configuration are then booted again side by side."""
    if rounds < 1:
        raise ExperimentError("--rounds: at least 1")
    reg = registry or default_registry()
    fresh_folder(out)
    ctx = bench.context()
    counter = _Counter(bench, progress, 1)
    notes: list[str] = []
    done: list[Round] = []
    applied: tuple[tuple[str, Change], ...] = ()
    kept_round: Round | None = None
    final_base: Measured | None = None
    final_out: Outcome | None = None
    try:
        for k in range(1, rounds + 1):
            folder = out if k == 1 else out / f"round-{k}"
            if k > 1:
                counter.total += 1
            last = done[-1] if done else None
            rnd = _round(bench, counter, folder, k, applied, reg, repeat, max_repeat, notes,
                         last.kept if last else None, ctx,
                         last.kept_outcome.measured if last and last.kept_outcome else None)
            done.append(rnd)
            if rnd.kept is None or rnd.kept_outcome is None:
                if k > 1:
                    notes.append(f"round {k} kept nothing more: the configuration of round {k - 1} is final")
                break
            kept_round = rnd
            m = rnd.kept_outcome.measured
            if m.ready_boots < m.boots:
                break  # the kept changes clash: no round on top of them (noted by _final)
            applied = rnd.kept.changes
        if kept_round is not None:
            final_out = kept_round.kept_outcome
            if kept_round.number > 1:
                final_base, final_out = _overall(bench, counter, out, kept_round, repeat, max_repeat, notes)
    finally:
        bench.finish()
    final = kept_round.kept if kept_round is not None else None
    base = final_base or done[0].baseline
    overlay = None
    comparison = None
    if final is not None and final_out is not None:
        if final.files:
            overlay = out / "final-overlay"
            write_overlay(final.files, overlay)
        comparison = compare_groups([Group(str(base.folder), base.analysis, True),
                                     Group(str(final_out.measured.folder), final_out.measured.analysis, True)])
    sums = [r.sum_single_ns for r in done if r.kept is not None]
    return OptimizeResult(bench.name, out, max(r.repeat for r in done), tuple(done), final, final_out, overlay,
                          sum(x or 0 for x in sums) if sums else None, comparison, tuple(notes), max_repeat,
                          final_base)


def _round(bench: Bench, counter: _Counter, out: Path, number: int, applied: tuple[tuple[str, Change], ...],
           reg: RuleRegistry, repeat: int, max_repeat: int | None, notes: list[str], so_far: Setup | None,
           target_ctx: Context, prior: Measured | None = None) -> Round:
    """Advise on a traced boot of ``applied``, try each new automatic finding alone on top of
    it against ``applied`` itself, keep the significant ones and boot them together. With
    nothing to try, the baseline is ``prior`` (the round before's measurement), else booted."""
    ctx = with_files(target_ctx, so_far)
    if number > 1:
        out.mkdir(parents=True, exist_ok=True)
    here: list[str] = []
    traced = _traced(bench, counter, out, ctx, reg, applied)
    findings = traced.findings
    if traced.boot is None or traced.boot.total.duration_ns is None:
        here.append("the traced boot did not reach the ready marker; findings may be incomplete")
    not_tried: list[tuple[Finding, str]] = []
    cands: list[Finding] = []
    for f in findings:
        if not f.change.automatic:
            not_tried.append((f, NOT_AUTOMATIC[f.change.kind]))
        elif any(_same(c, f.change) for _, c in applied):
            not_tried.append((f, "kept in an earlier round"))
        elif any(_same(c.change, f.change) for c in cands):
            not_tried.append((f, "same change as a finding tried above"))
        else:
            try:
                combine(f.rule, [(f.rule, f.change)])
            except ExperimentError as e:  # a rule's bad overlay path: skip it, try the rest
                not_tried.append((f, f"cannot be applied: {e}"))
                continue
            cands.append(f)
    names = _candidate_names(cands)
    if not cands:
        here.append("no finding can be tried automatically")
        notes += [f"round {number}: {n}" if number > 1 else n for n in here]
        if prior is not None:  # the configuration so far, as the round before measured it
            return Round(number, applied, out, traced.folder, findings, tuple(not_tried), prior, (), None, None,
                         None, prior.boots)
        counter.total += repeat
        (base,), booted = counter.rounds([(combine("baseline", applied), out / "baseline")], repeat)
        return Round(number, applied, out, traced.folder, findings, tuple(not_tried), base, (), None, None, None,
                     booted)
    setups = equalise([combine("baseline", applied)] +
                      [combine(n, [*applied, (n, f.change)]) for n, f in zip(names, cands)],
                      bench.default_bootdelay())
    counter.total += repeat * len(setups)
    measured, booted = counter.rounds([(s, out / s.name) for s in setups], repeat, max_repeat, gains_only=True)
    _auto_note(here, repeat, booted, max_repeat, undecided(measured[0], measured[1:], True))
    base = measured[0]
    per_boot = findings_per_boot(base.analysis, ctx, reg)
    tried: list[Tried] = []
    for n, f, m in zip(names, cands, measured[1:]):
        o = outcome(n, base, m, estimate_for(f.change, f.rule, per_boot, traced), bench.rate_limited,
                    f"{HOOK_KIND[f.change.kind]}:{f.change.value}")
        if m.ready_boots < m.boots:
            tried.append(Tried(f, o, False, f"not kept: {m.boots - m.ready_boots} of {m.boots} boots did not "
                               "reach the ready marker"))
        elif o.significance is not Significance.SIGNIFICANT or o.saving_ns is None or o.saving_ns <= 0:
            what = "slower" if o.saving_ns is not None and o.saving_ns <= 0 and \
                o.significance is Significance.SIGNIFICANT else "undecided" \
                if o.significance is Significance.UNKNOWN else "not significant"
            tried.append(Tried(f, o, False, f"not kept: {what}, {o.reason}" if what == "undecided" else
                               f"not kept: {what} ({o.reason})"))
        else:
            tried.append(Tried(f, o, True, "kept: saves significantly and every boot reached ready"))
    kept, kept_out, sum_single = _final(bench, counter, out, base, tried, repeat, here, max_repeat, applied)
    notes += [f"round {number}: {n}" if number > 1 else n for n in here]
    return Round(number, applied, out, traced.folder, findings, tuple(not_tried), base, tuple(tried), kept, kept_out,
                 sum_single, booted)


def _overall(bench: Bench, counter: _Counter, out: Path, last: Round, repeat: int, max_repeat: int | None,
             notes: list[str]) -> tuple[Measured, Outcome]:
    """The target as it was and every kept change together, booted side by side: each round
    measured against the round before, at another time; this is the figure of the whole."""
    assert last.kept is not None
    final = combine("final", last.kept.changes)
    base, final = equalise([combine("baseline", []), final], bench.default_bootdelay())
    where = out / "overall"
    counter.total += 2 * repeat
    (b, m), booted = counter.rounds([(base, where / "baseline"), (final, where / "final")], repeat, max_repeat,
                                    gains_only=True)
    _auto_note(notes, repeat, booted, max_repeat, undecided(b, [m], True),
               "boots of the target as it was and of the final configuration, side by side")
    o = outcome("final", b, m, None, bench.rate_limited, FINAL_SPEC)
    if m.ready_boots < m.boots:
        notes.append(f"the final configuration did not reach the ready line in {m.boots - m.ready_boots} of "
                     f"{m.boots} boots side by side with the target as it was: do not adopt it as it is")
    return b, o


def _final(bench: Bench, counter: _Counter, out: Path, base: Measured, tried: list[Tried], repeat: int,
           notes: list[str], max_repeat: int | None = None, applied: Sequence[tuple[str, Change]] = (),
           ) -> tuple[Setup | None, Outcome | None, float | None]:
    """Combine the kept changes (the larger saving first; a change touching the same file or
    U-Boot variable as one already chosen is left out) on top of ``applied`` and boot them
    together."""
    kept = sorted((t for t in tried if t.kept), key=lambda t: -(t.outcome.saving_ns or 0))
    chosen: list[Tried] = []
    for t in kept:
        mine = set(change_key(t.finding.change)[2]) | _env_names(t.finding.change)
        clash = next((c for c in chosen if mine & (set(change_key(c.finding.change)[2])
                                                   | _env_names(c.finding.change))), None)
        if clash is not None:
            notes.append(f"{t.outcome.name} left out of the final configuration: it changes the same "
                         f"{'file' if t.finding.change.kind is ChangeKind.OVERLAY else 'U-Boot variable'} as "
                         f"{clash.outcome.name}, which saved more")
            continue
        chosen.append(t)
    if not chosen:
        notes.append("no change saved time significantly: the configuration stays as it is")
        return None, None, None
    sum_single = sum(t.outcome.saving_ns or 0 for t in chosen)
    final = combine("final", [*applied, *((t.outcome.name, t.finding.change) for t in chosen)])
    if len(chosen) == 1:
        only = chosen[0].outcome
        notes.append(f"one change kept: the boots of {only.name} above measure the configuration it makes")
        return final, replace(only, name="final"), sum_single
    final = equalise([base.setup, final], bench.default_bootdelay())[1]
    counter.total += repeat
    (m,), rounds = counter.rounds([(final, out / "final")], repeat, max_repeat, base, gains_only=True)
    _auto_note(notes, repeat, rounds, max_repeat, undecided(base, [m], True), "boots of the final configuration")
    o = outcome("final", base, m, None, bench.rate_limited, FINAL_SPEC)
    if m.ready_boots < m.boots:
        notes.append(f"the kept changes together did not reach the ready line in {m.boots - m.ready_boots} of "
                     f"{m.boots} boots, though each did alone: do not adopt them as they are; `bootlens "
                     "experiment` with them in pairs shows which ones clash")
    return final, replace(o, explanation=_overlap(o, sum_single, o.explanation)), sum_single


def _same(a: Change, b: Change) -> bool:
    """The same change twice (two rules proposing one argument, the same script edit)."""
    return a.kind is b.kind and a.value == b.value and a.files == b.files


def _env_names(c: Change) -> set[str]:
    return {c.value.partition("=")[0]} if c.kind is ChangeKind.UBOOT_ENV else set()
