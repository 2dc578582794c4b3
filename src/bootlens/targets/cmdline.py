"""The kernel command line as one value: :class:`KernelCmdline`.

A target's kernel arguments come from several places: the target's own that are always kept
(``console=``, without which there is nothing to measure; ``root=`` for a target booting an
image), its default arguments or the user's ``--cmdline`` replacing them, what is appended (the
user's ``--append``, a configuration's changes) and what bootlens adds for itself last (the
``--trace`` arguments, the collector's switch). The value keeps them apart, so that run.json
can record the user's part and a check can ask what the user set, and joins them in one place
(:meth:`KernelCmdline.text`).

Every part is checked as the kernel will read it (:func:`check_args`): the kernel splits its
command line at spaces outside double quotes, a quote opening a value that runs to the next one
(lib/cmdline.c next_arg), and hands what follows a bare ``--`` to init. A part with an odd
number of quotes would swallow every part after it, bootlens's own too, and a newline or NUL
has no place on the line (QEMU's ``-append``, a hook writing ``bootargs``): both are refused;
a part's init arguments go after everyone's kernel arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.errors import printable
from .base import TargetError, control_char


def kernel_split(text: str) -> list[str]:
    """``text`` split into arguments as the kernel splits its command line: at spaces outside
    double quotes (a quote toggles, it is kept here); a part with an odd number of quotes is one
    the caller refuses (:func:`check_args`)."""
    args: list[str] = []
    cur: list[str] = []
    quoted = False
    for c in text:
        if c.isspace() and not quoted:
            if cur:
                args.append("".join(cur))
                cur = []
            continue
        quoted ^= c == '"'
        cur.append(c)
    if cur:
        args.append("".join(cur))
    return args


def check_args(text: str, where: str = "kernel arguments") -> str:
    """``text`` when the kernel reads it as the arguments it shows, else a one-line TargetError:
    a control character (newline, NUL, tab, ...) or an unbalanced double quote."""
    if control_char(text):
        raise TargetError(f"{where} '{printable(text)}': a control character (newline, NUL, tab, ...); the kernel "
                          "command line is one line of printable text")
    if text.count('"') % 2:
        raise TargetError(f"{where} '{printable(text)}': an unbalanced '\"' (the kernel would read the rest of the "
                          "command line, bootlens's own arguments too, as this one value)")
    return text


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
        return self if args is None else replace(self, base=check_args(args, "--cmdline"), replaced=True)

    def append(self, *args: str) -> KernelCmdline:
        """``args`` appended after what is set (``--append``, a configuration's changes)."""
        return replace(self, added=self.added + tuple(check_args(a) for a in args if a.strip()))

    def append_own(self, *args: str) -> KernelCmdline:
        """``args`` appended last, as bootlens's own (not the user's: run.json leaves them out)."""
        return replace(self, own=self.own + tuple(check_args(a) for a in args if a.strip()))

    def text(self) -> str:
        """The command line the kernel gets: every part's kernel arguments, in order, one space
        apart, then ``--`` and every part's init arguments (what followed a ``--`` in it)."""
        kernel: list[str] = []
        init: list[str] = []
        for part in (*self.kept, self.base, *self.added, *self.own):
            args = kernel_split(part)
            cut = args.index("--") if "--" in args else len(args)
            kernel += args[:cut]
            init += args[cut + 1:]
        return " ".join(kernel + (["--", *init] if init else []))

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
        seen: dict[str, None] = {}
        for part in (*self.kept, self.base, *self.added):
            args = kernel_split(part)
            seen.update(dict.fromkeys(param_name(a) for a in args[:args.index("--") if "--" in args else None]))
        return tuple(seen)


def _join(parts: tuple[str, ...]) -> str:
    return " ".join(p.strip() for p in parts if p.strip())
