"""The keyword index as a native column (_scan.IndexColumn) and the reading path's memory-saving
forms: what callers of Lines.grep / Lines.starting and the initcall scan see must not change."""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import INDEX_NEEDLES, INDEX_PREFIXES

from bootlens.read import reader as L
from bootlens.core import lines as LC
from bootlens.parsers.initcall import NATIVE_TYPES, NEEDLES

native = LC.native_module()
IndexColumn = native.IndexColumn

LOG = "".join(
    f"[    {i // 100}.{i % 100:06d}] " + (
        f"calling  init_{i}+0x0/0x10 @ 1" if i % 3 == 0 else
        f"initcall init_{i - 1}+0x0/0x10 returned 0 after {i} usecs" if i % 3 == 1 else
        f"Freeing unused memory {i}K" if i % 7 == 0 else f"plain message {i} é")
    + "\n" for i in range(300))


def test_index_column_is_a_sequence_of_int() -> None:
    c = IndexColumn([1, 5, 9, 12])
    assert isinstance(c, Sequence)
    assert len(c) == 4 and bool(c) and not IndexColumn([])
    assert (c[0], c[-1], c[2]) == (1, 12, 9)
    with pytest.raises(IndexError):
        c[4]
    with pytest.raises(IndexError):
        c[-5]
    assert list(c) == [1, 5, 9, 12] and c.tolist() == [1, 5, 9, 12]
    assert type(c[1:3]).__name__ == "IndexColumn" and c[1:3] == [5, 9] and c[::2] == [1, 9] and c[5:] == []
    assert 9 in c and 10 not in c and "9" not in c and -1 not in c
    assert c.count(5) == 1 and c.count(6) == 0 and c.index(9) == 2
    with pytest.raises(ValueError):
        c.index(6)
    assert c == [1, 5, 9, 12] and c != [1, 5, 9] and c != ["a"] and c == IndexColumn([1, 5, 9, 12])
    assert not (c == (1, 5, 9, 12))  # a list's semantics: a tuple is not equal
    assert bisect.bisect_left(c, 6) == 2 and sorted(set(c)) == [1, 5, 9, 12]
    assert "IndexColumn" in repr(c)


def test_index_column_edits() -> None:
    """The whole-column edits Lines makes: a slice's own index, a union, a retext."""
    c = IndexColumn([1, 5, 9, 12])
    assert c.between(5, 12) == [0, 4] and c.between(0, 100) == [1, 5, 9, 12] and c.between(6, 6) == []
    assert c.between(9, 2) == []
    assert IndexColumn.union([c, IndexColumn([0, 5, 13])]) == [0, 1, 5, 9, 12, 13]
    assert IndexColumn.union([]) == []
    assert c.edited([5, 7], [7, 2]) == [1, 2, 7, 9, 12] and c.edited([], []) == c


def test_index_column_past_u32() -> None:
    """Past 4G lines the entries are kept whole (8 bytes each), not wrapped."""
    big = [3, 2**32 + 5, 2**40]
    c = IndexColumn(big)
    assert c == big and list(c) == big and 2**32 + 5 in c and c.between(2**32, 2**41) == [5, 2**40 - 2**32]


def test_lines_index_is_native_and_true() -> None:
    """Lines.grep / starting give IndexColumns equal to a plain search of the messages, alone or
    as a union of several keywords (which was sorted(set().union(...)))."""
    lines = L.frame_text(LOG, "plain", INDEX_NEEDLES, INDEX_PREFIXES)
    texts = list(lines.text)
    for n in ("call", "usecs", "é", "memory"):
        got = lines.grep(n)
        assert type(got).__name__ == "IndexColumn"
        assert got == [i for i, t in enumerate(texts) if n in t]
    assert lines.grep("call", "Freeing", "nowhere") == [i for i, t in enumerate(texts)
                                                        if "call" in t or "Freeing" in t]
    assert lines.starting("Freeing", "calling") == [i for i, t in enumerate(texts)
                                                    if t.startswith(("Freeing", "calling"))]
    assert lines.grep("nowhere") == [] and not lines.starting("nowhere")


def test_initcall_scan_reads_the_column() -> None:
    """PyO3's Vec<usize> extraction (the initcall scan's `candidates`) reads an IndexColumn, a
    single keyword's or a union, as it reads the list."""
    lines = L.frame_text(LOG, "plain", INDEX_NEEDLES, INDEX_PREFIXES)
    for cands in (lines.grep(*NEEDLES), lines.grep("call")):
        assert type(cands).__name__ == "IndexColumn"
        got = native.initcalls(lines.text, cands)
        assert got == native.initcalls(lines.text, list(cands))
        assert len(got[0]) == 100  # the 100 calling lines, 99 of them returned


def test_slice_and_retext_keep_the_index_true() -> None:
    lines = L.frame_text(LOG, "plain", INDEX_NEEDLES, INDEX_PREFIXES)
    part = lines.slice(40, 130)
    texts = list(part.text)
    assert part.grep("call") == [i for i, t in enumerate(texts) if "call" in t]
    assert part.starting("Freeing") == [i for i, t in enumerate(texts) if t.startswith("Freeing")]
    lines.retext({0: "Freeing it all", 2: "nothing", 4: "called"})
    texts = list(lines.text)
    for n in ("call", "usecs"):
        assert lines.grep(n) == [i for i, t in enumerate(texts) if n in t]
    assert lines.starting("Freeing") == [i for i, t in enumerate(texts) if t.startswith("Freeing")]


def test_set_hits_takes_lists() -> None:
    """Hits computed elsewhere as lists are held as columns."""
    lines = LC.Lines(["a", "b call", "call"], [None] * 3, [None] * 3)
    lines.set_hits({"call": [1, 2]}, {"c": [2]})
    assert type(lines.grep("call")).__name__ == "IndexColumn" and lines.grep("call") == [1, 2]
    assert lines.starting("c") == [2] and lines.slice(1, 3).grep("call") == [0, 1]


# --- cleaning on bytes -------------------------------------------------------------------------

def _clean_text_str(data: bytes) -> tuple[str, dict[str, int | bool]]:
    """What clean_text did on a decoded str of the whole input (before it worked on bytes): the
    reference its results must stay equal to."""
    import re

    ansi = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[()*+][0-~]|[0-~])")
    try:
        text, invalid = data.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        invalid = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
    text = text.removeprefix("\ufeff")
    nul = text.count("\x00")
    text = text.replace("\x00", "")
    cr_only = "\r" in text and "\n" not in text
    text = text.replace("\r", "\n") if cr_only else text.replace("\r", "")
    text, n1 = ansi.subn("", text)
    text, n2 = re.subn(r"[\x00-\x08\x0b-\x1f\x7f]", "", text)
    return text, {"invalid_utf8": invalid, "nul_bytes": nul, "cr_only": cr_only, "control_chars": n1 + n2}


DIRTY = [
    b"plain ascii\n",
    "\ufeff[    0.000000] caf\u00e9 \u2014 \U0001F600\r\n".encode() * 3,
    b"bad \xff\xfe \xc3( \xe2\x82 end\n" + "ok \ufffd kept\n".encode(),
    b"\x1b[1;32mOK\x1b[0m \x1b]0;t\xc3\xa9tle\x07 \x1bc x\x00y\x07z\x7f\n",
    b"progress 10%\rprogress 100%\rdone\n",
    b"cr only\rlines\r",
    b"\x1b]unterminated \xe2\x80\x94 osc\n\xf0\x9f\x98\n",
]


@pytest.mark.parametrize("data", DIRTY, ids=range(len(DIRTY)))
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_clean_on_bytes_is_the_str_cleaning(data: bytes, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cleaning the bytes gives what cleaning the decoded str gave, text and counts, whatever the
    chunks invalid UTF-8 is replaced in (a sequence cut by a newline, a chunk of one byte)."""
    monkeypatch.setattr(L, "_CHUNK", chunk)
    assert L.clean_text(data) == _clean_text_str(data)
    lines, stats = L.frame_bytes("<t>", data)
    text = _clean_text_str(data)[0]
    ref = L.frame_text(text, L._detect_framing(text))  # the str framed as before
    assert list(lines.text) == list(ref.text) and list(lines.kernel) == list(ref.kernel)
    assert stats.invalid_utf8 == _clean_text_str(data)[1]["invalid_utf8"]


def test_read_path_frees_the_raw_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CRLF capture with a few UTF-8 characters is framed from cleaned bytes, and read_path
    keeps no reference to the raw bytes: they are freed before the framing starts."""
    p = tmp_path / "crlf.log"
    p.write_bytes("[    0.100000] caf\u00e9 calling  x+0x0/0x1 @ 1\r\n[    0.200000] \u2014 ok\r\n".encode())
    freed: list[bool] = []
    at_frame: list[bool] = []

    class Raw(bytes):
        def __del__(self) -> None:
            freed.append(True)

    real_open = open

    class RawFile:
        """read_path's file, handing out the bytes as Raw (whose __del__ says when they go)."""

        def __init__(self, path: str) -> None:
            self.f = real_open(path, "rb")

        def __enter__(self) -> "RawFile":
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

        def read(self) -> bytes:
            return Raw(self.f.read())

    def raw_open(path: str, mode: str = "r") -> RawFile:
        assert mode == "rb"
        return RawFile(path)

    real_frame = L.frame_text

    def frame_text(*args: object, **kw: object) -> LC.Lines:
        at_frame.append(bool(freed))
        return real_frame(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(L, "open", raw_open, raising=False)  # read_path's open, module global first
    monkeypatch.setattr(L, "frame_text", frame_text)
    lines, stats = L.read_path(str(p))
    assert at_frame == [True]
    assert list(lines.text) == ["caf\u00e9 calling  x+0x0/0x1 @ 1", "\u2014 ok"] and lines.grep("call") == [0]
    assert stats.invalid_utf8 == 0 and lines.kernel[1] == 200_000_000 and stats.lines == 2


def test_time_column_iterates_in_chunks() -> None:
    """A TimeColumn iterates as its list would, across chunk edges, without a list of the whole
    column; a value set at the current position while walking (host_restarts does) is not seen
    again, and later values are read as they are."""
    text = "".join(f"[    {i}.000000] m\n" if i % 3 else "no stamp\n" for i in range(10_000))
    lines = L.frame_text(text, "plain")
    k = lines.kernel
    want = [None if i % 3 == 0 else i * 10**9 for i in range(10_000)]
    assert list(k) == want and sum(1 for _ in k) == 10_000 and list(L.frame_text("x\n", "plain").kernel) == [None]
    assert next(v for v in k if v is not None) == 10**9
    seen = []
    for i, v in enumerate(k):
        seen.append(v)
        if v is not None:
            k[i] = v + 1
    assert seen == want and list(k) == [None if v is None else v + 1 for v in want]


def test_initcall_scan_reads_lines_in_place() -> None:
    """The scan reads a TextColumn's lines in place (a rewritten line from its own str) and a
    list of str as before: the same rows either way; a candidate past the end is an IndexError."""
    lines = L.frame_text(LOG, "plain", INDEX_NEEDLES, INDEX_PREFIXES)
    lines.retext({0: "calling  rewritten_é+0x0/0x10 @ 7", 1: "plain now"})
    cands = lines.grep(*NEEDLES)
    got = native.initcalls(lines.text, cands)
    assert got == native.initcalls(list(lines.text), list(cands))
    assert ("rewritten_é", None, 0, -1, None, 7, None) in got[0]
    block = native.initcall_block(lines.text, cands, lines.kernel, lines.host, lines.first, NATIVE_TYPES)
    as_list = native.initcall_block(list(lines.text), list(cands), list(lines.kernel), list(lines.host),
                                    lines.first, NATIVE_TYPES)
    assert list(block[0]) == list(as_list[0]) and block[1:] == as_list[1:]
    for bad in (IndexColumn([len(lines)]), [len(lines)]):
        with pytest.raises(IndexError):
            native.initcalls(lines.text, bad)
    with pytest.raises(TypeError):
        native.initcalls(lines.text, ["1"])


@pytest.mark.parametrize("n", [0, 1, 3, 50, 10_000])
def test_gaps_keeps_the_n_largest(n: int) -> None:
    """gaps keeps only the n best (a heap) yet gives what sorting every gap gave: largest first,
    ties by the earlier position; read in place from a TimeColumn, or from a list."""
    rng = random.Random(n)
    vals: list[int | None] = []
    t = 0
    for _ in range(3000):
        if rng.random() < 0.2:
            vals.append(None)
        else:
            t += rng.choice((0, 1, 1, 2, 5, 5, 9)) * (1 if rng.random() < 0.95 else -1)
            vals.append(t)
    timed = [(i, v) for i, v in enumerate(vals) if v is not None]
    every = [(b[1] - a[1], a[0], b[0]) for a, b in zip(timed, timed[1:])]
    want = sorted(every, key=lambda g: (-g[0], g[1]))[:n]
    text = "".join(f"[{v // 10**6}.{v % 10**6:06d}] m\n" if v is not None and v >= 0 else "m\n" for v in vals)
    col = L.frame_text(text, "plain").kernel
    assert type(col).__name__ == "TimeColumn"
    assert LC.gaps(vals, n) == want
    col_vals = list(col)
    col_timed = [(i, v) for i, v in enumerate(col_vals) if v is not None]
    col_every = [(b[1] - a[1], a[0], b[0]) for a, b in zip(col_timed, col_timed[1:])]
    assert LC.gaps(col, n) == sorted(col_every, key=lambda g: (-g[0], g[1]))[:n]
    assert LC.steps_back(col) == LC.steps_back(col_vals)


def test_initcall_rows_keep_their_extremes() -> None:
    """The scan holds a call in 40 bytes (module, pid and return value narrowed): the rows read
    back whole at the edges of each range, with and without a module, returned or not."""
    text = ("calling  a+0x0/0x1 @ 4194304\n"
            "initcall a+0x0/0x1 returned -2147483648 after 7 usecs\n"
            "calling  b+0x0/0x1 [mod_b] @ 0\n"
            "initcall b+0x0/0x1 [mod_b] returned 2147483647 after 9 msecs\n"
            "initcall c+0x0/0x1 returned 0 after 1 usecs\n"
            "calling  d+0x0/0x1 [mod_d] @ 12\n")
    lines = L.frame_text(text, "plain", INDEX_NEEDLES, INDEX_PREFIXES)
    calls = native.initcalls(lines.text, lines.grep(*NEEDLES))[0]
    assert calls == [("a", None, 0, 1, 7_000, 4194304, -2147483648),
                     ("b", "mod_b", 2, 3, 9_000_000, 0, 2147483647),
                     ("c", None, -1, 4, 1_000, None, 0),
                     ("d", "mod_d", 5, -1, None, 12, None)]


def _read_all(path: Path) -> tuple[list[object], object]:
    lines, stats = L.read_path(str(path), ["probe"])
    return [list(lines.text), list(lines.kernel), list(lines.host), list(lines.grep("call", "probe"))], stats


def test_a_large_regular_file_is_mapped_and_framed_as_if_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_path maps a regular file of MAP_MIN bytes or more (here MAP_MIN is lowered) when it
    is plain text with nothing to clean, and frames the map in place: lines, times, index and
    input statistics are those of the bytes read. A file to clean (CRLF, ANSI), a recording, a
    journal export and a blank file are read as bytes, as before; the map cannot be closed while
    the columns read it."""
    import mmap

    from bootlens.core.errors import InputError

    body = "".join(f"[    {i}.000001] calling  f{i % 7}+0x0/0x1 @ 1\n[    {i}.000002] initcall f{i % 7}+0x0/0x1 "
                   f"returned 0 after {i} usecs\nplain é line {i}\n" for i in range(300))
    cases = {"plain.log": body.encode(), "nonl.log": body.rstrip("\n").encode(),
             "crlf.log": body.replace("\n", "\r\n").encode(), "ansi.log": ("\x1b[32m" + body).encode(),
             "export.log": b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\nMESSAGE=hi\n\n", "blank.log": b" \n\n\t\n"}
    want = {}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        try:
            want[name] = _read_all(tmp_path / name)
        except InputError as e:
            want[name] = str(e)
    monkeypatch.setattr(L, "MAP_MIN", 1)
    for name in cases:
        with open(tmp_path / name, "rb") as f:
            got = L._read_file(f)
        assert isinstance(got, LC._native.Pinned) == (name in ("plain.log", "nonl.log")), name
        assert got[:] == cases[name]
        try:
            assert _read_all(tmp_path / name) == want[name], name
        except InputError as e:
            assert str(e) == want[name], name
    m = mmap.mmap(-1, 4)
    m.write(b"a\nb\n")
    pinned = LC._native.Pinned(m)
    with pytest.raises(BufferError):
        m.close()  # exported: the columns' buffer stays mapped
    assert len(pinned) == 4 and pinned[1:3] == b"\nb" and list(L.frame_text(pinned, "plain").text) == ["a", "b"]
