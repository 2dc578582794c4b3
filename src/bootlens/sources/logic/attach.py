"""How a logic analyzer capture joins a boot: read with the roles the user gave its channels
(``--channel``, ``--align``), then its edges aligned with the console (:mod:`.align`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from ...core.model import Boot
    from ..supplements import Supplement
    from .align import LogicSetup
    from .reader import Capture


def read_one(kind: str, path: Path) -> tuple[Capture, tuple[str, ...]]:
    """A capture; its warnings join the boot's when it is placed."""
    from .reader import read_logic

    return read_logic(path), ()


def configure(values: Mapping[str, object]) -> LogicSetup | None:
    """``--channel``, ``--align`` and ``--align-bound`` as a LogicSetup; None when neither
    ``--channel`` nor ``--align`` is given (a bad role or tie is a one-line UsageError)."""
    channels, aligns, bound = values["channels"], values["aligns"], values["align_bound"]
    if not channels and not aligns:
        return None
    from .align import AlignSpec, LogicSetup, Role

    assert isinstance(channels, tuple) and isinstance(aligns, tuple) and isinstance(bound, (int, float))
    return LogicSetup(tuple(Role.parse(c) for c in channels), tuple(AlignSpec.parse(a) for a in aligns),
                      round(bound * 1_000_000))


def finish(parts: dict[str, object], options: object) -> dict[str, object]:
    """The capture with the roles of its channels (``options``: a LogicSetup, or None)."""
    from .align import LogicInput, LogicSetup
    from .reader import Capture

    cap = parts.pop("logic", None)
    if isinstance(cap, Capture):
        parts["logic"] = LogicInput(cap, options if isinstance(options, LogicSetup) else LogicSetup())
    return parts


def place(boot: Boot, sup: Supplement) -> tuple[Boot, Supplement]:
    """The capture's edges on the boot's axis, through the console lines they are tied to."""
    if sup.logic is None:
        return boot, sup
    from .align import place as place_capture

    boot, logic, notes = place_capture(boot, sup.logic)
    return boot, sup.with_parts(sup.warnings + tuple(notes), logic=logic)
