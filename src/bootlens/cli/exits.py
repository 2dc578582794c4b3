"""How every command ends, without click: the exit codes, a line on standard error, the
one-line error, exiting without teardown, writing an output file, a reader that went away.

Apart from :mod:`.common` (which imports these back) so that ``bootlens analyze``'s fast path
(:mod:`.fastpath`) ends exactly as the click command does without importing click (~25 ms of a
small log's start-up; docs/performance.md, step 18).
"""

from __future__ import annotations

import os
import sys

from ..core.errors import BootlensError, UsageError, printable

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

# Exit codes (README, "Exit codes"): 0 done; 1 a bug (a traceback); 2 an error (bad input or
# option, a console or target that cannot be used); 3 a boot never reached its ready marker
# (run, experiment, optimize: the other output is still printed); 128+N ended by signal N.
EXIT_ERROR = 2
EXIT_NOT_READY = 3


def echo(text: str = "", err: bool = False) -> None:
    """One line on standard output (or error), as ``click.echo`` writes a str: flushed, and
    without ANSI colour codes when the stream is not a terminal."""
    f = sys.stderr if err else sys.stdout
    if "\x1b" in text and not f.isatty():
        import re

        text = re.sub(r"\033\[[;?0-9]*[a-zA-Z]", "", text)  # click's own pattern (_compat._ansi_re)
    f.write(text + "\n")
    f.flush()


def say(text: str) -> None:
    """One line on standard error; nothing if its reader has gone (the exit code still counts)."""
    try:
        echo(text, err=True)
    except BrokenPipeError:
        release_closed_outputs()


def is_devnull(fd: int) -> bool:
    """True if ``fd`` is /dev/null."""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return (st.st_rdev, st.st_ino) == (null.st_rdev, null.st_ino)


def release_closed_outputs() -> bool:
    """Point standard output and error at /dev/null where their reader has gone, so that
    nothing (Python's final flush included) writes to them again; True if one had gone."""
    import select

    closed = False
    for fd in (1, 2):
        try:
            p = select.poll()
            p.register(fd, select.POLLOUT)
            gone = any(ev & select.POLLERR for _, ev in p.poll(0))  # a pipe without readers
        except (OSError, ValueError):
            continue
        if gone:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
            closed = True
    return closed


def write_output(path: str, data: bytes | Sequence[Any]) -> None:
    """Write bytes to a file, or to standard output for '-'; a failure is a one-line error.
    ``data``: bytes, or pieces written one after another: bytes, or objects that write
    themselves (``write_to(file)``: a page's big values, ``JsonPiece`` in render/html_columns.py),
    so that a page of 186 MB is never joined into one buffer. A file a failed write left partly written
    is removed: nothing is left that looks like a whole report.

    An earlier report, SVG or export at ``path`` is replaced, as a compiler's ``-o`` replaces its
    output; a bootlens recording never is: it is captured data, not made again by running a
    command (``report boot.rec -o boot.rec`` would lose the boot). That is refused in one line."""
    pieces = [data] if isinstance(data, bytes) else data
    if path == "-":
        _write_pieces(sys.stdout.buffer, pieces)
        sys.stdout.buffer.flush()
        return
    if _is_recording_file(path):
        fail(UsageError(f"{printable(path)}: is a bootlens recording; it is not overwritten: give another output file"))
    try:
        with open(path, "wb") as f:
            try:
                _write_pieces(f, pieces)
                f.flush()  # here, not in close(): a failure is caught below
            except OSError:
                import stat

                if stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # not a device, a pipe (/dev/full)
                    os.unlink(path)
                raise
    except OSError as e:
        fail(UsageError(f"{path}: cannot write: {e.strerror}"))


def _is_recording_file(path: str) -> bool:
    """True when ``path`` is a regular file that holds a bootlens recording."""
    from ..capture.recording_sniff import is_recording

    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # first: opening a FIFO to read would wait for a writer
            return False
        with open(path, "rb") as f:
            return is_recording(f.read(512))
    except OSError:
        return False


def _write_pieces(f: Any, pieces: Sequence[Any]) -> None:
    """Each of ``pieces`` written to ``f`` in turn (a piece that writes itself calls f.write too)."""
    for p in pieces:
        if isinstance(p, bytes):
            f.write(p)
        else:
            p.write_to(f)


def exit_now() -> None:
    """Exit 0 without tearing down the analysis: freeing a big log's millions of objects one by
    one takes longer than the OS takes to reclaim the whole process."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def fail(e: BootlensError) -> NoReturn:
    """The one-line error and its exit code (kept when standard error has no reader)."""
    say(f"bootlens: error: {e}")
    sys.exit(e.exit_code)
