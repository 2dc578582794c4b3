"""The Kconfig symbols a traced boot used, each with the log line (or target file) it rests on.

What counts as used (:func:`derive`):

- every built-in initcall that ran and returned 0 (``initcall_debug``): the symbols gating its
  source file (:mod:`.sourcemap`); a name defined in several files is narrowed to the files the
  running kernel built (its config has every gate at ``y``), else all are kept;
- a module's init that ran: the same symbols, built in (the boot needed the module);
- the console the boot printed on (``console=ttyAMA0``): its tty driver and that driver's
  ``_CONSOLE`` option;
- the filesystems the target's init scripts mount (``mount -t devtmpfs``);
- the initramfs's compression (its first bytes), which the kernel must unpack.

What did not run, or returned an error (``-19``: no such hardware), is not used: left out of
the kernel built for the boot (:mod:`.kconfig`). Initcalls whose function no source file
defines as an initcall are counted (``unmapped``), not guessed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from ..core.model import Boot, Event, InitcallDetail, Kind
from .sourcemap import Gate, SourceMap

_MOUNT = re.compile(r"\bmount\s+(?:-\w+\s+)*-t\s+(\w+)")
_CONSOLE = re.compile(r"(?:^|\s)console=([A-Za-z]+)\d*")
COMPRESSION_MAGIC = ((b"\x1f\x8b", "RD_GZIP", "gzip"), (b"\x28\xb5\x2f\xfd", "RD_ZSTD", "zstd"),
                     (b"\xfd7zXZ", "RD_XZ", "xz"), (b"\x02\x21\x4c\x18", "RD_LZ4", "lz4"),
                     (b"\x5d\x00\x00", "RD_LZMA", "lzma"), (b"BZh", "RD_BZIP2", "bzip2"),
                     (b"\x89LZO", "RD_LZO", "lzo"))


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a symbol is in: what the boot did (``what``, on ``line_no`` of the log, 0: a target
    file) and the kbuild line that builds it."""

    what: str
    line_no: int
    gate: Gate | None
    direct: bool = False  # the product's own use: a bound device, the console, a mount, the initramfs, programs run


@dataclass
class Derivation:
    """The symbols a boot used (symbol -> its reasons) and what could not be placed."""

    used: dict[str, list[Reason]] = field(default_factory=dict)
    unused: dict[str, list[Reason]] = field(default_factory=dict)  # built but failed (-19) or never probed
    always: int = 0  # initcalls in files every kernel builds (obj-y): nothing to choose
    unmapped: list[str] = field(default_factory=list)  # initcall functions no source file names
    initcalls: int = 0  # built-in initcalls that returned 0
    # initcalls a kernel of the used symbols alone does not build: (event, why), in log order
    dropped: list[tuple[Event, str]] = field(default_factory=list)
    platforms: list[str] = field(default_factory=list)  # SoC family symbols left out (not derivable from a boot)
    judged: list[tuple[Event, list[Gate], str, bool]] = field(default_factory=list)  # every mapped initcall

    def add(self, symbol: str, reason: Reason, into: dict[str, list[Reason]] | None = None) -> None:
        (self.used if into is None else into).setdefault(symbol, []).append(reason)

    @property
    def symbols(self) -> list[str]:
        return sorted(self.used)

    @property
    def needed(self) -> list[str]:
        """The symbols with direct evidence of the product's use (:attr:`Reason.direct`): what a
        minimal kernel keeps, leaving out every subsystem that only initialised itself."""
        return sorted(s for s, rs in self.used.items() if any(r.direct for r in rs))

    def left_out(self, keep: Set[str]) -> list[tuple[Event, str]]:
        """The initcalls a kernel of ``keep`` does not build: the dropped ones, and those that ran
        but one of whose symbols is not kept (in log order)."""
        out = list(self.dropped)
        seen = {e.line_no for e, _ in out}
        for e, syms, outcome, ok in self.judged:
            if ok and e.line_no not in seen and any(g.symbol not in keep for g in syms):
                out.append((e, f"{outcome}; only initialised itself"))
        return sorted(out, key=lambda x: x[0].line_no)


def _narrow(sm: SourceMap, files: list[str], running: Mapping[str, str] | None) -> list[str]:
    """Of the files defining an initcall name, those the running kernel built."""
    if len(files) < 2 or not running:
        return files
    def built(f: str, values: tuple[str, ...]) -> bool:
        return all(running.get(g.symbol) in values for g in sm.symbols(f, running) or [] if g.symbol)

    # a built-in initcall: every gate y (an `ifneq ($(CONFIG_X),)` block also passes with X=m)
    return [f for f in files if built(f, ("y",))] or [f for f in files if built(f, ("y", "m"))] or files


def _node(probe: Event) -> str:
    """A device's node name: ``pl011`` of ``9000000.pl011``, ``pcie`` of ``4010000000.pcie``."""
    head, dot, rest = probe.name.partition(".")
    node = rest if dot and all(c in "0123456789abcdef" for c in head) else probe.name
    return node.split(".")[0].split("@")[0].split(":")[0]


def _owners(calls: list[Event], probes: list[Event], words_of: Mapping[int, set[str]]) -> dict[int, Event]:
    """Which initcall bound each successful probe (probe line -> its initcall): the one open
    when the probe printed, if only one was (the init thread runs built-in initcalls one at a
    time); when several were (modules load in parallel threads, their lines interleave), the one
    whose driver or file names carry the device's node name, if only one does; else none."""
    owners: dict[int, Event] = {}
    for p in probes:
        open_ = [c for c in calls if c.line_no < p.line_no <= (c.end_line_no or c.line_no)]
        if len(open_) > 1:
            node = _node(p)
            open_ = [c for c in open_ if node in words_of.get(c.line_no, set())]
        if len(open_) == 1:
            owners[p.line_no] = open_[0]
    return owners


def _bound(call: Event, mine: list[Event], free: list[Event], words: set[str], names: list[str],
           common: Mapping[str, int]) -> Event | None:
    """The device a driver's initcall bound: a successful probe it owned (:func:`_owners`: the
    device was there when the driver registered), else one made later (``of_platform_default_
    populate_init`` creates the devices of the device tree) whose node name names the driver: a
    driver or compatible name, or a word of those and of its file's name (``uart-pl011``) that at
    most :data:`SPECIFIC` driver files carry. Only probes no driver's initcall owned (``free``)
    are matched by name: a generic node name (``pcie``, ``pinctrl``) names a kind, not a driver."""
    if mine:
        return mine[0]
    for p in free:
        node = _node(p)
        if node in names or (node in words and common.get(node, 0) <= SPECIFIC):
            return p
    return None


SPECIFIC = 2  # a device's node name names a driver when at most this many driver files carry it as a word


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_,.]", name) if w]


def word_counts(sm: SourceMap) -> dict[str, int]:
    """How many driver files carry each word in their driver and compatible names."""
    counts: dict[str, int] = {}
    for names in sm.drivers.values():
        for w in {w for n in names for w in _words(n)}:
            counts[w] = counts.get(w, 0) + 1
    return counts


def derive(boot: Boot, sm: SourceMap, running: Mapping[str, str] | None = None,
           target_files: Mapping[str, bytes] | None = None, cmdline: str = "",
           initramfs: bytes | None = None) -> Derivation:
    """The symbols ``boot`` used (see the module's doc). ``running``: the config of the kernel
    that booted (symbol without CONFIG_ -> y/m/n), to narrow a name several files define;
    ``target_files``: the root filesystem's init files; ``cmdline``: the kernel command line;
    ``initramfs``: the initramfs image (its first bytes say how it is compressed).

    Where one of several Makefile lines builds a file (kernel/trace/ under CONFIG_TRACING or
    CONFIG_FUNCTION_TRACER, ...), a second pass prefers the line whose symbols the first pass
    found needed anyway."""
    first = _derive(boot, sm, running, target_files, cmdline, initramfs, frozenset())
    return _derive(boot, sm, running, target_files, cmdline, initramfs, frozenset(first.used))


def _derive(boot: Boot, sm: SourceMap, running: Mapping[str, str] | None, target_files: Mapping[str, bytes] | None,
            cmdline: str, initramfs: bytes | None, prefer: Set[str]) -> Derivation:
    d = Derivation()
    bound = [e for e in boot.events if e.kind is Kind.PROBE and getattr(e.detail, "ret", None) == 0]
    # each probe's initcall: a driver's own probes are its; the others are matched by name
    calls = [e for e in boot.events if e.kind is Kind.INITCALL]
    driver_words: dict[int, set[str]] = {}
    for e in calls:
        files = sm.files_for(e.name)
        if files and all(f in sm.drivers for f in files):
            driver_words[e.line_no] = {w for f in files for n in [*sm.drivers[f], os.path.basename(f)[:-2]]
                                       for w in _words(n)}
    owners = _owners(calls, bound, driver_words)
    owned: dict[int, list[Event]] = {}
    for p in bound:
        c = owners.get(p.line_no)
        if c is not None and c.line_no in driver_words:
            owned.setdefault(c.line_no, []).append(p)
    free = [p for p in bound if owners.get(p.line_no) is None or owners[p.line_no].line_no not in driver_words]
    common = word_counts(sm)
    platforms = set(sm.platforms)
    loaded_module = False
    judged: list[tuple[Event, list[Gate], str, bool]] = []
    for e in boot.events:
        if e.kind is not Kind.INITCALL or not isinstance(e.detail, InitcallDetail):
            continue
        det = e.detail
        fn = e.name
        files = _narrow(sm, sm.files_for(fn), running)
        ok = det.returned and det.ret == 0
        if ok and det.module is None:
            d.initcalls += 1
        if ok and det.module is not None:
            loaded_module = True
        if not files:
            if ok:
                d.unmapped.append(fn)
            continue
        gates = [g for f in files for g in (sm.symbols(f, running, prefer) or [])]
        syms = [g for g in gates if g.symbol]
        if not syms and ok:
            d.always += 1
        outcome = det.outcome + (f" (module {det.module})" if det.module else "")
        dev: Event | None = None
        if ok:
            driver_files = [f for f in files if f in sm.drivers]
            if driver_files and len(driver_files) == len(files):
                dev = _bound(e, owned.get(e.line_no, []), free, driver_words.get(e.line_no, set()),
                             [n for f in files for n in sm.drivers[f]], common)
                if dev is None:
                    ok = False
                    outcome = "registered a driver that bound no device"
                else:
                    outcome += f", its driver bound {dev.name} (line {dev.line_no})"
        plat = [g.symbol for g in syms if g.symbol in platforms]
        family_ok = ok and dev is not None  # a SoC family's driver that bound a device: this is that SoC
        if plat and ok and not family_ok:
            ok = False
            outcome = f"built for a SoC family ({', '.join(dict.fromkeys(p for p in plat if p))})"
        judged.append((e, syms, outcome, ok))
        # the product's own use: a driver that bound its device, a module it loaded, an executable
        # format (user space ran programs); the rest only initialised itself
        direct = ok and (dev is not None or det.module is not None or any(f.startswith("fs/binfmt_") for f in files))
        for g in syms:
            assert g.symbol is not None
            if g.symbol in platforms and not family_ok:
                if g.symbol not in d.platforms:
                    d.platforms.append(g.symbol)
                continue
            d.add(g.symbol, Reason(f"initcall {fn} {outcome}", e.line_no, g, direct), None if ok else d.unused)
    # the console: its tty driver and that driver's console option
    for name in dict.fromkeys(_CONSOLE.findall(cmdline)):
        for f in sm.ttys.get(name, []):
            try:
                text = (sm.root / f).read_text(errors="replace")
            except OSError:
                text = ""
            for g in sm.symbols(f, running, prefer) or []:
                if g.symbol:
                    d.add(g.symbol, Reason(f"console={name}: the console's driver ({f})", 0, g, True))
                    if f"CONFIG_{g.symbol}_CONSOLE" in text:  # the driver's printk console, its own option
                        d.add(g.symbol + "_CONSOLE", Reason(f"console={name}: printk on {name} ({f})", 0, None, True))
    for path, data in sorted((target_files or {}).items()):
        for fs in dict.fromkeys(_MOUNT.findall(data.decode("latin-1"))):
            for f in sm.filesystems.get(fs, []):
                for g in sm.symbols(f, running, prefer) or []:
                    if g.symbol:
                        d.add(g.symbol, Reason(f"/{path} mounts -t {fs} ({f})", 0, g, True))
    if initramfs:
        # the initramfs is unpacked by populate_rootfs (init/initramfs.c), then decompressed
        for f in sm.files_for("populate_rootfs"):
            for g in sm.symbols(f, running, prefer) or []:
                if g.symbol:
                    d.add(g.symbol, Reason(f"the boot unpacks an initramfs ({f})", 0, g, True))
        for magic, sym, name in COMPRESSION_MAGIC:
            if initramfs.startswith(magic):
                d.add(sym, Reason(f"the initramfs is {name}-compressed (its first bytes)", 0, None, True))
                break
    if not loaded_module and "MODULES" in d.used:  # the module loader's own initcalls ran; no module did
        d.unused["MODULES"] = d.used.pop("MODULES")
    for sym in list(d.unused):
        if sym in d.used:
            del d.unused[sym]
    d.platforms = [p for p in d.platforms if p not in d.used]
    d.judged = judged
    for e, syms, outcome, ok in judged:
        if not ok and any(g.symbol not in d.used for g in syms):
            d.dropped.append((e, outcome))
    return d


def read_config(text: str) -> dict[str, str]:
    """A .config as symbol (without CONFIG_) -> value (y, m, a number, a quoted string); ``# CONFIG_X
    is not set`` -> n (the one .config reader: sources.bootdata's)."""
    from ..sources.bootdata.reader import config_lines

    return {k.removeprefix("CONFIG_"): v for k, v in config_lines(text)[0]}
