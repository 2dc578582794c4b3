"""One exception tree for the library; the CLI maps it to a one-line message and an exit code."""

from __future__ import annotations


def printable(name: str) -> str:
    """A file name fit for a one-line message: undecodable bytes (surrogate escapes from a
    non-UTF-8 name) as U+FFFD, control characters such as a newline escaped."""
    s = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return s if s.isprintable() else repr(s)[1:-1]


class BootlensError(Exception):
    """Base of every error bootlens raises on purpose; ``str()`` is the one-line message."""

    exit_code = 1


class InputError(BootlensError):
    """An input cannot be used at all (missing, empty, binary, no boot in it)."""

    exit_code = 2

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{printable(source)}: {reason}")
        self.source = source
        self.reason = reason


class ParseError(BootlensError):
    """A line that a parser must understand could not be (only raised where degrading is impossible)."""

    exit_code = 2

    def __init__(self, source: str, line_no: int, reason: str) -> None:
        super().__init__(f"{printable(source)}:{line_no}: {reason}")
        self.source = source
        self.line_no = line_no
        self.reason = reason


class UsageError(BootlensError):
    """An option value that cannot be used (e.g. a --marker whose regex does not compile)."""

    exit_code = 2
