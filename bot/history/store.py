"""The SQLite store: opened with WAL and a busy timeout, migrated on open, written atomically.

One of the two :class:`~bot.history.protocol.HistoryStore` implementations (the embedded
default; :mod:`bot.history.pg_store` is the shared one): its statements and unique keys are the
protocol's, its schema the migrations of :mod:`bot.history.migrate`.

The default path is outside the Actions workspace (the runner
cleans the workspace between jobs): ``$XDG_DATA_HOME/triage-bot/triage.db``, i.e.
``~/.local/share/triage-bot/triage.db`` (:func:`bot.config.default_db_path`); ``--db`` /
``TRIAGE_DB`` override it. Only accepted audits are written to ``audits``. This module is where
sqlite3 errors become :class:`~bot.errors.StoreError`.

Two ways to open it:

- **For writing** (a run that applies its plan): the data folder is created ``0700`` and a new
  file ``0600`` (it holds audit texts of possibly private code); an existing file is tightened
  to ``0600``. SQLite gives the ``-wal`` and ``-shm`` files the database file's mode. WAL is
  switched on and pending migrations are applied (:mod:`bot.history.migrate`).
- **Read-only** (``--dry-run``, ``history``, ``stats``): nothing is created, migrated or
  written. A missing file reads as an empty store. The file is opened with SQLite's
  ``mode=ro``; a WAL database in a folder the process cannot write fails that way (SQLite
  must create the ``-shm`` file even to read), so the store then reads it with
  ``immutable=1``, which is safe only when no ``-wal`` file holds committed changes: when one
  does, the open fails with a :class:`~bot.errors.StoreError` that says so. A file from an
  older version (pending migrations) is read through a migrated in-memory copy. (Reading a WAL
  database, SQLite itself may leave an empty ``-wal`` and the ``-shm`` index beside it where
  the folder allows, with the file's mode; the database file is never touched.)

Either way, a file whose record (``_yoyo_migration``, or an earlier release's
``_sqlite_migrations``) names a migration this version does not know was written by a newer
triage-bot: the open fails with a :class:`~bot.errors.StoreError` (exit 5)
before anything is written, instead of a write failing later on a changed schema.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlite_utils import Database
from tenacity import (
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_delay,
    wait_fixed,
)

from bot.errors import StoreError
from bot.history import issue_index, migrate
from bot.history.protocol import (
    AUDIT_KEY,
    AUDITS_SQL,
    GATE_KEY,
    LAST_AUDIT_SQL,
    LAST_GATE_SQL,
    LOCK_TIMEOUT_S,
    AuditRow,
    GateRow,
    IndexedIssue,
    KeyedTable,
    SchemaState,
    audit_params,
    delete_sql,
    gate_params,
    get_sql,
    insert_sql,
    schema_state,
    utc_now,
    week_of,
)
from bot.urls import NO_SECRETS, Redactor

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DB_DIR_MODE",
    "DB_FILE_MODE",
    "AuditRow",
    "GateRow",
    "Store",
    "file_schema",
    "utc_now",
    "week_of",
]

_T = TypeVar("_T")

LOCK_POLL_S = 0.05
"""How often a run waiting for the lock file tries again (s)."""

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's lock before failing (ms)."""

DB_FILE_MODE = 0o600
"""Mode of the store file (and, as SQLite copies it, of its ``-wal``/``-shm`` files)."""

DB_DIR_MODE = 0o700
"""Mode of the data folder when the store creates it."""


class Store:
    """The decision store.

    Args:
        path: the SQLite file; ``":memory:"`` for tests.
        read_only: open without creating, migrating or writing anything (dry runs, ``history``,
            ``stats``); a missing file is an empty store, and the ``record_*`` methods raise.

    Raises:
        StoreError: the file cannot be created, opened or migrated, or was written by a newer
            triage-bot (its migrations include names this version does not know).
    """

    lock_timeout_s: float = LOCK_TIMEOUT_S

    def __init__(
        self, path: Path | str, *, read_only: bool = False, redact: Redactor = NO_SECRETS
    ) -> None:
        self.path = path
        self.read_only = read_only
        self.redact = redact
        try:
            if path == ":memory:":
                self.db = _migrated(Database(memory=True))
            elif read_only:
                self.db = _open_read_only(Path(path))
            else:
                self.db = self._open_for_writing(Path(path))
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc

    def _open_for_writing(self, path: Path) -> Database:
        path.parent.mkdir(mode=DB_DIR_MODE, parents=True, exist_ok=True)
        _create_private(path)
        db = Database(str(path))
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _refuse_newer(db, path)  # before the first write: enabling WAL is one
        # switching a new file to WAL does not wait for the busy timeout: retry while another
        # opener holds it
        Retrying(
            stop=stop_after_delay(BUSY_TIMEOUT_MS / 1000),
            wait=wait_fixed(LOCK_POLL_S),
            retry=retry_if_exception(_locked),
            reraise=True,
        )(db.enable_wal)
        self.db = db
        if _pending(db.conn):
            _migrate(db.conn, path)
        return db

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction that takes the write lock up front (``BEGIN IMMEDIATE``).

        sqlite-utils' ``atomic()`` opens a deferred transaction whose first statement is a read
        (``table.exists()``); under WAL, upgrading that read to a write after another process
        committed fails at once with "database is locked", without waiting for the busy
        timeout. Taking the lock first makes a second writer wait instead.

        Raises:
            StoreError: the store was opened read-only.
        """
        if self.read_only:
            raise StoreError(f"the store at {self.path} was opened read-only")
        self.db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.rollback()
            raise
        try:
            self.db.conn.execute("COMMIT")
        except BaseException:
            self.db.rollback()
            raise

    def _rows(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        cursor = self.db.conn.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _replace(self, table: str, key: Sequence[str], rows: Sequence[dict[str, Any]]) -> int:
        """Delete each row's key, then insert it, in one write transaction (the protocol's
        idempotency rule); returns the id of the last row inserted."""
        last = 0
        try:
            with self._write():
                for data in rows:
                    self.db.conn.execute(delete_sql(table, key), [data[k] for k in key])
                    cursor = self.db.conn.execute(
                        insert_sql(table, list(data)), list(data.values())
                    )
                    last = int(cursor.fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {table}: {exc}") from exc
        return last

    def record_audits(self, rows: Sequence[AuditRow]) -> int:
        """Insert accepted audits in one transaction (all or none); returns the count.

        A row replaces any earlier audit of the same segment at the same head SHA
        (:data:`~bot.history.protocol.AUDIT_KEY`, a unique key), so
        a replayed event or a repeated ``/audit`` leaves one row per segment per head SHA, and
        the weekly sums (kept by triggers on insert and delete) count it once.

        Raises:
            StoreError: the write failed; no row of the batch is kept and none is removed.
        """
        if not rows:
            return 0
        self._replace("audits", AUDIT_KEY, [audit_params(row, self.redact) for row in rows])
        return len(rows)

    def record_gate(self, row: GateRow) -> int:
        """Insert one gate decision, replacing the row with its
        :data:`~bot.history.protocol.GATE_KEY`; returns its id.

        Raises:
            StoreError: the write failed (locked past the busy timeout, disk full …).
        """
        return self._replace("gate_decisions", GATE_KEY, [gate_params(row, self.redact)])

    def get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The row of ``table`` whose columns equal ``key``'s values, or ``None``."""
        try:
            return next(iter(self._rows(get_sql(table, key), list(key.values()))), None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {table}: {exc}") from exc

    def change(self, table: str, change: Callable[[KeyedTable], object]) -> None:
        """Run ``change`` on ``table`` in one write transaction (all or nothing).

        Raises:
            StoreError: the write failed, or the store was opened read-only.
        """
        try:
            with self._write():
                change(KeyedTable(table, self.db.conn.execute))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {table}: {exc}") from exc

    def index_issues(self, repo: str, rows: Sequence[IndexedIssue]) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.index_issues`."""
        prepared = issue_index.prepare(rows, self.redact)
        conn = self.db.conn
        try:
            with self._write():
                return issue_index.write(conn.execute, conn.executemany, repo, prepared)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to issue_index: {exc}") from exc

    def drop_indexed(self, repo: str, numbers: Collection[int]) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.drop_indexed`."""
        conn = self.db.conn
        try:
            with self._write():
                return issue_index.drop(conn.execute, conn.executemany, repo, numbers)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to issue_index: {exc}") from exc

    def index_size(self, repo: str) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.index_size`."""
        return int(self._read(lambda: issue_index.index_size(self.db.conn.execute, repo)))

    def title_vectors(self, repo: str, model: str, numbers: Collection[int]) -> dict[int, bytes]:
        """See :meth:`~bot.history.protocol.HistoryStore.title_vectors`."""
        execute = self.db.conn.execute
        return self._read(lambda: issue_index.title_vectors(execute, repo, model, numbers))

    def keep_title_vectors(
        self, repo: str, model: str, vectors: Sequence[tuple[int, str, bytes]]
    ) -> None:
        """See :meth:`~bot.history.protocol.HistoryStore.keep_title_vectors`."""
        conn = self.db.conn
        try:
            with self._write():
                issue_index.keep_vectors(conn.executemany, repo, model, vectors, self.redact)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to title_vectors: {exc}") from exc

    def issues_without_vector(
        self, repo: str, model: str, limit: int, below: int | None = None
    ) -> list[tuple[int, str]]:
        """See :meth:`~bot.history.protocol.HistoryStore.issues_without_vector`."""
        execute = self.db.conn.execute
        return self._read(lambda: issue_index.missing_vectors(execute, repo, model, limit, below))

    def indexed_issue(self, repo: str, number: int) -> IndexedIssue | None:
        """See :meth:`~bot.history.protocol.HistoryStore.indexed_issue`."""
        return self._read(lambda: issue_index.indexed_issue(self.db.conn.execute, repo, number))

    def term_docs(self, repo: str, terms: Collection[str]) -> dict[str, int]:
        """See :meth:`~bot.history.protocol.HistoryStore.term_docs`."""
        return self._read(lambda: issue_index.term_docs(self.db.conn.execute, repo, terms))

    def issues_with_terms(
        self,
        repo: str,
        terms: Sequence[str],
        *,
        before: str | None = None,
        exclude: int | None = None,
        limit: int = 5000,
    ) -> list[IndexedIssue]:
        """See :meth:`~bot.history.protocol.HistoryStore.issues_with_terms` (FTS5 ``MATCH``
        of the terms as string literals)."""
        until = issue_index.canonical_time(before) if before is not None else None

        def page(part: Sequence[str], below: int | None, size: int) -> list[IndexedIssue]:
            where, params = issue_index.page_filters(until, exclude, below)
            columns = ", ".join(f"i.{c}" for c in issue_index.COLUMNS.split(", "))
            # the match runs once, as the outer loop: probing it per row re-runs the query
            sql = (
                "with found as materialized (select rowid from issue_index_fts "  # noqa: S608
                f"where issue_index_fts match ?) select {columns} from found "
                f"join issue_index i on i.rowid = found.rowid where i.repo = ?{where} "
                "order by i.number desc limit ?"
            )
            rows = self.db.conn.execute(sql, [issue_index.fts5_match(part), repo, *params, size])
            return [IndexedIssue(*row) for row in rows.fetchall()]

        return self._read(lambda: issue_index.search(page, terms, limit))

    def _read(self, read: Callable[[], _T]) -> _T:
        try:
            return read()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the store at {self.path}: {exc}") from exc

    def audits(self, repo: str, *, limit: int = 10) -> list[dict[str, Any]]:
        """The newest accepted audits of a repository, newest first."""
        return self._rows(AUDITS_SQL, [repo, limit])

    def last_gate(self, repo: str, issue: int) -> dict[str, Any] | None:
        """The bot's last gate decision on an issue, or ``None``."""
        return next(iter(self._rows(LAST_GATE_SQL, [repo, issue])), None)

    def last_audit(self, repo: str, pr: int) -> dict[str, Any] | None:
        """The last audit row written for a pull request, or ``None``."""
        return next(iter(self._rows(LAST_AUDIT_SQL, [repo, pr])), None)

    def fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of a read-only query (``?`` parameters) as tuples.

        Raises:
            StoreError: the query failed.
        """
        try:
            return [tuple(row) for row in self.db.conn.execute(sql, list(params)).fetchall()]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the store at {self.path}: {exc}") from exc

    @contextmanager
    def exclusive(self, subject: str) -> Iterator[None]:
        """Hold an exclusive ``flock`` on ``<file>.lock`` while the block runs (one lock for
        every subject: runners sharing a file are few). An in-memory or read-only store needs
        none.

        Raises:
            StoreError: the lock file cannot be opened, or the lock was not granted within
                ``lock_timeout_s``.
        """
        del subject  # one lock per file
        if self.path == ":memory:" or self.read_only:
            yield
            return
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
            fd = os.open(f"{self.path}.lock", flags, DB_FILE_MODE)
        except OSError as exc:
            raise StoreError(f"cannot open the lock file of {self.path}: {exc}") from exc
        try:
            try:
                Retrying(
                    stop=stop_after_delay(self.lock_timeout_s),
                    wait=wait_fixed(LOCK_POLL_S),
                    retry=retry_if_exception_type(BlockingIOError),
                    reraise=True,
                )(fcntl.flock, fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreError(
                    f"the store at {self.path} stayed locked by another run for "
                    f"{self.lock_timeout_s:g} s"
                ) from None
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def close(self) -> None:
        """Close the connection."""
        self.db.close()


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def _pending(conn: sqlite3.Connection) -> bool:
    """Whether the file lacks a shipped migration in its records; reads only."""
    return not set(migrate.shipped()) <= migrate.recorded_ids(conn)


def _migrate(conn: sqlite3.Connection, path: Path | str) -> None:
    """Apply the pending migrations; first record those an earlier release's sqlite-utils
    record stands for.

    Raises:
        StoreError: the installation ships no migrations, or that record cannot be upgraded.
    """
    shipped = migrate.migrations()
    if not shipped:
        raise StoreError(
            "this installation of triage-bot ships no migrations (its package lacks "
            "bot/history/migrations): reinstall triage-bot"
        )
    # one write transaction: two processes opening a new file migrate it once
    with migrate.sqlite_backend(conn, locked=True) as backend:
        _refuse_legacy(conn, path)
        done = migrate.legacy_applied(conn)[0]
        applied = set(backend.get_applied_migration_hashes())
        adopted = [m for m in shipped if m.id in done and m.hash not in applied]
        if adopted:
            backend.mark_migrations(adopted)
        backend.apply_migrations(backend.to_apply(shipped))


def _refuse_legacy(conn: sqlite3.Connection, path: Path | str) -> None:
    """Raise :class:`StoreError` for a sqlite-utils record that is not a whole first part of
    the migrations (a file last written before ``m008_unique_keys``)."""
    done, unknown = migrate.legacy_applied(conn)
    covered = {n for m in done for n in migrate.LEGACY[m]}
    partial = _recorded_legacy(conn) - unknown - covered
    if partial or set(list(migrate.LEGACY)[: len(done)]) != done:
        raise StoreError(
            f"the store at {path} was last migrated by a triage-bot older than this version "
            "can upgrade (its record lacks m008_unique_keys): open it once with triage-bot "
            "0.1.0, then with this version"
        )


def _recorded_legacy(conn: sqlite3.Connection) -> set[str]:
    """The sqlite-utils migrations the file records."""
    tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    if migrate.LEGACY_TABLE not in tables:
        return set()
    return {str(r[0]) for r in conn.execute("select name from _sqlite_migrations")}


def _refuse_newer(db: Database, path: Path) -> None:
    """Close ``db`` and raise :class:`StoreError` when the file holds migrations this version
    does not know (a newer triage-bot wrote it: its schema may differ in ways writes would
    only find later)."""
    unknown = sorted(
        (migrate.recorded_ids(db.conn) - set(migrate.shipped()))
        | migrate.legacy_applied(db.conn)[1]
    )
    if unknown:
        db.close()
        raise StoreError(
            f"the store at {path} was created by a newer triage-bot (migrations "
            f"{', '.join(unknown)} are unknown to this version); upgrade triage-bot, or point "
            "--db / TRIAGE_DB at another file"
        )


def file_schema(path: Path | str) -> SchemaState | None:
    """The file at ``path`` against this version's migrations and the tables those it records
    create (:func:`~bot.history.protocol.schema_state`; ``triage-bot doctor``), ``None`` when
    there is no file yet; reads only (SQLite's ``mode=ro``).

    Raises:
        StoreError: the file cannot be read as a database.
    """
    if not Path(path).exists():
        return None
    try:
        conn = _connect(f"{Path(path).resolve().as_uri()}?mode=ro")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the store at {path}: {exc}") from exc
    try:
        db = Database(conn)
        _refuse_legacy(conn, path)
        applied = migrate.recorded_ids(conn) | migrate.legacy_applied(conn)[1]
        tables = set(db.table_names())
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the store at {path}: {exc}") from exc
    finally:
        conn.close()
    shipped = migrate.shipped()
    return schema_state(shipped, applied, tables, lambda done: migrate.tables_after(shipped, done))


def _migrated(db: Database) -> Database:
    _migrate(db.conn, ":memory:")
    return db


def _create_private(path: Path) -> None:
    """Create an empty store file with :data:`DB_FILE_MODE`, or tighten an existing one.

    SQLite itself creates files ``0644`` (less the umask); an empty file is a valid empty
    database, so creating it first with ``O_EXCL`` fixes the mode without racing another
    process that opens the same path.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE))
    except FileExistsError:
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            try:
                if name.stat().st_mode & 0o077:
                    name.chmod(DB_FILE_MODE)
            except (FileNotFoundError, PermissionError):
                continue  # gone, or not ours to change: SQLite reports what matters


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("select count(*) from sqlite_master").fetchone()  # opening is lazy
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _open_read_only(path: Path) -> Database:
    """Open ``path`` for reading only; never create, migrate or write (see the module doc).

    Raises:
        StoreError: a WAL holds committed changes SQLite cannot read here, or the file was
            written by a newer triage-bot.
        sqlite3.Error: the file is not a database or cannot be read.
    """
    if not path.exists():
        return _migrated(Database(memory=True))
    uri = path.resolve().as_uri()
    try:
        conn = _connect(f"{uri}?mode=ro")
    except sqlite3.OperationalError as exc:
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(
                f"cannot read the store at {path}: {exc}; its write-ahead log {wal.name} holds "
                "changes SQLite reads only with write access to the folder (to create "
                f"{path.name}-shm); run once with write access, or give the folder write access"
            ) from exc
        # No -wal: the database file alone holds every committed change, so reading it as
        # immutable (no locks, no -shm) sees what mode=ro would have seen. immutable assumes
        # nobody writes the file meanwhile: in a folder this process cannot write, only another
        # user could, and a dry run or listing that races such a writer may misread or fail.
        conn = _connect(f"{uri}?mode=ro&immutable=1")
    db = Database(conn)
    _refuse_newer(db, path)
    if not _pending(conn):
        return db
    # An older (or empty) file: migrate an in-memory copy, never the file.
    memory = sqlite3.connect(":memory:")
    conn.backup(memory)
    conn.close()
    return _migrated(Database(memory))
