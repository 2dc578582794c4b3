"""``bootlens optimize``: advise on a traced boot, try every finding bootlens can apply alone,
keep those that save time significantly and still reach ready, boot them together; with
``rounds``, advise again on what was kept and try what it reveals (:func:`optimize`). Each
step is measured as :mod:`.measurement` says.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..advise import RuleRegistry, default_registry
from ..advise.base import Change, ChangeKind, Context, Finding
from ..stats.compare import Comparison, compare_groups
from ..targets.base import Target
from ..timeline.inputs import Group
from ..kbuild.build import ALLNOCONFIG
from .configs import (
    HOOK_KIND, NEEDS, NOT_AUTOMATIC, RESERVED, ExperimentError, Setup, change_key, combine, equalise, valid_name,
    write_overlay,
)
from .measurement import (
    kernel_files,
    Decision, Measured, Outcome, Progress, Runner, auto_note, decide, estimate_for, findings_per_boot, fresh_folder,
    outcome, overlap, target_context, traced_boot, undecided,
)

FINAL_SPEC = "the kept changes together"


@dataclass(frozen=True, slots=True)
class Tried:
    """A finding tried alone: kept when :func:`.measurement.decide` says so (its stage
    significantly shorter, the total not worse, every boot at ready)."""

    finding: Finding
    outcome: Outcome
    kept: bool
    decision: str  # why kept or not
    verdict: Decision | None = None  # what decided it: the stage (or the total), with how many boots


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
    seed: int | None = None  # the boot order's random seed (each round's order is drawn from it)
    final_kernel: Path | None = None  # the final configuration's kernel .config (a built kernel kept), diff beside it

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


def optimize(target: Target, out: Path, repeat: int, registry: RuleRegistry | None = None,
             progress: Progress | None = None, max_repeat: int | None = None, rounds: int = 1,
             seed: int | None = None, rebuild_kernel: bool = False) -> OptimizeResult:
    """Advise on a traced boot, try every automatic finding alone, keep the significant ones
    that still reach ready, then boot them all together; with ``max_repeat``, each step boots
    more until its verdicts are decided or that many (:mod:`.measurement`). With ``rounds`` > 1,
    while a round kept something, the next one advises on a traced boot of what was kept and
    tries the new findings on top of it (a change can only show once another one is in: the
    application's console output matters once it starts early); the target as it was and the
    final configuration are then booted again side by side."""
    with fresh_folder(out):  # held until the last boot is in; an error before any leaves no folder
        return _optimize(target, out, repeat, registry, progress, max_repeat, rounds, seed, rebuild_kernel)


def _optimize(target: Target, out: Path, repeat: int, registry: RuleRegistry | None,
              progress: Progress | None, max_repeat: int | None, rounds: int,
              seed: int | None, rebuild_kernel: bool = False) -> OptimizeResult:
    if rounds < 1:
        raise ExperimentError("--rounds: at least 1")
    reg = registry or default_registry()
    ctx = target_context(target, rebuild_kernel)
    runner = Runner(target, progress, 1, seed)
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
                runner.total += 1
            last = done[-1] if done else None
            rnd = _round(target, runner, folder, k, applied, reg, repeat, max_repeat, notes,
                         last.kept if last else None, ctx,
                         last.kept_outcome.measured if last and last.kept_outcome else None, rebuild_kernel)
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
            host = target.host_clock()
            if host is not None:
                # decided on the guest's clocks; the user's figure is the host's, as it boots without them
                runner.target = host
                final_base, final_out = _overall(host, runner, out, kept_round, repeat, max_repeat, notes,
                                                 "host-clock")
                notes.append("decided on the guest's clocks (QEMU -icount; the tables' figures are guest time); "
                             "the before/after figure is host time, from boots of the target as it was and of "
                             "the final configuration without -icount, side by side (host-clock/)")
            elif kept_round.number > 1:
                final_base, final_out = _overall(target, runner, out, kept_round, repeat, max_repeat, notes)
    finally:
        target.close()
    final = kept_round.kept if kept_round is not None else None
    base = final_base or done[0].baseline
    overlay = None
    comparison = None
    kernel = None
    if final is not None and final_out is not None:
        if final.files:
            overlay = out / "final-overlay"
            write_overlay(final.files, overlay)
        if final.kconfig:
            kernel = _final_kernel(target, final, out, notes)
        comparison = compare_groups([Group(str(base.folder), base.analysis, True),
                                     Group(str(final_out.measured.folder), final_out.measured.analysis, True)])
    sums = [r.sum_single_ns for r in done if r.kept is not None]
    return OptimizeResult(target.name, out, max(r.repeat for r in done), tuple(done), final, final_out, overlay,
                          sum(x or 0 for x in sums) if sums else None, comparison, tuple(notes), max_repeat,
                          final_base, runner.seed, kernel)


def _round(target: Target, runner: Runner, out: Path, number: int, applied: tuple[tuple[str, Change], ...],
           reg: RuleRegistry, repeat: int, max_repeat: int | None, notes: list[str], so_far: Setup | None,
           target_ctx: Context, prior: Measured | None = None, rebuild_kernel: bool = False) -> Round:
    """Advise on a traced boot of ``applied``, try each new automatic finding alone on top of
    it against ``applied`` itself, keep the significant ones and boot them together. With
    nothing to try, the baseline is ``prior`` (the round before's measurement), else booted."""
    ctx = with_files(target_ctx, so_far)
    if number > 1:
        out.mkdir(parents=True, exist_ok=True)
    here: list[str] = []
    traced = traced_boot(runner, out, ctx, reg, applied)
    findings = traced.findings
    if traced.boot is None or traced.boot.total.duration_ns is None:
        here.append("the traced boot did not reach the ready marker; findings may be incomplete")
    not_tried: list[tuple[Finding, str]] = []
    cands: list[Finding] = []
    for f in findings:
        why = untriable(f.change, target, applied, rebuild_kernel, f.stage)
        if why is not None:
            not_tried.append((f, why))
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
        runner.total += repeat
        (base,), booted = runner.rounds([(combine("baseline", applied), out / "baseline")], repeat)
        return Round(number, applied, out, traced.folder, findings, tuple(not_tried), base, (), None, None, None,
                     booted)
    setups = equalise([combine("baseline", applied)] +
                      [combine(n, [*applied, (n, f.change)]) for n, f in zip(names, cands)],
                      target.default_bootdelay())
    stages = [f.stage or None for f in cands]  # each change is judged on the stage it targets
    runner.total += repeat * len(setups)
    measured, booted = runner.rounds([(s, out / s.name) for s in setups], repeat, max_repeat, gains_only=True,
                                     stages=stages)
    auto_note(here, repeat, booted, max_repeat, undecided(measured[0], measured[1:], True, stages))
    base = measured[0]
    per_boot = findings_per_boot(base.analysis, ctx, reg)
    tried: list[Tried] = []
    for n, f, m, stage in zip(names, cands, measured[1:], stages):
        dec = decide(base, m, stage)
        o = outcome(n, base, m, estimate_for(f.change, f.rule, per_boot, traced), target.rate_limited,
                    f"{HOOK_KIND[f.change.kind]}:{f.change.value}", total_decides=not (dec.keep and dec.on != "total"))
        a_side = f"{dec.boots} boots a side"
        if dec.keep:
            said = f"kept, decided on {'the total' if dec.on == 'total' else dec.on} ({a_side}): {dec.reason}"
        elif dec.keep is None:
            said = f"not kept: undecided on {'the total' if dec.on == 'total' else dec.on} ({a_side}), {dec.reason}"
        else:
            said = f"not kept ({a_side}): {dec.reason}"
        tried.append(Tried(f, o, bool(dec.keep), said, dec))
    kept, kept_out, sum_single = _final(target, runner, out, base, tried, repeat, here, max_repeat, applied)
    notes += [f"round {number}: {n}" if number > 1 else n for n in here]
    return Round(number, applied, out, traced.folder, findings, tuple(not_tried), base, tuple(tried), kept, kept_out,
                 sum_single, booted)


def _overall(target: Target, runner: Runner, out: Path, last: Round, repeat: int, max_repeat: int | None,
             notes: list[str], folder: str = "overall") -> tuple[Measured, Outcome]:
    """The target as it was and every kept change together, booted side by side into ``folder``:
    each round measured against the round before, at another time; this is the figure of the whole."""
    assert last.kept is not None
    final = combine("final", last.kept.changes)
    base, final = equalise([combine("baseline", []), final], target.default_bootdelay())
    where = out / folder
    runner.total += 2 * repeat
    (b, m), booted = runner.rounds([(base, where / "baseline"), (final, where / "final")], repeat, max_repeat,
                                    gains_only=True)
    auto_note(notes, repeat, booted, max_repeat, undecided(b, [m], True),
               "boots of the target as it was and of the final configuration, side by side")
    o = outcome("final", b, m, None, target.rate_limited, FINAL_SPEC)
    if m.ready_boots < m.boots:
        notes.append(f"the final configuration did not reach the ready line in {m.boots - m.ready_boots} of "
                     f"{m.boots} boots side by side with the target as it was: do not adopt it as it is")
    return b, o


def _final(target: Target, runner: Runner, out: Path, base: Measured, tried: list[Tried], repeat: int,
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
        what = {ChangeKind.OVERLAY: "file", ChangeKind.KCONFIG: "kernel (both build it from nothing)"}.get(
            t.finding.change.kind, "U-Boot variable")
        if clash is not None:
            notes.append(f"{t.outcome.name} left out of the final configuration: it changes the same {what} as "
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
    final = equalise([base.setup, final], target.default_bootdelay())[1]
    runner.total += repeat
    (m,), rounds = runner.rounds([(final, out / "final")], repeat, max_repeat, base, gains_only=True)
    auto_note(notes, repeat, rounds, max_repeat, undecided(base, [m], True), "boots of the final configuration")
    o = outcome("final", base, m, None, target.rate_limited, FINAL_SPEC)
    if m.ready_boots < m.boots:
        notes.append(f"the kept changes together did not reach the ready line in {m.boots - m.ready_boots} of "
                     f"{m.boots} boots, though each did alone: do not adopt them as they are; `bootlens "
                     "experiment` with them in pairs shows which ones clash")
    return final, replace(o, explanation=overlap(o, sum_single, o.explanation)), sum_single


PREKERNEL = frozenset({"firmware", "spl", "bootloader"})  # a Kconfig finding there is the bootloader's


def untriable(c: Change, target: Target, applied: Sequence[tuple[str, Change]], rebuild_kernel: bool = True,
              stage: str = "") -> str | None:
    """Why ``optimize`` cannot try change ``c`` on ``target`` on top of ``applied``; None: it can.
    A Kconfig line alone is tried on a kernel already built from the boot (from nothing): on top
    of the target's own (Debian's) configuration a build takes hours here. A Kconfig finding about
    a stage before the kernel (U-Boot's CONFIG_SILENT_CONSOLE) is the bootloader's own build."""
    if c.automatic:
        return None
    if c.kind is ChangeKind.KCONFIG and stage in PREKERNEL:
        return "needs a rebuild of the bootloader (bootlens builds kernels only)"
    need = NEEDS.get(c.kind)
    if need is None or need not in target.can_change:
        return NOT_AUTOMATIC[c.kind] + (f" ({target.name} cannot change its {need})" if need else "")
    if c.kind is ChangeKind.KCONFIG and not rebuild_kernel:
        return f"{NOT_AUTOMATIC[c.kind]} (--rebuild-kernel builds and tries it)"
    if ALLNOCONFIG in c.kconfig_lines and any(ALLNOCONFIG in a.kconfig_lines for _, a in applied):
        return "a kernel built from nothing is kept already (one cannot be laid over another)"
    if c.kind is ChangeKind.KCONFIG and ALLNOCONFIG not in c.kconfig_lines and \
            not any(ALLNOCONFIG in a.kconfig_lines for _, a in applied):
        return ("needs a kernel rebuild of the target's own configuration (hours on this machine); tried once a "
                "kernel built from the boot is kept (kernel.from_boot)")
    return None


def _final_kernel(target: Target, final: Setup, out: Path, notes: list[str]) -> Path | None:
    """The final configuration's kernel config and its diff against the target's own, in the run
    folder (final-kernel.config, final-kernel.diff): what a product's defconfig takes."""
    from ..kbuild.build import KernelBuildError

    try:
        built = target.build_kernel(final.kconfig)  # built before: from the cache
        files = kernel_files(target, built, out, "final-")
    except (KernelBuildError, OSError) as e:
        notes.append(f"the final kernel's config could not be copied into the run folder: {e}")
        return None
    return out / str(files["config"])


def _same(a: Change, b: Change) -> bool:
    """The same change twice (two rules proposing one argument, the same script edit)."""
    return a.kind is b.kind and a.value == b.value and a.files == b.files and a.kconfig == b.kconfig


def _env_names(c: Change) -> set[str]:
    """What a change sets besides files: a U-Boot variable; the whole kernel for one built from
    nothing (two such kernels cannot be combined)."""
    if c.kind is ChangeKind.KCONFIG and ALLNOCONFIG in c.kconfig_lines:
        return {"<kernel from allnoconfig>"}
    return {c.value.partition("=")[0]} if c.kind is ChangeKind.UBOOT_ENV else set()
