"""Which Kconfig symbols build a piece of the kernel: initcall function -> source file -> the
``obj-$(CONFIG_X)`` lines of the Makefiles above it, as the kernel's own
``scripts/kconfig/streamline_config.pl`` maps modules to symbols.

:func:`index` reads a kernel source tree once (every ``*_initcall(fn)``, ``module_init(fn)``
and ``module_*_driver(drv)``/``builtin_*_driver(drv)``, which define ``drv_init``) and every
Makefile/Kbuild (``obj-``, composite ``foo-y``/``foo-objs`` lines, ``ifdef``/``ifeq`` blocks on a
CONFIG symbol, subdirectories); :meth:`SourceMap.symbols` gives the symbols a file needs, each
with the Makefile line that says so. No library parses kbuild's Makefiles (they are make
programs; streamline_config.pl does this same line-level reading in Perl).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Mapping, Set
from dataclasses import dataclass
from pathlib import Path

INDEX_VERSION = 3

# an initcall and the function it calls: level macros, module_init, and the driver macros that
# define DRV_init (include/linux/device/driver.h module_driver/builtin_driver)
_INITCALL = re.compile(
    rb"^\s*(?:(?:early|core|postcore|arch|subsys|fs|rootfs|device|late|console|security|pure)_initcall(?:_sync)?"
    rb"|module_init|__initcall|subsys_initcall|late_initcall_sync)\s*\(\s*(\w+)\s*\)", re.M)
_DRIVER = re.compile(rb"^\s*(?:module|builtin)_(?:\w+_)?driver\s*\(\s*(\w+)", re.M)
_DRIVER_SKIP = {b"module_driver", b"builtin_driver"}  # the macros' own definitions
# a tty driver's device name (ttyAMA, ttyS) and a filesystem's type name (proc, devtmpfs)
_DEV_NAME = re.compile(rb"\.dev_name\s*=\s*\"(\w+)\"")
# a file that registers a driver (struct platform_driver/amba_driver/pci_driver ... with a probe),
# and the names its devices may carry: driver and device names, compatibles' model part
_DRIVER_STRUCT = re.compile(rb"struct\s+\w*_driver\s+\w+\s*=\s*\{[^;]*?\.probe\w*\s*=", re.S)
_DRIVER_NAMES = re.compile(rb"\.(?:name|compatible)\s*=\s*\"(?:[\w-]+,)?([\w.-]+)\"")
_FS_TYPE = re.compile(rb"struct file_system_type\s+\w+\s*=\s*\{[^}]{0,400}?\.name\s*=\s*\"(\w+)\"", re.S)

# kbuild lines: LHS += / := / = objects
_ASSIGN = re.compile(r"^\s*([\w.$()/-]+?)\s*(?:\+=|:=|=)\s*(.*)$")
_LHS = re.compile(r"^(obj|lib|core|drivers|libs|subdir|[\w.-]+?)-"
                  r"(?:\$\((?:subst m,y,\$\()?CONFIG_(\w+)\)\)?|(y|objs))$")
_IF = re.compile(r"^\s*(ifdef|ifndef|ifeq|ifneq)\b\s*(.*)$")
_IFSYM = re.compile(r"CONFIG_(\w+)")


@dataclass(frozen=True, slots=True)
class Gate:
    """One reason a file is built: ``symbol`` (None: always, ``obj-y``) on ``line`` of ``makefile``."""

    symbol: str | None
    makefile: str
    line: int


@dataclass
class SourceMap:
    """A kernel source tree's initcalls and kbuild gates (see :func:`index`)."""

    root: Path
    version: str
    initcalls: dict[str, list[str]]  # function -> source files (relative) defining it as an initcall
    ttys: dict[str, list[str]]  # a tty driver's device name ("ttyAMA") -> source files
    filesystems: dict[str, list[str]]  # a filesystem type ("devtmpfs") -> source files
    drivers: dict[str, list[str]]  # a file registering a driver -> the names its devices match on
    platforms: list[str]  # SoC family symbols (arch/*/Kconfig.platforms: ARCH_TEGRA, ARCH_MXC, ...)
    # (directory, object path relative to it) -> [(gating symbol or None, composite parent or None, makefile, line)]
    objects: dict[tuple[str, str], list[tuple[str | None, str | None, str, int]]]

    def files_for(self, function: str) -> list[str]:
        """The source files where ``function`` is an initcall (several: a static name used twice)."""
        return self.initcalls.get(function, [])

    def symbols(self, path: str, running: Mapping[str, str] | None = None,
                prefer: Set[str] = frozenset()) -> list[Gate] | None:
        """Every gate on building ``path`` (``drivers/tty/serial/amba-pl011.c``): its object's
        line, a composite object's, each directory's up to the tree's top; None when no Makefile
        names it (a file #included by another, a generated one).

        An object named on several lines (``obj-$(CONFIG_LEGACY_PTYS) += pty.o`` and
        ``obj-$(CONFIG_UNIX98_PTYS) += pty.o``) is built when any of them is on: one line is
        chosen, among those whose symbols are all set in ``running`` (the kernel that booted),
        the first whose symbols are all in ``prefer`` (needed anyway), else the first. Several
        symbols of one line (an ``ifdef`` block around it) are all needed."""
        obj = os.path.splitext(path)[0] + ".o"
        return self._object(obj, set(), running, prefer)

    def _object(self, obj: str, seen: set[str], running: Mapping[str, str] | None,
                prefer: Set[str]) -> list[Gate] | None:
        if obj in seen:
            return []
        seen.add(obj)
        slash = "/" if obj.endswith("/") else ""
        bare = obj.rstrip("/")
        d = os.path.dirname(bare)
        # the object may be named by its own directory's Makefile or by any parent's (obj-y += sub/x.o)
        while True:
            rel = (os.path.relpath(bare, d) if d else bare) + slash
            entries = self.objects.get((d, rel))
            if entries:
                break
            if not d:
                return None
            d = os.path.dirname(d)
        lines: dict[tuple[str, int], list[tuple[str | None, str | None]]] = {}
        for sym, parent, mk, line in entries:
            lines.setdefault((mk, line), []).append((sym, parent))
        choice = list(lines.items())
        if len(choice) > 1:  # alternatives: any one line builds it
            def on(item: tuple[tuple[str, int], list[tuple[str | None, str | None]]], among: Set[str] | None) -> bool:
                syms = [sym for sym, _ in item[1] if sym]
                if among is not None:
                    return all(sym in among for sym in syms)
                return running is None or all(running.get(sym) in values for sym in syms)
            values: tuple[str, ...] = ("y",)
            built = [c for c in choice if on(c, None)]
            values = ("y", "m")  # an `ifneq ($(CONFIG_X),)` block passes with X=m
            built = built or [c for c in choice if on(c, None)] or choice
            choice = [next((c for c in built if on(c, prefer)), built[0])]
        gates: list[Gate] = []
        for (mk, line), items in choice:
            for sym, parent in items:
                if sym is not None:
                    gates.append(Gate(sym, mk, line))
                if parent is not None:  # a part of a composite object: what builds the composite
                    gates += self._object(os.path.join(d, parent) if d else parent, seen, running, prefer) or []
        return gates + self._dir(d, seen, running, prefer)

    def _dir(self, d: str, seen: set[str], running: Mapping[str, str] | None, prefer: Set[str]) -> list[Gate]:
        """The gates on descending into directory ``d`` (``obj-$(CONFIG_X) += d/`` above it)."""
        if not d:
            return []
        up = self._object(d + "/", seen, running, prefer)
        return up or []

    def save(self, path: Path) -> None:
        data = {"version": INDEX_VERSION, "kernel": self.version, "initcalls": self.initcalls, "ttys": self.ttys,
                "filesystems": self.filesystems, "drivers": self.drivers, "platforms": self.platforms,
                "objects": [[d, o, e] for (d, o), e in self.objects.items()]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)

    @classmethod
    def load(cls, root: Path, path: Path) -> SourceMap | None:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if data.get("version") != INDEX_VERSION:
            return None
        objects = {(d, o): [tuple(x) for x in e] for d, o, e in data["objects"]}
        return cls(root, data["kernel"], data["initcalls"], data["ttys"], data["filesystems"],
                   data["drivers"], data["platforms"], objects)


def _makefile_lines(text: str) -> list[tuple[int, str]]:
    """Logical lines (continuations joined, comments cut) with their first line's number."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0] if "#" in raw and not raw.lstrip().startswith("$(") else raw
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def _read_makefile(root: Path, d: str, name: str,
                   objects: dict[tuple[str, str], list[tuple[str | None, str | None, str, int]]]) -> None:
    mk = f"{d}/{name}" if d else name
    try:
        text = (root / mk).read_text(errors="replace")
    except OSError:
        return
    conds: list[str | None] = []  # the CONFIG symbol each open if-block requires (None: not a positive test)
    for n, line in _makefile_lines(text):
        s = line.strip()
        m = _IF.match(s)
        if m:
            kind, rest = m.groups()
            tested = _IFSYM.search(rest)
            positive = kind == "ifdef" or (kind == "ifeq" and ",y)" in rest.replace(" ", "")) or \
                (kind == "ifneq" and ",)" in rest.replace(" ", "")) or (kind == "ifneq" and ",n)" in rest)
            conds.append(tested.group(1) if tested and positive else None)
            continue
        if s.startswith("else"):
            if conds:
                conds[-1] = None
            continue
        if s.startswith("endif"):
            if conds:
                conds.pop()
            continue
        a = _ASSIGN.match(line)
        if not a:
            continue
        lhs = _LHS.match(a.group(1))
        if not lhs:
            continue
        base: str = lhs.group(1)
        sym: str | None = lhs.group(2)
        for item in a.group(2).split():
            if "$" in item or not (item.endswith(".o") or item.endswith("/")):
                continue
            item = os.path.normpath(item) + ("/" if item.endswith("/") else "")
            parent = None if base in ("obj", "lib", "core", "drivers", "libs", "subdir") else base + ".o"
            gate_syms: list[str | None] = [c for c in conds if c]
            gate_syms += [sym] if sym else []
            for g in gate_syms or [None]:
                objects[(d, item)].append((g, parent, mk, n))


def index(root: Path, version: str = "") -> SourceMap:
    """Read a kernel source tree: every initcall's source file, every Makefile's object gates.
    About 30 s on a 2-core machine for Linux 6.1; :func:`load_or_index` caches it."""
    initcalls: dict[str, list[str]] = defaultdict(list)
    ttys: dict[str, list[str]] = defaultdict(list)
    filesystems: dict[str, list[str]] = defaultdict(list)
    drivers: dict[str, list[str]] = {}
    platforms: set[str] = set()
    objects: dict[tuple[str, str], list[tuple[str | None, str | None, str, int]]] = defaultdict(list)
    skip = {"Documentation", "tools", "samples", "scripts", "LICENSES", ".git"}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        rel = "" if rel == "." else rel
        if not rel:
            dirnames[:] = [x for x in dirnames if x not in skip]
        for name in filenames:
            if name == "Kconfig.platforms":
                text = (Path(dirpath) / name).read_text(errors="replace")
                platforms.update(re.findall(r"^config\s+(\w+)", text, re.M))
            elif name in ("Makefile", "Kbuild"):
                _read_makefile(root, rel, name, objects)
            elif name.endswith(".c"):
                try:
                    data = (Path(dirpath) / name).read_bytes()
                except OSError:
                    continue
                path = f"{rel}/{name}" if rel else name
                for table, rx in ((ttys, _DEV_NAME), (filesystems, _FS_TYPE)):
                    for m in rx.finditer(data):
                        if path not in table[m.group(1).decode()]:
                            table[m.group(1).decode()].append(path)
                if _DRIVER_STRUCT.search(data):
                    drivers[path] = sorted({m.group(1).decode() for m in _DRIVER_NAMES.finditer(data)})
                for m in _INITCALL.finditer(data):
                    fn = m.group(1).decode()
                    if path not in initcalls[fn]:
                        initcalls[fn].append(path)
                for m in _DRIVER.finditer(data):
                    line_start = data.rfind(b"\n", 0, m.start()) + 1
                    if data[line_start:m.start()].strip().startswith(b"#define"):
                        continue
                    word = data[m.start():m.end()].strip().split(b"(")[0].strip()
                    if word in _DRIVER_SKIP:
                        continue
                    fn = m.group(1).decode() + "_init"
                    if path not in initcalls[fn]:
                        initcalls[fn].append(path)
    return SourceMap(root, version, dict(initcalls), dict(ttys), dict(filesystems), drivers,
                     sorted(platforms), dict(objects))


def load_or_index(root: Path, version: str = "") -> SourceMap:
    """The tree's map, from ``root/.bootlens-sourcemap.json`` when made before."""
    cache = root / ".bootlens-sourcemap.json"
    sm = SourceMap.load(root, cache)
    if sm is not None:
        return sm
    sm = index(root, version)
    try:
        sm.save(cache)
    except OSError:
        pass
    return sm
