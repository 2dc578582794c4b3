"""``bootlens advise`` over inputs: every boot's findings, and for an input of several boots (a
run folder, or a capture of many boots in one log) one line per finding merged over its boots.

Merging: the rules run on every boot; findings with the same rule and the same change are one
finding of the input, with the number of boots it applied to. Its saving is the median over the boots
that gave a number, with min and max beside it; the text, arithmetic and evidence shown are
those of the boot whose saving is nearest that median (evidence line numbers are that boot's).
Advising on the median boot alone was the alternative; it would hide a finding that appears in
some boots only and give no spread to judge an estimate by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..timeline.analyze import BootAnalysis
from ..timeline.inputs import Group, analyze_inputs
from ..core.options import ParseOptions
from ..stats.figures import Stat, stat
from . import RuleRegistry, advise, default_registry
from .base import Context, Finding
from .context import context_for_group


@dataclass(frozen=True, slots=True)
class BootAdvice:
    """The findings of one boot, worst first."""

    boot: BootAnalysis
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class MergedFinding:
    """One finding over the boots of a run folder."""

    finding: Finding  # as found in boot ``boot`` (the one nearest the median saving)
    boot: int  # 0-based position of that boot in the group
    seen: int  # boots in which the rule found it
    boots: int  # boots in the group
    saving: Stat | None  # over the boots that gave a number; None when none did
    seen_boots: tuple[int, ...] = ()  # 0-based positions of those boots


@dataclass(frozen=True, slots=True)
class CountedWarning:
    """A warning of the analysis, once, with the number of boots that gave it."""

    text: str
    boots: int


@dataclass(frozen=True, slots=True)
class GroupAdvice:
    """Advice for one INPUT."""

    group: Group
    context: Context
    boots: tuple[BootAdvice, ...]
    merged: tuple[MergedFinding, ...]  # for an input of several boots; else empty
    warnings: tuple[CountedWarning, ...] = ()  # the boots' analysis warnings, each once, counted


def _key(f: Finding) -> tuple[str, str, str]:
    return (f.rule, f.change.kind.value, f.change.value)


def merge(boots: Sequence[BootAdvice]) -> tuple[MergedFinding, ...]:
    """Findings of repeated boots merged per (rule, change), worst median first."""
    order: list[tuple[str, str, str]] = []
    found: dict[tuple[str, str, str], list[tuple[int, Finding]]] = {}
    for i, ba in enumerate(boots):
        for f in ba.findings:
            k = _key(f)
            if k not in found:
                order.append(k)
                found[k] = []
            found[k].append((i, f))
    out = []
    for k in order:
        items = found[k]
        numbers = [f.saving_ns for _, f in items if f.saving_ns is not None]
        s = stat(k[0], numbers)
        if s is not None:
            rep_i, rep = min(((i, f) for i, f in items if f.saving_ns is not None),
                             key=lambda x: (abs((x[1].saving_ns or 0) - s.median), x[0]))
        else:
            rep_i, rep = items[0]
        seen = tuple(sorted({i for i, _ in items}))
        out.append(MergedFinding(rep, rep_i, len(seen), len(boots), s, seen))
    return tuple(sorted(out, key=lambda m: (m.saving is None, -(m.saving.median if m.saving else 0),
                                            m.finding.rule)))


def counted_warnings(boots: Sequence[BootAnalysis], problems: Sequence[Sequence[str]] = ()
                     ) -> tuple[CountedWarning, ...]:
    """Each distinct warning of these boots once, with how many boots gave it, in first-seen order:
    a capture of 270 boots without a ready marker says so once, not 270 times. ``problems``: per
    boot, the rules that failed on it (:func:`~bootlens.advise.advise`), counted the same way."""
    counts: dict[str, int] = {}
    for b, extra in zip(boots, list(problems) + [()] * (len(boots) - len(problems))):
        for w in dict.fromkeys([*b.warnings, *extra]):
            counts[w] = counts.get(w, 0) + 1
    return tuple(CountedWarning(w, n) for w, n in counts.items())


def advise_group(group: Group, ctx: Context, registry: RuleRegistry | None = None) -> GroupAdvice:
    """Every boot of one input advised with one context; merged when it holds several boots."""
    reg = registry or default_registry()
    problems: list[list[str]] = []
    boots = []
    for b in group.analysis.boots:
        problems.append([])
        boots.append(BootAdvice(b, tuple(advise(b, ctx, reg, problems[-1]))))
    merged = merge(boots) if len(boots) > 1 else ()
    return GroupAdvice(group, ctx, tuple(boots), merged, counted_warnings(group.analysis.boots, problems))


def advise_inputs(inputs: Sequence[str], options: ParseOptions | None = None, baud: int | None = None,
                  registry: RuleRegistry | None = None) -> list[GroupAdvice]:
    """The one call behind ``bootlens advise``: analyse each INPUT (a log, a recording or a run
    folder), build its context, run the rules. Raises InputError on unusable input."""
    return [advise_group(g, context_for_group(g, baud), registry) for g in analyze_inputs(inputs, options)]
