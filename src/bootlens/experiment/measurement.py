"""How ``bootlens experiment`` and ``optimize`` measure: configurations booted in interleaved
rounds, each one's boots analysed, and its saving against the baseline judged and set next to
the advisor's estimate (:func:`outcome`).

Every configuration (the baseline, each change alone, all changes together) boots ``repeat``
times, interleaved round by round, in a new random order each round (the runner's seed is in the
results), so that a slow minute on a shared machine hits every configuration alike instead of
one block, and no configuration always boots first. The measured saving of a configuration is
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

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from ..advise import RuleRegistry, advise
from ..advise.base import Change, ChangeKind, Confidence, Context, Finding
from ..capture.run_folder import FolderClaim, RunFolderError, claim_folder
from ..timeline.analyze import Analysis, BootAnalysis
from ..stats.compare import Change as CompareChange, Significance, figure_delta, non_inferior
from ..timeline.inputs import analyze_folder
from ..stats.figures import Stat, diff_interval, statistics_of
from ..targets.base import KERNEL, BootConfig, Target
from ..targets.runs import write_meta
from ..kbuild.build import Built, KernelBuildError
from .configs import ExperimentError, Setup, change_dict, change_key, combine, write_overlay

TRACE_APPEND = ("initcall_debug ignore_loglevel trace_event=sched:sched_process_fork,"
                "sched:sched_process_exec,sched:sched_process_exit tp_printk")
AGREEMENT = 0.30  # an estimate agrees when it is within 30% of the measured saving

Progress = Callable[[int, int, str, float], None]  # (boots done, boots planned, what, seconds)

# --- measurements ------------------------------------------------------------------------


class Agreement(StrEnum):
    """Estimate against measurement."""

    WITHIN = "within ±30%"
    OUTSIDE = "outside ±30%"
    NO_ESTIMATE = "no estimate"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True, slots=True)
class Measured:
    """One configuration's boots: ``stats`` per total, stage and marker (stats.figures.statistics_of)."""

    setup: Setup
    folder: Path
    analysis: Analysis
    stats: dict[str, Stat]
    boots: int
    ready_boots: int  # boots that reached the ready marker
    rejected: str | None = None  # why it was never booted (its kernel did not build)

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


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether ``optimize`` keeps a change, and what decided it. A change that targets a stage
    (its finding's) is judged there, where the noise is the stage's and not the whole boot's:
    kept when that stage is significantly shorter (compare's rule), no other stage is
    significantly longer, and the total is not worse (:func:`bootlens.stats.compare.non_inferior`:
    the 95% upper bound of the difference under max(1 ms, 2% of the baseline)); a change with no
    stage is judged on the total. ``keep`` None: more boots would decide (``need_boots`` a side)."""

    keep: bool | None
    on: str  # the figure that decided: a stage name, or "total"
    boots: int  # boots a side behind the verdict (the fewer of the two)
    need_boots: int | None
    reason: str


def _stage_names(m: Measured) -> list[str]:
    return [n for n in m.stats if not n.startswith(("total ", "marker "))]


def decide(base: Measured, m: Measured, stage: str | None) -> Decision:
    """The verdict on one configuration against the baseline (:class:`Decision`): on the stage it
    targets first; when that does not keep it (a rule may place its delay in the wrong stage),
    on the total, as before there was a stage to judge on. Either test alone is compare's rule at
    p < 0.0005, so the two together call a configuration against itself "kept" at most twice as
    often as one (bench/bench_significance.py measures it)."""
    boots = min(base.boots, m.boots)
    if m.rejected is not None:
        return Decision(False, "total", 0, None, f"not booted: {m.rejected}")
    if m.ready_boots < m.boots:
        return Decision(False, "total", boots, None,
                        f"{m.boots - m.ready_boots} of {m.boots} boots did not reach the ready marker")
    if base.total is None or m.total is None:
        return Decision(False, "total", boots, None, "the total was not measured")
    on_total = _on_total(base, m, boots)
    if stage is None or stage not in base.stats or stage not in m.stats:
        return on_total
    on_stage = _on_stage(base, m, stage, boots)
    if on_stage.keep:
        return on_stage
    if on_total.keep:
        return replace(on_total, reason=f"{on_total.reason}; its stage ({stage}) did not show it: {on_stage.reason}")
    if on_stage.keep is None:
        return on_stage
    if on_total.keep is None:
        return on_total
    return on_stage


def _on_total(base: Measured, m: Measured, boots: int) -> Decision:
    assert base.total is not None and m.total is not None
    d = figure_delta("total", base.total, m.total, ("baseline", "it"))
    if d.significance is Significance.SIGNIFICANT and d.delta_ns is not None and d.delta_ns < 0:
        return Decision(True, "total", boots, None, f"the total is {_s(-d.delta_ns)} shorter ({d.reason})")
    if d.significance is Significance.UNKNOWN and d.delta_ns is not None and d.delta_ns < 0:
        return Decision(None, "total", boots, d.need_boots, f"the total: {d.reason}")
    slower = d.delta_ns is not None and d.delta_ns > 0 and d.significance is Significance.SIGNIFICANT
    return Decision(False, "total", boots, None, f"the total is {'longer' if slower else 'not shorter'} ({d.reason})")


def _on_stage(base: Measured, m: Measured, stage: str, boots: int) -> Decision:
    assert base.total is not None and m.total is not None
    sd = figure_delta(stage, base.stats[stage], m.stats[stage], ("baseline", "it"))
    saved = -(sd.delta_ns or 0.0)
    if sd.significance is Significance.UNKNOWN and saved > 0:
        return Decision(None, stage, boots, sd.need_boots, f"its stage ({stage}): {sd.reason}")
    if sd.significance is not Significance.SIGNIFICANT or saved <= 0:
        how = "longer" if saved < 0 and sd.significance is Significance.SIGNIFICANT else "not shorter"
        return Decision(False, stage, boots, None, f"its stage ({stage}) is {how} ({sd.reason})")
    there = f"its stage ({stage}) is {_s(saved)} shorter ({sd.reason})"
    for other in _stage_names(base):
        if other != stage and other in m.stats:
            od = figure_delta(other, base.stats[other], m.stats[other])
            if od.significance is Significance.SIGNIFICANT and (od.delta_ns or 0) > 0:
                return Decision(False, stage, boots, None, f"{there} but {other} is {_s(od.delta_ns or 0)} longer "
                                f"({od.reason})")
    ni = non_inferior(base.total, m.total)
    if ni.holds is None:
        return Decision(None, stage, boots, ni.need_boots, f"{there}; the total not yet shown not worse: {ni.reason}")
    if not ni.holds:
        return Decision(False, stage, boots, None, f"{there}, but the total is not: {ni.reason}")
    return Decision(True, stage, boots, None, f"{there}; the total is not worse ({ni.reason})")


def measure(setup: Setup, folder: Path, rejected: str | None = None) -> Measured:
    """Analyse a configuration's run folder; a recording with no boot in it (a silent console)
    or without the ready marker counts as a boot that did not reach ready (runs.analyze_run).
    ``rejected``: it was never booted, and why."""
    from ..targets.runs import analyze_run

    if rejected is not None:
        return Measured(setup, folder, Analysis((), ()), {}, 0, 0, rejected)
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
            interval: tuple[float, float] | None = None, stage_p: float | None = None,
            total_decides: bool = True) -> str | None:
    """Why a measurement does not confirm its estimate, from the data at hand; None when it
    does. ``reason`` is the verdict's (compare.judge); ``interval`` the 95% interval of the
    saving (stats.diff_interval), None when unknown; ``stage_p`` the p-value of the saving in
    the estimate's stage when that is significant there, else None. ``total_decides`` False:
    the verdict was made in the change's stage (optimize's :func:`decide`), so what the total
    alone could not decide is not a reason here."""
    why: list[str] = []
    there = "" if stage_p is None else f", significant there (p = {stage_p:.2g})"
    if m.ready_boots < m.boots:
        why.append(f"{m.boots - m.ready_boots} of {m.boots} boots did not reach the ready marker")
    if not total_decides:
        pass
    elif saving is not None and sig is Significance.UNKNOWN:
        why.append(f"these boots cannot decide yet: {reason}; --repeat auto boots until they can")
    elif saving is not None and sig is Significance.NOT_SIGNIFICANT:
        said = reason.replace("under the floor", "under the floor of 1 ms or 1% of the baseline", 1)
        why.append(f"the difference is {said.replace('within the noise', 'within the noise of these boots', 1)}")
    elif saving is not None and saving < 0:
        why.append("the change made the boot slower")
    if there and total_decides and sig is not Significance.SIGNIFICANT and est is not None and stage_saving is not None and \
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
            spec: str = "", total_decides: bool = True) -> Outcome:
    """One configuration against the baseline, with the estimate verdict (``total_decides``:
    :func:`explain`'s)."""
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
                  stage_p if stage_sig is Significance.SIGNIFICANT and (stage_saving or 0) > 0 else None,
                  total_decides)
    return Outcome(name, m, saving, None if d.delta_pct is None else -d.delta_pct, d.significance,
                   d.threshold_ns, d.reason, est, stage_saving, agree, why, spec, d.p_value, d.need_boots, d.test,
                   stage_sig, stage_p)


def needs(base: Measured, others: Sequence[Measured], gains_only: bool = False,
          stages: Sequence[str | None] | None = None) -> dict[int, int]:
    """Index in ``others`` -> the boots a side its verdict against the baseline still asks
    for ("need N more boots"); a verdict that is decided or cannot be (a configuration whose
    boots missed the ready line is not kept whatever its figures) is left out, and with
    ``gains_only`` so is a configuration slower than the baseline (optimize keeps no such one).
    With ``stages`` (optimize: each configuration's targeted stage, or None) the verdict is
    :func:`decide`'s."""
    out: dict[int, int] = {}
    for i, m in enumerate(others):
        if m.ready_boots < m.boots or base.ready_boots < base.boots:
            continue
        if stages is not None:
            dec = decide(base, m, stages[i])
            if dec.keep is None:
                out[i] = dec.need_boots or 1
            continue
        d = figure_delta("total", base.total, m.total)
        if gains_only and (d.delta_ns is None or d.delta_ns >= 0):
            continue
        if d.significance is Significance.UNKNOWN and d.change is CompareChange.CHANGED:
            out[i] = d.need_boots or 1
    return out


def undecided(base: Measured, others: Sequence[Measured], gains_only: bool = False,
              stages: Sequence[str | None] | None = None) -> int | None:
    """The most boots a side that some configuration's verdict still asks for (:func:`needs`);
    None when every verdict is decided or cannot be."""
    n = needs(base, others, gains_only, stages)
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


class Runner:
    """Boots configurations in interleaved rounds (:meth:`rounds`), counting the boots done and
    planned for the caller's progress function."""

    def __init__(self, target: Target, progress: Progress | None, total: int, seed: int | None = None) -> None:
        self.target, self.progress, self.total, self.done = target, progress, total, 0
        # each round boots its configurations in a new random order (the seed is in the results)
        self.seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
        self.rng = random.Random(self.seed)

    def boot(self, config: BootConfig, folder: Path, index: int) -> None:
        """Boot the target once in ``config``, into ``folder``'s ``boot-INDEX.rec``."""
        t = time.monotonic()
        self.target.boot(config, folder / f"boot-{index}.rec")
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, f"{config.name} {index}", time.monotonic() - t)

    def rounds(self, plan: Sequence[tuple[Setup, Path]], repeat: int, max_repeat: int | None = None,
               base: Measured | None = None, gains_only: bool = False,
               stages: Sequence[str | None] | None = None) -> tuple[list[Measured], int]:
        """Boot every configuration ``repeat`` times, interleaved round by round, in a new random
        order each round (:attr:`seed`); with ``max_repeat``, more rounds while a verdict
        against the baseline (``base``, else the plan's first) asks for more boots, up to
        ``max_repeat`` (module docstring): those rounds boot only the undecided configurations
        and the baseline, still interleaved (``gains_only``: a slower one is not undecided for
        optimize; ``stages``: the verdicts are :func:`decide`'s, on these stages of the
        configurations compared). Returns the measurements and the most boots a configuration got."""
        for s, folder in plan:
            self.target.check(s.boot_config(folder))
        configs: list[BootConfig] = []
        rejected: dict[int, str] = {}  # a configuration whose kernel did not build: a result, not an error
        for k, (s, folder) in enumerate(plan):
            try:
                configs.append(prepare(self.target, s, folder))
            except KernelBuildError as e:
                rejected[k] = str(e)
                configs.append(s.boot_config(folder))
        booted = [0] * len(plan)
        active = [k for k in range(len(plan)) if k not in rejected]
        upto = repeat
        while True:
            for i in range(min(booted[k] for k in active), upto):
                turn = [k for k in active if booted[k] <= i]
                self.rng.shuffle(turn)  # host-load drift falls on every configuration alike
                for k in turn:
                    booted[k] += 1
                    self.boot(configs[k], plan[k][1], booted[k])
            measured = [measure(s, folder, rejected.get(k)) for k, (s, folder) in enumerate(plan)]
            done = max(booted)
            if max_repeat is None or done >= max_repeat:
                return measured, done
            ref, others, shift = (base, measured, 0) if base is not None else (measured[0], measured[1:], 1)
            need = {i: n for i, n in needs(ref, others, gains_only, stages).items() if i + shift not in rejected}
            if not need:
                return measured, done
            more = {i + shift for i in need}
            active = sorted(more | ({0} if base is None else set()))
            upto = min(max(max(booted[k] for k in active) + 1,
                           min(booted[k] for k in more) + max(need.values())), max_repeat)
            self.total += sum(upto - booted[k] for k in active)


def prepare(target: Target, setup: Setup, folder: Path) -> BootConfig:
    """Make a configuration's folder: the files it lays over the root filesystem
    (``overlay/``), run.json saying what is applied; the configuration as the target boots it."""
    folder.mkdir(parents=True, exist_ok=True)
    config = setup.boot_config(folder)
    if config.overlay is not None:
        write_overlay(setup.files, config.overlay)
    kernel: dict[str, object] | None = None
    failed: KernelBuildError | None = None
    if setup.kconfig and KERNEL not in target.can_change:
        raise target.cannot(KERNEL, config)
    if setup.kconfig:
        kernel = {"kconfig_lines": len(setup.kconfig)}
        try:
            built = target.build_kernel(setup.kconfig)
        except KernelBuildError as e:
            failed = e
            kernel["failed"] = str(e)
        else:
            config = replace(config, kernel=built.image)
            kernel.update(kernel_files(target, built, folder))
    write_meta(folder, target, config, experiment={
        "configuration": setup.name, "changes": [change_dict(lb, c) for lb, c in setup.changes],
        "uboot_env_equalised": setup.equalised, "notes": list(setup.all_notes()),
        **({"kernel": kernel} if kernel is not None else {})})
    if failed is not None:
        raise failed
    return config


KERNEL_CONFIG, KERNEL_DIFF = "kernel.config", "kernel.diff"  # in a configuration's folder


def kernel_files(target: Target, built: Built, folder: Path, prefix: str = "") -> dict[str, object]:
    """Copy a built kernel's .config into the configuration's folder, with its diff against
    the target's own kernel config (scripts/diffconfig -m: lines to apply to a defconfig) and
    the Kconfig lines it was built for, each name after ``prefix`` ("final-" in optimize's
    folder); what run.json says of the kernel."""
    import shutil

    from ..kbuild.build import diffconfig, source_tree

    config, diff = prefix + KERNEL_CONFIG, prefix + KERNEL_DIFF
    shutil.copy(built.config, folder / config)
    (folder / (f"{prefix}kernel.kconfig-lines" if prefix else "kconfig-lines")).write_text("\n".join(built.lines) + "\n")
    out: dict[str, object] = {"image": str(built.image), "config": config, "build_s": round(built.seconds, 1),
                              "dropped": list(built.dropped)}
    running = target.kernel_config()
    if running is not None:
        try:
            (folder / diff).write_text(diffconfig(source_tree(), running, built.config))
            out["diff"] = diff
        except (KernelBuildError, OSError):
            pass
    return out


def target_context(target: Target, rebuild_kernel: bool = False) -> Context:
    """What the advisor may know of the target beyond the logs: its name and root filesystem
    files when bootlens knows them (a reference target), the console's line rate; with
    ``rebuild_kernel`` (a target that boots kernels bootlens builds), the kernel source tree,
    the running kernel's config and the initramfs's first bytes (kernel.from_boot)."""
    files = target.known_files()
    if files is None:
        return Context(baud=target.baud)
    ctx = Context(target=target.name, rootfs_files=files, baud=target.baud)
    if rebuild_kernel and KERNEL in target.can_change:
        from ..kbuild.build import source_tree
        from ..kbuild.derive import read_config

        try:
            src = source_tree()
        except KernelBuildError as e:
            raise ExperimentError(f"--rebuild-kernel: {e}") from None
        cfg = target.kernel_config()
        running = {f"CONFIG_{k}": v for k, v in read_config(cfg.read_text()).items()} if cfg is not None else {}
        ctx = replace(ctx, kernel_source=str(src), kconfig=running, initramfs_head=target.initramfs_head())
    elif rebuild_kernel:
        raise ExperimentError(f"--rebuild-kernel: {target.name} cannot boot a kernel bootlens builds (qemu-arm64 can)")
    return ctx


def fresh_folder(out: Path) -> FolderClaim:
    """The run's folder, new or empty (old boot-N.rec files would join the statistics), held for
    this run alone until the claim is released (:func:`bootlens.capture.run_folder.claim_folder`)."""
    try:
        return claim_folder(out)
    except RunFolderError as e:
        raise ExperimentError(str(e)) from None


def traced_boot(runner: Runner, out: Path, ctx: Context, registry: RuleRegistry,
                applied: Sequence[tuple[str, Change]] = ()) -> Traced:
    """One boot with the kernel's tracing on (and the ``applied`` changes), to advise on
    (initcall and process rules need the tracing)."""
    folder = out / "advise"
    s = combine("advise", [*applied, ("tracing", Change(ChangeKind.CMDLINE, TRACE_APPEND,
                                                         "kernel tracing for the advisor"))])
    runner.boot(prepare(runner.target, s, folder), folder, 1)
    a = analyze_folder(folder)
    b = a.boots[0] if a.boots else None
    return Traced(folder, b, tuple(advise(b, ctx, registry)) if b is not None else ())


def auto_note(notes: list[str], repeat: int, rounds: int, max_repeat: int | None, need: int | None,
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


def overlap(o: Outcome, sum_single: float | None, why: str | None) -> str | None:
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

