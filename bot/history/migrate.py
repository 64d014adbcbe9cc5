"""The schema's migrations: one yoyo migration per change, applied by both stores.

Each file of ``migrations/`` is a yoyo migration whose steps are :func:`sql`: the SQL both
dialects share, then each dialect's own. PostgreSQL applies them through yoyo's own backend;
SQLite through :class:`SqliteBackend`, yoyo on the store's connection. A SQLite file written
before (sqlite-utils, ``m001_audits`` … ``m010_audit_weeks_by_value`` in
``_sqlite_migrations``) counts each migration whose :data:`LEGACY` names it records as applied.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from yoyo import default_migration_table, read_migrations  # type: ignore[import-untyped]
from yoyo.backends.base import SavepointTransactionManager  # type: ignore[import-untyped]
from yoyo.backends.core.sqlite3 import SQLiteBackend  # type: ignore[import-untyped]
from yoyo.connections import parse_uri  # type: ignore[import-untyped]

__all__ = [
    "LEGACY",
    "LEGACY_TABLE",
    "MIGRATIONS_DIR",
    "SqliteBackend",
    "legacy_applied",
    "migrations",
    "recorded_ids",
    "shipped",
    "sql",
    "sqlite_backend",
    "tables_after",
]

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
"""The migrations: ``NNNN_name.py``, applied in name order."""

LEGACY_TABLE = "_sqlite_migrations"

LEGACY: dict[str, tuple[str, ...]] = {
    "0001_schema": (
        "m001_audits",
        "m002_gate_decisions",
        "m003_audit_week",
        "m004_audit_weeks",
        "m005_gate_content",
        "m006_gate_week",
        "m008_unique_keys",
    ),
    "0002_github_memory": ("m007_github_memory",),
    "0003_gate_policy": ("m009_gate_policy",),
    "0004_audit_weeks_by_value": ("m010_audit_weeks_by_value",),
}
"""The sqlite-utils migrations of earlier releases that each migration stands for."""


def _statements(script: str) -> list[str]:
    """``script``'s SQLite statements, triggers whole."""
    found, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    if pending.strip().strip(";") and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in pending.splitlines()
    ):
        raise ValueError(f"an incomplete SQLite statement: {pending.strip()[:60]}")
    return found


def sql(both: str = "", *, sqlite: str = "", postgresql: str = "") -> Callable[[Any], None]:
    """A migration step: ``both``, then the SQL of the connection's dialect."""

    def apply(conn: Any) -> None:
        if isinstance(conn, sqlite3.Connection):
            for statement in _statements(f"{both}\n{sqlite}"):
                conn.execute(statement)
        elif f"{both}{postgresql}".strip():
            conn.execute(f"{both}\n{postgresql}")  # psycopg: several statements, no parameters

    return apply


def migrations() -> Any:
    """The yoyo migrations this installation ships, in the order they apply."""
    return read_migrations(str(MIGRATIONS_DIR))


def shipped() -> tuple[str, ...]:
    """The ids of :func:`migrations`."""
    return tuple(m.id for m in migrations())


class SqliteBackend(SQLiteBackend):  # type: ignore[misc]
    """yoyo's SQLite backend on a connection the store opened (not one of its own), which it
    leaves in autocommit mode, as yoyo needs (:func:`sqlite_backend` restores it)."""

    def __init__(self, conn: sqlite3.Connection, *, held: bool = False) -> None:
        self._given = conn
        conn.isolation_level = None
        super().__init__(parse_uri("sqlite:///"), default_migration_table)
        self.held = held
        self.init_database()  # as yoyo's get_backend does

    def connect(self, dburi: Any) -> sqlite3.Connection:
        del dburi
        return self._given

    held = False
    """Whether the store holds a write transaction: yoyo's transactions are then savepoints."""

    def transaction(self, rollback_on_exit: bool = False) -> Any:
        if self.held:
            return SavepointTransactionManager(self, rollback_on_exit=rollback_on_exit)
        return super().transaction(rollback_on_exit)

    def copy(self) -> SqliteBackend:
        """This backend: yoyo applies a migration on a copy, and the store has one connection."""
        return self

    def __enter__(self) -> SqliteBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        """Leaves the store's connection open."""


@contextmanager
def sqlite_backend(conn: sqlite3.Connection, *, locked: bool = False) -> Iterator[SqliteBackend]:
    """A :class:`SqliteBackend` on ``conn`` while the block runs; ``locked``: the block is one
    transaction that takes the write lock first (``BEGIN IMMEDIATE``: a second writer waits)."""
    level = conn.isolation_level
    try:
        if not locked:
            yield SqliteBackend(conn)
            return
        # the write lock before yoyo reads anything: a deferred transaction that read first
        # fails at once ("database is locked") when another writer committed meanwhile
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield SqliteBackend(conn, held=True)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.isolation_level = level


def _table_names(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("select name from sqlite_master where type = 'table'").fetchall()
    return {str(r[0]) for r in rows}


def legacy_applied(conn: sqlite3.Connection) -> tuple[set[str], set[str]]:
    """The migrations a file's sqlite-utils record stands for, and the names it records that
    :data:`LEGACY` does not know (a newer program's)."""
    if LEGACY_TABLE not in _table_names(conn):
        return set(), set()
    names = {str(r[0]) for r in conn.execute("select name from _sqlite_migrations").fetchall()}
    known = {n for names_ in LEGACY.values() for n in names_}
    done = {m for m, names_ in LEGACY.items() if set(names_) <= names}
    return done, names - known


def recorded_ids(conn: sqlite3.Connection) -> set[str]:
    """The migrations a SQLite file records as applied, in yoyo's record or the legacy one;
    reads only."""
    found = legacy_applied(conn)[0]
    if default_migration_table in _table_names(conn):  # "_yoyo_migration"
        rows = conn.execute("select migration_id from _yoyo_migration").fetchall()
        found |= {str(r[0]) for r in rows}
    return found


@cache
def _tables_after(ids: tuple[str, ...], done: int) -> frozenset[str]:
    conn = sqlite3.connect(":memory:")
    try:
        with sqlite_backend(conn) as backend:
            chosen = migrations().filter(lambda m: m.id in ids[:done])
            backend.apply_migrations(backend.to_apply(chosen))
        return frozenset(_table_names(conn))
    finally:
        conn.close()


def tables_after(ids: Collection[str], done: int) -> frozenset[str]:
    """The tables the first ``done`` of ``ids`` leave: applied to an empty SQLite database (the
    stores hold the same tables)."""
    return _tables_after(tuple(ids), done)
