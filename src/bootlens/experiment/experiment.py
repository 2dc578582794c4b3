"""``bootlens experiment``: apply changes to a target, boot each configuration N times and
measure what every change saves, next to the advisor's estimate (how: :mod:`.measurement`).

A change is an :class:`~bootlens.advise.base.Change`. Three kinds can be applied by bootlens:
a kernel command-line argument (appended), a U-Boot variable (an environment image in QEMU's
flash, or the board's hook) and files laid over the root filesystem (an overlay directory).
Several changes make one :class:`Setup` (:func:`combine`); two that set the same file, U-Boot
variable or kernel argument conflict and the later one wins, which the setup's notes say.

``bootlens optimize`` is :mod:`.optimize`; its names are here too, where they were before the
two were split, for one release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..advise import RuleRegistry, default_registry
from ..core.errors import printable
from ..targets.base import Target
from .configs import (
    NOT_AUTOMATIC, ExperimentError, Setup, TrySpec, change_dict, combine, equalise, overlay_change, parse_try,
    read_applied, write_overlay,
)
from .measurement import (
    AGREEMENT, TRACE_APPEND, Agreement, Estimate, Measured, Outcome, Progress, Runner, Traced, agreement,
    auto_note, estimate_for, findings_per_boot, fresh_folder, outcome, overlap, target_context, traced_boot,
    undecided,
)
from .optimize import FINAL_SPEC, OptimizeResult, Round, Tried, optimize

ALL_SPEC = "every change above"  # the spec shown for changes applied together

__all__ = ["AGREEMENT", "ALL_SPEC", "FINAL_SPEC", "TRACE_APPEND", "Agreement", "Estimate",
           "ExperimentError", "ExperimentResult", "Measured", "OptimizeResult", "Outcome", "Setup",
           "Round", "Tried", "TrySpec", "agreement", "change_dict", "combine", "equalise", "experiment", "optimize",
           "outcome", "overlay_change", "parse_try", "read_applied", "write_overlay"]


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
    seed: int | None = None  # the boot order's random seed (each round's order is drawn from it)


def experiment(target: Target, specs: Sequence[TrySpec], out: Path, repeat: int,
               registry: RuleRegistry | None = None, progress: Progress | None = None,
               max_repeat: int | None = None, seed: int | None = None) -> ExperimentResult:
    """Boot the baseline, each change and all changes together ``repeat`` times each; with
    ``max_repeat``, more until every verdict is decided or that many (:mod:`.measurement`)."""
    with fresh_folder(out):  # held until the last boot is in; an error before any leaves no folder
        return _experiment(target, specs, out, repeat, registry, progress, max_repeat, seed)


def _experiment(target: Target, specs: Sequence[TrySpec], out: Path, repeat: int,
                registry: RuleRegistry | None, progress: Progress | None,
                max_repeat: int | None, seed: int | None) -> ExperimentResult:
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
    ctx = target_context(target)
    together = len(specs) > 1
    runner = Runner(target, progress, repeat * (1 + len(specs) + together), seed)
    notes: list[str] = []
    traced: Traced | None = None
    try:
        if any(sp.change is None for sp in specs):
            runner.total += 1
            traced = traced_boot(runner, out, ctx, reg)
            notes.append(f"rule changes come from the advisor's findings on a boot with tracing on ({traced.folder})")
        resolved = [sp if sp.change is not None else _resolve(sp, traced, notes) for sp in specs]
        labelled = [(sp.name, sp.change) for sp in resolved if sp.change is not None]
        setups = [combine("baseline", [])] + [combine(n, [(n, c)]) for n, c in labelled]
        if together:
            setups.append(combine("all", labelled))
        setups = equalise(setups, target.default_bootdelay())
        measured, rounds = runner.rounds([(s, out / s.name) for s in setups], repeat, max_repeat)
        auto_note(notes, repeat, rounds, max_repeat, undecided(measured[0], measured[1:]))
        base = measured[0]
        per_boot = findings_per_boot(base.analysis, ctx, reg)
        ests = [estimate_for(c, sp.rule, per_boot, traced) for sp, (_, c) in zip(resolved, labelled)]
        if traced is None and any(e is None or e.saving_ns is None for e in ests):
            # initcall and process rules need the kernel's tracing to put a figure on a change
            runner.total += 1
            traced = traced_boot(runner, out, ctx, reg)
            notes.append(f"the advisor put no figure on some changes from the product boots: one more boot, with "
                         f"tracing on ({traced.folder}), for its initcall and process rules")
            ests = [estimate_for(c, sp.rule, per_boot, traced) for sp, (_, c) in zip(resolved, labelled)]
    finally:
        target.close()
    outs = [outcome(sp.name, base, m, est, target.rate_limited, sp.spec)
            for sp, m, est in zip(resolved, measured[1:], ests)]
    single = [o.saving_ns for o in outs]
    sum_single = sum(x for x in single if x is not None) if all(x is not None for x in single) else None
    all_out = None
    if together:
        all_out = outcome("all", base, measured[-1], None, target.rate_limited, ALL_SPEC)
        all_out = replace(all_out, explanation=overlap(all_out, sum_single, all_out.explanation))
    else:
        notes.append("a single change: no 'all' configuration (it would be the same)")
    return ExperimentResult(target.name, out, rounds, base, tuple(outs), all_out, sum_single, tuple(notes),
                            max_repeat, runner.seed)


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

