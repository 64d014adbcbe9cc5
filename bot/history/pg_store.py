"""The PostgreSQL store: one history shared by a pool of runners, psycopg 3.

The other :class:`~bot.history.protocol.HistoryStore` (:mod:`bot.history.store` is the embedded
SQLite file). Chosen when ``TRIAGE_DB`` / ``--db`` / the action's ``db-path`` is a
``postgresql://`` (or ``postgres://``) URL (its :data:`bot.stores.STORES` row); the URL
follows libpq's rules, so a password may come from the URL, ``PGPASSWORD`` or ``~/.pgpass``. It
never appears in a message: the store names the server as :func:`bot.urls.shown_url` shows
it, refuses a URL that libpq reads differently from the URL standard (its host or database name
could hold a piece of the password), and replaces a driver message that repeats the URL or a
secret of it by the error's kind.

This module holds every run-time difference from SQLite: ``?`` parameters become psycopg's
``%s`` (:func:`pg_sql`), a write transaction takes a transaction-level advisory lock per subject
(``owner/name#number``) where SQLite takes its one write lock, and :meth:`PostgresStore.exclusive`
is a session-level advisory lock. The statements and unique keys are the protocol's.

Opening applies pending migrations (:mod:`bot.history.migrate`, the SQLite store's yoyo
migrations) while holding a session advisory lock (:data:`MIGRATION_LOCK`), so runners that
start at once migrate one after another; the second finds nothing to apply. A server whose migration
table names a migration this version does not know was migrated by a newer triage-bot: the open
fails with a :class:`~bot.errors.StoreError` before anything is written. Opened ``read_only``
(dry runs, listings) the session refuses writes; it still migrates a server that needs it (the
schema is shared, and holds no decision).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.sql import SQL, Identifier
from yoyo import (  # type: ignore[import-untyped]
    default_migration_table,
    get_backend,
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
    TABLES,
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
)
from bot.urls import NO_SECRETS, Redactor, read_url, redact

__all__ = [
    "MIGRATION_LOCK",
    "PostgresStore",
    "pg_sql",
    "server_schema",
]

MIGRATION_LOCK = 0x7472_6961_6765  # "triage": any fixed key no other application uses
"""The session advisory lock held while migrating."""

_WRITE_LOCKS = 1
_SUBJECT_LOCKS = 2
_INDEX_LOCKS = 3
"""Namespaces (first key) of the two-key advisory locks: a write transaction's per-subject lock,
:meth:`PostgresStore.exclusive`'s, and an index write's per repository (its term counts are
read and changed together); the second key is ``hashtext(subject)``."""

_T = TypeVar("_T")


CONNECT_TIMEOUT_S = 10


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = exc
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


def _raise(what: str, exc: BaseException, url: str) -> NoReturn:
    """Raise a :class:`StoreError` ``what: reason`` for a driver error (psycopg, libpq, yoyo).

    The reason is the driver's message unless that message, or one it was raised from, holds
    the URL or any form of a secret of it (libpq repeats a URI it cannot read and a host it
    cannot resolve): then only the error's kind, and the driver's exception is not chained.
    """
    secrets = read_url(url).secrets
    texts = [str(e) for e in _chain(exc)]
    if any(url.strip() in t or redact(t, secrets) != t for t in texts):
        kind = type(exc).__name__
        raise StoreError(
            f"{what}: {kind} (the driver's message is not shown: it repeats the URL or a secret)"
        ) from None
    raise StoreError(f"{what}: {str(exc).strip() or type(exc).__name__}") from exc


def _checked(url: str) -> str:
    """``url`` as messages show it (:func:`bot.urls.shown_url`).

    Raises:
        StoreError: the URL cannot be used (:attr:`bot.urls.UrlView.problem`).
    """
    view = read_url(url)
    if view.problem:
        raise StoreError(f"cannot use the store at {view.text}: {view.problem}")
    return view.text


def pg_sql(sql: str) -> str:
    """A statement of the protocol (``?`` parameters) in psycopg's style (``%s``; a literal
    ``%`` doubled). The protocol's statements hold no ``?`` or ``%`` inside a string literal."""
    return sql.replace("%", "%%").replace("?", "%s")


def _yoyo_url(url: str) -> str:
    """yoyo's name for the same server through psycopg 3."""
    return "postgresql+psycopg://" + url.split("://", 1)[1]


def server_schema(url: str) -> SchemaState:
    """The server at ``url`` against the migrations this installation ships and the tables
    those it records create (:func:`~bot.history.protocol.schema_state`; ``triage-bot
    doctor``): yoyo's record of applied migrations and the tables are read in a read-only
    session; nothing is created or applied.

    Raises:
        StoreError: the server cannot be reached or read.
    """
    shown = _checked(url)
    shipped = list(migrate.migrations())
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            conn.execute("set session characteristics as transaction read only")

            def exists(name: str) -> bool:
                found = conn.execute("select to_regclass(%s)", [name]).fetchone()
                return found is not None and found[0] is not None

            applied: dict[str, str] = {}
            if exists(default_migration_table):
                rows = conn.execute(
                    SQL("select migration_hash, migration_id from {}").format(
                        Identifier(default_migration_table)
                    )
                ).fetchall()
                applied = {str(h): str(i) for h, i in rows}
            present = [t for t in TABLES if exists(t)]
    except psycopg.Error as exc:
        _raise(f"cannot read the migrations of {shown}", exc, url)
    # yoyo knows a migration by its hash: one recorded under a shipped id with another text
    # is not that migration
    ids = [m.id for m in shipped]
    by_hash = {m.hash: m.id for m in shipped}
    recorded = [
        by_hash.get(h) or (f"{i} (another text)" if i in ids else i) for h, i in applied.items()
    ]
    return schema_state(ids, recorded, present, lambda done: migrate.tables_after(ids, done))


def _migrate(url: str) -> None:
    """Apply pending migrations under :data:`MIGRATION_LOCK` (see the module doc).

    yoyo's own lock is a row in ``yoyo_lock``, which a runner killed mid-migration leaves
    behind; under the advisory lock (released by the server when a session dies) no other
    triage-bot is migrating, so any such row is stale and is broken first.

    Raises:
        StoreError: a newer triage-bot migrated the server, or this installation ships no
            migrations.
    """
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        conn.execute("select pg_advisory_lock(%s)", [MIGRATION_LOCK])
        backend = get_backend(_yoyo_url(url))
        try:
            migrations = migrate.migrations()
            if not migrations:
                raise StoreError(
                    "this installation of triage-bot ships no migrations (its package lacks "
                    "bot/history/migrations): reinstall triage-bot"
                )
            known = {m.hash for m in migrations}
            unknown = sorted(set(backend.get_applied_migration_hashes()) - known)
            if unknown:
                raise StoreError(
                    f"the store at {read_url(url).text} was migrated by a newer triage-bot "
                    f"({len(unknown)} migration(s) unknown to this version); upgrade triage-bot"
                )
            pending = backend.to_apply(migrations)
            if pending:
                backend.break_lock()
                with backend.lock():
                    backend.apply_migrations(pending)
        finally:
            backend.connection.close()
        # the session lock goes with the connection


class PostgresStore:
    """The decision store on a PostgreSQL server (:class:`~bot.history.protocol.HistoryStore`).

    Args:
        url: ``postgresql://user[:password]@host[:port]/database[?options]``.
        read_only: the session refuses writes (dry runs, ``history``, ``stats``); the
            ``record_*`` methods raise.

    Raises:
        StoreError: the server cannot be reached, the migrations fail, or a newer triage-bot
            migrated it.
    """

    lock_timeout_s: float = LOCK_TIMEOUT_S

    def __init__(self, url: str, *, read_only: bool = False, redact: Redactor = NO_SECRETS) -> None:
        self.path = _checked(url)
        self._url = url
        self.read_only = read_only
        self.redact = redact
        try:
            _migrate(url)
            self.conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
            self.conn.execute(f"set lock_timeout = {int(self.lock_timeout_s * 1000)}")
            if read_only:
                self.conn.execute("set session characteristics as transaction read only")
        except StoreError:
            raise
        except Exception as exc:  # psycopg.Error, and yoyo's errors while migrating
            _raise(f"cannot open the store at {self.path}", exc, url)

    def _replace(self, table: str, key: Sequence[str], rows: Sequence[dict[str, Any]]) -> int:
        """Delete each row's key, then insert it, in one transaction that first takes the
        advisory lock of every subject it writes (sorted, so two writers never deadlock);
        returns the last id inserted."""
        if self.read_only:
            raise StoreError(f"the store at {self.path} was opened read-only")
        number = "pr" if table == "audits" else "issue"
        subjects = sorted({f"{r['repo']}#{r[number]}" for r in rows})
        last = 0
        try:
            with self.conn.transaction():
                for subject in subjects:
                    self.conn.execute(
                        "select pg_advisory_xact_lock(%s, hashtext(%s))", [_WRITE_LOCKS, subject]
                    )
                for data in rows:
                    self.conn.execute(pg_sql(delete_sql(table, key)), [data[k] for k in key])
                    cursor = self.conn.execute(
                        pg_sql(insert_sql(table, list(data))), list(data.values())
                    )
                    found = cursor.fetchone()
                    last = int(found[0]) if found else last
        except psycopg.Error as exc:
            _raise(f"cannot write to {table}", exc, self._url)
        return last

    def record_audits(self, rows: Sequence[AuditRow]) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.record_audits`."""
        if not rows:
            return 0
        self._replace("audits", AUDIT_KEY, [audit_params(row, self.redact) for row in rows])
        return len(rows)

    def record_gate(self, row: GateRow) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.record_gate`."""
        return self._replace("gate_decisions", GATE_KEY, [gate_params(row, self.redact)])

    def _dicts(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        try:
            with self.conn.cursor(row_factory=dict_row) as cursor:
                return cursor.execute(pg_sql(sql), list(params)).fetchall()
        except psycopg.Error as exc:
            _raise(f"cannot read the store at {self.path}", exc, self._url)

    def audits(self, repo: str, *, limit: int = 10) -> list[dict[str, Any]]:
        """The newest accepted audits of a repository, newest first."""
        return self._dicts(AUDITS_SQL, [repo, limit])

    def last_audit(self, repo: str, pr: int) -> dict[str, Any] | None:
        """See :meth:`~bot.history.protocol.HistoryStore.last_audit`."""
        return next(iter(self._dicts(LAST_AUDIT_SQL, [repo, pr])), None)

    def last_gate(self, repo: str, issue: int) -> dict[str, Any] | None:
        """The bot's last gate decision on an issue, or ``None``."""
        return next(iter(self._dicts(LAST_GATE_SQL, [repo, issue])), None)

    def get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """See :meth:`~bot.history.protocol.HistoryStore.get`."""
        return next(iter(self._dicts(get_sql(table, key), list(key.values()))), None)

    def change(self, table: str, change: Callable[[KeyedTable], object]) -> None:
        """See :meth:`~bot.history.protocol.HistoryStore.change`."""
        if self.read_only:
            raise StoreError(f"the store at {self.path} was opened read-only")
        try:
            with self.conn.transaction():
                change(KeyedTable(table, lambda sql, p: self.conn.execute(pg_sql(sql), p)))
        except psycopg.Error as exc:
            _raise(f"cannot write to {table}", exc, self._url)

    def fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """See :meth:`~bot.history.protocol.HistoryStore.fetch`."""
        try:
            return list(self.conn.execute(pg_sql(sql), list(params)).fetchall())
        except psycopg.Error as exc:
            _raise(f"cannot read the store at {self.path}", exc, self._url)

    def _execute(self, sql: str, params: Sequence[Any]) -> psycopg.Cursor[Any]:
        return self.conn.execute(pg_sql(sql), list(params))

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(pg_sql(sql), rows)

    def _index_write(self, repo: str, write: Callable[[], int]) -> int:
        """``write`` in one transaction holding the repository's index lock."""
        if self.read_only:
            raise StoreError(f"the store at {self.path} was opened read-only")
        try:
            with self.conn.transaction():
                self.conn.execute(
                    "select pg_advisory_xact_lock(%s, hashtext(%s))", [_INDEX_LOCKS, repo]
                )
                return write()
        except psycopg.Error as exc:
            _raise("cannot write to issue_index", exc, self._url)

    def _read(self, read: Callable[[], _T]) -> _T:
        try:
            return read()
        except psycopg.Error as exc:
            _raise(f"cannot read the store at {self.path}", exc, self._url)

    def index_issues(self, repo: str, rows: Sequence[IndexedIssue]) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.index_issues`."""
        prepared = issue_index.prepare(rows, self.redact)
        return self._index_write(
            repo, lambda: issue_index.write(self._execute, self._executemany, repo, prepared)
        )

    def drop_indexed(self, repo: str, numbers: Collection[int]) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.drop_indexed`."""
        return self._index_write(
            repo, lambda: issue_index.drop(self._execute, self._executemany, repo, numbers)
        )

    def index_size(self, repo: str) -> int:
        """See :meth:`~bot.history.protocol.HistoryStore.index_size`."""
        return self._read(lambda: issue_index.index_size(self._execute, repo))

    def title_vectors(self, repo: str, model: str, numbers: Collection[int]) -> dict[int, bytes]:
        """See :meth:`~bot.history.protocol.HistoryStore.title_vectors`."""
        return self._read(lambda: issue_index.title_vectors(self._execute, repo, model, numbers))

    def keep_title_vectors(
        self, repo: str, model: str, vectors: Sequence[tuple[int, str, bytes]]
    ) -> None:
        """See :meth:`~bot.history.protocol.HistoryStore.keep_title_vectors`."""
        self._index_write(
            repo,
            lambda: issue_index.keep_vectors(self._executemany, repo, model, vectors, self.redact),
        )

    def issues_without_vector(
        self, repo: str, model: str, limit: int, below: int | None = None
    ) -> list[tuple[int, str]]:
        """See :meth:`~bot.history.protocol.HistoryStore.issues_without_vector`."""
        return self._read(
            lambda: issue_index.missing_vectors(self._execute, repo, model, limit, below)
        )

    def indexed_issue(self, repo: str, number: int) -> IndexedIssue | None:
        """See :meth:`~bot.history.protocol.HistoryStore.indexed_issue`."""
        return self._read(lambda: issue_index.indexed_issue(self._execute, repo, number))

    def term_docs(self, repo: str, terms: Collection[str]) -> dict[str, int]:
        """See :meth:`~bot.history.protocol.HistoryStore.term_docs` (one statement: the terms
        as one array parameter)."""
        wanted = sorted({t for t in terms if issue_index.searchable(t)})

        def read() -> dict[str, int]:
            rows = self.conn.execute(
                "select term, docs from index_terms where repo = %s and term = any(%s)",
                [repo, wanted],
            )
            return {str(t): int(n) for t, n in rows.fetchall()}

        return self._read(read) if wanted else {}

    def issues_with_terms(
        self,
        repo: str,
        terms: Sequence[str],
        *,
        before: str | None = None,
        exclude: int | None = None,
        limit: int = 5000,
    ) -> list[IndexedIssue]:
        """See :meth:`~bot.history.protocol.HistoryStore.issues_with_terms` (each term through
        ``plainto_tsquery``, which reads no operators, the queries joined by ``||``)."""
        until = issue_index.canonical_time(before) if before is not None else None

        def page(part: Sequence[str], below: int | None, size: int) -> list[IndexedIssue]:
            where, params = issue_index.page_filters(until, exclude, below)
            query = " || ".join("plainto_tsquery('simple', ?)" for _ in part)
            columns = ", ".join(f"i.{c}" for c in issue_index.COLUMNS.split(", "))
            sql = (
                f"select {columns} from issue_index i where i.repo = ? "  # noqa: S608
                f"and i.search @@ ({query}){where} order by i.number desc limit ?"
            )
            rows = self._execute(sql, [repo, *part, *params, size]).fetchall()
            return [IndexedIssue(*row) for row in rows]

        return self._read(lambda: issue_index.search(page, terms, limit))

    @contextmanager
    def exclusive(self, subject: str) -> Iterator[None]:
        """Hold the session advisory lock of ``subject`` while the block runs (every runner
        on this server takes turns per issue or PR; the server releases it if the runner dies).

        Raises:
            StoreError: the lock was not granted within ``lock_timeout_s``.
        """
        try:
            self.conn.execute(
                "select pg_advisory_lock(%s, hashtext(%s))", [_SUBJECT_LOCKS, subject]
            )
        except psycopg.Error as exc:
            _raise(f"cannot lock {subject} in {self.path}", exc, self._url)
        try:
            yield
        finally:
            self.conn.execute(
                "select pg_advisory_unlock(%s, hashtext(%s))", [_SUBJECT_LOCKS, subject]
            )

    def close(self) -> None:
        """Close the connection (its advisory locks go with it)."""
        self.conn.close()
