"""The history store: every stored run's boots and their figures, in one schema on SQLite or
PostgreSQL (SQLAlchemy Core 2.x; the same statements on both).

Tables (``schema_version`` 1, in ``meta``):

- ``runs``: one row per stored run (``kind`` run, experiment or import; ``source`` the folder
  or logs it came from; ``created`` UTC);
- ``labels``: (run, key, value): board, build, commit, kernel, config, anything the user gives;
- ``boots``: (run, position, origin, partial): ``origin`` is what the boot's t=0 is (power-on,
  first byte, kernel start), which decides whether marker times can be compared;
- ``figures``: (boot, kind, name, value_ns, count, seq). ``kind`` total, stage or marker holds what
  :func:`bootlens.stats.figures.boot_figures` gives (names as it names them: sub-stages indented by two
  spaces, markers as ``marker NAME``); initcall, probe, unit or process holds the per-name sums
  of :func:`bootlens.stats.compare.boot_sums` (``count``: how many ran under that name). A boot with
  no row of a per-name kind did not show that kind at all (no initcall_debug, no tracing).

What is stored is what ``compare`` judges with (its statistics need each boot's value, not
only a median), so ``regress`` against stored runs decides exactly as ``compare`` would
between the original inputs.

The schema is made and upgraded by this module, not by a migration tool (Alembic): five tables,
and the one thing that goes wrong, writers racing to make them, Alembic does not prevent either
(``alembic upgrade`` takes no lock). Each opening reads ``schema_version``; when the schema is
missing or older it takes a lock, reads the version again and makes or upgrades the schema in
that one transaction (:meth:`Store._upgrade`): ``BEGIN IMMEDIATE`` on SQLite, with a busy timeout
so that writers wait for each other instead of failing; ``pg_advisory_xact_lock`` on PostgreSQL,
where ``CREATE TABLE IF NOT EXISTS`` alone is not race-free (two at once can fail on pg_type).
A store that does not exist is made only by writing commands (``create``); reading ones are told.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .. import __version__
from ..timeline.analyze import Analysis, BootAnalysis
from ..stats.compare import NAME_KINDS, boot_sums
from ..core.errors import BootlensError, printable
from ..stats.figures import boot_figures

SCHEMA_VERSION = 1
# PostgreSQL's advisory lock the schema is made and upgraded under (a bigint: "bootlens" in ASCII)
SCHEMA_LOCK = 0x626F6F746C656E73
# how long an SQLite writer waits for another's transaction before "database is locked" (s)
SQLITE_BUSY_TIMEOUT = 60.0
# figures' kind for each per-name table of compare (NAME_KINDS' names are plural)
NAME_KIND = {"initcalls": "initcall", "processes": "process", "probes": "probe", "units": "unit"}
TABLE_OF = {v: k for k, v in NAME_KIND.items()}
KINDS = ("total", "stage", "marker", *NAME_KIND.values())
RUN_KINDS = ("run", "experiment", "import")

metadata = sa.MetaData()
meta_t = sa.Table("meta", metadata,
                  sa.Column("key", sa.String(64), primary_key=True),
                  sa.Column("value", sa.Text, nullable=False))
runs_t = sa.Table("runs", metadata,
                  sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                  sa.Column("created", sa.DateTime(timezone=True), nullable=False),
                  sa.Column("kind", sa.String(16), nullable=False),
                  sa.Column("source", sa.Text, nullable=False),
                  sa.Column("bootlens_version", sa.String(32), nullable=False))
labels_t = sa.Table("labels", metadata,
                    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
                    sa.Column("key", sa.String(128), primary_key=True),
                    sa.Column("value", sa.Text, nullable=False),
                    sa.Index("labels_key_value", "key", "value"))
boots_t = sa.Table("boots", metadata,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False,
                             index=True),
                   sa.Column("position", sa.Integer, nullable=False),
                   sa.Column("origin", sa.String(32), nullable=False),
                   sa.Column("partial", sa.Boolean, nullable=False))
figures_t = sa.Table("figures", metadata,
                     sa.Column("boot_id", sa.Integer, sa.ForeignKey("boots.id", ondelete="CASCADE"),
                               primary_key=True),
                     sa.Column("kind", sa.String(16), primary_key=True),
                     sa.Column("name", sa.Text, primary_key=True),
                     sa.Column("value_ns", sa.BigInteger, nullable=False),
                     sa.Column("count", sa.Integer, nullable=False),
                     sa.Column("seq", sa.Integer, nullable=False))  # order within the boot, as analysed


class HistoryError(BootlensError):
    """The store cannot be opened or used, or a selection matches nothing."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class BootRecord:
    """What is stored of one boot: its figures (boot_figures' names), its t=0 and, per
    per-name table of compare ("initcalls", ...), the per-name sums (ns, count) it showed."""

    origin: str
    partial: bool
    figures: dict[str, int]
    sums: dict[str, tuple[dict[str, int], dict[str, int]]]
    run_id: int | None = None  # the stored run, None for a boot analysed now


def boot_record(b: BootAnalysis) -> BootRecord:
    """The record of an analysed boot (what :meth:`Store.add` writes)."""
    return BootRecord(b.total.origin, b.partial, boot_figures(b), {k: boot_sums(b, key) for k, key in NAME_KINDS})


def figure_kind(name: str) -> str:
    """total, stage or marker, from a boot_figures name."""
    return "total" if name.startswith("total ") else "marker" if name.startswith("marker ") else "stage"


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run in the store: ``boots`` stored, ``total`` the median total over them (ns; None when
    no boot measured one) and ``total_name`` what it counts (e.g. "total (power-on → ready)")."""

    id: int
    created: datetime
    kind: str
    source: str
    labels: dict[str, str] = field(default_factory=dict)
    boots: int = 0
    total: float | None = None
    total_name: str | None = None


def db_url(db: str | None) -> str:
    """The SQLAlchemy URL of ``--db``: a URL as given (postgresql:// goes through psycopg 3), a
    path as an SQLite file, nothing as the default file under the user's data directory
    ($XDG_DATA_HOME/bootlens/history.sqlite, else ~/.local/share/bootlens/history.sqlite)."""
    if not db:
        base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return f"sqlite:///{Path(base) / 'bootlens' / 'history.sqlite'}"
    if "://" not in db:
        return f"sqlite:///{Path(db).expanduser().resolve()}"
    for scheme in ("postgresql://", "postgres://"):
        if db.startswith(scheme):  # SQLAlchemy's default PostgreSQL driver is psycopg2: name psycopg 3
            return "postgresql+psycopg://" + db[len(scheme):]
    return db


def _shown(url: sa.URL) -> str:
    """The URL for a message, password hidden."""
    return printable(url.render_as_string(hide_password=True))


class Store:
    """An open history store. ``create``: make the store (an SQLite file and its folder, the
    tables) when it does not exist, as writing does; else (reading) a missing store is a
    HistoryError. Use as a context manager."""

    def __init__(self, db: str | None = None, *, create: bool = True) -> None:
        try:
            self.url = sa.make_url(db_url(db))
        except sa.exc.ArgumentError:
            raise HistoryError(f"--db {printable(db or '')}: not a database URL (sqlite:///FILE, "
                               "postgresql://USER@HOST/DB) or a file name") from None
        sqlite = self.url.get_backend_name() == "sqlite"
        if sqlite and self.url.database not in (None, "", ":memory:"):
            file = Path(self.url.database)
            if not create and not file.exists():  # a mistyped path: never an empty store in its place
                raise HistoryError(f"{printable(str(file))}: no such history store (bootlens store creates one)")
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise HistoryError(f"{_shown(self.url)}: cannot create its folder: {e.strerror or e}") from None
        try:
            self.engine: Engine = sa.create_engine(
                self.url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT} if sqlite else {})
        except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as e:
            raise HistoryError(f"{_shown(self.url)}: cannot use this database: {e}") from None
        if sqlite:
            sa.event.listen(self.engine, "connect", _sqlite_connect)
            sa.event.listen(self.engine, "begin", _sqlite_begin)
        # transactions that write: on SQLite they take the write lock first (BEGIN IMMEDIATE)
        self._writer = self.engine.execution_options(bootlens_write=True)
        self._guard(self._open_schema, create)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connections."""
        self.engine.dispose()

    def _guard(self, f: Any, *args: Any) -> Any:
        """Run ``f``; a database failure (unreachable server, not a database, locked) is a HistoryError."""
        try:
            return f(*args)
        except sa.exc.SQLAlchemyError as e:
            why = str(getattr(e, "orig", None) or e).strip().splitlines()
            raise HistoryError(f"{_shown(self.url)}: {why[0] if why else type(e).__name__}") from None

    def _open_schema(self, create: bool) -> None:
        """Check the schema's version, without a lock (the common case: it is current); make or
        upgrade it under the lock when it is missing or older."""
        with self.engine.connect() as c:
            found = self._version(c)
        if found == SCHEMA_VERSION:
            return
        if found is None and not create:
            raise HistoryError(f"{_shown(self.url)}: holds no bootlens history (bootlens store creates its tables)")
        with self._writer.begin() as c:
            if c.dialect.name == "postgresql":
                c.execute(sa.select(sa.func.pg_advisory_xact_lock(SCHEMA_LOCK)))
            self._upgrade(c, self._version(c) or 0)  # read again: another may have done it meanwhile

    def _version(self, c: Connection) -> int | None:
        """The store's schema version: None without a ``meta`` table, 0 without a version row
        (tables that bootlens before its schema lock made, left behind by the race), else the
        version (a HistoryError when this bootlens cannot read it)."""
        if not sa.inspect(c).has_table("meta"):
            return None
        v = c.execute(sa.select(meta_t.c.value).where(meta_t.c.key == "schema_version")).scalar()
        if v is None:
            return 0
        if not v.isdigit() or int(v) > SCHEMA_VERSION:
            raise HistoryError(f"{_shown(self.url)}: history schema version {printable(v)}, this bootlens "
                               f"reads version {SCHEMA_VERSION}")
        return int(v)

    def _upgrade(self, c: Connection, version: int) -> None:
        """Bring a store at ``version`` (0: none) to SCHEMA_VERSION, in the caller's locked transaction."""
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            _create_v1(c)
            version = 1
        for step in range(version, SCHEMA_VERSION):
            UPGRADES[step](c)
        if c.execute(sa.select(meta_t.c.key).where(meta_t.c.key == "schema_version")).first() is None:
            c.execute(meta_t.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
        else:
            c.execute(meta_t.update().where(meta_t.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))

    # --- writing ------------------------------------------------------------------------------

    def add(self, boots: Sequence[BootRecord], labels: Mapping[str, str], kind: str = "import",
            source: str = "") -> int:
        """Store one run of ``boots`` with ``labels``; returns its id."""
        if kind not in RUN_KINDS:
            raise HistoryError(f"run kind {kind!r}: one of {', '.join(RUN_KINDS)}")
        return int(self._guard(self._add, boots, labels, kind, source))

    def _add(self, boots: Sequence[BootRecord], labels: Mapping[str, str], kind: str, source: str) -> int:
        with self._writer.begin() as c:
            run_id = c.execute(runs_t.insert().values(
                created=datetime.now(timezone.utc), kind=kind, source=source, bootlens_version=__version__,
            ).returning(runs_t.c.id)).scalar_one()
            if labels:
                c.execute(labels_t.insert(), [{"run_id": run_id, "key": k, "value": v} for k, v in labels.items()])
            for pos, b in enumerate(boots, 1):
                boot_id = c.execute(boots_t.insert().values(
                    run_id=run_id, position=pos, origin=b.origin, partial=b.partial,
                ).returning(boots_t.c.id)).scalar_one()
                rows = [{"boot_id": boot_id, "kind": figure_kind(n), "name": n, "value_ns": v, "count": 1}
                        for n, v in b.figures.items()]
                for table, (ns, count) in b.sums.items():
                    rows += [{"boot_id": boot_id, "kind": NAME_KIND[table], "name": n, "value_ns": ns[n],
                              "count": count[n]} for n in count]
                for i, r in enumerate(rows):
                    r["seq"] = i
                if rows:
                    c.execute(figures_t.insert(), rows)
        return int(run_id)

    # --- reading ------------------------------------------------------------------------------

    def runs(self, labels: Mapping[str, str] | None = None, ids: Iterable[int] = ()) -> list[StoredRun]:
        """The stored runs, oldest first: those with ``ids`` (all of them must exist) or those
        carrying every one of ``labels`` (all runs when neither is given)."""
        return list(self._guard(self._runs, dict(labels or {}), list(ids)))

    def _runs(self, labels: dict[str, str], ids: list[int]) -> list[StoredRun]:
        q = sa.select(runs_t).order_by(runs_t.c.id)
        if ids:
            q = q.where(runs_t.c.id.in_(ids))
        for k, v in labels.items():
            q = q.where(runs_t.c.id.in_(sa.select(labels_t.c.run_id).where(labels_t.c.key == k,
                                                                           labels_t.c.value == v)))
        with self.engine.connect() as c:
            rows = c.execute(q).all()
            found = [r.id for r in rows]
            missing = sorted(set(ids) - set(found))
            if missing:
                raise HistoryError(f"no stored run with id {', '.join(map(str, missing))}")
            lab: dict[int, dict[str, str]] = {i: {} for i in found}
            nboots: dict[int, int] = dict.fromkeys(found, 0)
            totals: dict[int, list[tuple[str, int]]] = {i: [] for i in found}
            if found:
                for r in c.execute(sa.select(labels_t).where(labels_t.c.run_id.in_(found))
                                   .order_by(labels_t.c.run_id, labels_t.c.key)):
                    lab[r.run_id][r.key] = r.value
                for r in c.execute(sa.select(boots_t.c.run_id, sa.func.count()).where(boots_t.c.run_id.in_(found))
                                   .group_by(boots_t.c.run_id)):
                    nboots[r[0]] = int(r[1])
                for r in c.execute(sa.select(boots_t.c.run_id, figures_t.c.name, figures_t.c.value_ns)
                                   .join(figures_t, figures_t.c.boot_id == boots_t.c.id)
                                   .where(boots_t.c.run_id.in_(found), figures_t.c.kind == "total")
                                   .order_by(boots_t.c.run_id, boots_t.c.position)):
                    totals[r.run_id].append((r.name, int(r.value_ns)))
        out = []
        for r in rows:
            t = totals[r.id]
            # the total the most boots measured (all of a run's boots normally count from one t=0)
            name = max(dict.fromkeys(n for n, _ in t), key=lambda n: sum(m == n for m, _ in t)) if t else None
            med = statistics.median(v for n, v in t if n == name) if t else None
            out.append(StoredRun(r.id, _utc(r.created), r.kind, r.source, lab[r.id], nboots[r.id], med, name))
        return out

    def boots(self, run_ids: Sequence[int]) -> list[BootRecord]:
        """The stored boots of these runs, run by run in the order given, each in boot order."""
        return list(self._guard(self._boots, list(run_ids)))

    def _boots(self, run_ids: list[int]) -> list[BootRecord]:
        if not run_ids:
            return []
        with self.engine.connect() as c:
            brows = c.execute(sa.select(boots_t).where(boots_t.c.run_id.in_(run_ids))
                              .order_by(boots_t.c.run_id, boots_t.c.position)).all()
            recs: dict[int, BootRecord] = {
                r.id: BootRecord(r.origin, bool(r.partial), {}, {t: ({}, {}) for t in NAME_KIND}, r.run_id)
                for r in brows}
            q = (sa.select(figures_t).join(boots_t, figures_t.c.boot_id == boots_t.c.id)
                 .where(boots_t.c.run_id.in_(run_ids)).order_by(figures_t.c.boot_id, figures_t.c.seq))
            for r in c.execute(q):
                rec = recs[r.boot_id]
                if r.kind in TABLE_OF:
                    ns, count = rec.sums[TABLE_OF[r.kind]]
                    ns[r.name] = int(r.value_ns)
                    count[r.name] = int(r._mapping["count"])  # Row.count is the tuple method
                else:
                    rec.figures[r.name] = int(r.value_ns)
        order = {rid: i for i, rid in enumerate(run_ids)}
        return sorted(recs.values(), key=lambda b: order[b.run_id or 0])

    def delete(self, run_id: int) -> None:
        """Remove a stored run with its boots and figures."""
        self._guard(self._delete, run_id)

    def _delete(self, run_id: int) -> None:
        with self._writer.begin() as c:
            boot_ids = sa.select(boots_t.c.id).where(boots_t.c.run_id == run_id)
            c.execute(figures_t.delete().where(figures_t.c.boot_id.in_(boot_ids)))
            c.execute(boots_t.delete().where(boots_t.c.run_id == run_id))
            c.execute(labels_t.delete().where(labels_t.c.run_id == run_id))
            if not c.execute(runs_t.delete().where(runs_t.c.id == run_id)).rowcount:
                raise HistoryError(f"no stored run with id {run_id}")


def _create_v1(c: Connection) -> None:
    """Version 1's tables, those not there yet (the tables of this module: when they change,
    this step keeps version 1's definitions and UPGRADES[1] goes on from there)."""
    metadata.create_all(c, checkfirst=True)


# The step from version N to N+1, run in the locked transaction of Store._upgrade (none yet).
UPGRADES: dict[int, Callable[[Connection], None]] = {}


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # pysqlite begins its own transactions only before INSERT/UPDATE/DELETE, so DDL ran outside
    # any; hand BEGIN to _sqlite_begin (SQLAlchemy's recipe for SQLite's transactional DDL)
    dbapi_connection.isolation_level = None
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_begin(conn: Connection) -> None:
    # a writing transaction takes the write lock at once, waiting (busy timeout) for another
    # writer's: a deferred one that read first could only fail when it came to write
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("bootlens_write") else "BEGIN")


def _utc(t: datetime) -> datetime:
    """SQLite hands back naive datetimes: they were stored as UTC."""
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def auto_labels(analysis: Analysis) -> dict[str, str]:
    """Labels read from the boots themselves: ``kernel``, the kernel version when every boot
    that printed one printed the same."""
    versions = {f.value for b in analysis.boots for f in b.boot.facts if f.key == "kernel_version"}
    return {"kernel": versions.pop()} if len(versions) == 1 else {}


def store_analysis(db: str | None, analysis: Analysis, labels: Mapping[str, str], kind: str = "run",
                   source: str = "") -> int:
    """Store an analysis (its boots' figures) as one run; the user's labels win over those read
    from the boots (:func:`auto_labels`). Returns the run's id."""
    with Store(db) as s:
        return s.add([boot_record(b) for b in analysis.boots], {**auto_labels(analysis), **labels}, kind, source)
