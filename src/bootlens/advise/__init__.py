"""``bootlens advise``: rules that read a boot and say what to change, with savings computed
from the boot's own data. One rule per module in :mod:`bootlens.advise.rules`, registered into
:data:`REGISTRY` by the :meth:`RuleRegistry.register` decorator; third-party rules come through
the ``bootlens.rules`` entry-point group."""

from __future__ import annotations

from dataclasses import replace

from ..core.numbers import TIME_NS_MAX, in_range
from ..core.registry import Registry
from ..timeline.analyze import BootAnalysis
from .base import AUTOMATIC, Change, ChangeKind, Confidence, Context, Evidence, Finding, Rule


class RuleRegistry(Registry[type[Rule]]):
    """Rule classes by id (:class:`bootlens.core.registry.Registry`); they run in the order of
    their ids. Third-party rules come through the ``bootlens.rules`` entry-point group."""

    def __init__(self, package: str | None = None) -> None:
        super().__init__("rule", "id", "bootlens.rules", package)

    def accepts(self, obj: object) -> bool:
        """A :class:`Rule` subclass."""
        return isinstance(obj, type) and issubclass(obj, Rule)

    def ids(self) -> list[str]:
        """The registered rule ids, sorted."""
        return self.names()


REGISTRY = RuleRegistry(f"{__name__}.rules")


def default_registry() -> RuleRegistry:
    """The built-in rules (every module of bootlens.advise.rules) and installed ones."""
    return REGISTRY.load()


# advise --json lists the rules that ran ("rules"). Until the rules were ordered by id (issue 26),
# that list was in the order the rule modules happened to be imported, which put two rules out of
# id order: kernel.serial_console (its module is kernel_console.py) and systemd.wait_online
# (imported early by systemd_off_path.py, which uses its table). The list keeps them there so that
# the document stays byte for byte what it was; sorting it is a change of the output, to be made
# with a change of the schema, and then this goes.
_LISTED_BEFORE = (("kernel.serial_console", "kernel.crypto_selftests"), ("systemd.wait_online", "systemd.off_path"))


def listed_ids(registry: RuleRegistry) -> list[str]:
    """The rule ids in the order ``advise --json`` lists them: by id, but for :data:`_LISTED_BEFORE`."""
    ids = registry.ids()
    for moved, before in _LISTED_BEFORE:
        if moved in ids and before in ids:
            ids.remove(moved)
            ids.insert(ids.index(before), moved)
    return ids


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
    from .console import console_output

    reg = registry or default_registry()
    c = ctx or Context()
    printed = console_output(boot)
    rules = [cls() for cls in reg if printed or not cls.console]
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
           "Rule", "RuleRegistry", "advise", "default_registry", "listed_ids"]
