"""Boot-time budgets: a TOML file of limits per figure, checked against boots (``bootlens check``).

The budget file (docs/budget.md)::

    statistic = "median"          # default of every entry: median, mean, min, max or pNN (p90, p95)

    total = "9 s"                 # power-on (or the boot's t=0) -> ready
    [stage]
    bootloader = "1.5 s"          # a string is the limit ...
    kernel_init = { max = "2 s", statistic = "p90" }   # ... a table adds options
    [marker.ready]
    max = "8 s"                   # a marker's time from t=0
    [initcall."virtio_blk_init"]
    max = "50 ms"
    optional = true               # not measured in any boot: skipped, not failed

``initcall``, ``probe``, ``unit`` and ``process`` entries are the per-boot sums per name that
``bootlens compare`` keys them by (:mod:`bootlens.stats.compare`); total, stages and markers are the
figures of :func:`bootlens.stats.figures.boot_figures`. Durations take systemd's units (ns, us, µs, ms,
s, min, h), read by the one timespan parser the project has.

The rule
--------
Each entry's statistic is taken over the boots that measured the figure; it passes when it is
at most the limit. A failure says by how much, and whether the excess is beyond the noise: the
median's order-statistic interval (:func:`bootlens.stats.figures.median_interval`, 95 % or the level
the boots allow) lies wholly above the limit ("over with 97 % confidence"), or it reaches below
it ("within the noise of N boots": more boots, or a quieter host, would tell). An excess no
larger than the tick of the clock the figure was read off (:mod:`bootlens.core.ticks`: 4 ms for an
initcall timed on jiffies at HZ=250) is "within the clock's 4 ms tick", never beyond the noise:
the reading cannot tell it from the limit. A figure that no
boot measured fails as "not measured" (a budget that cannot be checked must not pass in
silence) unless the entry says ``optional = true``; a total or marker that some boots reached
and others never did fails too (a hung boot must not hide behind the others' statistic). A
percentile is the nearest-rank one (the value of a boot: p90 of 5 boots is the slowest), so it
never invents a time no boot took.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..timeline.analyze import BootAnalysis
from ..stats.compare import NAME_KINDS, boot_sums
from ..core.errors import InputError, ParseError, printable
from ..core.lines import clip
from ..core.model import Event, Kind
from ..sources.systemd_analyze.reader import parse_timespan
from ..core.units import short, short_range
from ..core.ticks import tick_text
from ..stats.figures import Stat, boot_figures, stat, statistics_of

if TYPE_CHECKING:
    from ..core.options import ParseOptions

KINDS = ("total", "stage", "marker", "initcall", "probe", "unit", "process")
PLURAL = {"initcall": "initcalls", "probe": "probes", "unit": "units", "process": "processes"}
# the per-name kinds, keyed as compare.py keys them (one implementation of "what an initcall's name is")
NAME_KEYS: Mapping[str, Callable[[Event], str | None]] = {
    one: dict(NAME_KINDS)[many] for one, many in PLURAL.items()}
ORIGINS = ("power-on", "first byte", "kernel start", "user space start")  # stages.Total.origin
_STAT = re.compile(r"median|mean|min|max|p([1-9][0-9]?)")
_ENTRY_KEYS = {"max", "statistic", "optional", "from"}
_AT_LINE = re.compile(r"\bat line (\d+)")


@dataclass(frozen=True, slots=True)
class Entry:
    """One limit: ``kind`` (one of KINDS), ``name`` ("" for the total), the limit in ns, the
    statistic over the boots, and the budget file's line that set it."""

    kind: str
    name: str
    max_ns: int
    statistic: str
    optional: bool = False
    origin: str | None = None  # the total only: the t=0 it must count from (None: the boot's own)
    line_no: int = 0

    @property
    def label(self) -> str:
        """How the entry reads in tables and messages: "total", "stage bootloader"."""
        return self.kind if self.kind == "total" else f"{self.kind} {self.name}"


@dataclass(frozen=True, slots=True)
class Budget:
    """A budget file, read."""

    source: str
    statistic: str
    entries: tuple[Entry, ...]


# --- reading the file ----------------------------------------------------------------------


def read_budget(path: str) -> Budget:
    """Read and check a budget file; InputError when it cannot be read, ParseError (naming
    the line) when it is not a valid budget."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise InputError(path, "not a UTF-8 text file: a budget is TOML") from None
    return parse_budget(text, path)


def parse_budget(text: str, source: str = "budget.toml") -> Budget:
    """The budget in ``text`` (TOML); ParseError(source, line, reason) for the first problem."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\s*\(at line (\d+), column \d+\)$", msg)
        raise ParseError(source, int(m.group(1)) if m else 0,
                         f"not valid TOML: {msg[:m.start()] if m else msg}") from None
    return budget_from_dict(doc, source, _key_lines(text))


def budget_from_dict(doc: Mapping[str, Any], source: str, lines: Mapping[tuple[str, ...], int] | None = None
                     ) -> Budget:
    """A budget from its parsed form (a TOML document, or the pytest marker's keywords, whose
    values may be durations as strings or tables); ``lines`` place each key path in the file.
    ParseError(source, line, reason) for the first problem (line 0 where unknown)."""
    lines = lines or {}

    def err(path: tuple[str, ...], reason: str) -> ParseError:
        for k in range(len(path), 0, -1):
            if path[:k] in lines:
                return ParseError(source, lines[path[:k]], reason)
        return ParseError(source, 0, reason)

    for k in doc:
        if k not in KINDS and k != "statistic":
            raise err((k,), f"unknown key {k!r}: a budget has statistic, {', '.join(KINDS)}")
    default = doc.get("statistic", "median")
    if not isinstance(default, str) or not _STAT.fullmatch(default):
        raise err(("statistic",), f"statistic {default!r}: use median, mean, min, max or pNN (p90, p95)")
    entries: list[Entry] = []
    for kind in doc:  # in the file's order: results read as the budget does
        if kind == "statistic":
            continue
        if kind == "total":
            entries.append(_entry("total", "", doc["total"], default, ("total",), err, lines))
            continue
        table = doc[kind]
        if not isinstance(table, dict):
            raise err((kind,), f"{kind} takes a table of names and limits, e.g. [{kind}] and below it "
                      "NAME = \"1 s\"")
        if not table:
            raise err((kind,), f"[{kind}] names nothing")
        for name, value in table.items():
            entries.append(_entry(kind, name, value, default, (kind, name), err, lines))
    if not entries:
        raise ParseError(source, 0, "no limits in this budget: e.g. total = \"9 s\" or [stage] bootloader = \"1 s\"")
    return Budget(source, default, tuple(entries))


def _entry(kind: str, name: str, value: Any, default: str, path: tuple[str, ...],
           err: Callable[[tuple[str, ...], str], ParseError], lines: Mapping[tuple[str, ...], int]) -> Entry:
    """One entry from its TOML value: a duration string, or a table with max and options."""
    what = kind if kind == "total" else f"{kind} {name!r}"
    if kind != "total" and not name.strip():
        raise err(path, f"{kind}: an empty name")
    opts: dict[str, Any] = {"max": value} if not isinstance(value, dict) else dict(value)
    for k in opts:
        if k not in _ENTRY_KEYS or (k == "from" and kind != "total"):
            keys = ", ".join(sorted(_ENTRY_KEYS - ({"from"} if kind != "total" else set())))
            raise err((*path, k), f"{what}: unknown key {k!r} (an entry has {keys})")
    if "max" not in opts:
        raise err(path, f"{what}: no max (the limit, e.g. max = \"1.5 s\")")
    raw = opts["max"]
    ns = parse_timespan(raw) if isinstance(raw, str) else None
    if ns is None:
        hint = " (a duration needs a unit: \"9 s\", \"50 ms\")" if isinstance(raw, (int, float)) else ""
        raise err((*path, "max"), f"{what}: max {raw!r} is not a duration{hint}")
    statistic = opts.get("statistic", default)
    if not isinstance(statistic, str) or not _STAT.fullmatch(statistic):
        raise err((*path, "statistic"), f"{what}: statistic {statistic!r}: use median, mean, min, max or pNN")
    optional = opts.get("optional", False)
    if not isinstance(optional, bool):
        raise err((*path, "optional"), f"{what}: optional is true or false")
    origin = opts.get("from")
    if origin is not None and origin not in ORIGINS:
        raise err((*path, "from"), f"total: from {origin!r}: use {', '.join(repr(o) for o in ORIGINS)}")
    line = next((lines[p] for p in ((*path, "max"), path) if p in lines), 0)
    return Entry(kind, name, ns, statistic, optional, origin, line)


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line each key path is written on (tomllib gives values, not positions): table
    headers and key/value lines are parsed one at a time; the first line of a path wins."""
    out: dict[tuple[str, ...], int] = {}
    header: tuple[str, ...] = ()

    def walk(d: Any, path: tuple[str, ...], no: int) -> None:
        if path:
            out.setdefault(path, no)
        if isinstance(d, dict):
            for k, v in d.items():
                walk(v, (*path, k), no)

    for no, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        try:
            d = tomllib.loads(s)
        except tomllib.TOMLDecodeError:
            # a value spanning lines (an array): its key alone is enough to place it
            left = s.split("=", 1)[0] if "=" in s else ""
            try:
                d = tomllib.loads(f"{left}= 0") if left.strip() else {}
            except tomllib.TOMLDecodeError:
                continue
        if s.startswith("[") and not s.startswith("[["):
            path: tuple[str, ...] = ()
            while isinstance(d, dict) and len(d) == 1:
                k = next(iter(d))
                path, d = (*path, k), d[k]
            header = path
            walk({}, header, no)
        else:
            for k, v in d.items():
                walk(v, (*header, k), no)
    return out


# --- checking ------------------------------------------------------------------------------


class Verdict(StrEnum):
    """What a budget entry came to; FAIL and NOT_MEASURED fail the check."""

    PASS = "pass"
    FAIL = "fail"
    NOT_MEASURED = "not measured"
    SKIPPED = "skipped"  # optional and not measured


@dataclass(frozen=True, slots=True)
class Evidence:
    """A log line behind a figure: ``source:line_no``, and what the line is."""

    source: str
    line_no: int
    what: str
    text: str = ""  # the line's message (clipped), as the log has it

    def __str__(self) -> str:
        return f"{printable(self.source)}:{self.line_no} ({self.what})" + (f": {self.text}" if self.text else "")


TEXT_MAX = 100  # characters of a log line quoted as evidence


def _ev(b: BootAnalysis, line_no: int, what: str) -> Evidence:
    """Evidence at input line ``line_no`` of boot ``b``, quoting the line."""
    lines = b.boot.lines
    i = line_no - lines.first
    text = lines.text[i].strip() if 0 <= i < len(lines) else ""
    return Evidence(b.boot.source, line_no, what, clip(text, TEXT_MAX))


@dataclass(frozen=True, slots=True)
class Result:
    """One entry checked: the statistic (ns) over the ``stat.n`` of ``boots`` boots that
    measured it, the verdict and a sentence saying why; ``beyond_noise`` for a failure: True
    when the median's interval lies wholly above the limit, False when it reaches below, None
    when there is no interval (one boot) or no failure; ``evidence``: the worst boot's lines."""

    entry: Entry
    verdict: Verdict
    figure: str  # the figure as measured: "total (power-on → ready)", "stage bootloader"
    value_ns: float | None
    stat: Stat | None
    boots: int
    over_ns: float | None
    beyond_noise: bool | None
    detail: str  # a sentence that reads after the figure: f"{figure}: {detail}"
    evidence: tuple[Evidence, ...] = ()
    worst: str | None = None  # the worst boot: "file boot N"

    @property
    def failed(self) -> bool:
        """The entry fails the check."""
        return self.verdict in (Verdict.FAIL, Verdict.NOT_MEASURED)


@dataclass(frozen=True, slots=True)
class Check:
    """A budget checked against boots: a result per entry, and every figure's statistics
    (total, stages, markers) for reports."""

    budget: Budget
    inputs: tuple[str, ...]
    boots: int
    results: tuple[Result, ...]
    figures: tuple[Stat, ...]

    @property
    def passed(self) -> bool:
        """No entry failed."""
        return not any(r.failed for r in self.results)

    @property
    def failures(self) -> tuple[Result, ...]:
        """The entries that failed, in budget order."""
        return tuple(r for r in self.results if r.failed)


def check_inputs(budget: Budget, inputs: Sequence[str], options: ParseOptions | None = None) -> Check:
    """Analyse INPUTs as ``analyze`` takes them (logs, recordings, run folders; ``options``
    a ParseOptions with the markers) and check the budget over all their boots."""
    from ..timeline.inputs import analyze_inputs

    groups = analyze_inputs(list(inputs), options)
    return check(budget, [b for g in groups for b in g.analysis.boots], tuple(inputs))


def check(budget: Budget, boots: Sequence[BootAnalysis], inputs: Sequence[str] = ()) -> Check:
    """Check every entry of ``budget`` over ``boots`` (the rule in the module docstring)."""
    figs = [boot_figures(b) for b in boots]
    results = tuple(_check_entry(e, boots, figs) for e in budget.entries)
    return Check(budget, tuple(inputs), len(boots), results, tuple(statistics_of(boots)))


def _boot_name(b: BootAnalysis) -> str:
    return f"{printable(b.boot.source)} boot {b.boot.index + 1}"


def _measure(e: Entry, b: BootAnalysis, fig: Mapping[str, int]) -> tuple[str, int, tuple[Evidence, ...]] | None:
    """(figure name, ns, evidence) of entry ``e`` in one boot, or None when the boot did not
    measure it."""
    ev: tuple[Evidence, ...]
    if e.kind == "total":
        key = next((k for k in fig if k.startswith("total (")), None)
        if key is None or (e.origin is not None and b.total.origin != e.origin):
            return None
        m = _AT_LINE.search(b.total.end)
        ev = (_ev(b, int(m.group(1)), b.total.end[:m.start()].strip() or "end"),) if m else ()
        return key, fig[key], ev
    if e.kind == "stage":
        for s in b.stages:
            if s.name == e.name and s.duration_ns is not None:
                ev = tuple(_ev(b, p.line_no, f"{where}: {p.what}")
                           for where, p in (("start", s.start), ("end", s.end)) if p is not None and p.line_no)
                return f"stage {s.name}", fig.get(("  " if s.parent else "") + s.name, s.duration_ns), ev
        return None
    if e.kind == "marker":
        key = f"marker {e.name}"
        if key not in fig:
            return None
        ev = tuple(_ev(b, x.line_no, f"marker {x.name}") for x in b.boot.events
                   if x.kind is Kind.MARKER and x.name == e.name)[:1]
        return key, fig[key], ev
    keyf = NAME_KEYS[e.kind]
    ns, _ = boot_sums(b, keyf)
    names = [n for n in ns if n == e.name or n.split(" [", 1)[0] == e.name]
    if not names:
        return None
    total = sum(ns[n] for n in names)
    events = sorted((ev for ev in b.boot.events if keyf(ev) in names), key=lambda ev: -(ev.duration_ns or 0))
    evidence = tuple(
        _ev(b, ev.line_no, f"{e.kind} {ev.name}" + ("" if ev.duration_ns is None else f", {short(ev.duration_ns)}")
                 + (f", ends at line {ev.end_line_no}" if ev.end_line_no and ev.end_line_no != ev.line_no else ""))
        for ev in events[:3])
    return f"{e.kind} {names[0] if len(names) == 1 else e.name}", total, evidence


def _uncertain(e: Entry, b: BootAnalysis) -> int | None:
    """How much later than measured the figure's end may truly lie in boot ``b``: 0 when its
    line had a time of its own, the bound of an estimate (lines.estimate_stamp), None unbounded."""
    if e.kind == "total":
        return b.total.error_ns if b.total.estimated else 0
    if e.kind == "stage":
        s = next((s for s in b.stages if s.name == e.name and s.duration_ns is not None), None)
        return s.end.error_ns if s is not None and s.end is not None and s.end.estimated else 0
    if e.kind == "marker":
        ev = next((x for x in b.boot.events if x.kind is Kind.MARKER and x.name == e.name), None)
        return ev.start.error_ns if ev is not None and ev.start is not None and ev.start.estimated else 0
    return 0


def statistic_of(s: Stat, statistic: str) -> float:
    """The entry's statistic over the boots' values: median, mean, min, max, or the
    nearest-rank percentile pNN (a value some boot took)."""
    if statistic == "median":
        return s.median
    if statistic == "mean":
        return s.mean
    if statistic == "min":
        return float(s.min)
    if statistic == "max":
        return float(s.max)
    q = int(statistic[1:])
    v = sorted(s.values) if s.values else [s.median]
    return float(v[max(1, math.ceil(q / 100 * len(v))) - 1])


def _boots(n: int) -> str:
    return f"{n} boot{'s' if n != 1 else ''}"


def _check_entry(e: Entry, boots: Sequence[BootAnalysis], figs: Sequence[Mapping[str, int]]) -> Result:
    measured = [(b, m) for b, f in zip(boots, figs) if (m := _measure(e, b, f)) is not None]
    limit = short(e.max_ns)
    if not measured:
        why = _not_measured(e, boots)
        if e.optional:
            return Result(e, Verdict.SKIPPED, e.label, None, None, len(boots), None, None,
                          f"not measured (optional): {why}")
        return Result(e, Verdict.NOT_MEASURED, e.label, None, None, len(boots), None, None,
                      f"not measured: {why}; a budget that cannot be checked fails (optional = true to allow it)")
    figure = measured[0][1][0]
    s = stat(figure, [m[1] for _, m in measured])
    assert s is not None  # measured is not empty
    value = statistic_of(s, e.statistic)
    worst_b, worst = max(measured, key=lambda bm: bm[1][1])
    of = f"{e.statistic} of {_boots(s.n)}" + (f" (measured in {s.n} of {len(boots)})" if s.n < len(boots) else "")
    ci = f"the median's {s.ci_level:.0%} interval {short_range(s.ci_low, s.ci_high)}" if s.n >= 2 else ""
    if e.kind in ("total", "marker") and s.n < len(boots) and not e.optional:
        # a boot that hung before its ready line has no total: the others' statistic must not
        # pass the gate for it
        have = {id(b) for b, _ in measured}
        hung = [b for b in boots if id(b) not in have]
        names = ", ".join(_boot_name(b) for b in hung[:3]) + (", …" if len(hung) > 3 else "")
        why = hung[0].total.end if e.kind == "total" else f"no marker {e.name!r}"
        last = hung[0].boot.last_line
        return Result(e, Verdict.FAIL, figure, value, s, len(boots), None, None,
                      f"{len(hung)} of {_boots(len(boots))} never reached it ({names}: {why}); the "
                      f"{e.statistic} of the {s.n} that did: {short(value)}, limit {limit}", (_ev(hung[0], last, "the boot's last line"),)
                      if last else (), _boot_name(hung[0]))
    if value <= e.max_ns:
        detail = f"{short(value)} ≤ {limit} ({of}), {short(e.max_ns - value)} to spare"
        if s.n >= 2 and s.ci_high > e.max_ns:
            detail += f"; {ci} reaches above the limit: within the noise"
        late = [_uncertain(e, b) for b, _ in measured]
        if any(x != 0 for x in late):
            # a pass on a time the log did not carry must not read as certain (a login prompt
            # after user space printed untimed lines may have come much later)
            most = None if None in late else max(x or 0 for x in late)
            detail += (f"; estimated in {sum(x != 0 for x in late)} of {_boots(s.n)} (a line without a time of "
                       f"its own): the true value may be {'any amount' if most is None else 'up to ' + short(most)} "
                       "later")
        return Result(e, Verdict.PASS, figure, value, s, len(boots), None, None, detail, worst[2],
                      _boot_name(worst_b))
    over = value - e.max_ns
    pct = f" (+{100 * over / e.max_ns:.1f} %)" if e.max_ns else ""
    head = f"{short(value)} > {limit} ({of}), over by {short(over)}{pct}"
    beyond: bool | None
    if s.tick_ns and over <= s.tick_ns:
        # a reading one tick over the limit may be a duration under it (jiffies: 8 ms is 4 to 12 ms)
        beyond, tail = False, f"within the clock's {tick_text(s.tick_ns)} tick (the readings move in steps of it)"
    elif s.n < 2:
        beyond, tail = None, "one boot gives no noise estimate"
    elif s.ci_low > e.max_ns:
        beyond, tail = True, f"over with {s.ci_level:.0%} confidence ({ci} lies above the limit)"
    elif e.statistic == "median":
        beyond, tail = False, f"over at the median, within the noise of {_boots(s.n)} ({ci} reaches below the limit)"
    else:
        beyond, tail = False, f"over at the {e.statistic}; {ci} reaches below the limit"
    return Result(e, Verdict.FAIL, figure, value, s, len(boots), over, beyond, f"{head}: {tail}", worst[2],
                  _boot_name(worst_b))


def _not_measured(e: Entry, boots: Sequence[BootAnalysis]) -> str:
    """Why no boot measured the entry's figure, with what the boots do show (a typo shows)."""
    n = f"(of {len(boots)})"
    if not boots:
        return "no boots in the input"
    if e.kind == "total":
        if e.origin is not None and any(b.total.duration_ns is not None for b in boots):
            got = sorted({b.total.origin for b in boots if b.total.duration_ns is not None})
            return f"no boot {n} counts from {e.origin} (counted from: {', '.join(got)})"
        return f"no boot {n} reached its end: {boots[0].total.end}"
    if e.kind == "stage":
        seen = list(dict.fromkeys(s.name for b in boots for s in b.stages if s.duration_ns is not None))
        return f"no boot {n} has a stage {e.name!r} (measured: {', '.join(seen) or 'none'})"
    if e.kind == "marker":
        seen = list(dict.fromkeys(ev.name for b in boots for ev in b.boot.events
                                    if ev.kind is Kind.MARKER and ev.name != "uptime"))
        return (f"no boot {n} shows the marker {e.name!r} (markers: {', '.join(seen) or 'none'}; "
                "--marker NAME=REGEX defines one)")
    with_kind = sum(bool(boot_sums(b, NAME_KEYS[e.kind])[1]) for b in boots)
    if not with_kind:
        return f"no boot {n} shows any {PLURAL[e.kind]}"
    return f"{with_kind} of {len(boots)} boots show {PLURAL[e.kind]}, none named {e.name!r}"
