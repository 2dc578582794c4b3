"""Logic analyzer captures reduced to edges: sigrok-cli CSV and VCD, other tools' VCD, Saleae
Logic 2 and Logic 1.x (also Kingst) digital CSV exports.

A capture is not a boot log: it gives, per channel, the times of its rising and falling edges
(nanoseconds since the capture's first sample), which :mod:`bootlens.sources.logic.align` places on a
boot's axis. Captures are large (1 MHz for 10 s is 10M CSV rows), so nothing here builds an
object per row: lines are streamed and compared as strings first, because a sampled signal
repeats its previous row almost always and only a changed row needs splitting; edges go into
``array('q')`` columns (8 bytes an edge).

Formats, told apart by content (:func:`sniff_logic`):

- sigrok CSV (``-O csv`` and its options): ``;`` comment header (``; Samplerate: 1 MHz``,
  ``; Channels (4/13): D0, D1``), a label row (``logic,logic`` for label=units, ``Time,D0,D1``
  for label=channel, none for label=off), an optional time column (``microseconds``, ...),
  one row per sample or, with dedup, per change. **sigrok's first CSV time is one sample
  period** (sample 1), while its VCD starts at ``#0``: both are read as sample index x period,
  so the same capture gives the same edges in either format.
- VCD (sigrok's ``$var wire 1 ! D0 $end`` and other tools' multi-character ids); vectors
  (``b1010 id``) and reals are skipped with a count.
- Saleae Logic 2 digital CSV: ``Time [s],Channel 0,...``, one row per transition, 9 decimals,
  ``X`` for no data; Logic 1.x / Kingst: ``Time[s], Channel 0, ...`` with spaces.

Nothing here raises on bad content: rows not understood are counted in the warnings; only an
unreadable file is an :class:`~bootlens.core.errors.InputError`.
"""

from __future__ import annotations

import re
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from ...core.errors import InputError, printable
from ...core.model import NS_PER_S
from ...core.numbers import to_int
# the sniff and what it shares with the readers live apart: sniffing a log must not import them
from . import _UNITS, _is_number
from . import sniff_logic as sniff_logic

HEAD_BYTES = 8192
FORMATS = ("sigrok csv", "sigrok vcd", "vcd", "saleae logic 2 csv", "saleae logic 1 csv")  # Capture.format

_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}  # "; Samplerate: 1 MHz"
_VCD_SCALE = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0, "ps": 1e-3, "fs": 1e-6}
_RATE = re.compile(r"^\S Samplerate: ([\d.]+) ?([kKmMgG]?)Hz", re.M)
_CHANNELS = re.compile(r"^\S Channels \(\d+/\d+\): (.*)$", re.M)


@dataclass(frozen=True, slots=True)
class Channel:
    """One digital channel: its level at the start and the times of its edges (ns since the
    capture's first sample, ascending)."""

    name: str
    initial: int | None  # 0 or 1; None when the capture starts with no data (Saleae X, VCD x)
    rising: array[int]
    falling: array[int]

    def edges(self, which: str) -> list[int]:
        """Edge times of one kind: "rise", "fall" or "any" (both, in time order)."""
        if which == "rise":
            return list(self.rising)
        if which == "fall":
            return list(self.falling)
        return sorted([*self.rising, *self.falling])


@dataclass(frozen=True, slots=True)
class Capture:
    """A logic analyzer capture as edges per channel."""

    source: str
    format: str  # "sigrok csv", "sigrok vcd", "vcd", "saleae logic 2 csv", "saleae logic 1 csv"
    channels: tuple[Channel, ...]
    samplerate_hz: float | None
    end_ns: int  # time of the last sample (or change) read
    rows: int  # data rows (CSV) or timestamps (VCD) read
    warnings: tuple[str, ...] = ()

    def channel(self, name: str) -> Channel | None:
        """The channel of that name (case and spaces ignored); "0" or "D0" also finds
        "Channel 0" and the reverse, as sigrok and Saleae name the same probe differently."""
        want = _norm(name)
        for c in self.channels:
            if _norm(c.name) == want:
                return c
        m = re.fullmatch(r"(?:d|ch|channel)?(\d+)", want)
        if m:
            for c in self.channels:
                cm = re.fullmatch(r"(?:d|ch|channel)(\d+)", _norm(c.name))
                if cm and (cm.group(1).lstrip("0") or "0") == (m.group(1).lstrip("0") or "0"):
                    return c
        return None


def _norm(s: str) -> str:
    return "".join(s.split()).lower()


# ------------------------------------------------------------------------------------- reading

class _Edges:
    """Edge columns being filled for a set of channels (a helper of the readers).

    A row's values part (the text after the time) is never split twice: the edges between two
    row texts are worked out once and cached, so a changed row costs a dict look-up and one
    append per edge. A capture has few distinct rows (8 channels: at most 256)."""

    CACHE_MAX = 200_000

    def __init__(self, names: list[str], cols: list[int] | None = None, sep: str = ",") -> None:
        self.names = names
        self.cols = cols if cols is not None else list(range(len(names)))
        self.sep = sep
        self.initial: list[int | None] = [None] * len(names)
        self.rising = [array("q") for _ in names]
        self.falling = [array("q") for _ in names]
        self.started = [False] * len(names)
        self.unknown = 0  # X / x / z values
        self.parsed: dict[str, list[int | None] | None] = {}
        self.with_x: dict[str, int] = {}  # row texts holding X values, and how many
        self.cache: dict[tuple[str | None, str], tuple[array[int], ...] | None] = {}

    def values(self, text: str) -> list[int | None] | None:
        """The levels of a row's values text; None when it is not a row of levels."""
        got = self.parsed.get(text, False)
        if got is not False:
            return got  # type: ignore[return-value]
        cells = text.strip().split(self.sep)
        out: list[int | None] | None = []
        try:
            vals = [_level(cells[j].strip()) for j in self.cols]
        except IndexError:
            out = None
        else:
            out = None if any(v not in (0, 1, None) for v in vals) else [v if isinstance(v, int) else None
                                                                       for v in vals]
        if len(self.parsed) > self.CACHE_MAX:
            self.parsed.clear()
        self.parsed[text] = out
        if out is not None and None in out:
            self.with_x[text] = out.count(None)
        return out

    def step(self, prev: str | None, text: str) -> tuple[array[int], ...] | None:
        """The edge columns to append this row's time to, going from row text ``prev`` to
        ``text``; None when ``text`` is not a row of levels."""
        key = (prev, text)
        got = self.cache.get(key, False)
        if got is not False:
            return got  # type: ignore[return-value]
        new = self.values(text)
        out: tuple[array[int], ...] | None = None
        if new is not None:
            old = self.values(prev) if prev is not None else None
            arrs = []
            for i, v in enumerate(new):
                if not self.started[i]:
                    self.started[i] = True
                    self.initial[i] = v
                o = old[i] if old is not None else None
                # from no data (X) to a level is no edge: nobody saw it change
                if v is not None and o is not None and v != o:
                    arrs.append((self.rising if v else self.falling)[i])
            out = tuple(arrs)
        if len(self.cache) > self.CACHE_MAX:
            self.cache.clear()
        self.cache[key] = out
        return out

    def channels(self) -> tuple[Channel, ...]:
        return tuple(Channel(n, self.initial[i], self.rising[i], self.falling[i]) for i, n in enumerate(self.names))


def _level(s: str) -> int | None | str:
    """'0'/'1' -> 0/1; X/x/z -> None; anything else -> the text (not a digital value)."""
    if s == "1" or s == "0":
        return int(s)
    if s in ("X", "x", "z", "Z"):
        return None
    return s


def read_logic(path: str | Path) -> Capture:
    """Read a capture file of any supported format; InputError when it cannot be opened or is
    not a capture at all."""
    p = Path(path)
    src = printable(str(path))
    try:
        with open(p, "rb") as fb:
            head = fb.read(HEAD_BYTES).decode("utf-8", "replace")
        fmt = sniff_logic(head)
        if fmt is None:
            raise InputError(str(path), "not a logic analyzer capture (sigrok CSV/VCD, Saleae CSV)")
        with open(p, encoding="utf-8", errors="replace", newline="") as f:
            if fmt.endswith("vcd"):
                return read_vcd(f, src, fmt)
            if fmt == "sigrok csv":
                return read_sigrok_csv(f, src)
            return read_saleae_csv(f, src, fmt)
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None


def read_sigrok_csv(lines: Iterable[str], source: str = "<csv>") -> Capture:
    """sigrok-cli's CSV (every combination of label, time, header, dedup, comment, value and
    trigger). The samplerate comes from the header, else from the first time (one period)."""
    it = iter(lines)
    comments: list[str] = []
    bad = 0
    label: list[str] | None = None
    first: str | None = None
    sep = ","
    cchar: str | None = None
    for line in it:
        s = line.strip()
        if not s:
            continue
        if cchar is None and re.match(r"^\S CSV generated by libsigrok", s):
            cchar = s[0]
        if cchar is not None and s.startswith(cchar):
            comments.append(s)
            continue
        if s.startswith("META "):  # sigrok re-reading a file: "META samplerate: 1000000"
            comments.append("; Samplerate: " + s.split(":", 1)[-1].strip() + " Hz" if "samplerate" in s else s)
            continue
        if re.match(r"^[A-Za-z]\w*: ", s):  # "A0: -10.0000 V DC": sigrok-cli's analog print
            bad += 1
            continue
        sep = _separator(s)
        cells = [c.strip() for c in s.split(sep)]
        if all(_level(c) in (0, 1) or _is_number(c) for c in cells):
            first = line  # label=off: data from the first row
        else:
            label = cells
        break
    text = "\n".join(comments)
    rate = None
    m = _RATE.search(text)
    if m:
        rate = float(m.group(1)) * _SI[m.group(2).lower()]
    m = _CHANNELS.search(text)
    listed = [c.strip() for c in m.group(1).split(",")] if m else []
    if first is None:
        first = next((ln for ln in it if ln.strip()), None)
        if first is None:
            return Capture(source, "sigrok csv", (), rate, 0, 0, _warn(source, ["no data rows"], bad))
        sep = _separator(first.strip())
    ncols = len(first.strip().split(sep))
    # the time column: a units label, "Time" (label=channel), or, label=off, a first value
    # that is no level (sigrok's levels are 0/1; a time column starts at one period)
    unit: float | None = None
    has_time = False
    if label is not None:
        lab0 = label[0]
        if lab0 in _UNITS or lab0 == "samples" or lab0 == "Time":
            has_time = True
            unit = _UNITS.get(lab0) if lab0 != "samples" else (NS_PER_S / rate if rate else None)
    else:
        v0 = first.strip().split(sep)[0].strip()
        has_time = _level(v0) not in (0, 1) or (ncols > len(listed) > 0)
    names_all = label[1:] if (label is not None and has_time) else (label or [])
    if has_time and unit is None and label is not None and label[0] == "Time" and rate is None:
        return Capture(source, "sigrok csv", (), None, 0, 0, _warn(
            source, ["a time column in unknown units and no samplerate (write it with header=true)"], bad))
    # which columns are digital: 'logic' under label=units, else those whose first value is a
    # level; the Channels comment lists the channels in column order (logic, then analog)
    start = 1 if has_time else 0
    first_cells = [c.strip() for c in first.strip().split(sep)]
    units_labels = label is not None and label[0] != "Time" and "logic" in label
    digital: list[int] = []
    names: list[str] = []
    skipped: list[str] = []
    for j in range(start, ncols):
        k = j - start
        lab = names_all[k] if k < len(names_all) else ""
        if lab == "Trigger":
            continue
        val = first_cells[j] if j < len(first_cells) else ""
        name = lab if lab and not units_labels else (listed[k] if k < len(listed) else f"column {j + 1}")
        if (lab == "logic") if units_labels else _level(val) in (0, 1, None):
            digital.append(j)
            names.append(name)
        else:
            skipped.append(name)
    return _scan_sigrok_rows(it, first, sep, has_time, unit, rate, digital, names, skipped, source, bad)


def _scan_sigrok_rows(it: Iterator[str], first: str, sep: str, has_time: bool, unit: float | None,
                      rate: float | None, digital: list[int], names: list[str], skipped: list[str], source: str,
                      bad: int) -> Capture:
    """The hot loop over sigrok CSV rows: a row equal to the one before (or whose values are,
    with a time column) costs one string comparison; a changed one a cached look-up."""
    cols = [j - (1 if has_time else 0) for j in digital]  # columns within the values text
    ed = _Edges(names, cols, sep)
    period = NS_PER_S / rate if rate else None
    first_t: float | None = None

    def time_of(tv: str) -> int | None:
        nonlocal first_t, period, unit
        try:
            x = float(tv)
        except ValueError:
            return None
        if not -MAX_NS < x < MAX_NS:  # inf, nan, or past what an edge column holds
            return None
        if first_t is None:
            first_t = x
            # sigrok's first time is one period: it gives the unit when the label did not
            # (label=off), or the period when the header did not (header=false)
            if unit is None and period and x > 0:
                unit = period / x
            elif period is None and unit is not None:
                period = x * unit
        if unit is None:
            return round(x)
        xn = x * unit
        if not -MAX_NS < xn < MAX_NS:
            return None
        if period:
            return round((round(xn / period) - 1) * period)
        return round(xn)

    rows = 0
    prev: str | None = None
    step, xs = ed.step, ed.with_x
    t_ns = 0
    if not has_time:
        # Without a time column a row is a sample: runs of equal rows are counted in C
        # (groupby, and enumerate drained by a one-slot deque), so an idle channel costs
        # nothing per sample; only a changed row reaches Python.
        idx = 0  # the next sample's index
        for line, run in groupby(_chain1(first, it)):
            n = deque(enumerate(run, 1), maxlen=1)[0][0]
            if not line.strip() or line[0] in ";#":
                continue  # a blank or comment line is no sample
            arrs = step(prev, line)
            if arrs is None:
                bad += n
                continue
            t = round(idx * period) if period else idx
            for arr in arrs:
                arr.append(t)
            if xs and line in xs:
                ed.unknown += xs[line] * n
            prev = line
            rows += n
            idx += n
        # the capture ends one period after its last sample (where sigrok's VCD puts its last #)
        t_ns = round(idx * period) if period else idx
    else:
        last_tv = ""
        for line in _chain1(first, it):
            tv, _, rest = line.partition(sep)
            last_tv = tv
            if rest == prev:
                rows += 1
                continue
            if not rest.strip() or line[0] in ";#":
                continue
            arrs = step(prev, rest)
            if arrs is None:
                bad += 1
                continue
            at = time_of(tv.strip())
            if at is None:
                bad += 1
                continue
            rows += 1
            for arr in arrs:
                arr.append(at)
            if xs and rest in xs:
                ed.unknown += xs[rest]
            prev = rest
        if prev is not None and (last := time_of(last_tv.strip())) is not None:
            t_ns = last + round(period or 0)
    notes = []
    if skipped:
        notes.append(f"{len(skipped)} non-digital column{'s' if len(skipped) != 1 else ''} skipped "
                     f"({', '.join(skipped[:4])})")
    if period is None:
        notes.append("no samplerate in the header and no time column: times are sample numbers")
    if ed.unknown:
        notes.append(f"{ed.unknown} unknown (X) values")
    return Capture(source, "sigrok csv", ed.channels(), NS_PER_S / period if period else None, t_ns, rows,
                   _warn(source, notes, bad))


MAX_NS = float(2**62)  # an edge column holds signed 64-bit ns; 146 years is past any capture


def _ns(x: float) -> int:
    """A time in ns for an edge column; ValueError (a line not understood) when it is not finite
    or does not fit."""
    if not -MAX_NS < x < MAX_NS:  # also false for nan
        raise ValueError(x)
    return round(x)


def _chain1(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def _separator(s: str) -> str:
    for c in (",", ";", "\t"):
        if c in s:
            return c
    return ","


def _warn(source: str, notes: list[str], bad: int) -> tuple[str, ...]:
    out = [f"{source}: {n}" for n in notes]
    if bad:
        out.append(f"{source}: {bad} line{'s' if bad != 1 else ''} not understood (skipped)")
    return tuple(out)


def read_saleae_csv(lines: Iterable[str], source: str = "<csv>", fmt: str = "saleae logic 2 csv") -> Capture:
    """Saleae's digital export: a header row (``Time [s],Channel 0,...`` or Logic 1.x's
    ``Time[s], Channel 0, ...``), then one row per transition: seconds, then 0/1/X per channel."""
    it = iter(lines)
    header = next((ln for ln in it if ln.strip()), "")
    names = [c.strip() for c in header.strip().split(",")[1:]]
    ed = _Edges(names)
    bad = rows = 0
    t_ns = 0
    prev: str | None = None
    for line in it:
        tv, _, rest = line.partition(",")
        if rest == prev:  # an export "at every sample" repeats rows; a transition never does
            rows += 1
            continue
        try:
            t = _ns(float(tv) * NS_PER_S)
        except (ValueError, OverflowError):
            if line.strip():
                bad += 1
            continue
        if rest.count(",") != len(names) - 1:
            bad += 1
            continue
        arrs = ed.step(prev, rest)
        if arrs is None:
            bad += 1
            continue
        rows += 1
        t_ns = t
        for arr in arrs:
            arr.append(t)
        ed.unknown += ed.with_x.get(rest, 0)
        prev = rest
    notes = [f"{ed.unknown} X (no data) values: no edge is counted across a gap"] if ed.unknown else []
    return Capture(source, fmt, ed.channels(), None, t_ns, rows, _warn(source, notes, bad))


def read_vcd(lines: Iterable[str], source: str = "<vcd>", fmt: str = "vcd") -> Capture:
    """A value change dump: scalar wires become channels; vectors and reals are skipped with a
    count; t=0 is ``#0`` (time values times ``$timescale``)."""
    it = iter(lines)
    header: list[str] = []
    for line in it:
        header.append(line)
        if "$enddefinitions" in line:
            break
    text = " ".join(header)
    scale = 1.0
    m = re.search(r"\$timescale\s+(\d+)\s*(s|ms|us|ns|ps|fs)\s+\$end", text)
    notes: list[str] = []
    n = to_int(m.group(1), 1000) if m else None  # the standard's 1, 10 or 100
    if m and n is not None:
        scale = n * _VCD_SCALE[m.group(2)]
    else:
        said = "" if m is None else m.group(1)[:12] + ("..." if len(m.group(1)) > 12 else "")
        notes.append("no $timescale: 1 ns assumed" if m is None else
                     f"$timescale {said} {m.group(2)} not understood (1, 10 or 100 expected): 1 ns assumed")
    ids: dict[str, int] = {}
    names: list[str] = []
    vectors: set[str] = set()
    scope: list[str] = []
    for tok in re.finditer(r"\$(scope|upscope|var)\b(.*?)\$end", text, re.S):
        kind, body = tok.group(1), tok.group(2).split()
        if kind == "scope":
            scope.append(body[-1] if body else "")
        elif kind == "upscope":
            if scope:
                scope.pop()
        elif len(body) >= 4:
            # "datain [7]": ModelSim writes a bit select as a word of its own
            width, ident, ref = body[1], body[2], "".join(body[3:])
            if width != "1" or body[0] == "real":
                vectors.add(ident)
                continue
            if ident in ids:  # one signal under two names: keep the first
                continue
            name = ref if ref not in names else ".".join(scope[1:] + [ref]) or ref
            ids[ident] = len(names)
            names.append(name)
    n = len(names)
    initial: list[int | None] = [None] * n
    started = [False] * n
    rising = [array("q") for _ in names]
    falling = [array("q") for _ in names]
    # "1!" -> (channel, level)
    tokmap = {f"{c}{ident}": (i, 1 if c == "1" else 0 if c == "0" else None)
              for ident, i in ids.items() for c in "01xXzZ"}
    counts = {"bad": 0, "vec": 0, "rows": 0, "unknown": 0}
    state: list[int | None] = [None] * n
    mode = {"skip": False, "comment": False}
    t = 0

    def tokens(text: str) -> tuple[list[tuple[int, int]], bool]:
        """Apply one line's words to ``state``: the (channel, level) edges, and whether the line
        held value changes only (so that its effect depends on the state alone, and is cached)."""
        nonlocal t
        edges: list[tuple[int, int]] = []
        pure = True
        for w in text.split():
            iv = tokmap.get(w)
            if iv is not None and not mode["comment"]:
                i, v = iv
                o = state[i]
                if not started[i]:
                    started[i] = True
                    initial[i] = v
                elif v is not None and o is not None and v != o:
                    edges.append((i, v))
                if v is None:
                    counts["unknown"] += 1
                state[i] = v
                continue
            pure = False
            if mode["skip"]:
                mode["skip"] = False
                continue
            c = w[0]
            if mode["comment"]:
                mode["comment"] = w != "$end"
            elif c == "#":
                try:
                    t = _ns(int(w[1:]) * scale)
                except (ValueError, OverflowError):
                    counts["bad"] += 1
                    continue
                counts["rows"] += 1
            elif c in "bBrR":
                counts["vec"] += 1
                mode["skip"] = len(w) > 1  # "b1010 id": the id is the next word
            elif c in "01xXzZ" and w[1:] in vectors:
                continue
            elif c == "$":
                mode["comment"] = w == "$comment"
                # $dumpvars / $end / $dumpall: the values inside are read as changes
            else:
                counts["bad"] += 1
        return edges, pure

    # The hot loop: sigrok writes "#t v1 v2 ...", one line a timestamp. A line's effect depends
    # only on the levels before it, so (levels, text) -> (levels after, edge columns) is cached:
    # a line costs a partition and a dict look-up, as a CSV row does.
    cache: dict[tuple[tuple[int | None, ...], str], tuple[tuple[int | None, ...], tuple[array[int], ...]]] = {}
    levels: tuple[int | None, ...] = tuple(state)
    for line in it:
        if line[:1] == "#":
            ts, _, rest = line.partition(" ")
            try:
                t = _ns(int(ts[1:]) * scale)
            except (ValueError, OverflowError):
                counts["bad"] += 1
                continue
            counts["rows"] += 1
            if not rest or rest.isspace():
                continue
        else:
            rest = line
        key = (levels, rest)
        hit = cache.get(key)
        if hit is not None:
            levels, arrs = hit
            for arr in arrs:
                arr.append(t)
            continue
        state[:] = levels
        unknown_before = counts["unknown"]
        edges, pure = tokens(rest)
        for i, v in edges:
            (rising if v else falling)[i].append(t)
        new = tuple(state)
        if pure and counts["unknown"] == unknown_before and all(started[i] for i, _ in edges):
            if len(cache) > _Edges.CACHE_MAX:
                cache.clear()
            cache[key] = (new, tuple((rising if v else falling)[i] for i, v in edges))
        levels = new
    bad, skipped_vec, rows, unknown = counts["bad"], counts["vec"], counts["rows"], counts["unknown"]
    channels = tuple(Channel(nm, initial[i], rising[i], falling[i]) for i, nm in enumerate(names))
    if vectors or skipped_vec:
        notes.append(f"{len(vectors)} vector or real signal{'s' if len(vectors) != 1 else ''} skipped "
                     f"({skipped_vec} value changes)")
    if unknown:
        notes.append(f"{unknown} x/z values: no edge is counted across them")
    mr = re.search(r"Acquisition with \d+/\d+ channels at ([\d.]+) ([kMG]?)Hz", text)
    rate = float(mr.group(1)) * _SI[mr.group(2).lower()] if mr else None
    return Capture(source, fmt, channels, rate, t, rows, _warn(source, notes, bad))
