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


# Files that are not a log's bytes but a device or a socket: read to their end, /dev/zero grows
# without bound (11 GB in 8 s) and a live console (/dev/pts/N, /dev/ttyUSB0) never ends, silently.
# A pipe (``<(zcat boot.log.gz)``, a named FIFO) ends when its writer does, as ``cat`` reads it.
_SPECIAL = ((0o020000, "a character device"), (0o060000, "a block device"), (0o140000, "a socket"))


def refuse_special_file(path: str) -> None:
    """An :class:`InputError` if ``path`` is a device or a socket, not a file (or pipe) that ends;
    stat only, nothing opened (opening a serial port can wait for its carrier)."""
    import os

    try:
        mode = os.stat(path).st_mode & 0o170000  # stat.S_IFMT, without importing stat (start-up)
    except (OSError, ValueError):
        return  # opening it says why
    for kind, what in _SPECIAL:
        if mode == kind:
            raise InputError(path, f"{what}, not a log file: to read a live console, record it with "
                             f"`bootlens capture -d DEVICE -o boot.rec` and analyse the recording")


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
