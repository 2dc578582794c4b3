"""A run folder: the recordings of repeated boots (``boot-N.rec``) and ``run.json``, which says
how the folder was made (the markers it was captured with, the target, the options). This is
the one writer and the one reader of ``run.json``."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Sequence
from types import TracebackType

from ..core.errors import BootlensError, printable
from ..core.options import MarkerSpec, ParseOptions

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, docs/performance.md step 23)
if TYPE_CHECKING:  # pathlib is imported where a folder is read (start-up: ~8 ms to import)
    from pathlib import Path
    from typing import Any

RUN_META = "run.json"
LOCK = ".bootlens-lock"  # held (flock) by the one bootlens writing the folder; removed when done


class RunFolderError(BootlensError):
    """A run folder that cannot be written: another bootlens is writing it, or it holds files."""

    exit_code = 2


class FolderClaim:
    """A run folder claimed for one run (:func:`claim_folder`); a context manager that lets it go.

    The claim is an exclusive ``flock`` on ``.bootlens-lock`` in the folder, held as long as the
    run writes there: a second ``run``, ``experiment`` or ``optimize`` into the same folder is
    refused instead of writing its ``boot-N.rec`` between the first's (issue 29). The kernel drops
    the lock when the process ends, however it ends, so a killed run never leaves a folder locked.
    """

    def __init__(self, folder: Path, fd: int, created: bool) -> None:
        self.folder = folder
        self._fd = fd
        self._created = created

    def release(self) -> None:
        """Remove the lock file and let the folder go; a folder this claim made and nothing was
        written into (an error before the first boot) is removed too."""
        if self._fd < 0:
            return
        try:
            os.unlink(self.folder / LOCK)  # while still locked: the next claim checks the inode
        except OSError:
            pass
        os.close(self._fd)
        self._fd = -1
        if self._created:
            try:
                self.folder.rmdir()  # only when empty
            except OSError:
                pass

    def __enter__(self) -> FolderClaim:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def claim_folder(folder: Path) -> FolderClaim:
    """Make ``folder`` (with its parents) or take an empty one, and hold it for this run.

    Refused with one line when another bootlens holds it, or when it holds anything (the
    boots of an earlier run would join this run's statistics, and its recordings are
    captured data that nothing here may replace)."""
    created = not folder.exists()
    if not created and not folder.is_dir():
        raise RunFolderError(f"{printable(str(folder))}: exists and is not a folder; give a new folder with -o")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunFolderError(f"{printable(str(folder))}: cannot create the run folder: {e.strerror or e}") from None
    lock = folder / LOCK
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ENOTDIR:
                raise RunFolderError(f"{printable(str(folder))}: exists and is not a folder; give a new folder "
                                     "with -o") from None
            raise RunFolderError(f"{printable(str(folder))}: cannot write the run folder: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RunFolderError(f"{printable(str(folder))}: another bootlens is writing this run folder; give a "
                                 "new folder with -o") from None
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if same:
            break
        os.close(fd)  # the holder before us removed the file we locked: lock the one there now
    claim = FolderClaim(folder, fd, created)
    try:
        taken = any(p.name != LOCK for p in folder.iterdir())
    except OSError as e:
        claim.release()
        raise RunFolderError(f"{printable(str(folder))}: cannot read the run folder: {e.strerror or e}") from None
    if taken:
        claim.release()
        raise RunFolderError(f"{printable(str(folder))}: exists and is not empty; give a new folder with -o")
    return claim


def write_run_meta(folder: Path, markers: Sequence[MarkerSpec], **extra: object) -> None:
    """Record how a run folder was made (markers, target, options) in ``run.json``."""
    import orjson  # here, not at import: analyze of a log never pays for it (jsonbytes)

    meta = {"markers": {m.name: m.pattern.pattern for m in markers}, **extra}
    (folder / RUN_META).write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")


def read_run_meta(folder: Path) -> dict[str, object]:
    """A run folder's ``run.json`` as a dict (empty when it holds no JSON object); OSError when
    it cannot be read, ValueError when it is not JSON."""
    import orjson

    meta = orjson.loads((folder / RUN_META).read_bytes())
    return dict(meta) if isinstance(meta, dict) else {}


def run_options(folder: Path, markers: tuple[MarkerSpec, ...] = ()) -> ParseOptions:
    """How to read a run folder's boots (:func:`read_run_options` without its problems)."""
    return read_run_options(folder, markers)[0]


def read_run_options(folder: Path, markers: tuple[MarkerSpec, ...] = ()) -> tuple[ParseOptions, tuple[str, ...]]:
    """How to read a run folder's boots: its markers (``markers``, the user's, win when given), on
    the guest's clocks when it was booted in the deterministic mode (run.json ``"clock": "guest"``);
    and what is wrong in its run.json, one line each naming the file and the key (for a warning:
    what is wrong is not used, the rest is). A folder without run.json (logs) has no problem."""
    import orjson

    where = printable(str(folder / RUN_META))
    problems: list[str] = []
    meta: Any = {}
    try:
        meta = orjson.loads((folder / RUN_META).read_bytes())
    except FileNotFoundError:
        pass
    except OSError as e:
        problems.append(f"{where}: cannot read ({e.strerror or e}): its markers and clock are not used")
    except orjson.JSONDecodeError as e:
        problems.append(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}): its markers and clock "
                        "are not used")
    if not isinstance(meta, dict):
        problems.append(f"{where}: not a JSON object: its markers and clock are not used")
        meta = {}
    found: list[MarkerSpec] = []
    table = meta.get("markers", {})
    if not isinstance(table, dict):
        problems.append(f"{where}: markers: expected an object of NAME: REGEX; not used")
        table = {}
    for name, rx in table.items():
        try:
            if not isinstance(rx, str):
                raise ValueError(f"expected a pattern (text), got {type(rx).__name__}")
            found.append(MarkerSpec.of(name, rx))
        except ValueError as e:
            problems.append(f"{where}: markers.{printable(name)}: {e}; this marker is not used")
    if markers:  # the user's win, and what is wrong with run.json's is not theirs to hear
        problems = [p for p in problems if f"{where}: markers" not in p]
    return ParseOptions(markers or tuple(found), guest_clock=meta.get("clock") == "guest"), tuple(problems)


def folder_files(folder: Path) -> list[Path]:
    """The boots of a run folder, in boot order: ``boot-N.rec``, else every ``*.rec``/``*.log``."""
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses
    recs = [p for p in folder.glob("boot-*.rec") if p.stem[5:].isascii() and p.stem[5:].isdigit()]
    if recs:
        return sorted(recs, key=lambda p: int(p.stem[5:]))
    return sorted(p for p in folder.iterdir() if p.suffix in (".rec", ".log") and p.is_file())
