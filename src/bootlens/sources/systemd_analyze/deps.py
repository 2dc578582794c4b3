"""The units' ordering that ``systemd-analyze dump`` states: what the critical chain walks
(:mod:`bootlens.timeline.chain`) and how a console status text names its unit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .reader import DumpUnit


@dataclass(frozen=True, slots=True)
class Deps:
    """What ``systemd-analyze dump`` says of the units: ``after``: unit -> the units it is ordered
    after; ``never_active``: units that never entered "active" (a oneshot without
    RemainAfterExit goes activating -> inactive): systemd-analyze's chain skips them, since they
    have no activation time, and so does bootlens's."""

    after: Mapping[str, Sequence[str]]
    never_active: frozenset[str] = frozenset()
    descriptions: Mapping[str, str] = field(default_factory=dict)  # unit -> its Description=

    def resolve(self, name: str) -> str | None:
        """The unit a console status text names: by its description (systemd < 250 prints no unit
        name; a name cut in the middle leaves only the description), or, where systemd cut the text
        in the middle to fit 80 columns ("systemd-udevd.serv…nager for Device Events and Files"),
        the one unit whose "name - description" or description starts and ends like it."""
        head, cut, tail = name.partition("…")
        if not cut:  # a description (systemd < 250, or a name the console cut): one unit has it
            same = [u for u, d in self.descriptions.items() if d == name]
            return same[0] if len(same) == 1 else None
        found = {u for u, d in self.descriptions.items()
                 if any(full.startswith(head) and full.endswith(tail) and len(full) >= len(head) + len(tail)
                        for full in (f"{u} - {d}", d) if full)}
        if not found and head.strip():  # no description known (blame names only): the unit it begins
            found = {u for u in self.descriptions if u.startswith(head.strip())}
        return found.pop() if len(found) == 1 else None


def deps_from_dump(units: Sequence[DumpUnit]) -> Deps:
    """The chain's dependencies from ``systemd-analyze dump``'s units (aliases included)."""
    after: dict[str, list[str]] = {}
    never: set[str] = set()
    desc: dict[str, str] = {}
    for u in units:
        names = (u.unit, *u.names)
        if u.description:
            desc[u.unit] = u.description
        for n in names:
            after.setdefault(n, list(u.depends("After")))
        if u.active_enter is None:
            never.update(names)
    return Deps(after, frozenset(never), desc)
