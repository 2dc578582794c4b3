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
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from ..model import NS_PER_MS, NS_PER_S

FONT_FAMILY = "'DejaVu Sans Mono', 'Liberation Mono', Menlo, Consolas, monospace"
CHAR_EM = 0.62  # advance of one character in em: 0.60 in the monospace fonts above, rounded up
ASCENT_EM = 0.8  # a text's box above and below its baseline, in em (for layout and tests)
DESCENT_EM = 0.25
PAD = 4.0  # horizontal space kept between two labels

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
STYLE = (
    "text{fill:#212121}.halo{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}"
    ".in{fill:#fff}.dim{fill:#616161}.bar:hover,.stage:hover{stroke:#000;stroke-width:1}"
    ".open{fill-opacity:.45;stroke-dasharray:3 2;stroke-width:1}"
)


# -- text --------------------------------------------------------------------------------------

def text_width(s: str, size: float) -> float:
    """Estimated width in px of ``s`` at font ``size`` (wide East Asian characters count twice)."""
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
    """Text for markup: characters XML cannot carry replaced, ``& < > "`` escaped."""
    return escape(_NOT_XML.sub("\ufffd", s), {'"': "&quot;"})


def num(v: float) -> str:
    """A coordinate, to 0.1 px."""
    s = f"{v:.1f}"
    s = s[:-2] if s.endswith(".0") else s
    return "0" if s == "-0" else s


def fmt_duration(ns: int) -> str:
    """A duration for a label: 2.089 s, 166.3 ms, 4.25 ms, 86 µs."""
    if ns >= NS_PER_S:
        return f"{ns / NS_PER_S:.3f} s"
    if ns >= 10 * NS_PER_MS:
        return f"{ns / NS_PER_MS:.1f} ms"
    if ns >= NS_PER_MS:
        return f"{ns / NS_PER_MS:.2f} ms"
    return f"{ns / 1000:.0f} µs"


def fmt_at(ns: int) -> str:
    return f"{ns / NS_PER_S:.6f} s"


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

class LabelRows:
    """Label rows beside a lane: the occupied x intervals of each row, sorted and disjoint.

    A label takes the first row (row 0 is next to the lane) where its box is free and where the
    leader line from the lane to it crosses nothing in the rows in between.
    """

    def __init__(self, lo: float, hi: float, max_rows: int) -> None:
        self.lo, self.hi, self.max_rows = lo, hi, max_rows
        self.starts: list[list[float]] = []
        self.ends: list[list[float]] = []

    def _free(self, r: int, a: float, b: float) -> bool:
        i = bisect_left(self.starts[r], b)
        return i == 0 or self.ends[r][i - 1] <= a

    def _take(self, r: int, a: float, b: float) -> None:
        i = bisect_left(self.starts[r], a)
        self.starts[r].insert(i, a)
        self.ends[r].insert(i, b)

    def find(self, xs: Sequence[float], w: float, lead: float, must: bool, lead_in_row: bool = False
             ) -> tuple[int, float] | None:
        """Row and left edge for a label of width ``w`` at one of the left edges ``xs``, with its
        leader at x=``lead`` (beside the label when ``lead_in_row``); None when there is no room.
        A ``must`` label may open rows past ``max_rows``."""
        la, lb = lead - 1.5, lead + 1.5
        cands = [min(max(x, self.lo), self.hi - w) for x in xs]
        for r in range(len(self.starts)):
            for x in cands:
                a, b = x - PAD / 2, x + w + PAD / 2
                if lead_in_row:
                    a, b = min(a, la), max(b, lb)
                if self._free(r, a, b):
                    return r, x
            if not must and not self._free(r, la, lb):
                return None  # a must label's leader may cross a label: it is drawn under the text's halo
        r = len(self.starts)
        return (r, cands[0]) if cands and (r < self.max_rows or must) else None

    def take(self, spot: tuple[int, float], w: float, lead: float, lead_in_row: bool = False) -> None:
        """Occupy what :meth:`find` found: the label's box and its leader's path."""
        r, x = spot
        while len(self.starts) <= r:
            self.starts.append([])
            self.ends.append([])
        la, lb = lead - 1.5, lead + 1.5
        a, b = x - PAD / 2, x + w + PAD / 2
        if lead_in_row:
            a, b = min(a, la), max(b, lb)
        self._take(r, a, b)
        for q in range(r):
            if self._free(q, la, lb):  # (not free: a must label's leader crosses a label there)
                self._take(q, la, lb)

    @property
    def used(self) -> int:
        """Rows holding at least one label."""
        return len(self.starts)


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


