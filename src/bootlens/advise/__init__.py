"""``bootlens advise``: rules that read a boot and say what to change, with savings computed
from the boot's own data. One rule per module in :mod:`bootlens.advise.rules`, registered into
:data:`REGISTRY` by the :meth:`RuleRegistry.register` decorator; third-party rules come through
the ``bootlens.rules`` entry-point group."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import replace
from typing import TypeVar

from ..core.plugins import entry_points  # not importlib.metadata's: that import is a third of start-up
from ..timeline.analyze import BootAnalysis
from ..core.numbers import TIME_NS_MAX, in_range
from .base import AUTOMATIC, Change, ChangeKind, Confidence, Context, Evidence, Finding, Rule

R = TypeVar("R", bound=type[Rule])


class RuleRegistry:
    """A set of rule classes, filled by the :meth:`register` decorator."""

    def __init__(self) -> None:
        self._rules: dict[str, type[Rule]] = {}

    def register(self, cls: R) -> R:
        """Class decorator; registering an id twice is an error."""
        if cls.id in self._rules:
            raise ValueError(f"rule {cls.id!r} is already registered")
        self._rules[cls.id] = cls
        return cls

    def __iter__(self) -> Iterator[type[Rule]]:
        return iter(self._rules.values())

    def __len__(self) -> int:
        return len(self._rules)

    def ids(self) -> list[str]:
        """Registered rule ids, in registration order."""
        return list(self._rules)

    def load_entry_points(self, group: str = "bootlens.rules") -> None:
        """Register third-party rules published under an entry-point group."""
        for ep in entry_points(group=group):
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Rule):
                self.register(obj)


REGISTRY = RuleRegistry()
_loaded = False


def default_registry() -> RuleRegistry:
    """The built-in rules (every module of bootlens.advise.rules) and installed ones."""
    global _loaded
    if not _loaded:
        from . import rules

        for mod in sorted(pkgutil.iter_modules(rules.__path__), key=lambda m: m.name):
            importlib.import_module(f"{rules.__name__}.{mod.name}")  # runs @REGISTRY.register
        REGISTRY.load_entry_points()
        _loaded = True
    return REGISTRY


def _order(f: Finding) -> tuple[int, int, str]:
    """Worst first: the largest estimated saving; findings without a figure after those."""
    return (0 if f.saving_ns is not None else 1, -(f.saving_ns or 0), f.rule)


def advise(boot: BootAnalysis, ctx: Context | None = None, registry: RuleRegistry | None = None,
           problems: list[str] | None = None) -> list[Finding]:
    """Every rule's findings for one boot, worst first.

    ``problems``: where a rule that failed on this boot is named (a bug in the rule, or data it
    did not expect), its findings left out, so that one rule cannot take the others or a report
    down; the caller counts them as warnings. Without it, a rule's exception propagates. A
    finding whose saving lies outside any time (numbers.TIME_NS_MAX) is kept without the figure
    and named there too.
    """
    reg = registry or default_registry()
    c = ctx or Context()
    rules = [cls() for cls in reg]
    # one pass over the log lines for every rule's keywords (Lines.grep caches each needle), not
    # one per rule: a grep walks every line, and on a 1M-line log 30 of them took seconds
    from .console import NEEDLES as CONSOLE  # the helpers several rules share
    from .rules._kernel import NEEDLES as KERNEL

    wanted: set[str] = {*CONSOLE, *KERNEL}
    for rule in rules:
        try:
            wanted.update(rule.needles_of(boot))
        except Exception:  # noqa: BLE001 - only a prefetch: the rule greps for itself when it runs
            pass
    if wanted:
        boot.boot.lines.grep(*sorted(wanted))
    found: list[Finding] = []
    for rule in rules:
        cls = type(rule)
        if problems is None:
            found.extend(rule.check(boot, c))
            continue
        try:
            these = list(rule.check(boot, c))
        except Exception as e:  # noqa: BLE001 - the last resort the docstring describes
            problems.append(f"rule {cls.id} failed on this boot ({type(e).__name__}: {str(e)[:200]}); "
                            "its findings are missing")
            continue
        for f in these:
            if f.saving_ns is not None and not in_range(f.saving_ns, TIME_NS_MAX, -TIME_NS_MAX):
                problems.append(f"rule {cls.id} computed a saving out of range; the figure is not given")
                f = replace(f, saving_ns=None, arithmetic="no estimate (figure out of range): " + f.arithmetic)
            found.append(f)
    return sorted(found, key=_order)


__all__ = ["AUTOMATIC", "REGISTRY", "Change", "ChangeKind", "Confidence", "Context", "Evidence", "Finding",
           "Rule", "RuleRegistry", "advise", "default_registry"]
