"""Lines as columns: the text, printk time and host time of every line of a boot's input, with
the keyword index the parsers start from (:class:`Lines`), and the questions asked of a line's
time (:func:`stamp_at`, :func:`estimate_stamp`). Reading bytes into Lines is :mod:`bootlens.read.reader`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, MutableSequence, Sequence

from .._native import native_module
from .model import Clock, Line, Stamp


def whole_chars(text: str) -> str:
    """``text`` with each lone surrogate (U+D800-U+DFFF) as U+FFFD. A JSON string escape of half
    a UTF-16 pair ("\\ud800") decodes to one; it is no character, cannot be written as UTF-8
    (the native core and every writer refuse it), so it is read as undecodable bytes are. For
    every string a JSON input gives: journal JSON, systemd's plot JSON, a recording's header."""
    if text.isascii():
        return text
    import re  # rare: only text beyond ASCII pays

    return re.sub("[\ud800-\udfff]", "\ufffd", text)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from typing import Any

_native = native_module()
_IndexColumn: Any = _native.IndexColumn

# The message texts: a list of str, or (framed natively) a _scan.TextColumn, which holds the
# cleaned input once with each message's span and makes a str only for the lines asked for.
Texts = MutableSequence[str]
# The times (ns or None): a list, or (framed natively) a _scan.TimeColumn of i64, 8 bytes a line.
Times = MutableSequence[int | None]
# One keyword's hits (ascending line indices): a _scan.IndexColumn, 4 bytes an entry where a list
# of int costs 40 ("call" hits half the lines of an initcall_debug log).
Index = Sequence[int]

# A journal entry's identifier when the kernel logged it ("kernel: " in journalctl's short format,
# SYSLOG_IDENTIFIER=kernel in its JSON and export forms), among its side fields (Lines.fields): the
# framings take "kernel: " off the message, so this is how a parser tells the kernel's entries from
# user space's. One dict shared by every kernel entry of a short journal (read, never written).
IDENT = "SYSLOG_IDENTIFIER"
KERNEL_ENTRY: dict[str, str] = {IDENT: "kernel"}


class Lines:
    """Lines as parallel columns: message text, printk time, host time (ns or None).

    A million-line log would cost a million Python objects as one object per line; columns
    built natively or by C-level ``findall`` cost a fraction of the time and memory.
    ``lines[i]`` still gives a :class:`Line` view when one is wanted. Whole-column scans go
    through :meth:`grep` and :meth:`starting` (native over a TextColumn), never a Python loop.
    """

    __slots__ = ("text", "kernel", "host", "first", "max_len", "glued", "fields", "journal", "by_init", "_hits",
                 "_starts", "_base", "_keys", "_asked")

    def __init__(self, text: Texts, kernel: Times, host: Times, first: int = 1) -> None:
        self.text = text
        self.kernel = kernel
        self.host = host
        self.first = first  # input line number of index 0
        self.max_len: int | None = None  # longest message, when the framing pass measured it
        # console text that preceded a printk stamp on the same line (a login prompt the kernel
        # wrote over, noise), by index: the line's text is the kernel message after the stamp
        self.glued: dict[int, str] = {}
        # a journal entry's structured fields that the text does not say (journal.SIDE_FIELDS: the
        # unit's file name, the job's result, ...), by index; and whether the lines are a journal's
        self.fields: dict[int, dict[str, str]] = {}
        self.journal = False
        # lines a vendor caller prefix says pid 1 logged after its exec ("[3:  init:    1]": a
        # comm other than the kernel's "swapper/0"), ascending (read.quirks): user space's lines
        self.by_init: list[int] = []
        self._hits: dict[str, Index] = {}
        self._starts: dict[str, Index] = {}
        # a slice's (whole, a, b): the keyword hits of the whole are carried over when asked for
        self._base: tuple[Lines, int, int] | None = None
        self._keys: dict[str, tuple[list[int], bool]] = {}  # glued's and fields' keys, for slicing
        self._asked: set[tuple[bool, str]] = set()  # (grep?, key) a slice of this asked for and it had not

    def starting(self, *prefixes: str) -> Index:
        """Ascending indices of the lines whose message starts with any of the prefixes."""
        self._fill(prefixes, False)
        if len(prefixes) == 1:
            return self._starts[prefixes[0]]
        return _union([self._starts[p] for p in prefixes])

    def grep(self, *needles: str) -> Index:
        """Ascending indices of the lines containing any of the needles (cached per needle)."""
        self._fill(needles, True)
        if len(needles) == 1:
            return self._hits[needles[0]]
        return _union([self._hits[n] for n in needles])

    def __len__(self) -> int:
        return len(self.text)

    def __getitem__(self, i: int) -> Line:
        return Line(self.first + i, self.host[i], self.kernel[i], self.text[i])

    def __iter__(self) -> Iterator[Line]:
        first = self.first
        for i, (h, k, t) in enumerate(zip(self.host, self.kernel, self.text)):
            yield Line(first + i, h, k, t)

    def _fill(self, keys: Sequence[str], hits: bool) -> None:
        """The hits of every key cached (:meth:`grep`'s when ``hits``, else :meth:`starting`'s)."""
        cache = self._hits if hits else self._starts
        missing = [k for k in keys if k not in cache]
        if missing and self._base is not None:
            missing = self._inherit(cache, missing, hits)
        if missing:
            for k, found in zip(missing, (grep if hits else starting)(self.text, missing)):
                cache[k] = found

    def _inherit(self, cache: dict[str, Index], keys: list[str], hits: bool) -> list[str]:
        """A slice's keyword hits taken from its whole's (renumbered) where the whole has them;
        the keys it has not. A key the whole had not and a slice of it asked for before is
        searched in the whole now: the boots of a log ask for the same keywords (the advisor's
        rules: a hundred), and one search of the whole costs less than one per boot of a million
        boots (each pays the native search's set-up, ~0.3 ms for a hundred keywords). A key one
        boot asks for alone (a device's name) is searched in that boot only."""
        assert self._base is not None
        whole, a, b = self._base
        theirs = whole._hits if hits else whole._starts
        unknown = [k for k in keys if k not in theirs]
        if unknown:
            asked = whole._asked
            again = [k for k in unknown if (hits, k) in asked]
            if again:
                whole._fill(again, hits)
            asked.update((hits, k) for k in unknown)
        left = []
        column = _IndexColumn
        for k in keys:  # a few dozen keys a boot, a million boots: the native column's own call
            h: Any = theirs.get(k)
            if h is None:
                left.append(k)
            else:
                cache[k] = (h if type(h) is column else column(h)).between(a, b)
        return left

    def slice(self, a: int, b: int) -> Lines:
        """Lines a..b-1 as a new Lines (columns are copied, C speed; keyword hits carried over
        when asked for). Its cost is the slice's size, not the whole's: a log of a million boots
        is a million slices (issue 29)."""
        part = Lines(self.text[a:b], self.kernel[a:b], self.host[a:b], self.first + a)
        part._base = (self, a, b)
        if self.glued:
            part.glued = {i - a: self.glued[i] for i in self._keys_between("glued", self.glued, a, b)}
        if self.fields:
            part.fields = {i - a: self.fields[i] for i in self._keys_between("fields", self.fields, a, b)}
        part.journal = self.journal
        if self.by_init:  # ascending
            part.by_init = [i - a for i in self.by_init[bisect_left(self.by_init, a):bisect_left(self.by_init, b)]]
        return part

    def _keys_between(self, name: str, d: dict[int, Any], a: int, b: int) -> list[int]:
        """The keys of ``d`` (this Lines's glued or fields) in [a, b), in their order in ``d``:
        by bisection in a sorted list of them made once per size of ``d`` when ``d`` is in
        ascending order (as the framings fill it), else by a pass over ``d``."""
        got = self._keys.get(name)
        if got is None or len(got[0]) != len(d):
            keys = list(d)
            ordered = all(x < y for x, y in zip(keys, keys[1:]))
            got = self._keys[name] = (keys, ordered)
        keys, ordered = got
        if not ordered:
            return [i for i in d if a <= i < b]
        return keys[bisect_left(keys, a):bisect_left(keys, b)]

    def retext(self, changes: dict[int, str]) -> None:
        """Replace the text of some lines, keeping the cached keyword hits true."""
        if not changes:
            return
        if self._base is not None:  # the whole's hits made this slice's own first, then edited
            whole = self._base[0]
            self._inherit(self._hits, [k for k in whole._hits if k not in self._hits], True)
            self._inherit(self._starts, [k for k in whole._starts if k not in self._starts], False)
            self._base = None
        for i, t in changes.items():
            self.text[i] = t
        changed = sorted(changes)
        for cache, test in ((self._hits, str.__contains__), (self._starts, str.startswith)):
            for key, hits in cache.items():
                add = [i for i in changed if test(changes[i], key)]
                cache[key] = _column(hits).edited(changed, add)

    def console_text(self, i: int) -> str:
        """Everything line i showed on the console: glued console text, then the message."""
        g = self.glued.get(i)
        return self.text[i] if g is None else g + self.text[i]

    def kernel_entry(self, i: int) -> bool:
        """True for a journal entry the kernel logged (:data:`KERNEL_ENTRY`); False for any other
        line, and for every line of a log that is not a journal."""
        f = self.fields.get(i) if self.fields else None
        return f is not None and f.get(IDENT) == "kernel"

    def first_kernel_entry(self) -> int | None:
        """Index of a journal's first entry the kernel logged, or None (fields are kept in line order)."""
        return next((i for i, f in self.fields.items() if f.get(IDENT) == "kernel"), None)

    def set_hits(self, hits: dict[str, Index], starts: dict[str, Index]) -> None:
        """Substring and prefix hits computed elsewhere (the native framing pass)."""
        self._hits.update((k, _column(v)) for k, v in hits.items())
        self._starts.update((k, _column(v)) for k, v in starts.items())

    def no(self, i: int) -> int:
        """Input line number of index i."""
        return self.first + i

    def index_of(self, no: int) -> int:
        """Index of input line number ``no`` (which must be in range)."""
        return no - self.first

    def untimed(self) -> list[int]:
        """Ascending indices of the lines without a printk time."""
        nones = getattr(self.kernel, "nones", None)  # a TimeColumn answers natively
        if nones is not None:
            result: list[int] = nones()
            return result
        return [i for i, k in enumerate(self.kernel) if k is None]

    def has_kernel_time(self, limit: int | None = None) -> bool:
        """True if any line (of the first ``limit``) carries a printk timestamp."""
        col = self.kernel if limit is None else self.kernel[:limit]
        return col.count(None) != len(col)

    def has_host_time(self) -> bool:
        """True if any line carries a host timestamp."""
        return self.host.count(None) != len(self.host)

    def timed_count(self) -> int:
        """How many lines carry a printk or a host timestamp."""
        if not self.has_host_time():
            return len(self.kernel) - self.kernel.count(None)
        return sum(1 for h, k in zip(self.host, self.kernel) if h is not None or k is not None)


def _column(hits: Index) -> Any:
    """Hits as a native IndexColumn (a list given by a caller is converted once)."""
    return hits if isinstance(hits, _IndexColumn) else _IndexColumn(hits)


def _union(cols: list[Index]) -> Index:
    """The ascending union of several keywords' hits, natively (no set of Python ints); the hits
    of the one keyword that has any as they are (a boot's slice: most keywords hit no line)."""
    hit = [c for c in cols if len(c)]
    if len(hit) <= 1:
        one: Index = _column(hit[0] if hit else cols[0])
        return one
    result: Index = _IndexColumn.union([_column(c) for c in hit])
    return result


def _between(hits: Index, a: int, b: int) -> Index:
    """The hits in lines a..b-1, renumbered from a (the index of a slice)."""
    result: Index = _column(hits).between(a, b)
    return result


def starting(texts: Texts, prefixes: Sequence[str]) -> list[Index]:
    """For each prefix, the ascending indices of the lines that start with it."""
    result: list[Index] = _native.starting(texts, list(prefixes)) if prefixes else []
    return result


def grep(texts: Texts, needles: Sequence[str]) -> list[Index]:
    """For each needle, the ascending indices of the lines that contain it."""
    result: list[Index] = _native.grep(texts, list(needles)) if needles else []
    return result


def steps_back(values: Sequence[int | None]) -> list[tuple[int, int]]:
    """(i, j) for every value below that of j, the last non-None value before it."""
    result: list[tuple[int, int]] = _native.steps_back(values)
    return result


def gaps(values: Sequence[int | None], n: int) -> list[tuple[int, int, int]]:
    """The n largest (gap, i_before, i_after) between consecutive non-None values, largest
    first, ties to the earlier position."""
    result: list[tuple[int, int, int]] = _native.gaps(values, n)
    return result


def stamp_at(lines: Lines, i: int) -> Stamp | None:
    """The best time line i carries: the kernel's own clock beats the host's arrival time."""
    k = lines.kernel[i]
    if k is not None:
        return Stamp(Clock.KERNEL, k)
    h = lines.host[i]
    if h is not None:
        return Stamp(Clock.HOST, h)
    return None


def estimate_stamp(lines: Lines, idx: int) -> Stamp | None:
    """Time of line idx; for an untimed line, bounded by the kernel lines around it.

    A user-space line on a printk-only console has no time of its own, but it was printed after
    the previous kernel line and before the next: the estimate is the earlier bound, with the
    width of the interval as ``error_ns``.
    """
    st = stamp_at(lines, idx)
    if st is not None:
        return st
    kern = lines.kernel
    before = None
    for j in range(idx - 1, -1, -1):
        if kern[j] is not None:
            before = kern[j]
            break
    if before is None:
        return None
    after = None
    for j in range(idx + 1, len(kern)):
        if kern[j] is not None:
            after = kern[j]
            break
    err = (after - before) if after is not None and after >= before else None
    return Stamp(Clock.KERNEL, before, True, err)


def looks_garbled(s: str) -> bool:
    """Noise from a wrong baud rate: mostly replacement or non-ASCII characters."""
    if "\ufffd" not in s:
        return False
    bad = sum(1 for c in s if c == "\ufffd" or ord(c) > 0x7E)
    return bad * 4 >= len(s)


def clip(text: str, limit: int = 300) -> str:
    """A line as quoted evidence: clipped, with the clipping visible."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
