"""Text fitted to a terminal's columns: a name clipped in the middle (:func:`mid_clip`), and a
table sized to the width (:func:`fit_table`), as every terminal table (analyze, advise, compare,
check, experiment, the function_graph tables) is.

A line clipped at its end is :func:`bootlens.core.lines.clip`, which the stages before render
(advice evidence, budget evidence) use too. rich is imported by :func:`fit_table` itself: the
renderers that only clip names (history, the progress bar) do not load it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Group as Stack
    from rich.text import Text

    Cell = str | Text

_GAP = 2  # spaces between columns: no vertical rules (the table's padding, one each side)


def mid_clip(s: str, width: int) -> str:
    """``s`` in at most ``width`` characters, the middle replaced by '…' (both ends of a name
    tell it apart: of_platform_…_populate_init)."""
    if len(s) <= width:
        return s
    if width <= 1:
        return "…"[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return s[:head] + "…" + (s[-tail:] if tail else "")


def fit_table(title: str, cols: Sequence[tuple[str, str]], rows: Sequence[Sequence[Cell]], width: int,
              flex: Sequence[int] = (), keep: Sequence[int] = (0,), row_styles: Sequence[str] = (),
              tail: int | None = None, wrap: int | None = None) -> Stack:
    """A table of ``rows`` under ``cols`` (header, justify) in ``width`` columns: a column whose
    every cell is empty is left out (but those in ``keep``); while the table is too wide, the
    ``tail`` column (log text) loses the end of its longest cells down to 24 characters, then the
    widest ``flex`` column (names) the middle of its longest. Every cell stays on one line but
    those of the ``wrap`` column (the last, prose), which wraps in the room the others leave."""
    from rich import box
    from rich.cells import cell_len
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    def w(c: Cell) -> int:
        return c.cell_len if isinstance(c, Text) else cell_len(c)

    shown = [i for i in range(len(cols)) if i in keep or any(w(r[i]) for r in rows)]
    grid = [list(r) for r in rows]

    def col_width(i: int) -> int:
        return max([cell_len(cols[i][0])] + [w(r[i]) for r in grid])

    def shrink(i: int, target: int, middle: bool) -> None:
        for r in grid:
            c = r[i]
            text = c.plain if isinstance(c, Text) else c
            if cell_len(text) > target:
                # measured in cells, cut in characters (core.lines.clip measures characters:
                # it would leave a text of wide characters whole)
                cut = mid_clip(text, target) if middle else text[: max(target - 1, 0)] + "…"
                r[i] = Text(cut, style=c.style) if isinstance(c, Text) else cut

    widths = {i: col_width(i) for i in shown}
    budget = width - _GAP * (len(shown) - 1)
    if wrap is not None and wrap in widths:
        widths[wrap] = min(widths[wrap], max(16, budget - sum(v for k, v in widths.items() if k != wrap)))
    if tail is not None and tail in widths and sum(widths.values()) > budget:
        shrink(tail, max(24, widths[tail] - (sum(widths.values()) - budget)), False)
        widths[tail] = col_width(tail)
    for _ in range(len(flex) * 4):
        over = sum(widths.values()) - budget
        cands = [i for i in flex if i in widths and widths[i] > max(12, cell_len(cols[i][0]))]
        if over <= 0 or not cands:
            break
        i = max(cands, key=lambda c: widths[c])
        shrink(i, max(12, cell_len(cols[i][0]), widths[i] - over), True)
        widths[i] = col_width(i)
    # no vertical rules and two spaces between columns (_GAP), in every table of the terminal
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0, 0, 1))
    for i in shown:
        head, justify = cols[i]
        if i == wrap:
            t.add_column(head, justify=justify, overflow="fold")  # type: ignore[arg-type]
            continue
        t.add_column(head, justify=justify, no_wrap=True, overflow="ellipsis",  # type: ignore[arg-type]
                     min_width=widths[i] if i != tail else None)
    for n, r in enumerate(grid):
        # a plain string is log text, never rich markup ("bootconsole [pl11] enabled" kept whole)
        t.add_row(*[c if isinstance(c := r[i], Text) else Text(c) for i in shown],
                  style=row_styles[n] if n < len(row_styles) else None)
    # the title above the table, not in it: rich wraps a title to its table's width
    return Group(Text(title, style="bold", no_wrap=True, overflow="ellipsis"), t)
