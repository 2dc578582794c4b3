"""What every command of the ``bootlens`` command line shares: the group class that ends quietly
on a closed pipe, the one-line error, writing an output file."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from ..errors import BootlensError, UsageError

class QuietPipeGroup(click.Group):
    """Every command ends quietly with exit 0 when its reader goes away (``bootlens analyze
    big.log | head -1``), as ``cat`` does: no traceback, no "Broken pipe" (click alone exits 1)."""

    def invoke(self, ctx: click.Context) -> object:
        was_null = is_devnull(1)
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            if not release_closed_outputs():
                raise  # some other pipe (a socket): not ours to hide
            ctx.exit(0)
        except SystemExit as e:
            # rich's Console meets a closed pipe by pointing standard output at /dev/null and
            # exiting 1 (Console.on_broken_pipe): that exit, and only that one, becomes 0
            if e.code == 1 and not was_null and is_devnull(1):
                ctx.exit(0)
            raise


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


def write_output(path: str, data: bytes) -> None:
    """Write bytes to a file, or to standard output for '-'; a failure is a one-line error."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        fail(UsageError(f"{path}: cannot write: {e.strerror}"))


def exit_now() -> None:
    """Exit 0 without tearing down the analysis: freeing a big log's millions of objects one by
    one takes longer than the OS takes to reclaim the whole process."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def fail(e: BootlensError) -> NoReturn:
    click.echo(f"bootlens: error: {e}", err=True)
    sys.exit(e.exit_code)

