"""The kernel command line as one value: :class:`KernelCmdline`.

A target's kernel arguments come from several places: the target's own that are always kept
(``console=``, without which there is nothing to measure; ``root=`` for a target booting an
image), its default arguments or the user's ``--cmdline`` replacing them, what is appended (the
user's ``--append``, a configuration's changes) and what bootlens adds for itself last (the
``--trace`` arguments, the collector's switch). The value keeps them apart, so that run.json
can record the user's part and a check can ask what the user set, and joins them in one place
(:meth:`KernelCmdline.text`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


def param_name(arg: str) -> str:
    """The parameter an argument sets: ``quiet`` -> quiet, ``loglevel=3`` -> loglevel."""
    return arg.partition("=")[0]


@dataclass(frozen=True, slots=True)
class KernelCmdline:
    """A kernel command line in its parts, in the order the kernel gets them: ``kept`` (the
    target's own, never replaced), ``base`` (the target's defaults, or the user's ``--cmdline``
    when ``replaced``), ``added`` (the user's ``--append`` and a configuration's changes, each a
    string of arguments) and ``own`` (what bootlens appends for itself: tracing, the collector).
    The kernel takes the last of a parameter set twice, so the order matters."""

    kept: tuple[str, ...] = ()
    base: str = ""
    replaced: bool = False
    added: tuple[str, ...] = ()
    own: tuple[str, ...] = ()

    def replacing(self, args: str | None) -> KernelCmdline:
        """The base arguments replaced by ``args`` (``--cmdline``); None keeps them."""
        return self if args is None else replace(self, base=args, replaced=True)

    def append(self, *args: str) -> KernelCmdline:
        """``args`` appended after what is set (``--append``, a configuration's changes)."""
        return replace(self, added=self.added + tuple(a for a in args if a.strip()))

    def append_own(self, *args: str) -> KernelCmdline:
        """``args`` appended last, as bootlens's own (not the user's: run.json leaves them out)."""
        return replace(self, own=self.own + tuple(a for a in args if a.strip()))

    def text(self) -> str:
        """The command line the kernel gets: every part, in order, one space apart."""
        return _join((*self.kept, self.base, *self.added, *self.own))

    @property
    def appended(self) -> str:
        """What the user and the configuration append (run.json's ``append``)."""
        return _join(self.added)

    @property
    def user_base(self) -> str | None:
        """The user's ``--cmdline`` when it replaced the defaults, else None (run.json's ``cmdline``)."""
        return self.base if self.replaced else None

    def names(self) -> tuple[str, ...]:
        """The parameters set by the target, the base and what is appended (not bootlens's own),
        in order, once each."""
        seen = dict.fromkeys(param_name(a) for a in _join((*self.kept, self.base, *self.added)).split())
        return tuple(seen)


def _join(parts: tuple[str, ...]) -> str:
    return " ".join(p.strip() for p in parts if p.strip())
