"""The native function_graph scan's bookkeeping that the golden excerpts are too small to reach:
the per-initcall rows cut to the answer's size as each do_one_initcall returns (ties kept in
order of first call, a block still open at the end cut too), the name table growing past its
first size, and the KFT table's top-N per initcall being the head of its full list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bootlens.sources.ftrace.kft import kft
from bootlens._native import native_module
from bootlens.sources.ftrace.reader import read_trace


def _leaf(name: str, us: int, depth: int = 2) -> str:
    return f" 0) {us:>8}.000 us |  {'  ' * depth}{name}();\n"


def _block(initcall: str, leaves: list[tuple[str, int]], closed: bool = True) -> str:
    total = sum(us for _, us in leaves) + 1
    out = [" 0)               |  do_one_initcall() {\n", f" 0)               |    {initcall}() {{\n"]
    out += [_leaf(n, us) for n, us in leaves]
    out.append(f" 0) {total:>8}.000 us |    }}\n")
    if closed:
        out.append(f" 0) {total + 1:>8}.000 us |  }}\n")
    return "".join(out)


def _rows(d: dict[str, Any], block: int) -> list[tuple[str, int, int]]:
    """A block's group rows as (name, calls, total ns), in the answer's order."""
    names = d["names"]
    of, fn = d["group_keys"]
    calls, total = d["group_stats"][0], d["group_stats"][1]
    return [(names[fn[k]], calls[k], total[k]) for k in range(len(of)) if of[k] == block]


def test_rows_cut_per_block(tmp_path: Path) -> None:
    """per_group=2: each block keeps its initcall's row and its 2 worst functions; of functions
    with equal totals the first called is kept; a block whose do_one_initcall never returns is
    cut the same way at the end of the trace; group_rows_cut counts what was left out."""
    p = tmp_path / "t.txt"
    p.write_text(_block("a_init", [("x", 5), ("y", 7), ("z", 7), ("w", 3), ("y", 1)])  # y: 8 us in 2 calls
                 + _block("b_init", [("t1", 4), ("t2", 4), ("t3", 4), ("t4", 9)])
                 + _block("c_init", [("u", 2), ("v", 6), ("q", 6)], closed=False))
    d = native_module().ftrace_graph(str(p), per_group=2)
    assert d["open"] == 1 and len(d["blocks"]) == 3
    assert _rows(d, 0) == [("a_init", 1, 24_000), ("y", 2, 8_000), ("z", 1, 7_000)]  # x (5) and w (3) cut
    assert _rows(d, 1) == [("b_init", 1, 22_000), ("t4", 1, 9_000), ("t1", 1, 4_000)]  # t1 first of the 4 us ties
    assert _rows(d, 2) == [("c_init", 1, 15_000), ("v", 1, 6_000), ("q", 1, 6_000)]  # open block, cut at the end
    assert d["group_rows_cut"] == 2 + 2 + 1
    everything = native_module().ftrace_graph(str(p), per_group=50)
    assert everything["group_rows_cut"] == 0 and len(_rows(everything, 1)) == 5


def test_many_names_and_top_per_initcall(tmp_path: Path) -> None:
    """3,000 distinct functions (the name table grows several times): each keeps its own row;
    the KFT table cut to its top rows per initcall is the head of the full table."""
    leaves = [(f"fn_{i}", 1 + i % 17) for i in range(3000)]
    p = tmp_path / "t.txt"
    p.write_text(_block("big_init", leaves) + _block("big_init", leaves[::-1][:40]))
    g = read_trace(str(p)).graph
    assert g is not None
    overall = {r.name: (r.calls, r.total_ns) for r in kft(g).overall}
    assert len(overall) == 3000 + 2  # do_one_initcall and big_init
    assert overall["fn_2999"] == (2, 2 * (1 + 2999 % 17) * 1000) and overall["fn_5"] == (1, 6_000)
    full, top = kft(g), kft(g, None, 3)
    assert [t.own for t in full.initcalls] == [t.own for t in top.initcalls]
    assert [t.rows[:3] for t in full.initcalls] == [t.rows for t in top.initcalls]
    # the scan keeps block 1's 50 worst (17 us: fn_16, fn_33, ... fn_849, ties by first call);
    # block 2 adds fn_2974 and fn_2991 at 17 us: equal totals, self and calls sort by name
    assert [r.name for r in top.initcalls[0].rows] == ["fn_101", "fn_118", "fn_135"]
    assert sum(1 for r in full.initcalls[0].rows if r.total_ns == 17_000) == 52


def test_many_chunks_in_file_order(tmp_path: Path) -> None:
    """The scan parses 1 MiB chunks on a reader thread while the state machine runs over the
    previous one: over ~5 MiB, calls whose open and close lines sit in different chunks pair up
    (one outer call spans the whole file), lines split by a chunk's end parse whole, and the
    line numbers of non-graph lines count from the file's start."""
    n = 150_000
    body = "".join(_leaf(f"leaf_{i % 7}", 1 + i % 3) for i in range(n))
    mid = len(body) // 2 - 5  # an event line in the middle of the file (not on a line start)
    mid = body.index("\n", mid) + 1
    text = (" 0)               |  outer() {\n" + body[:mid] + "# an event line\n" + body[mid:]
            + " 0) 99999999.000 us |  }\n")
    p = tmp_path / "t.txt"
    p.write_text(text)
    assert len(text) > 4 << 20
    d = native_module().ftrace_graph(str(p))
    assert (d["lines"], d["graph"], d["bad"], d["orphans"], d["open"]) == (n + 3, n + 2, 0, 0, 0)
    names, calls, total = d["names"], d["functions"][0], d["functions"][1]
    by = {names[i]: (calls[i], total[i]) for i in range(len(names))}
    assert by["outer"] == (1, 99_999_999_000)
    # leaf_k is called at i = k, k + 7, ...: i % 3 gives its durations
    expect = {f"leaf_{k}": (len(range(k, n, 7)), sum(1 + i % 3 for i in range(k, n, 7)) * 1000) for k in range(7)}
    assert {k: by[k] for k in expect} == expect
    assert d["other"] == [(body[:mid].count("\n") + 2, "# an event line")]
