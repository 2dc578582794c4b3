"""The history store's schema under concurrency, typos and age (issue 29, item 2).

- 20 ``bootlens store`` processes (the real CLI, started together) into a store that does not
  exist yet, SQLite and the real PostgreSQL server of tests/pg_server.py: 20 runs stored, none
  failed. Before the schema was made under a lock, 4 of 20 failed with ``table meta already
  exists`` / ``UNIQUE constraint failed: meta.key`` and their runs were lost.
- A writer waits for the schema lock (and SQLite's write lock) instead of failing.
- Reading commands (``history``, ``regress`` without ``--store``) refuse a store that does not
  exist with one line and create nothing (a mistyped path used to create an empty store).
- A store made by an older bootlens (the DDL that bootlens wrote before issue 29, here as
  literal SQL) is read and written as it is; one left with its tables but no version row (what
  the old race could leave behind) is completed in place.

Input: one real boot of the reference target (tests/data/rerun/quiet/bootdelay-0/boot-1.rec).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootlens.history import Store
from bootlens.history.store import SCHEMA_LOCK, SCHEMA_VERSION
from pg_server import PgServer, pg_server  # noqa: F401  (the session's PostgreSQL server fixture)
from test_history import ENV, QUIET0, cli

BOOT = QUIET0 / "boot-1.rec"
WRITERS = 20
_dbs = iter(range(10**6))


@pytest.fixture(params=["sqlite", "postgresql"])
def new_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store that does not exist yet: a file name in a folder not made yet, or a new, empty
    database on the real PostgreSQL server."""
    if request.param == "sqlite":
        yield str(tmp_path / "not-yet" / "history.sqlite")
        return
    server: PgServer = request.getfixturevalue("pg_server")
    yield server.create_database(f"bootlens_s{os.getpid()}_{next(_dbs)}")


# ``python -m bootlens.cli`` once GATE exists: the processes start at different moments (2 cores, 20
# interpreters), so each imports bootlens first, says so (a file ready-PID beside GATE) and waits
# for the gate; then all of them reach the store within milliseconds of each other (without the
# gate the schema race showed on PostgreSQL only).
GATED = """
import os, runpy, sys, time
from pathlib import Path
import bootlens.cli, bootlens.history.store  # noqa: F401  (imported before the gate)
gate = Path(sys.argv.pop(1))
(gate.parent / f"ready-{os.getpid()}").touch()
while not gate.exists():
    time.sleep(0.001)
runpy.run_module("bootlens.cli", run_name="__main__")
"""


def start_store(db: str, *args: str, gate: Path | None = None) -> subprocess.Popen[str]:
    """``bootlens store BOOT --db DB ARGS`` in a process of its own (at once, or once ``gate`` exists)."""
    cmd = [sys.executable, "-c", GATED, str(gate)] if gate else [sys.executable, "-m", "bootlens.cli"]
    return subprocess.Popen([*cmd, "store", str(BOOT), "--db", db, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def pg_tables(server: PgServer, url: str) -> set[str]:
    import psycopg

    dbname = url.split("/")[3].split("?")[0]
    with psycopg.connect(host=str(server.folder), port=5432, user=server.user, dbname=dbname) as c:
        return {r[0] for r in c.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


# ---- concurrency -------------------------------------------------------------------------------


def test_concurrent_stores_into_a_new_store_lose_nothing(new_db: str, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    procs = [start_store(new_db, "--label", f"writer={i}", gate=gate) for i in range(WRITERS)]
    deadline = time.monotonic() + 300
    while len(list(tmp_path.glob("ready-*"))) < WRITERS and time.monotonic() < deadline:
        time.sleep(0.05)
    gate.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    failed = [(i, err.strip()) for i, (p, (_, err)) in enumerate(zip(procs, outs)) if p.returncode or err]
    assert failed == [], failed
    # each writer printed its run id: 20 different ids, each for its one boot
    ids = sorted(int(out.split("\t")[0]) for out, _ in outs)
    assert len(set(ids)) == WRITERS and all(out.endswith("(1 boot)\n") for out, _ in outs)
    with Store(new_db) as s:
        runs = s.runs()
    assert sorted(r.id for r in runs) == ids
    assert sorted(int(r.labels["writer"]) for r in runs) == list(range(WRITERS))
    assert {r.boots for r in runs} == {1}
    assert len({r.total for r in runs}) == 1  # the same boot, the same total, 20 times


def test_a_writer_waits_for_the_schema_lock(new_db: str, request: pytest.FixtureRequest) -> None:
    """While another transaction holds the lock the schema is made under, a writer waits (it
    neither fails nor goes on without the schema), then stores its run."""
    if new_db.startswith("postgresql"):
        import psycopg

        server: PgServer = request.getfixturevalue("pg_server")
        dbname = new_db.split("/")[3].split("?")[0]
        holder = psycopg.connect(host=str(server.folder), port=5432, user=server.user, dbname=dbname)
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
    else:
        Path(new_db).parent.mkdir()
        holder = sqlite3.connect(new_db, isolation_level=None)  # type: ignore[assignment]
        holder.execute("BEGIN IMMEDIATE")
    p = start_store(new_db)
    try:
        time.sleep(7)  # longer than SQLite's default busy timeout (5 s), which bootlens used to keep
        assert p.poll() is None, p.communicate()  # still waiting
    finally:
        holder.rollback()
        holder.close()
    out, err = p.communicate(timeout=120)
    assert (p.returncode, err) == (0, "") and out.startswith("1\t")


# ---- a store that does not exist ---------------------------------------------------------------


@pytest.mark.parametrize("command", [("history",), ("history", "--json"),
                                     ("regress", "--reference", "1", str(BOOT))])
def test_reading_a_missing_sqlite_store_is_one_line_and_creates_nothing(tmp_path: Path,
                                                                         command: tuple[str, ...]) -> None:
    typo = tmp_path / "histroy" / "history.sqlite"
    r = cli(*command, "--db", typo, env={**ENV, "XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == f"bootlens: error: {typo}: no such history store (bootlens store creates one)\n"
    assert not typo.parent.exists()
    # the default store, never written to: the same, and nothing made under the data folder
    r = cli(*command, env={**ENV, "XDG_DATA_HOME": str(tmp_path / "xdg")})
    default = tmp_path / "xdg" / "bootlens" / "history.sqlite"
    assert (r.returncode, r.stderr) == (2, f"bootlens: error: {default}: no such history store (bootlens store creates one)\n")
    assert not (tmp_path / "xdg").exists()


def test_reading_a_database_without_bootlens_tables(tmp_path: Path, pg_server: PgServer) -> None:  # noqa: F811
    """An SQLite file or a PostgreSQL database that exists but holds no bootlens tables: one
    line, and no table is made in it."""
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    url = pg_server.create_database(f"bootlens_e{os.getpid()}")
    for db in (str(empty), url):
        r = cli("history", "--db", db)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.endswith(": holds no bootlens history (bootlens store creates its tables)\n"), r.stderr
        assert "Traceback" not in r.stderr
    assert [r[0] for r in sqlite3.connect(empty).execute("SELECT name FROM sqlite_master")] == ["other"]
    assert pg_tables(pg_server, url) == set()
    # a writing command makes the tables there, as on first use
    assert cli("store", BOOT, "--db", url).returncode == 0
    assert pg_tables(pg_server, url) == {"meta", "runs", "labels", "boots", "figures"}
    r = cli("history", "--db", url)
    assert r.returncode == 0 and r.stderr == ""


def test_regress_store_creates_the_store(tmp_path: Path) -> None:
    """regress --store writes: it makes a new store as store does (and then finds no reference)."""
    db = tmp_path / "new" / "history.sqlite"
    r = cli("regress", "--reference", "board=x", "--store", str(BOOT), "--db", db)
    assert r.returncode == 2 and "no stored run matches" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert db.is_file()


# ---- a store made by an older bootlens ---------------------------------------------------------

# The tables bootlens made before issue 29 (schema_version 1), as SQLAlchemy wrote them for each
# database (CREATE TABLE statements taken from a store that code made).
OLD_DDL = {
    "sqlite": """
CREATE TABLE meta ("key" VARCHAR(64) NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
CREATE TABLE runs (id INTEGER NOT NULL, created DATETIME NOT NULL, kind VARCHAR(16) NOT NULL,
    source TEXT NOT NULL, bootlens_version VARCHAR(32) NOT NULL, PRIMARY KEY (id));
CREATE TABLE labels (run_id INTEGER NOT NULL, "key" VARCHAR(128) NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (run_id, "key"), FOREIGN KEY(run_id) REFERENCES runs (id) ON DELETE CASCADE);
CREATE INDEX labels_key_value ON labels ("key", value);
CREATE TABLE boots (id INTEGER NOT NULL, run_id INTEGER NOT NULL, position INTEGER NOT NULL,
    origin VARCHAR(32) NOT NULL, partial BOOLEAN NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(run_id) REFERENCES runs (id) ON DELETE CASCADE);
CREATE INDEX ix_boots_run_id ON boots (run_id);
CREATE TABLE figures (boot_id INTEGER NOT NULL, kind VARCHAR(16) NOT NULL, name TEXT NOT NULL,
    value_ns BIGINT NOT NULL, count INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (boot_id, kind, name),
    FOREIGN KEY(boot_id) REFERENCES boots (id) ON DELETE CASCADE);
""",
    "postgresql": """
CREATE TABLE meta (key VARCHAR(64) NOT NULL, value TEXT NOT NULL, PRIMARY KEY (key));
CREATE TABLE runs (id SERIAL NOT NULL, created TIMESTAMP WITH TIME ZONE NOT NULL, kind VARCHAR(16) NOT NULL,
    source TEXT NOT NULL, bootlens_version VARCHAR(32) NOT NULL, PRIMARY KEY (id));
CREATE TABLE boots (id SERIAL NOT NULL, run_id INTEGER NOT NULL, position INTEGER NOT NULL,
    origin VARCHAR(32) NOT NULL, partial BOOLEAN NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(run_id) REFERENCES runs (id) ON DELETE CASCADE);
CREATE INDEX ix_boots_run_id ON boots (run_id);
CREATE TABLE labels (run_id INTEGER NOT NULL, key VARCHAR(128) NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (run_id, key), FOREIGN KEY(run_id) REFERENCES runs (id) ON DELETE CASCADE);
CREATE INDEX labels_key_value ON labels (key, value);
CREATE TABLE figures (boot_id INTEGER NOT NULL, kind VARCHAR(16) NOT NULL, name TEXT NOT NULL,
    value_ns BIGINT NOT NULL, count INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (boot_id, kind, name),
    FOREIGN KEY(boot_id) REFERENCES boots (id) ON DELETE CASCADE);
""",
}
# one run as the old code stored it: a boot with its total
OLD_ROWS = """
INSERT INTO runs (created, kind, source, bootlens_version) VALUES ('2025-11-20 10:00:00', 'import', 'old.log', '0.9');
INSERT INTO labels (run_id, key, value) VALUES (1, 'board', 'rpi4');
INSERT INTO boots (run_id, position, origin, partial) VALUES (1, 1, 'kernel start', false);
INSERT INTO figures (boot_id, kind, name, value_ns, count, seq)
    VALUES (1, 'total', 'total (kernel start → ready)', 4814000000, 1, 0);
"""


def old_store(db: str, request: pytest.FixtureRequest, version_row: bool) -> None:
    """Make ``db`` as the old code left it: its tables, one run and (or not) its version row."""
    kind = "postgresql" if db.startswith("postgresql") else "sqlite"
    sql = OLD_DDL[kind] + OLD_ROWS
    if version_row:
        sql += "INSERT INTO meta (key, value) VALUES ('schema_version', '1');"
    stmts = [s for s in sql.split(";") if s.strip()]
    if kind == "sqlite":
        Path(db).parent.mkdir()
        with sqlite3.connect(db) as c:
            for s in stmts:
                c.execute(s)
        c.close()
        return
    import psycopg

    server: PgServer = request.getfixturevalue("pg_server")
    with psycopg.connect(host=str(server.folder), port=5432, user=server.user,
                         dbname=db.split("/")[3].split("?")[0]) as pc:
        for s in stmts:
            pc.execute(s)


@pytest.mark.parametrize("version_row", [True, False], ids=["as-made", "no-version-row"])
def test_a_store_made_by_older_bootlens_keeps_working(new_db: str, request: pytest.FixtureRequest,
                                                      version_row: bool) -> None:
    old_store(new_db, request, version_row)
    r = cli("history", "--db", new_db)  # reading: the old run, as it was stored
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "board=rpi4" in r.stdout and "4.814 s" in r.stdout, r.stdout
    ids = [int(start_store(new_db, "--label", f"writer={i}").communicate(timeout=300)[0].split("\t")[0])
           for i in range(2)]
    assert ids == [2, 3]
    with Store(new_db) as s:
        runs = s.runs()
        assert [(r.id, r.labels.get("board"), r.boots) for r in runs] == [(1, "rpi4", 1), (2, None, 1), (3, None, 1)]
        assert s.boots([1])[0].figures == {"total (kernel start → ready)": 4_814_000_000}
        with s.engine.connect() as c:
            version = c.exec_driver_sql("SELECT value FROM meta WHERE key = 'schema_version'").all()
    assert version == [(str(SCHEMA_VERSION),)]
