"""The side-format role: a format of side files is one folder under ``sources/``.

A folder ``sources/<name>/`` is a side format when its ``__init__.py`` declares ``FORMAT``, a
:class:`SideFormat`: how a file or folder of it is told by content (``sniff``/``sniff_dir``, in
a light module: every input of ``bootlens analyze`` is sniffed) and in which order it joins a
boot. What it does with its files lives in ``sources/<name>/attach.py``, imported only when an
input is of the format; each of these functions is optional:

- ``expand(kind, path) -> (items, notes)``: one input standing for several (a folder of outputs);
- ``read_one(kind, path) -> (value, notes)``: one file, kept in the supplement's parts under
  ``kind`` (a second file of a kind replaces the first, with a warning, unless the format lists
  the kind in ``accumulates``: then every one is kept, in order);
- ``read_together(paths) -> (value, notes)`` for a format whose files are read as one
  (``together``: strace -ff writes a file per process), kept under the format's name;
- ``finish(parts, options) -> parts``: the parts as the format hands them to the boot (a default
  taken from another part, the user's options for the format);
- ``place(boot, supplement) -> (boot, supplement)``: put the format's data on the boot's axis;
- ``add(boot, supplement, kinds) -> (events, supplement, label)``: events the boot's log lacks
  (``kinds``: those the log has), added after the log's own, and the label they add to the
  boot's formats;
- ``alone(path) -> (boot, supplement, stats)``: an input of this format given without a log, as
  a boot of its own (None: the format cannot stand alone);
- ``configure(values) -> object | None``: the format's command-line options (``FORMAT.options``,
  by their ``dest``) as the object ``finish`` receives as ``options``; None when the user gave
  none of them that needs an input of the format.

A format's command-line options (``FormatOption``) are declared in its ``FORMAT``: ``analyze`` and
``report`` take them (cli/ builds them with click), and one given without an input of the format
is a one-line error naming the format's ``what``.

Formats are found by listing this package's folders (a new format needs no line elsewhere) and
kept in the one registry class (:mod:`bootlens.core.registry`: a name twice is an error), asked
in ``sniff_order`` and attached in ``attach_order``.
"""

from __future__ import annotations

import os
from importlib import import_module
from types import ModuleType

from ..core.registry import Registry

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

HEAD_BYTES = 8192  # what the sniffs look at: the first lines (a plot's sniff reads further itself)


class Head:
    """The first bytes of a file as text, read once when a sniff first asks."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = read_head(self.path, HEAD_BYTES)
        return self._text


def read_head(path: str | os.PathLike[str], n: int) -> str:
    """The first ``n`` bytes of a file, decoded (invalid UTF-8 replaced)."""
    with open(path, "rb") as f:
        return f.read(n).decode("utf-8", "replace")


class FormatOption:
    """A command-line option of a side format, taken by ``analyze`` and ``report``: a text
    (``multiple``: given any number of times, a tuple) or, with a float ``default``, a number of
    at least ``minimum``. cli/ makes the click option from it; the format imports no click."""

    __slots__ = ("flag", "dest", "metavar", "help", "multiple", "default", "minimum")

    def __init__(self, flag: str, dest: str, metavar: str, help: str, *, multiple: bool = False,
                 default: float | None = None, minimum: float | None = None) -> None:
        self.flag = flag  # "--channel"
        self.dest = dest  # the value's name, in the command's function and in configure()'s values
        self.metavar = metavar
        self.help = help
        self.multiple = multiple
        self.default = default
        self.minimum = minimum

    def given(self, value: object) -> bool:
        """Whether a value is the user's (not the option's default)."""
        return bool(value) if self.multiple else value is not None and value != self.default


class SideFormat:
    """A side-file format: how bootlens tells it by content, and when it joins a boot.

    A plain class with slots, not a NamedTuple: every ``bootlens analyze`` builds the six
    formats, and a NamedTuple class costs ~1.5 million instructions to create (start-up,
    docs/performance.md)."""

    __slots__ = ("name", "sniff_order", "attach_order", "sniff", "sniff_dir", "kinds", "together",
                 "accumulates", "attaches", "options", "what", "forms")

    def __init__(self, name: str, *, sniff_order: int, attach_order: int,
                 sniff: Callable[[str, Head], str | None] | None = None,
                 sniff_dir: Callable[[str], str | None] | None = None,
                 kinds: tuple[str, ...] = (), together: bool = False,
                 accumulates: tuple[str, ...] = (), attaches: bool = True,
                 options: tuple[FormatOption, ...] = (), what: str = "", forms: str = "") -> None:
        self.name = name  # its folder under sources/
        self.sniff_order = sniff_order  # classify asks the formats in this order; the first answer wins
        self.attach_order = attach_order  # the formats' parts are placed on a boot, and add their events, in this order
        self.sniff = sniff  # a file -> its kind, or None
        self.sniff_dir = sniff_dir  # a folder -> its kind, or None
        self.kinds = kinds  # what its sniffs answer, besides its name ("time", "blame", ...)
        self.together = together  # its files are read as one (read_together), after the others
        self.accumulates = accumulates  # kinds of which every file is kept (not replaced)
        self.attaches = attaches  # it has an attach module (a boot-data file is read as a log instead)
        self.options = options  # its command-line options (attach.configure reads them)
        self.what = what or name  # what an input of it is, for messages ("logic analyzer capture")
        self.forms = forms  # the forms of it bootlens reads, for messages ("sigrok CSV or VCD, Saleae CSV")

    def __repr__(self) -> str:
        return f"SideFormat({self.name!r})"


REGISTRY: Registry[SideFormat] = Registry("side format")  # each format's __init__ registers its FORMAT
_FORMATS: tuple[SideFormat, ...] | None = None
_BY_KIND: dict[str, SideFormat] = {}


def formats() -> tuple[SideFormat, ...]:
    """Every side format (a folder of this package, whose ``__init__`` registers its
    ``FORMAT``), in sniff order (the registry's name order between equal orders)."""
    global _FORMATS
    if _FORMATS is None:
        for name in _folders():
            import_module(f"{__package__}.{name}")
        _FORMATS = tuple(sorted(REGISTRY, key=lambda f: f.sniff_order))
    return _FORMATS


def _folders() -> list[str]:
    """This package's subpackages, sorted: its folders holding an ``__init__.py`` (one scan of
    the folder, every input of ``bootlens analyze`` asks: start-up)."""
    here = os.path.dirname(__file__)
    if not os.path.isdir(here):  # a package inside a zip archive
        import pkgutil

        return sorted(m.name for m in pkgutil.iter_modules(import_module(__package__).__path__) if m.ispkg)
    with os.scandir(here) as entries:
        return sorted(e.name for e in entries if e.name.isidentifier() and not e.name.startswith("__")
                      and e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py")))


def format_of(kind: str) -> SideFormat:
    """The format that answers ``kind`` (classify's word for an input) or keeps a part of that name."""
    if not _BY_KIND:
        for f in formats():
            for k in (f.name, *f.kinds):
                _BY_KIND.setdefault(k, f)
    return _BY_KIND[kind]


def configured(values: Mapping[str, object]) -> dict[str, object]:
    """Format name -> what its ``configure`` hook made of its options' values (given by their
    ``dest``; an option missing from ``values`` has its default), for each format whose options
    the user gave."""
    out: dict[str, object] = {}
    for fmt in formats():
        if fmt.options:
            mine = {o.dest: values.get(o.dest, () if o.multiple else o.default) for o in fmt.options}
            if any(o.given(mine[o.dest]) for o in fmt.options):
                setup = hooks(fmt).configure(mine)
                if setup is not None:
                    out[fmt.name] = setup
    return out


def given_flags(fmt: SideFormat, values: Mapping[str, object]) -> str:
    """The format's options the user gave, as they would type them: "--channel/--align"."""
    return "/".join(o.flag for o in fmt.options if o.given(values.get(o.dest)))


def hooks(fmt: SideFormat) -> ModuleType:
    """The format's ``attach`` module (its reading and attaching), imported on first use."""
    return import_module(f"{__package__}.{fmt.name}.attach")
