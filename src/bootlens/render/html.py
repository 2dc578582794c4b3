"""``bootlens report``: one self-contained, interactive HTML file.

The page is static: the analysis is embedded as JSON in a ``<script type="application/json">``
block and drawn by one inline script (``report.js``) on a canvas, so a boot with 100,000 events
draws only what is visible. Nothing is fetched: a Content-Security-Policy allows no network
access at all and no script but ours (by hash), and the script only ever sets text
(``textContent``), never markup, so a device printing ``<script>`` shows it as text; bidi
controls and other invisible characters are shown as escapes (:mod:`.visible`). Colours come
from :mod:`.palette` as CSS variables (the SVG boot graph uses the same palette), which the
legend, the stage bar and the canvas read.

What it embeds, and that data's layout, are :mod:`.html_data`'s.
"""

from __future__ import annotations

import base64
import gc
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson

from .._native import native_module
from ..stats.compare import Comparison
from ..timeline.inputs import Group
from . import palette, side
from .html_columns import JsonPiece
from .html_data import report_data

if TYPE_CHECKING:
    from .many import ManyBoots
from .visible import visible, visible_data


Piece = bytes | JsonPiece  # a piece of a page: its bytes, or a value that writes itself


def _embed_pieces(obj: Any) -> list[Piece]:
    """JSON safe inside a <script> element (no '<' can close it or open a comment), in pieces:
    what orjson writes for ``obj`` around its :class:`JsonPiece` values, escaped here
    (page.rs page_escape), and those values, which write their own text with the same escapes.
    At a million events the pieces are most of the page's 186 MB: it is written piece by piece
    (:func:`bootlens.cli.exits.write_output`), never copied whole to serialise, escape or join."""
    held: list[JsonPiece] = []

    def hold(o: Any) -> orjson.Fragment:
        if not hasattr(o, "write_to"):
            raise TypeError(f"Type is not JSON serializable: {type(o).__name__}")
        held.append(o)
        return orjson.Fragment(b"\0")  # orjson writes no NUL byte of its own: a NUL in a string is \u0000

    raw = orjson.dumps(obj, default=hold)
    escape = native_module().page_escape
    parts = raw.split(b"\0") if held else [raw]
    out: list[Piece] = [escape(parts[0])]
    for p, text in zip(held, parts[1:]):
        out += [p, escape(text)]
    return out


def _embed(obj: Any) -> bytes:
    """:func:`_embed_pieces` as one bytes object."""
    return _joined(_embed_pieces(obj))


def _joined(pieces: Sequence[Piece]) -> bytes:
    """A page's pieces as one bytes object."""
    return b"".join(p if isinstance(p, bytes) else bytes(p) for p in pieces)


def _asset(name: str) -> str:
    return resources.files("bootlens.render").joinpath("assets", name).read_text(encoding="utf-8")


def _swatch_html(sw: palette.Swatch) -> str:
    """A legend swatch drawn with the palette's CSS variables (the canvas reads the same ones)."""
    a = f"var(--pal-{sw.key})"
    b = f"var(--pal-{sw.key}-2)" if len(sw.colours) > 1 else a
    style = {
        "pair": f"background:linear-gradient(90deg,{a} 50%,{b} 50%)",
        "split": f"background:linear-gradient(90deg,{a} 40%,{b} 40%)",
        "line": f"border-left-color:{a}", "dash": f"border-left-color:{a}",
    }.get(sw.shape, f"background:{a}")
    return f'<span class="sw {sw.shape}" style="{style}"></span>'


def _legend_html() -> str:
    """The legend of the timeline, every entry of the palette; the page shows those of the boot
    on view (its ``legend`` keys)."""
    from html import escape

    out = ['<div id="legend" aria-label="legend of the timeline">']
    for title, items in palette.legend_items((s.key for s in palette.ALL), palette.HTML_GROUPS):
        out.append(f'<span class="lg-group" data-group="{escape(title)}"><b>{escape(title)}</b>')
        out.extend(f'<span class="lg" data-key="{s.key}">{_swatch_html(s)}{escape(s.label)}</span>' for s in items)
        out.append("</span>")
    out.append("</div>")
    return "".join(out)


def _page(title: str, body: str, data: Any, js_name: str) -> list[Piece]:
    """A self-contained page, in pieces (:func:`_embed_pieces`): our stylesheet and one script of
    ours (allowed by its hash), the data as inert JSON, and a policy that allows no network
    access at all. Every string of the data is for display, so every one is made
    :func:`~.visible.visible` here (a piece's strings are those it leaves as they are): a U+202E
    in a log line shows as ``\\u202e``, it does not turn the line around."""
    from html import escape

    js = _asset("table.js") + "\n" + _asset(js_name)
    css = palette.css_variables() + "\n" + _asset("report.css")
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    head = "".join((
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        f"<title>{escape(visible(title))}</title>\n<style>{css}</style>\n</head><body>\n",
        body,
        "\n<script type=\"application/json\" id=\"bootlens-data\">",
    ))
    tail = f"</script>\n<script>{js}</script>\n</body></html>\n"
    return [head.encode(), *_embed_pieces(visible_data(data)), tail.encode()]


def render_html(groups: Sequence[Group], top: int = 25) -> bytes:
    """The report page for these inputs."""
    return _joined(render_html_pieces(groups, top))


def render_html_pieces(groups: Sequence[Group], top: int = 25, many: Mapping[int, ManyBoots] | None = None,
                       boot: int | None = None) -> list[Piece]:
    """The report page for these inputs in pieces, for :func:`bootlens.cli.exits.write_output`
    to write one after another (at a million events no 186 MB page is joined). ``many``: the
    inputs of many boots, by group index (:mod:`.many`); ``boot``: the boot to open on (1-based)."""
    title = "bootlens report"
    if groups:
        title += " · " + ", ".join(g.name for g in groups[:3])
    body = _asset("report.html").replace("<!--legend-->", _legend_html())
    body = body.replace("<!--side-->", side.html_sections(groups))  # render/side/: an ftrace's icicles
    with no_cycle_collection():
        return _page(title, body, report_data(groups, top, raw=True, many=many, boot=boot), "report.js")


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while the page is built. Building it allocates
    millions of short-lived containers (the columns' tuples, the advisor's lists), and every
    so many allocations the collector walks every live container: the boot's model too, a
    million events and their details. That walk was a third of ``report``'s time for
    100,000 events and grows with the model. What the page builds is freed by reference
    counting, without cycles; any cycle left is collected once the collector runs again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def render_compare_html(c: Comparison, tried: Sequence[dict[str, Any]] | None = None) -> bytes:
    """The compare page: per input against the baseline, a waterfall of stage differences and
    the tables of initcall, process and probe differences (data: the compare JSON contract).
    ``tried``: optimize's before/after page adds each change it tried, its estimate beside its
    measurement (:func:`bootlens.render.experiment.tried_rows`)."""
    from .compare_json import compare_json_obj

    title = "bootlens compare · " + " vs ".join(i.name for i in c.inputs[:4])
    data = compare_json_obj(c)
    if tried:
        data = {**data, "tried": list(tried)}
    return _joined(_page(title, _asset("compare.html"), data, "compare.js"))
