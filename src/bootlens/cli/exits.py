"""How every command ends, without click: the exit codes, a line on standard error, the
one-line error, exiting without teardown, writing an output file, standard output that fails
(a reader that went away, a full disk: :func:`guarded`, the one place that decides).

Apart from :mod:`.common` (which imports these back) so that ``bootlens analyze``'s fast path
(:mod:`.fastpath`) ends exactly as the click command does without importing click (~25 ms of a
small log's start-up; docs/performance.md, step 18).
"""

from __future__ import annotations

import errno
import io
import os
import sys

from ..core.errors import BootlensError, UsageError, printable

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
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
    """One line on standard error; nothing if it cannot be written (its reader has gone, or it is
    a full disk: there is nowhere left to say it, and the exit code still counts)."""
    try:
        echo(text, err=True)
    except OSError:
        _to_devnull(2)


def _to_devnull(fd: int) -> None:
    """Point ``fd`` at /dev/null: nothing written to it later (Python's final flush) can fail."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


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
            _to_devnull(fd)
            closed = True
    return closed


def write_output(path: str, data: bytes | Sequence[Any], inputs: Sequence[str] = ()) -> None:
    """Write bytes to a file, or to standard output for '-'; a failure is a one-line error.
    ``data``: bytes, or pieces written one after another: bytes, or objects that write
    themselves (``write_to(file)``: a page's big values, ``JsonPiece`` in render/html_columns.py),
    so that a page of 186 MB is never joined into one buffer. A file a failed write left partly written
    is removed: nothing is left that looks like a whole report.

    An earlier report, SVG or export at ``path`` is replaced, as a compiler's ``-o`` replaces its
    output; a bootlens recording never is: it is captured data, not made again by running a
    command (``report boot.rec -o boot.rec`` would lose the boot). Nor is any of the command's
    ``inputs`` (``report boot.log -o boot.log``: a console log is captured data too). Both are
    refused in one line."""
    pieces = [data] if isinstance(data, bytes) else data
    if path == "-":
        _write_pieces(sys.stdout.buffer, pieces)
        sys.stdout.buffer.flush()
        return
    if _is_recording_file(path):
        fail(UsageError(f"{printable(path)}: is a bootlens recording; it is not overwritten: give another output file"))
    if any(_same_file(path, i) for i in inputs):
        fail(UsageError(f"{printable(path)}: is an input of this command; it is not overwritten: give another "
                        "output file"))
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


def _same_file(a: str, b: str) -> bool:
    """True when both paths name one existing file (a link, a second name, ./x and x)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


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


# --- standard output that fails -------------------------------------------------------------
# Standard output fails in two ways: its reader goes away (``bootlens analyze x | head -1``: a
# quiet exit 0, as cat ends) or the write itself fails (``> /dev/full``, a full disk, EIO on a
# hung-up terminal: one line and exit 2). A failing write raises the same OSError wherever it
# comes from (rich, the JSON writers, click.echo, an output file), so standard output is made
# to mark its own failures (:class:`_MarkedOutput`): only those are said to be standard
# output's; any other OSError stays what it is.

# The failures of a write that are the machine's, not bootlens's: a full disk or quota, a read-only
# or failing medium. Wherever they come from, they end the command in one line, not a traceback.
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})

_failed: list[OSError] = []  # the error standard output's last failed write raised


class _MarkedOutput(io.FileIO):
    """File descriptor 1 as Python writes it, remembering each error its writes raise."""

    def write(self, b: Any) -> int:
        try:
            return super().write(b)
        except OSError as e:
            _failed[:] = [e]  # the last: the one on its way up
            raise


def mark_stdout() -> None:
    """Put :class:`_MarkedOutput` under ``sys.stdout`` (same encoding and buffering), when
    sys.stdout is the process's own (not a test's capture)."""
    out = sys.stdout
    if out is None or out is not sys.__stdout__ or not isinstance(out, io.TextIOWrapper):
        return
    buf: Any = out.buffer
    raw: Any = getattr(buf, "raw", buf)  # PYTHONUNBUFFERED: the text layer writes to the FileIO itself
    try:
        if isinstance(raw, _MarkedOutput) or raw.fileno() != 1:
            return
        out.flush()
    except (OSError, ValueError):
        return
    mine = _MarkedOutput(1, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(mine if buf is raw else io.BufferedWriter(mine), encoding=out.encoding,
                                  errors=out.errors, newline="\n", line_buffering=out.line_buffering,
                                  write_through=out.write_through)


def output_failed(e: OSError) -> int | None:
    """The exit code after ``e``, when ``e`` is standard output failing: 0 when its reader has
    gone (quietly), else :data:`EXIT_ERROR` after one line saying why; None when ``e`` is not
    standard output's (the caller lets it go on)."""
    ours = any(f is e for f in _failed)
    if isinstance(e, BrokenPipeError) and (release_closed_outputs() or ours):
        if ours:
            _to_devnull(1)
        return 0
    if not ours:
        if e.errno in _DISK_FULL:  # a file the command writes (a run folder's, a store's): not a bug
            where = f"{e.filename}: " if e.filename else ""
            say(f"bootlens: error: {where}cannot write: {e.strerror or e}")
            return EXIT_ERROR
        return None
    _to_devnull(1)  # what is still buffered goes nowhere, quietly, at exit
    say(f"bootlens: error: cannot write to standard output: {e.strerror or e}")
    return EXIT_ERROR


def guarded(fn: Callable[[], Any]) -> Any:
    """Run a whole command (``fn``) so that standard output failing ends it in one line
    (:func:`output_failed`); standard output is flushed here, inside, not by Python at exit
    (where a failure is "Exception ignored ... OSError" on standard error and exit 120).
    Returns what ``fn`` returns; raises SystemExit with the command's exit code otherwise."""
    mark_stdout()
    was_null = is_devnull(1)
    ended: SystemExit | None = None
    try:
        rv = fn()
    except SystemExit as e:
        ended = e
        # rich's Console meets a closed pipe by pointing standard output at /dev/null and
        # exiting 1 (Console.on_broken_pipe): that exit, and only that one, becomes 0
        if e.code == 1 and not was_null and is_devnull(1):
            ended = SystemExit(0)
    except OSError as e:
        code = output_failed(e)
        if code is None:
            raise
        ended = SystemExit(code)
    try:
        sys.stdout.flush()
    except OSError as e:
        code = output_failed(e)
        if code is None:
            raise
        if code or ended is None:  # a closed pipe at the end keeps the command's own exit code
            ended = SystemExit(code)
    if ended is not None:
        raise ended from None
    return rv
