"""The package's stages import one way (issue 26; docs/architecture.md, the map).

Every import of every module is read from its source, function-local and ``TYPE_CHECKING`` ones
included (they are dependencies all the same, only deferred), and checked against the stage
order below: a module may import its own first-level package and those before it, never one
after it. That forbids any cycle between first-level packages; inside a package, a cycle of
modules is allowed up to 3 long (a pair that call each other lazily), never longer.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "src" / "bootlens"

# The stages, first to last: each may use those before it. ``_native`` is the one door to the
# Rust core; ``core`` imports nothing of bootlens but it; render and cli come after everything.
ORDER = ("_native", "core", "capture", "read", "parsers", "sources", "timeline", "stats", "kbuild", "targets", "advise",
         "experiment", "lab", "history", "render", "cli")
# Modules at the top of the package besides __init__ and __main__ (at most 4): the native door,
# and the pytest plugin's old path (a re-export of lab.pytest_plugin kept for one release).
FLAT = {"_native": "_native", "pytest_plugin": "lab"}
MAX_CYCLE = 3


@cache
def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


@cache
def _imports() -> dict[str, set[str]]:
    return _read_imports(modules())


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    return _imports() if mods is modules() else _read_imports(mods)


def _read_imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the bootlens modules it imports (the deepest module each import names)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod for a in node.names]
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name and t.startswith("bootlens"):
                    edges[name].add(t)
    return edges


def stage(module: str) -> str | None:
    """The first-level package a module belongs to (None for the package root and __main__)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return None
    return FLAT.get(parts[1], parts[1])


def test_every_module_is_in_a_stage() -> None:
    flat = sorted(n for n, p in modules().items() if n.count(".") == 1 and p.name != "__init__.py"
                  and not n.endswith("__main__"))
    assert len(flat) <= 4, flat
    assert set(flat) == {f"bootlens.{m}" for m in FLAT}, "a module at the top of the package: give it its stage's folder"
    stages = {s for n in modules() if (s := stage(n)) is not None}
    assert stages <= set(ORDER), sorted(stages - set(ORDER))


def test_imports_run_with_the_stage_order() -> None:
    mods = modules()
    against = []
    for a, targets in sorted(imports(mods).items()):
        for b in sorted(targets):
            sa, sb = stage(a), stage(b)
            if sa is None or sb is None or sa == sb:
                continue  # the root (its lazy public calls, __version__) and __main__ may use anything
            if ORDER.index(sb) > ORDER.index(sa):
                against.append(f"{a} ({sa}) imports {b} ({sb})")
    assert not against, "imports against the stage order:\n" + "\n".join(against)


def test_core_imports_nothing_of_the_pipeline() -> None:
    mods = modules()
    edges = imports(mods)
    bad = [(a, b) for a in mods if stage(a) == "core" for b in edges.get(a, ())
           if stage(b) not in ("core", "_native") and b != "bootlens"]
    assert not bad, bad


def test_no_cycle_of_modules_longer_than_three() -> None:
    """Tarjan's strongly connected components over the module graph."""
    mods = modules()
    # the package root's own imports are its lazy public calls (run on first attribute access,
    # once every module is loaded) and TYPE_CHECKING names: no import-time cycle goes through them
    edges = {a: b for a, b in imports(mods).items() if a != "bootlens"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            found.append(comp)

    for m in sorted(mods):
        if m not in index:
            visit(m)
    long = [sorted(c) for c in found if len(c) > MAX_CYCLE]
    assert not long, long


def test_the_checker_sees_a_function_local_import(tmp_path: Path) -> None:
    """The reader itself: an import inside a function, and one under TYPE_CHECKING, count."""
    src = ("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from ..render import svg\n"
           "def f():\n    from ..cli import common\n")
    tree = ast.parse(src)
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names == {"render", "cli"}
    edges = imports(modules())
    assert "bootlens.timeline.analyze" in edges["bootlens.timeline.inputs"]  # a top-level import
    assert any(stage(b) == "sources" for b in edges["bootlens.timeline.inputs"])  # function-local ones


def test_the_public_calls_come_from_their_stages() -> None:
    """``bootlens.<call>`` is the stage's own function, imported on first use; a fresh
    ``import bootlens`` imports no stage."""
    import subprocess
    import sys

    import bootlens
    from bootlens.timeline.analyze import analyze_paths
    from bootlens.timeline.inputs import analyze_inputs

    assert bootlens.analyze_paths is analyze_paths and bootlens.analyze_inputs is analyze_inputs
    for name in bootlens.__all__:
        assert callable(getattr(bootlens, name)) or name == "__version__", name
    try:
        bootlens.no_such_call  # noqa: B018
    except AttributeError as e:
        assert "no_such_call" in str(e)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
    out = subprocess.run([sys.executable, "-c", "import sys, bootlens; print(sorted(m for m in sys.modules "
                          "if m.startswith('bootlens')))"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['bootlens']"
