"""The one registry class behind every kind of plugin: console parsers (``parsers/``), the
advisor's rules (``advise/rules/``), and as they come to it side-file formats (``sources/``) and
targets (a table of named specs).

A registry is an instance holding named entries (classes, or specs: any object with a name),
filled by :meth:`Registry.register`, as a class decorator or a plain call. A name registered twice
is an error. It iterates in the order of the names, never in the order modules happened to be
imported: a caller importing one module first must not change what runs first, nor the output.
:meth:`Registry.load` fills a default instance once: every module of its package, imported in
name order (each registers its own entries: a new parser or rule is one new file and nothing
else), then the third-party entries published under its entry-point group. Tests build an
instance of their own and register what they want.
"""

from __future__ import annotations

import os
from importlib import import_module

from .plugins import entry_points  # not importlib.metadata's: that import is a third of start-up

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/architecture.md step 23)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Generic, Self, TypeVar

    T = TypeVar("T")
else:
    from types import GenericAlias

    class Generic:
        """What run time needs of ``typing.Generic``: ``Registry[type[Parser]]`` as a base class
        (a ``types.GenericAlias``, whose base is the class itself), without importing typing
        (~3 ms of every ``bootlens analyze``, which imports the parser registry)."""

        __slots__ = ()
        __class_getitem__ = classmethod(GenericAlias)

    T = None


class Registry(Generic[T]):
    """Named entries of one role, in the order of their names.

    ``role``: what an entry is, for messages ("parser", "rule"). ``key``: the attribute that names
    an entry ("name", "id"). ``group``: the entry-point group third-party entries come through.
    ``package``: the package whose modules register the built-in entries (:meth:`load`).
    """

    def __init__(self, role: str, key: str = "name", group: str | None = None, package: str | None = None) -> None:
        self.role = role
        self.key = key
        self.group = group
        self.package = package
        self._entries: dict[str, T] = {}
        self._ordered: list[T] | None = None  # the entries by name, made again after a registration
        self._loaded = False

    def name_of(self, entry: T) -> str:
        """The name an entry is registered under (its :attr:`key` attribute)."""
        name = getattr(entry, self.key, None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{self.role} {entry!r} has no {self.key}")
        return name

    def register(self, entry: T) -> T:
        """Add an entry and return it (so it decorates a class); a name registered twice is an error."""
        name = self.name_of(entry)
        if name in self._entries:
            raise ValueError(f"{self.role} {name!r} is already registered")
        self._entries[name] = entry
        self._ordered = None
        return entry

    def accepts(self, obj: object) -> bool:
        """Whether an object published under the entry-point group is an entry: here, anything
        named by :attr:`key`; a registry of classes says which base class they derive from."""
        return isinstance(getattr(obj, self.key, None), str)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def _by_name(self) -> list[T]:
        ordered = self._ordered
        if ordered is None:
            ordered = self._ordered = [self._entries[name] for name in sorted(self._entries)]
        return ordered

    def __iter__(self) -> Iterator[T]:
        return iter(self._by_name())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        """The entry registered under ``name`` (KeyError when none is)."""
        return self._entries[name]

    def get(self, name: str) -> T | None:
        """The entry registered under ``name``, or None."""
        return self._entries.get(name)

    def load_entry_points(self, group: str | None = None) -> None:
        """Register the third-party entries published under an entry-point group (:attr:`group`
        unless told): each names an entry, or a function that takes the registry and registers
        its own. Anything else is left alone."""
        name = group or self.group
        if name is None:
            return
        for ep in entry_points(group=name):
            obj = ep.load()
            if self.accepts(obj):
                self.register(obj)
            elif callable(obj) and not isinstance(obj, type):
                register_fn: Callable[[Registry[T]], None] = obj
                register_fn(self)

    def load(self) -> Self:
        """This registry, filled the first time: every module of :attr:`package` imported in name
        order (each registers its own entries), then the entries of :attr:`group`."""
        if not self._loaded:
            if self.package is not None:
                for module in modules_of(self.package):
                    import_module(f"{self.package}.{module}")
            self.load_entry_points()
            self._loaded = True
        return self


def modules_of(package: str) -> list[str]:
    """The names of a package's modules (``*.py``) and subpackages (folders with an
    ``__init__.py``), sorted: what ``pkgutil.iter_modules`` says of a package on disk, without
    importing pkgutil, which imports typing (~6 ms of start-up). A package inside a zip archive
    is asked of pkgutil."""
    found: set[str] = set()
    for folder in import_module(package).__path__:
        try:
            names = os.listdir(folder)
        except OSError:  # not a folder
            import pkgutil

            found.update(m.name for m in pkgutil.iter_modules([folder]))
            continue
        for name in names:
            stem, dot, ext = name.partition(".")
            if not stem.isidentifier() or stem.startswith("__"):
                continue
            if (dot and ext == "py") or (not dot and os.path.isfile(os.path.join(folder, name, "__init__.py"))):
                found.add(stem)
    return sorted(found)
