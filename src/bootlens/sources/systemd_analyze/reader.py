"""Readers of what ``systemd-analyze`` prints: ``time``, ``blame``, ``critical-chain``, ``dump``
and ``plot`` (the SVG, and ``plot --json=short`` from systemd 254 on).

These are not line parsers of a console log: each function takes the whole text one command
printed and returns a typed, immutable result with its warnings (how many lines were not
understood). None raises on bad input.

Clocks, as systemd-analyze itself defines them:

- ``time``: durations, each a stage of the boot (firmware, loader, kernel, initrd, userspace);
  "X reached after N in userspace" counts from the start of user space (after the initrd).
- ``blame``: the time each unit spent activating (ActiveEnter - InactiveExit).
- ``critical-chain``: ``@`` is counted from the start of user space: when the unit started
  activating if a ``+`` (the time it took) follows, else when it became active
  (src/analyze/analyze-critical-chain.c); in the Mandriva case network-up.service
  "@5.286s +12.849s" is followed by network.target "@18.137s".
- ``plot``: x is time since the kernel started (the firmware and loader bars are negative), at
  100 pixels a second, printed to 3 decimals: 10 us resolution. From systemd 255 each unit row
  carries a ``<title>`` with its activating/activated times in microseconds and its
  dependencies; those are read in preference to the pixels.
- ``dump``: wall-clock timestamps to the second ("Thu 2017-04-27 08:12:54 CEST"); too coarse to
  time units, but the only place with every unit's dependencies on older systemd.

systemd 252 (Debian 12) has no JSON for blame, critical-chain or time (checked: ``--json`` is
accepted by ``plot`` only from 254, as a table of name/activated/activating/time/deactivated/
deactivating in microseconds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from ...core.lines import whole_chars
from ...core.model import NS_PER_MS, NS_PER_S, NS_PER_US
from ...core.numbers import TIME_NS_MAX, to_int
# the sniff lives apart so that sniffing a log does not import the readers (start-up)
from . import _BLAME, _CHAIN_HEADER, _SPAN, _lines, user_manager
from . import detect as detect

# systemd's format_timespan() units, largest first (src/basic/time-util.c); "us" is "μs" in a
# UTF-8 locale since systemd 247.
_UNIT_NS: dict[str, int] = {
    "y": 31_557_600 * NS_PER_S, "month": 2_629_800 * NS_PER_S, "w": 604_800 * NS_PER_S,
    "d": 86_400 * NS_PER_S, "h": 3_600 * NS_PER_S, "min": 60 * NS_PER_S, "s": NS_PER_S,
    "ms": NS_PER_MS, "us": NS_PER_US, "μs": NS_PER_US, "µs": NS_PER_US, "ns": 1,
}
_PART = re.compile(r"(\d+)(?:\.(\d+))?\s*(month|min|ms|us|μs|µs|ns|y|w|d|h|s)\b")


def parse_timespan(text: str) -> int | None:
    """systemd's time format ("1min 2.345s", "345ms", "12us", "1h 2min") in integer ns, or None
    when the text is not one (exact: no float rounding), or is one past TIME_NS_MAX (a damaged
    line's digit run: every number bounded, core.numbers)."""
    s = text.strip()
    if not s:
        return None
    total, pos = 0, 0
    for m in _PART.finditer(s):
        if s[pos:m.start()].strip():
            return None
        whole, frac, unit = m.groups()
        scale = _UNIT_NS[unit]
        n = to_int(whole, TIME_NS_MAX // scale)
        if n is None:
            return None
        total += n * scale
        if frac:
            frac = frac[:18]  # past 1e-18 of a year nothing is left of a nanosecond
            total += int(frac) * scale // 10 ** len(frac)
        if total > TIME_NS_MAX:
            return None
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        return None
    return total


def _skipped(what: str, n: int) -> tuple[str, ...]:
    return (f"{what}: {n} line{'s' if n != 1 else ''} not understood",) if n else ()


# ---------------------------------------------------------------------------------------- time

@dataclass(frozen=True, slots=True)
class StartupTimes:
    """``systemd-analyze time``: each stage's duration, None when systemd did not print it."""

    firmware_ns: int | None = None
    loader_ns: int | None = None
    kernel_ns: int | None = None
    initrd_ns: int | None = None
    userspace_ns: int | None = None
    total_ns: int | None = None
    target: str | None = None  # "graphical.target reached after ..."
    target_ns: int | None = None  # ... counted from the start of user space
    line_no: int = 0  # the "Startup finished" line
    warnings: tuple[str, ...] = ()


_STARTUP = re.compile(r"Startup finished in (.*?)(?:= ?(" + _SPAN + r"))?\s*$")
_STAGE = re.compile(r"(" + _SPAN + r")\((firmware|loader|kernel|initrd|userspace)\)")
_REACHED = re.compile(r"(\S+) reached after (" + _SPAN + r")in userspace")


def read_time(text: str) -> StartupTimes:
    """Read ``systemd-analyze time`` (or any text holding its two lines, e.g. a journal's
    ``Startup finished`` message)."""
    stages: dict[str, int] = {}
    total = target = target_ns = None
    line_no = 0
    notes: list[str] = []
    for no, line in _lines(text):
        if not line_no and (m := _STARTUP.search(line)) and not user_manager(line):
            line_no = no
            for sm in _STAGE.finditer(m.group(1)):
                ns = parse_timespan(sm.group(1))
                if ns is not None:
                    stages[sm.group(2)] = ns
            total = parse_timespan(m.group(2)) if m.group(2) else None
        elif target is None and (m := _REACHED.search(line)):
            target, target_ns = m.group(1), parse_timespan(m.group(2))
        elif "Bootup is not yet finished" in line:
            notes.append(f"line {no}: the boot had not finished when systemd-analyze ran")
    if not line_no and not notes:
        notes.append("no 'Startup finished' line")
    if total is None and stages:  # systemd prints no "= total" for a user-space-only boot
        total = sum(stages.values())
    return StartupTimes(stages.get("firmware"), stages.get("loader"), stages.get("kernel"),
                        stages.get("initrd"), stages.get("userspace"), total, target, target_ns,
                        line_no, tuple(notes))


# --------------------------------------------------------------------------------------- blame

@dataclass(frozen=True, slots=True)
class BlameRow:
    """One row of ``systemd-analyze blame``: a unit and the time it spent activating."""

    unit: str
    ns: int
    line_no: int


@dataclass(frozen=True, slots=True)
class Blame:
    """``systemd-analyze blame``, slowest first as printed."""

    rows: tuple[BlameRow, ...]
    warnings: tuple[str, ...] = ()

    def by_unit(self) -> dict[str, int]:
        """Unit name -> activation time in ns."""
        return {r.unit: r.ns for r in self.rows}


def read_blame(text: str) -> Blame:
    """Read ``systemd-analyze blame``."""
    rows: list[BlameRow] = []
    bad = 0
    for no, line in _lines(text):
        if not line.strip():
            continue
        m = _BLAME.match(line)
        ns = parse_timespan(m.group(1)) if m else None
        if m is None or ns is None:
            bad += 1
            continue
        rows.append(BlameRow(m.group(2), ns, no))
    return Blame(tuple(rows), _skipped("blame", bad))


# ------------------------------------------------------------------------------ critical-chain

@dataclass(frozen=True, slots=True)
class ChainNode:
    """A unit of ``systemd-analyze critical-chain``. ``parent`` is the index of the node above
    it in the tree (the unit that waited for it), None for the root."""

    unit: str
    at_ns: int | None  # "@" from the start of user space: activation start with a "+", else active
    duration_ns: int | None  # "+": time to start; None when systemd printed none
    depth: int
    parent: int | None
    line_no: int


@dataclass(frozen=True, slots=True)
class CriticalChain:
    """``systemd-analyze critical-chain``: its nodes in printed order (roots at depth 0)."""

    nodes: tuple[ChainNode, ...]
    warnings: tuple[str, ...] = ()


# The tree is drawn two columns a level: "│ " or "  " for each level above, then "└─" or
# "├─" (with --no-pager in a non-UTF-8 locale: "| ", "`-", "|-").
_SPAN_IN_LINE = r"(?:\d+(?:\.\d+)?(?:month|min|ms|us|μs|µs|ns|y|w|d|h|s)(?: (?=\d))?)+"
_CHAIN = re.compile(r"^(?P<prefix>(?:│ |\| |  )*)(?P<branch>└─|├─|`-|\|-)?(?P<unit>\S+)"
                    r"(?: @(?P<at>" + _SPAN_IN_LINE + r"))?(?: \+(?P<plus>" + _SPAN_IN_LINE + r"))?\s*$")


def read_critical_chain(text: str) -> CriticalChain:
    """Read ``systemd-analyze critical-chain [UNIT...]``; several trees may follow each other."""
    nodes: list[ChainNode] = []
    stack: list[int] = []  # index of the last node at each depth
    bad = 0
    for no, line in _lines(text):
        if not line.strip() or line.lstrip().startswith(_CHAIN_HEADER):
            continue
        # a tree copied from a web page has its indentation as no-break spaces
        m = _CHAIN.match(line.rstrip().replace("\xa0", " "))
        if m is None:
            bad += 1
            continue
        prefix, branch, unit, at, plus = m.group("prefix", "branch", "unit", "at", "plus")
        depth = len(prefix) // 2 + (1 if branch else 0)
        if depth > len(stack):  # a level skipped: the line is not a tree row we understand
            bad += 1
            continue
        del stack[depth:]
        parent = stack[depth - 1] if depth else None
        stack.append(len(nodes))
        nodes.append(ChainNode(unit, parse_timespan(at) if at else None,
                               parse_timespan(plus) if plus else None, depth, parent, no))
    return CriticalChain(tuple(nodes), _skipped("critical-chain", bad))


# ---------------------------------------------------------------------------------------- dump

DEPENDENCY_KINDS = frozenset((
    "Requires", "Requisite", "Wants", "BindsTo", "PartOf", "Upholds", "RequiredBy", "RequisiteOf",
    "WantedBy", "BoundBy", "UpheldBy", "ConsistsOf", "Conflicts", "ConflictedBy", "Before", "After",
    "OnSuccess", "OnSuccessOf", "OnFailure", "OnFailureOf", "Triggers", "TriggeredBy",
    "PropagatesReloadTo", "ReloadPropagatedFrom", "PropagatesStopTo", "StopPropagatedFrom",
    "JoinsNamespaceOf", "References", "ReferencedBy", "InSlice", "SliceOf"))
_TIMESTAMPS = {"State Change Timestamp": "state_change", "Inactive Exit Timestamp": "inactive_exit",
               "Active Enter Timestamp": "active_enter", "Active Exit Timestamp": "active_exit",
               "Inactive Enter Timestamp": "inactive_enter"}


@dataclass(frozen=True, slots=True)
class Dependency:
    """One dependency line of a unit in ``systemd-analyze dump``: "After: basic.target"."""

    kind: str  # "Requires", "Wants", "After", "Before", ... as systemd names it
    unit: str


@dataclass(frozen=True, slots=True)
class WallTime:
    """A dump timestamp as printed, and its wall-clock seconds when it could be read (the time
    zone abbreviation is kept in ``text`` only: differences within one dump are right)."""

    text: str
    wall_s: int | None


@dataclass(frozen=True, slots=True)
class DumpUnit:
    """One ``-> Unit NAME:`` section of ``systemd-analyze dump``."""

    unit: str
    line_no: int
    description: str = ""
    load_state: str = ""
    active_state: str = ""
    fragment_path: str = ""
    names: tuple[str, ...] = ()  # aliases ("Name:" lines)
    dependencies: tuple[Dependency, ...] = ()
    state_change: WallTime | None = None
    inactive_exit: WallTime | None = None  # activation started
    active_enter: WallTime | None = None  # activation done
    active_exit: WallTime | None = None
    inactive_enter: WallTime | None = None

    def depends(self, kind: str) -> tuple[str, ...]:
        """The units named by this unit's dependencies of one kind ("After", "Wants", ...)."""
        return tuple(d.unit for d in self.dependencies if d.kind == kind)


@dataclass(frozen=True, slots=True)
class Dump:
    """``systemd-analyze dump``: the units in printed order."""

    units: tuple[DumpUnit, ...]
    warnings: tuple[str, ...] = ()

    def unit(self, name: str) -> DumpUnit | None:
        """The unit of this name (or alias), or None."""
        for u in self.units:
            if u.unit == name or name in u.names:
                return u
        return None


_WALL = re.compile(r"^\w{3} (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def _wall(value: str) -> WallTime | None:
    if value in ("n/a", ""):
        return None
    m = _WALL.match(value)
    s = None
    if m:
        try:
            s = int((datetime.fromisoformat(m.group(1)) - datetime(1970, 1, 1)).total_seconds())
        except ValueError:
            s = None
    return WallTime(value, s)


def read_dump(text: str) -> Dump:
    """Read ``systemd-analyze dump`` in one pass over its lines (it runs to megabytes). Manager
    sections (timestamps of the manager, jobs, the "-> Job" lists) are skipped silently; a
    unit's lines that are neither "Key: value" nor known are counted."""
    units: list[DumpUnit] = []
    cur: dict[str, object] | None = None
    deps: list[Dependency] = []
    names: list[str] = []
    bad = 0

    def close() -> None:
        if cur is not None:
            units.append(DumpUnit(**cur, names=tuple(names), dependencies=tuple(deps)))  # type: ignore[arg-type]

    for no, line in _lines(text):
        stripped = line.strip()
        if stripped.startswith("-> Unit ") and stripped.endswith(":"):
            close()
            cur, deps, names = {"unit": stripped[8:-1], "line_no": no}, [], []
            continue
        if stripped.startswith("-> "):  # "-> Job 12:" and other non-unit sections end a unit
            close()
            cur = None
            continue
        if cur is None or not stripped:
            continue
        key, sep, value = stripped.partition(": ")
        if not sep:
            if not stripped.endswith(":"):
                bad += 1
            continue
        if key in DEPENDENCY_KINDS:
            # "After: basic.target (origin-file)" since 236; plain "After: basic.target" before
            deps.append(Dependency(key, value.split(" (", 1)[0].strip()))
        elif key in _TIMESTAMPS:
            cur[_TIMESTAMPS[key]] = _wall(value)
        elif key == "Description":
            cur["description"] = value
        elif key == "Unit Load State":
            cur["load_state"] = value
        elif key == "Unit Active State":
            cur["active_state"] = value
        elif key == "Fragment Path":
            cur["fragment_path"] = value
        elif key == "Name":
            names.append(value)
    close()
    return Dump(tuple(units), _skipped("dump", bad))


# ---------------------------------------------------------------------------------------- plot

@dataclass(frozen=True, slots=True)
class PlotUnit:
    """One unit row of ``systemd-analyze plot``. Times in ns since the kernel started; None
    where the plot has no such bar (activating -> active is the start job, as blame counts)."""

    unit: str
    activating_ns: int
    active_ns: int | None
    deactivating_ns: int | None
    deactivated_ns: int | None
    time_ns: int | None  # the "(1.234s)" after the name: blame's figure, to the millisecond
    dependencies: tuple[Dependency, ...] = ()  # from the row's tooltip (systemd >= 255)
    line_no: int = 0  # the SVG's line holding the row's label (0: a JSON table's row)

    @property
    def activation_ns(self) -> int | None:
        """Time spent activating, from the bars."""
        return None if self.active_ns is None else self.active_ns - self.activating_ns

    def depends(self, kind: str) -> tuple[str, ...]:
        """The units of one dependency kind in the row's tooltip ("After", "Wants", ...)."""
        return tuple(d.unit for d in self.dependencies if d.kind == kind)


@dataclass(frozen=True, slots=True)
class Plot:
    """``systemd-analyze plot``: the boot's stage bars and the unit rows, ns since kernel start.
    ``userspace_ns`` is where the "systemd" bar starts: the start of user space proper."""

    units: tuple[PlotUnit, ...]
    firmware_ns: int | None = None  # negative: before the kernel
    loader_ns: int | None = None
    kernel_end_ns: int | None = None
    initrd_ns: int | None = None
    userspace_ns: int | None = None
    startup: StartupTimes | None = None  # the "Startup finished" text at the top
    host: str = ""  # the "OS hostname (Linux ...) arch" line
    source: str = "svg"  # "svg", "svg+title" (the tooltips were read) or "json"
    warnings: tuple[str, ...] = ()


_PX_NS = NS_PER_S // 100  # 100 px a second (SCALE_X, arg_svg_timescale 1)
_TOP_TEXT = re.compile(r'<text x="20" y="(30|50)">([^<]*)</text>', re.S)
_NAME_TIME = re.compile(r"^(\S+) \((" + _SPAN + r")\)\s*$")
_STAGES = ("firmware", "loader", "kernel", "initrd")


def _px(x: str) -> int | None:
    """Pixels ("2056.695") to ns, exactly: 1 px is 10 ms, 0.001 px is 10 us; None for a number
    that is none or lies past TIME_NS_MAX either way."""
    neg = x.startswith("-")
    whole, _, frac = x.lstrip("-").partition(".")
    px = to_int(whole or "0", TIME_NS_MAX // _PX_NS - 1)
    ms = to_int(frac[:3].ljust(3, "0"), 999) if frac else 0
    if px is None or ms is None:
        return None
    ns = px * _PX_NS + ms * _PX_NS // 1000
    return -ns if neg else ns


def _title_time(value: str) -> int | None:
    """A tooltip's "Activating: 2.050": systemd prints seconds, a dot and the microseconds as
    an integer of at least 3 digits ("%.3" PRI_USEC), so "2.050" is 2 s + 50 us, not 2.05 s."""
    whole, dot, us = value.strip().partition(".")
    s, u = to_int(whole, TIME_NS_MAX // NS_PER_S // 2), to_int(us, TIME_NS_MAX // NS_PER_US // 2)
    if s is None or not dot or u is None:
        return None
    return s * NS_PER_S + u * NS_PER_US


def _tooltip(body: str) -> tuple[int | None, int | None, tuple[Dependency, ...]]:
    activating = activated = None
    deps: list[Dependency] = []
    kind = None
    for raw in body.splitlines():
        if raw.startswith("Activating: "):
            activating = _title_time(raw[12:])
        elif raw.startswith("Activated: "):
            activated = _title_time(raw[11:])
        elif raw.endswith(":") and raw[:-1] in DEPENDENCY_KINDS:
            kind = raw[:-1]
        elif kind and raw.startswith("  ") and raw.strip():
            deps.append(Dependency(kind, raw.strip()))
    return activating, activated, tuple(deps)


def read_plot(text: str) -> Plot:
    """Read ``systemd-analyze plot`` (SVG, from the systemd versions seen: 239 to 257) or its
    ``--json=short`` table (254 on)."""
    if text.lstrip().startswith("["):
        return read_plot_json(text)
    start = text.find('<rect class="box"')
    if start < 0:
        return Plot((), warnings=("plot: no systemd-analyze chart (no box) in this SVG",))
    tops = {m.group(1): m for m in _TOP_TEXT.finditer(text[:start])}
    head = {k: m.group(2) for k, m in tops.items()}
    # the heading read on the file's own lines (the lines before it as empty ones): its "Startup
    # finished" is cited where it is in the SVG (line 43 of systemd's), not at the <?xml line
    startup = read_time("\n" * text.count("\n", 0, tops["50"].start(2)) + head["50"]) if "50" in tops else None
    # The chart is the first group; the legend ("Activating", "Active", ...) is a second one.
    # From systemd 255 each unit row is a <g> of its own, so look for the legend's translate.
    end = text.find('<g transform="translate(20,100)">', start)
    body = text[start:end if end > 0 else len(text)]
    stage: dict[str, tuple[int, int]] = {}
    units: list[PlotUnit] = []
    rects: dict[str, tuple[int, int]] = {}  # the bars of the row being read, by class
    tip: str | None = None  # the row's tooltip (systemd >= 255)
    titled = False
    bad = 0
    line, seen = text.count("\n", 0, start) + 1, 0  # the file's line at body[seen]
    for m in _ROW_ITEM.finditer(body):
        if m.group("title") is not None:
            tip, titled = m.group("title"), True
            continue
        if m.group("cls") is not None:
            x, w = _px(m.group("x")), _px(m.group("w"))
            if x is None or w is None:
                bad += 1  # a bar past any time: not drawn, counted
            else:
                rects[m.group("cls")] = (x, x + w)
            continue
        label = m.group("label")
        if label in _STAGES and label in rects:
            stage[label] = rects[label]
        elif label == "systemd" and "active" in rects:
            stage["systemd"] = rects["active"]
        elif "activating" in rects:
            line += body.count("\n", seen, m.start("label"))
            seen = m.start("label")
            units.append(_plot_unit(label, rects, tip, line))
        else:
            bad += 1
        rects, tip = {}, None
    fw, ld = stage.get("firmware"), stage.get("loader")
    return Plot(tuple(units), fw[0] if fw else None, ld[0] if ld else None,
                stage["kernel"][1] if "kernel" in stage else None,
                stage["initrd"][0] if "initrd" in stage else None,
                stage["systemd"][0] if "systemd" in stage else None, startup,
                " ".join(head.get("30", "").split()), "svg+title" if titled else "svg",
                _skipped("plot", bad))


_ROW_ITEM = re.compile(
    r"<title>(?P<title>.*?)</title>"
    r'|<rect class="(?P<cls>\w[\w-]*)" x="(?P<x>-?[\d.]+)" y="-?[\d.]+" width="(?P<w>-?[\d.]+)"'
    r'|<text class="(?:left|right)" x="-?[\d.]+" y="-?[\d.]+">(?P<label>[^<]*)</text>', re.S)


def _plot_unit(label: str, rects: dict[str, tuple[int, int]], tip: str | None, line_no: int) -> PlotUnit:
    nm = _NAME_TIME.match(label)
    name, span = (nm.group(1), parse_timespan(nm.group(2))) if nm else (label.strip(), None)
    a0, a1 = rects["activating"]
    active = rects.get("active")
    deact = rects.get("deactivating")
    deps: tuple[Dependency, ...] = ()
    if tip is not None:  # microseconds, where the pixels have 10 us
        t0, t1, deps = _tooltip(tip)
        a0 = t0 if t0 is not None else a0
        a1 = t1 if t1 is not None else a1
    return PlotUnit(_unescape(name), a0, a1, active[1] if active else None,
                    deact[1] if deact else None, span, deps, line_no)


def _unescape(s: str) -> str:
    """The SVG's XML entities (a unit name may hold "&", systemd escapes nothing else)."""
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


def read_plot_json(text: str) -> Plot:
    """Read ``systemd-analyze plot --json=short`` (systemd >= 254): a list of objects with
    name, activated, activating, time, deactivated, deactivating in microseconds."""
    try:
        import json  # here: only a JSON plot needs it (start-up)

        rows = json.loads(text)
    except ValueError as e:
        return Plot((), source="json", warnings=(f"plot: not JSON ({e})",))
    units: list[PlotUnit] = []
    bad = 0
    for row in rows if isinstance(rows, list) else []:
        try:
            us = {k: row.get(k) for k in ("activating", "activated", "deactivating", "deactivated", "time")}
            ns = {k: (int(v) * NS_PER_US if isinstance(v, int) and not isinstance(v, bool) else None)
                  for k, v in us.items()}
            name, act = row["name"], ns["activating"]
            if not isinstance(name, str) or act is None:
                raise TypeError
        except (AttributeError, KeyError, TypeError):
            bad += 1
            continue
        units.append(PlotUnit(whole_chars(name), act, ns["activated"], ns["deactivating"], ns["deactivated"], ns["time"]))
    if not isinstance(rows, list):
        bad += 1
    return Plot(tuple(units), source="json", warnings=_skipped("plot json", bad))

