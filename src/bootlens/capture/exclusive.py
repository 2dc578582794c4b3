"""A recording is never overwritten nor written by two captures at once (issue 29): the file is
created exclusively (``O_EXCL``) and its writer holds a ``flock`` on it; an existing one is
refused, or with ``--force`` replaced by a rename once the new capture has a byte
(:class:`~.recording.RecordingWriter`). docs/recording.md, "Never overwritten, never shared".
"""

from __future__ import annotations

import fcntl
import os
import stat

from ..core.errors import BootlensError, InputError, printable


class RecordingExists(BootlensError):
    """A recording's path is taken: a capture never overwrites a recording, nor writes into
    one another capture is making (issue 29); replacing one takes ``--force``."""

    exit_code = 2

    def __init__(self, path: str, busy: bool = False) -> None:
        why = "another capture is writing it" if busy else "exists; a recording is not overwritten"
        super().__init__(f"{printable(path)}: {why}")
        self.path = path
        self.busy = busy


def check_free(path: str, replace: bool = False) -> None:
    """Refuse (:class:`RecordingExists`) a path a new recording cannot take: a regular file
    (unless ``replace``), or one another capture holds (always). A device or a pipe
    (``-o /dev/stdout``) is no recording and is written as it is. The answer is only early
    news: creating the file (``O_EXCL``) is what makes it exclusive."""
    try:
        st = os.stat(path)
    except OSError:
        return  # not there (or not reachable): creating it tells
    if not stat.S_ISREG(st.st_mode):
        return
    if not replace:
        raise RecordingExists(path)
    if _busy(path):
        raise RecordingExists(path, busy=True)


def _busy(path: str) -> bool:
    """True when another writer holds the file (every :class:`.recording.RecordingWriter` holds a
    ``flock`` on its recording for as long as it writes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the probe's lock
    return False


def create_exclusive(path: str, replace: bool) -> tuple[int, str | None]:
    """Open a new recording for writing: the descriptor, and the side file it is written to
    until it replaces an existing recording (``replace``), else None.

    A regular file at ``path`` is never truncated: without ``replace`` the path is refused; with
    it, the new recording is made beside it (``.NAME.new-PID``) and renamed over it when its
    first byte arrives (:meth:`.recording.RecordingWriter._replace`). The file is created with
    ``O_EXCL``, so two captures to one path cannot both write it (they would interleave their records), and
    each writer holds a ``flock`` on it, which ``--force`` respects."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
    check_free(path, replace)
    new = None
    if replace and os.path.isfile(path):
        head, tail = os.path.split(path)
        new = os.path.join(head, f".{tail}.new-{os.getpid()}")
    try:
        try:
            fd = os.open(new or path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if new is not None:
                raise
            fd = os.open(path, flags)  # taken meanwhile, or a device or pipe (check_free let it by)
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise RecordingExists(path) from None
    except OSError as e:
        raise InputError(path, f"cannot write the recording: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass  # a device another program holds, a file system without locks: O_EXCL still holds
    return fd, new
