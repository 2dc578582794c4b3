"""Side formats on the page: one module per format of ``sources/`` that shows something of its
own, named as the format's folder (``side/strace.py`` shows ``sources/strace/``). It is the one
renderer a new side format may need: the terminal summary, ``analyze --json`` and the HTML report
find it here by the format's name and ask it, in the formats' ``attach_order``, for what it
defines of these (each optional):

- ``text(b, console, top)``: its lines or tables in the terminal summary of a boot, printed
  after the stages (it prints its own blank line before them);
- ``json(b) -> dict``: its keys in the boot's object of ``analyze --json`` (docs/json.md);
- ``html(groups) -> str``: its section of the report page;
- ``event_text(e) -> str | None``: what stands for the console line of an event it added to
  the boot (they have none: line 0);
- ``origin(b) -> str | None``: who set the boot's t=0, said beside it in the headline (a logic
  analyzer's power edge).

A boot without side files asks none of them, and imports none (start-up).
"""

from __future__ import annotations

import os
from importlib import import_module

from ...sources.base import formats

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

    from rich.console import Console

    from ...core.model import Event
    from ...timeline.analyze import BootAnalysis
    from ...timeline.inputs import Group

_MODULES: tuple[ModuleType, ...] | None = None


def renderers() -> tuple[ModuleType, ...]:
    """The side formats' renderers (this package's modules named after a format), in the
    formats' attach order."""
    global _MODULES
    if _MODULES is None:
        here = os.path.dirname(__file__)
        fmts = sorted(formats(), key=lambda f: f.attach_order)
        _MODULES = tuple(import_module(f"{__package__}.{f.name}") for f in fmts
                         if os.path.isfile(os.path.join(here, f"{f.name}.py")))
    return _MODULES


def _with(hook: str) -> list[Any]:
    return [fn for m in renderers() if (fn := getattr(m, hook, None)) is not None]


def print_text(b: BootAnalysis, console: Console, top: int) -> None:
    """Every side format's lines of a boot in the terminal summary."""
    if b.supplement is not None:
        for text in _with("text"):
            text(b, console, top)


def json_keys(b: BootAnalysis) -> dict[str, Any]:
    """Every side format's keys of a boot in ``analyze --json``."""
    out: dict[str, Any] = {}
    if b.supplement is not None:
        for json in _with("json"):
            out.update(json(b))
    return out


def html_sections(groups: Sequence[Group]) -> str:
    """Every side format's section of the report page ("" when no boot has side files)."""
    if not any(b.supplement is not None for g in groups for b in g.analysis.boots):
        return ""
    return "".join(html(groups) for html in _with("html"))


def event_text(e: Event) -> str | None:
    """What stands for the console line of an event a side file added (None for a log's own)."""
    if e.line_no:
        return None
    for text in _with("event_text"):
        if (said := text(e)) is not None:
            return str(said)
    return None


def origin(b: BootAnalysis) -> str | None:
    """Who set the boot's t=0, when a side file did ("logic analyzer")."""
    if b.supplement is None:
        return None
    for fn in _with("origin"):
        if (who := fn(b)) is not None:
            return str(who)
    return None
