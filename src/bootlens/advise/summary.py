"""``bootlens advise`` over inputs: every boot's findings, and for an input of several boots (a
run folder, or a capture of many boots in one log) one line per finding merged over its boots.

Merging: the rules run on every boot; findings with the same rule and the same change are one
finding of the input, with the number of boots it applied to. Its saving is the median over the boots
that gave a number, with min and max beside it; the text, arithmetic and evidence shown are
those of the boot whose saving is nearest that median (evidence line numbers are that boot's).
Advising on the median boot alone was the alternative; it would hide a finding that appears in
some boots only and give no spread to judge an estimate by.

Many boots (issue 29): the merge keeps numbers, not boots (:class:`Merger`): per finding its
savings and the boots it was seen in (8 bytes a boot each), and the finding itself from the
first boot of each distinct saving, so the one shown is exactly the one nearest the median;
past :data:`CANDIDATES` distinct savings of one finding (a measured time that differs in every
boot of a soak test) the ones farthest from the median so far are let go, and the one shown is
the nearest of those kept. :func:`advise_streams` advises the boots of a log one at a time as they
are read, so ``bootlens advise`` on a million boots holds one boot's analysis at a time.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ..timeline.analyze import BootAnalysis
from ..timeline.inputs import Group, GroupStream, analyze_inputs, stream_inputs
from ..timeline.tally import MANY_BOOTS, MAX_WARNINGS
from ..core.options import ParseOptions
from ..stats.figures import Stat, stat
from . import RuleRegistry, advise, default_registry
from .base import Context, Finding
from .context import context_for_group, context_of

# Distinct savings of one merged finding whose findings are kept to show one from (module docstring).
CANDIDATES = 256


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
    seen_boots: Sequence[int] = ()  # 0-based positions of those boots


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


@dataclass(frozen=True, slots=True)
class InputAdvice:
    """Advice for one INPUT as the listings show it (:mod:`bootlens.render.advise_terminal`):
    counts and the merged findings, no boot's analysis but an only boot's."""

    name: str  # the input as the user gave it
    folder: bool  # a run folder
    context: Context
    boots: int  # boots advised
    merged: tuple[MergedFinding, ...]  # for an input of several boots; else empty
    warnings: tuple[CountedWarning, ...]
    found: bool  # some boot had a finding
    rates: tuple[str, ...]  # the kernel command lines' console rates, sorted
    console: bool  # some boot's lines are a console's output
    only: BootAdvice | None  # the advice of an input of one boot


def _key(f: Finding) -> tuple[str, str, str]:
    return (f.rule, f.change.kind.value, f.change.value)


class _Found:
    """One merged finding while boots are added (:class:`Merger`)."""

    __slots__ = ("first", "savings", "seen", "kept", "sample", "stride", "n")

    def __init__(self, i: int, f: Finding) -> None:
        self.first = (i, f)  # shown when no boot gave a number
        self.savings = array("q")  # every finding's figure, in boot order
        self.seen = array("q")  # the boots it was found in, ascending
        self.kept: dict[int, tuple[int, Finding]] = {}  # saving -> its first boot and finding
        self.sample = array("q")  # every stride-th figure: the median so far, to let candidates go by
        self.stride = 1
        self.n = 0  # figures

    def add(self, i: int, f: Finding) -> None:
        if not self.seen or self.seen[-1] != i:
            self.seen.append(i)
        s = f.saving_ns
        if s is None:
            return
        self.savings.append(s)
        if self.n % self.stride == 0:
            self.sample.append(s)
            if len(self.sample) >= 4 * CANDIDATES:
                self.sample = self.sample[::2]
                self.stride *= 2
        self.n += 1
        if s not in self.kept:
            self.kept[s] = (i, f)
            if len(self.kept) > CANDIDATES:
                m = statistics.median_low(self.sample)
                near = sorted(self.kept, key=lambda x: abs(x - m))[:CANDIDATES // 2]
                self.kept = {x: self.kept[x] for x in sorted(near)}


class Merger:
    """The findings of one input's boots merged as the boots come (:func:`merge`, module
    docstring): numbers per boot, not boots."""

    def __init__(self) -> None:
        self.boots = 0
        self._found: dict[tuple[str, str, str], _Found] = {}

    def add(self, findings: Sequence[Finding]) -> None:
        """The next boot's findings."""
        i = self.boots
        self.boots += 1
        found = self._found
        for f in findings:
            k = _key(f)
            x = found.get(k)
            if x is None:
                x = found[k] = _Found(i, f)
            x.add(i, f)

    def result(self) -> tuple[MergedFinding, ...]:
        """The merged findings, worst median first."""
        out = []
        many = self.boots > MANY_BOOTS
        for k, x in self._found.items():
            s = stat(k[0], x.savings.tolist())
            if many and s is not None:  # the values are for a test between inputs; a million are not kept
                s = replace(s, values=())
            if s is not None:
                med = s.median
                rep_s = min(x.kept, key=lambda v: (abs(v - med), x.kept[v][0]))
                rep_i, rep = x.kept[rep_s]
            else:
                rep_i, rep = x.first
            seen: Sequence[int] = x.seen if many else tuple(x.seen)
            out.append(MergedFinding(rep, rep_i, len(seen), self.boots, s, seen))
        return tuple(sorted(out, key=lambda m: (m.saving is None, -(m.saving.median if m.saving else 0),
                                                m.finding.rule)))


def merge(boots: Sequence[BootAdvice]) -> tuple[MergedFinding, ...]:
    """Findings of repeated boots merged per (rule, change), worst median first."""
    m = Merger()
    for ba in boots:
        m.add(ba.findings)
    return m.result()


class WarningCount:
    """Each distinct warning of an input's boots with how many boots gave it, as they come; past
    :data:`MANY_BOOTS` boots at most :data:`MAX_WARNINGS` texts (one naming a line number differs
    from boot to boot), the others counted together."""

    def __init__(self) -> None:
        self.boots = 0
        self.counts: dict[str, int] = {}
        self.other = 0  # boots with a warning past MAX_WARNINGS texts

    def add(self, warnings: Sequence[str]) -> None:
        """The next boot's warnings (each counted once a boot)."""
        self.boots += 1
        counts = self.counts
        other = False
        for w in dict.fromkeys(warnings):
            if w in counts:
                counts[w] += 1
            elif len(counts) < MAX_WARNINGS or self.boots <= MANY_BOOTS:
                counts[w] = 1
            else:
                other = True
        self.other += other

    def result(self) -> tuple[CountedWarning, ...]:
        """In first-seen order."""
        out = [CountedWarning(w, n) for w, n in self.counts.items()]
        if self.other:
            out.append(CountedWarning(f"warnings of other texts, past {MAX_WARNINGS} distinct ones (not listed)",
                                      self.other))
        return tuple(out)


def counted_warnings(boots: Sequence[BootAnalysis], problems: Sequence[Sequence[str]] = ()
                     ) -> tuple[CountedWarning, ...]:
    """Each distinct warning of these boots once, with how many boots gave it, in first-seen order:
    a capture of 270 boots without a ready marker says so once, not 270 times. ``problems``: per
    boot, the rules that failed on it (:func:`~bootlens.advise.advise`), counted the same way."""
    c = WarningCount()
    for b, extra in zip(boots, list(problems) + [()] * (len(boots) - len(problems))):
        c.add([*b.warnings, *extra])
    return c.result()


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


class AdviceStream:
    """One INPUT advised a boot at a time (:func:`advise_streams`): iterate :meth:`boots` once,
    then :meth:`result`."""

    def __init__(self, stream: GroupStream, ctx: Context, registry: RuleRegistry) -> None:
        self.name = stream.name
        self.folder = stream.folder
        self.context = ctx
        self._stream = stream
        self._reg = registry
        self._merger = Merger()
        self._warnings = WarningCount()
        self._rates: set[str] = set()
        self._console = False
        self._found = False
        self._only: BootAdvice | None = None

    def boots(self) -> Iterator[BootAdvice]:
        """Each boot's advice, as its analysis comes; what the result needs is counted meanwhile."""
        from .console import console_output

        for b in self._stream.boots:
            problems: list[str] = []
            ba = BootAdvice(b, tuple(advise(b, self.context, self._reg, problems)))
            self._merger.add(ba.findings)
            self._warnings.add([*b.warnings, *problems])
            if (f := b.boot.fact("console_baud")) is not None:
                self._rates.add(f.value)
            self._console = self._console or console_output(b)
            self._found = self._found or bool(ba.findings)
            self._only = ba if self._merger.boots == 1 else None
            yield ba

    def result(self) -> InputAdvice:
        """The input's advice once :meth:`boots` was read."""
        n = self._merger.boots
        return InputAdvice(self.name, self.folder, self.context, n, self._merger.result() if n > 1 else (),
                           self._warnings.result(), self._found, tuple(sorted(self._rates)), self._console,
                           self._only)


def advise_streams(inputs: Sequence[str], options: ParseOptions | None = None, baud: int | None = None,
                   registry: RuleRegistry | None = None) -> list[AdviceStream]:
    """:func:`advise_inputs` as streams, for ``bootlens advise``: each input read (an unusable one
    raises InputError before anything is written), its boots analysed and advised one at a time
    as the output reads them (:func:`bootlens.timeline.inputs.stream_inputs`)."""
    reg = registry or default_registry()
    out = []
    for s in stream_inputs(inputs, options):
        ctx = context_for_group(s.group, baud) if s.group is not None else context_of(s.name, s.folder, (), baud)
        out.append(AdviceStream(s, ctx, reg))
    return out


def input_advice(ga: GroupAdvice) -> InputAdvice:
    """A GroupAdvice as the listings show it."""
    from .console import console_output

    boots = [ba.boot for ba in ga.boots]
    rates = sorted({f.value for b in boots if (f := b.boot.fact("console_baud")) is not None})
    return InputAdvice(ga.group.name, ga.group.folder, ga.context, len(ga.boots), ga.merged, ga.warnings,
                       any(ba.findings for ba in ga.boots), tuple(rates), any(console_output(b) for b in boots),
                       ga.boots[0] if len(ga.boots) == 1 else None)
