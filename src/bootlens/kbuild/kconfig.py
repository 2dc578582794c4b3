"""A kernel configuration holding the symbols a boot used and little else.

Start from the tree's ``allnoconfig`` (everything that can be off is off), switch on each
wanted symbol together with what it depends on, then let the kernel's own ``make olddefconfig``
settle the result (selects, defaults): the kernel's tool has the last word, and what it dropped
is reported, not hidden.

Dependencies are read with kconfiglib (the Python Kconfig library Zephyr and ESP-IDF use);
it predates Linux 5.13's ``modules`` keyword, which is read here as the ``option modules``
it replaced (the one change needed for Linux 6.1's Kconfig). The kernel's own tools offer no
"switch this on with its dependencies".
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

AVOID = frozenset({"COMPILE_TEST"})  # never switched on to satisfy an "A || B" dependency
_MODULES = re.compile(r"^(\s*)modules\s*$", re.M)


@contextmanager
def _env(values: Mapping[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load(src: Path, arch: str, cross: str, config: Path | None = None) -> Any:
    """The tree's Kconfig (kconfiglib), with ``config`` loaded when given."""
    import kconfiglib  # type: ignore[import-untyped]

    class Kconfig(kconfiglib.Kconfig):  # type: ignore[misc]
        def _open(self, filename: str, mode: str) -> Any:
            f = super()._open(filename, mode)
            if "r" not in mode:
                return f
            with f:
                return io.StringIO(_MODULES.sub(r"\1option modules", f.read()))

    here = os.getcwd()
    env = {"ARCH": arch, "SRCARCH": arch, "srctree": str(src), "CC": f"{cross}gcc", "LD": f"{cross}ld",
           "KERNELVERSION": "6", "CC_VERSION_TEXT": "gcc"}
    with _env(env):
        try:
            os.chdir(src)
            kc = Kconfig("Kconfig", warn=False, warn_to_stderr=False)
            if config is not None:
                kc.load_config(str(config), replace=True)
        finally:
            os.chdir(here)
    return kc


@dataclass
class Closure:
    """What switching on the wanted symbols took: ``added`` dependencies (symbol -> the one that
    needed it) and the wanted ones that could not be switched on (symbol -> why)."""

    added: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)


def platform(sym: Any) -> bool:
    """A SoC family (``ARCH_TEGRA``, ``ARCH_MXC``: arch/*/Kconfig.platforms): switching one on
    pulls in its drivers; a boot needs it only on that family's hardware."""
    return any(n.filename.endswith("Kconfig.platforms") for n in sym.nodes)


def enable(kc: Any, wanted: Iterable[str]) -> Closure:
    """Switch on every wanted symbol (to y) and what it depends on; a promptless symbol (only
    ever selected) is left to what selects it."""
    import kconfiglib as K

    out = Closure()
    wanted = list(wanted)

    def expr_true(e: Any) -> bool:
        return bool(K.expr_value(e) > 0)

    def satisfy(e: Any, why: str, depth: int) -> None:
        if depth > 40 or expr_true(e):
            return
        if isinstance(e, K.Symbol):
            on(e, why, depth + 1)
        elif isinstance(e, tuple):
            op = e[0]
            if op == K.AND:
                satisfy(e[1], why, depth)
                satisfy(e[2], why, depth)
            elif op == K.OR:
                alts = [x for x in (e[1], e[2])
                        if not (isinstance(x, K.Symbol) and (x.name in AVOID or platform(x)))]
                if alts:
                    satisfy(alts[0], why, depth)
            elif op == K.EQUAL:  # "depends on X=y" (or "y=X")
                sym, const = (e[1], e[2]) if e[2].is_constant else (e[2], e[1])
                if const.name in ("y", "m") and isinstance(sym, K.Symbol) and not sym.is_constant:
                    on(sym, why, depth + 1)
            # NOT and the other comparisons: left as they are

    def on(sym: Any, why: str, depth: int) -> bool:
        if sym.tri_value == 2 or sym.is_constant:
            return True
        if sym.name in AVOID or platform(sym):
            return False
        prompts = [n for n in sym.nodes if n.prompt]
        if not prompts:
            return False
        if sym.choice is not None:
            satisfy(sym.choice.direct_dep, sym.name, depth)
        satisfy(sym.direct_dep, sym.name, depth)
        for n in prompts:
            satisfy(n.prompt[1], sym.name, depth)
        sym.set_value(2 if sym.type in (K.BOOL, K.TRISTATE) else sym.str_value)
        if sym.tri_value == 2 and why != sym.name:
            out.added.setdefault(sym.name, why)
        return bool(sym.tri_value == 2)

    for name in wanted:
        sym = kc.syms.get(name)
        if sym is None or not sym.nodes:
            out.refused[name] = "no such symbol in this kernel's Kconfig"
            continue
        if sym.tri_value == 2:
            continue
        if not any(n.prompt for n in sym.nodes):
            out.refused[name] = "not a user option (selected by others)"
            continue
        if not on(sym, name, 0):
            out.refused[name] = "its dependencies could not be met"
    for name in list(out.added):
        if name in wanted:
            del out.added[name]
    return out
