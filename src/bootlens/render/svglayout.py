"""Drawing primitives for the SVG boot graph: text measure and escaping, an element buffer,
greedy label rows and a time scale.

Written here rather than taken from a library: an SVG writer (svgwrite, drawsvg) would only
replace the few lines of :class:`SvgDoc`, and no library places labels the way a boot graph
needs (in rows, with leader lines, guaranteed not to overlap).
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from ..core.model import NS_PER_MS, NS_PER_S
from ..core.units import duration
from . import palette
from .visible import visible

FONT_FAMILY = "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace"
CHAR_EM = 0.62  # advance of one character in em: 0.60 in the monospace fonts above, rounded up
ASCENT_EM = 0.8  # a text's box above and below its baseline, in em (for layout and tests)
DESCENT_EM = 0.25
PAD = 4.0  # horizontal space kept between two labels

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
STYLE = (
    f"text{{fill:{palette.TEXT}}}.halo{{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}}"
    f".in{{fill:#fff}}.dim{{fill:{palette.MUTED}}}.bar:hover,.stage:hover{{stroke:#000;stroke-width:1}}"
    ".open{fill-opacity:.45;stroke-dasharray:3 2;stroke-width:1}"
)


# -- text --------------------------------------------------------------------------------------

def text_width(s: str, size: float) -> float:
    """Estimated width in px of ``s`` at font ``size`` as drawn (:func:`visible`, which
    :func:`esc` applies: ``\\u202e`` is six characters); wide East Asian characters count twice."""
    s = visible(s)
    cols = len(s) if s.isascii() else sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
    return cols * CHAR_EM * size


def fit(s: str, size: float, width: float) -> str:
    """``s`` cut (with an ellipsis) to fit ``width`` px."""
    if text_width(s, size) <= width:
        return s
    n = max(int(width / (CHAR_EM * size)) - 1, 0)
    while n > 0 and text_width(s[:n] + "…", size) > width:
        n -= 1
    return s[:n] + "…" if n else ""


def esc(s: str) -> str:
    """Text for markup: invisible characters shown (:func:`visible`), characters XML cannot
    carry replaced, ``& < > "`` escaped."""
    return escape(_NOT_XML.sub("\ufffd", visible(s)), {'"': "&quot;"})


def num(v: float) -> str:
    """A coordinate, to 0.1 px."""
    s = f"{v:.1f}"
    s = s[:-2] if s.endswith(".0") else s
    return "0" if s == "-0" else s


def fmt_duration(ns: int) -> str:
    """A duration for a label: 2.089 s, 166.3 ms, 4.25 ms (a digit more below 10 ms), 86 µs; a
    negative one in µs."""
    if NS_PER_MS <= ns < 10 * NS_PER_MS:
        return duration(ns, {"ms": 2})
    return duration(ns, {"s": 3, "ms": 1, "µs": 0}, by_magnitude=False)


def fmt_at(ns: int) -> str:
    """A time on the boot's axis, to the microsecond: 1.234567 s."""
    return duration(ns, {"s": 6})


# -- the document ------------------------------------------------------------------------------

class SvgDoc:
    """The elements of one SVG document in three layers (grid, marks and shading under the bars;
    bars; texts on top), so a panel can be laid out in any order and still draw right."""

    def __init__(self) -> None:
        self.back: list[str] = []
        self.mid: list[str] = []
        self.front: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str, cls: str = "", tip: str = "",
             layer: str = "mid") -> None:
        c = f' class="{cls}"' if cls else ""
        t = f"<title>{esc(tip)}</title>" if tip else ""
        el = f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}"{c}'
        getattr(self, layer).append(f"{el}>{t}</rect>" if t else el + "/>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, width: float = 1, dash: str = "",
             cls: str = "", tip: str = "", layer: str = "back") -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        c = f' class="{cls}"' if cls else ""
        el = (f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}" '
              f'stroke-width="{num(width)}"{d}{c}')
        getattr(self, layer).append(f"{el}><title>{esc(tip)}</title></line>" if tip else el + "/>")

    def text(self, x: float, y: float, s: str, size: float, anchor: str = "start", cls: str = "",
             weight: str = "") -> None:
        a = f' text-anchor="{anchor}"' if anchor != "start" else ""
        c = f' class="{cls}"' if cls else ""
        w = f' font-weight="{weight}"' if weight else ""
        self.front.append(f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}"{a}{c}{w}>{esc(s)}</text>')

    def render(self, width: int, height: float) -> bytes:
        """The document: ``width`` by ``height`` px on a white background."""
        h = num(math.ceil(height))
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
                f'viewBox="0 0 {width} {h}" font-family="{esc(FONT_FAMILY)}">'
                f"<style>{STYLE}</style>"
                f'<rect x="0" y="0" width="{width}" height="{h}" fill="#fff"/>')
        return "\n".join([head, *self.back, *self.mid, *self.front, "</svg>\n"]).encode()


# -- layout ------------------------------------------------------------------------------------

INDEX_AFTER = 16  # label rows; past this many, a LabelRows answers from an index, not row by row

# What a label asks for: its candidate left edges, width, leader x and whether the leader runs
# beside it in its own row (see LabelRows.find).
LabelAsk = tuple[Sequence[float], float, float, bool]


class _RowIndex:
    """Which label rows hold something in an x range: a segment tree over the elementary
    intervals between the coordinates it is built for, each node with two bit sets of rows
    (Python ints): ``cover``, rows with a span covering the node's whole range, and ``any``,
    rows with a span anywhere in it. Spans are open intervals (touching is not meeting), as in
    :meth:`LabelRows._free`; every coordinate asked for must be one of those it was built on."""

    def __init__(self, coords: set[float]) -> None:
        self.xs = sorted(coords)
        size = 1
        while size < len(self.xs) - 1:
            size *= 2
        self.size = size
        self.cover = [0] * (2 * size)
        self.any = [0] * (2 * size)

    def knows(self, x: float) -> bool:
        """True when ``x`` is one of the coordinates the index is built on."""
        i = bisect_left(self.xs, x)
        return i < len(self.xs) and self.xs[i] == x

    def _leaves(self, a: float, b: float) -> tuple[int, int]:
        return bisect_left(self.xs, a) + self.size, bisect_left(self.xs, b) + self.size

    def add(self, a: float, b: float, rows: int) -> None:
        """Mark the span (a, b) taken in each row of the bit set ``rows``."""
        lo, hi = self._leaves(a, b)
        if lo >= hi:
            return
        cover, any_ = self.cover, self.any
        l, r = lo, hi
        while l < r:
            if l & 1:
                cover[l] |= rows
                any_[l] |= rows
                l += 1
            if r & 1:
                r -= 1
                cover[r] |= rows
                any_[r] |= rows
            l >>= 1
            r >>= 1
        # every ancestor of the nodes above lies on the path from the first or the last leaf
        for k in (lo >> 1, (hi - 1) >> 1):
            while k:
                any_[k] |= rows
                k >>= 1

    def rows(self, a: float, b: float) -> int:
        """The rows (a bit set) holding a span that meets (a, b)."""
        lo, hi = self._leaves(a, b)
        if lo >= hi:
            return 0
        cover, any_ = self.cover, self.any
        out = 0
        l, r = lo, hi
        while l < r:
            if l & 1:
                out |= any_[l]
                l += 1
            if r & 1:
                r -= 1
                out |= any_[r]
            l >>= 1
            r >>= 1
        for k in (lo >> 1, (hi - 1) >> 1):
            while k:
                out |= cover[k]
                k >>= 1
        return out


def _box(x: float, w: float, la: float, lb: float, lead_in_row: bool) -> tuple[float, float]:
    """The span a label at ``x`` takes in its row: its box with room on either side, and the
    leader's path (``la``, ``lb``) when that runs beside it."""
    a, b = x - PAD / 2, x + w + PAD / 2
    return (min(a, la), max(b, lb)) if lead_in_row else (a, b)


class LabelRows:
    """Label rows beside a lane: the occupied x intervals of each row, sorted and disjoint.

    A label takes the first row (row 0 is next to the lane) where its box is free and where the
    leader line from the lane to it crosses nothing in the rows in between.

    With a few rows, each row is asked in turn (a bisection per row). Labels that must be shown
    can open any number of rows (4,000 markers at one time open 4,000), and asking row by row
    is then quadratic: past ``index_after`` rows, one :class:`_RowIndex` answers for all rows
    at once, with the same answers. It is built on the coordinates of the labels announced in
    ``plan`` (and rebuilt when a label that was not announced comes).
    """

    def __init__(self, lo: float, hi: float, max_rows: int, plan: Iterable[LabelAsk] = (),
                 index_after: int = INDEX_AFTER) -> None:
        self.lo, self.hi, self.max_rows = lo, hi, max_rows
        self.starts: list[list[float]] = []
        self.ends: list[list[float]] = []
        self.index_after = index_after
        self._plan = list(plan)
        self._index: _RowIndex | None = None
        self._spans: list[tuple[float, float, int]] = []  # what the index holds: (a, b, rows)
        self._rows = 0

    def _geometry(self, xs: Sequence[float], w: float, lead: float, lead_in_row: bool
                  ) -> tuple[list[float], list[tuple[float, float]], tuple[float, float]]:
        """Candidate left edges, the box each would take, and the leader's path."""
        la, lb = lead - 1.5, lead + 1.5
        cands = [min(max(x, self.lo), self.hi - w) for x in xs]
        return cands, [_box(x, w, la, lb, lead_in_row) for x in cands], (la, lb)

    def _free(self, r: int, a: float, b: float) -> bool:
        i = bisect_left(self.starts[r], b)
        return i == 0 or self.ends[r][i - 1] <= a

    def _take(self, r: int, a: float, b: float) -> None:
        i = bisect_left(self.starts[r], a)
        self.starts[r].insert(i, a)
        self.ends[r].insert(i, b)

    def _build(self, extra: Iterable[float] = ()) -> _RowIndex:
        """The index over every span taken so far, on their coordinates, the plan's and ``extra``."""
        coords = set(extra)
        for xs, w, lead, lead_in_row in self._plan:
            _, boxes, leader = self._geometry(xs, w, lead, lead_in_row)
            coords.update(leader)
            for box in boxes:
                coords.update(box)
        if self._index is None:  # from the rows
            self._spans = [(a, b, 1 << r) for r in range(len(self.starts))
                           for a, b in zip(self.starts[r], self.ends[r])]
            self.starts, self.ends = [], []
        for a, b, _ in self._spans:
            coords.update((a, b))
        index = _RowIndex(coords)
        for a, b, rows in self._spans:
            index.add(a, b, rows)
        self._index = index
        return index

    def _indexed(self, coords: Sequence[float]) -> _RowIndex:
        index = self._index
        assert index is not None
        return index if all(index.knows(x) for x in coords) else self._build(coords)

    def find(self, xs: Sequence[float], w: float, lead: float, must: bool, lead_in_row: bool = False
             ) -> tuple[int, float] | None:
        """Row and left edge for a label of width ``w`` at one of the left edges ``xs``, with its
        leader at x=``lead`` (beside the label when ``lead_in_row``); None when there is no room.
        A ``must`` label may open rows past ``max_rows``."""
        cands, boxes, (la, lb) = self._geometry(xs, w, lead, lead_in_row)
        if self._index is not None:
            return self._find_indexed(cands, boxes, (la, lb), must)
        for r in range(len(self.starts)):
            for x, (a, b) in zip(cands, boxes):
                if self._free(r, a, b):
                    return r, x
            if not must and not self._free(r, la, lb):
                return None  # a must label's leader may cross a label: it is drawn under the text's halo
        r = len(self.starts)
        return (r, cands[0]) if cands and (r < self.max_rows or must) else None

    def _find_indexed(self, cands: list[float], boxes: list[tuple[float, float]], leader: tuple[float, float],
                      must: bool) -> tuple[int, float] | None:
        """:meth:`find` from the index: the first row where a box is free is the lowest zero
        bit of the rows its range meets; a leader stops the search at its lowest one bit."""
        if not cands:
            return None
        index = self._indexed([*(x for box in boxes for x in box), *leader])
        n = self._rows
        firsts = []
        for a, b in boxes:
            taken = index.rows(a, b)
            firsts.append(min((~taken & (taken + 1)).bit_length() - 1, n))
        r = min(firsts)
        if not must:
            taken = index.rows(*leader)
            if taken and (taken & -taken).bit_length() - 1 < r:
                return None
        if r < n:
            return r, cands[firsts.index(r)]
        return (r, cands[0]) if r < self.max_rows or must else None

    def take(self, spot: tuple[int, float], w: float, lead: float, lead_in_row: bool = False) -> None:
        """Occupy what :meth:`find` found: the label's box and its leader's path."""
        r, x = spot
        la, lb = lead - 1.5, lead + 1.5
        a, b = _box(x, w, la, lb, lead_in_row)
        self._rows = max(self._rows, r + 1)
        if self._index is not None:
            index = self._indexed((a, b, la, lb))
            index.add(a, b, 1 << r)
            self._spans.append((a, b, 1 << r))
            # the leader crosses the rows below where it is free (a must label's may be blocked)
            below = ~index.rows(la, lb) & ((1 << r) - 1)
            if below:
                index.add(la, lb, below)
                self._spans.append((la, lb, below))
            return
        while len(self.starts) <= r:
            self.starts.append([])
            self.ends.append([])
        self._take(r, a, b)
        for q in range(r):
            if self._free(q, la, lb):  # (not free: a must label's leader crosses a label there)
                self._take(q, la, lb)
        if self._rows > self.index_after:
            self._build()

    @property
    def used(self) -> int:
        """Rows holding at least one label."""
        return self._rows


@dataclass(frozen=True, slots=True)
class Scale:
    """Axis ns to x px."""

    t0: int
    span: int
    x0: float
    width: float

    @property
    def t1(self) -> int:
        """The axis time at the right edge."""
        return self.t0 + self.span

    def x(self, t: int) -> float:
        """x of axis time t, clamped to the panel."""
        t = min(max(t, self.t0), self.t1)
        return self.x0 + (t - self.t0) * self.width / self.span


def ticks(sc: Scale) -> tuple[list[int], int, str, int]:
    """Tick times, the unit (ns per unit) and its name, and decimals: a 1-2-5 step, ~110 px apart."""
    raw = sc.span / max(sc.width / 110, 1)
    step = next(m * 10 ** k for k in range(25) for m in (1, 2, 5) if m * 10 ** k >= raw)
    unit, name = (NS_PER_S, "s") if sc.span >= NS_PER_S else (NS_PER_MS, "ms")
    dec = max(0, -math.floor(math.log10(step / unit) + 1e-9))
    first = -(-sc.t0 // step) * step
    return list(range(first, sc.t1 + 1, step)), unit, name, dec


