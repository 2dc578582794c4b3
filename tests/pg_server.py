"""A real PostgreSQL server for the history tests: initdb in a temporary folder, started with
pg_ctl on a unix socket only (no TCP port, nothing to clash with), stopped and removed at the end.

Debian's ``postgresql`` package (the Makefile's APT_PACKAGES) puts initdb and pg_ctl in
/usr/lib/postgresql/VERSION/bin, off the PATH. initdb refuses to run as root: as root the
server runs as the ``postgres`` user the package creates (``runuser -u postgres``), in a
folder handed to it. Without PostgreSQL the tests skip, except under CI (env CI set), where
they fail: the Makefile can install it.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PORT = 5432  # only names the socket file: the server listens on no TCP port


def pg_bin(tool: str) -> str | None:
    """initdb or pg_ctl: on the PATH, else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which(tool)
    if found:
        return found
    cands = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return cands[-1] if cands else None


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL: {why} (CI: install the Debian package postgresql, as the Makefile does)")
    pytest.skip(f"PostgreSQL: {why}")


class PgServer:
    """A running server: ``url(db)`` is the SQLAlchemy URL of database ``db`` on it."""

    def __init__(self, folder: Path, user: str) -> None:
        self.folder = folder
        self.user = user

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{db}?host={self.folder}&port={PORT}"

    def create_database(self, name: str) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        with psycopg.connect(host=str(self.folder), port=PORT, user=self.user, dbname="postgres",
                             autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}"')
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """Start a PostgreSQL server for the session; stop it and remove its files at the end."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        _missing("initdb/pg_ctl not found (Debian package postgresql)")
    assert initdb is not None and pg_ctl is not None
    as_root = os.geteuid() == 0
    prefix: list[str] = []
    if as_root:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root and there is no 'postgres' user to run the server as")
        if shutil.which("runuser") is None:
            _missing("running as root and runuser is missing")
        prefix = ["runuser", "-u", "postgres", "--"]
    # in /tmp, not pytest's tmp_path: that lies under a folder only root may enter
    folder = Path(tempfile.mkdtemp(prefix="bootlens-pg-"))
    if as_root:
        os.chown(folder, pw.pw_uid, pw.pw_gid)
    data, log = folder / "data", folder / "server.log"
    user = "bootlens"
    started = False
    try:
        r = subprocess.run([*prefix, initdb, "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8",
                            "--no-sync", "--locale=C"], capture_output=True, text=True, timeout=120)
        if r.returncode:
            pytest.fail(f"initdb failed: {r.stderr.strip()[-800:]}")
        opts = f"-k {folder} -c listen_addresses='' -p {PORT} -c fsync=off"
        r = subprocess.run([*prefix, pg_ctl, "-D", str(data), "-l", str(log), "-o", opts, "-w", "-t", "60",
                            "start"], capture_output=True, text=True, timeout=120)
        started = r.returncode == 0
        if not started:
            tail = log.read_text(errors="replace")[-800:] if log.exists() else r.stderr
            pytest.fail(f"pg_ctl start failed: {tail.strip()}")
        yield PgServer(folder, user)
    finally:
        if started:
            subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True,
                           timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
