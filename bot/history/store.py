"""The SQLite store: opened with WAL and a busy timeout, migrated on open, written atomically.

Rule source: design.md, "Storage". The default path is outside the Actions workspace (the runner
cleans the workspace between jobs): ``$XDG_DATA_HOME/triage-bot/triage.db``, i.e.
``~/.local/share/triage-bot/triage.db`` (:func:`bot.config.default_db_path`); ``--db`` /
``TRIAGE_DB`` override it. Only accepted
audits are written to ``audits``. This module is where sqlite3 errors become
:class:`~bot.errors.StoreError`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from sqlite_utils.db import Table

from bot.errors import StoreError
from bot.history.migrations import MIGRATIONS

__all__ = ["BUSY_TIMEOUT_MS", "AuditRow", "GateRow", "Store", "utc_now", "week_of"]

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another process's lock before failing (ms)."""


def utc_now() -> str:
    """The current UTC time as ISO 8601 with offset, seconds precision."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def week_of(created_at: str) -> str:
    """The Monday (``YYYY-MM-DD``, UTC) of the week of an ISO 8601 timestamp."""
    moment = datetime.fromisoformat(created_at).astimezone(UTC)
    return (moment - timedelta(days=moment.weekday())).date().isoformat()


@dataclass(frozen=True)
class AuditRow:
    """One accepted audit (columns of ``audits``; ``retried`` stored as 0/1)."""

    repo: str
    pr: int
    head_sha: str
    path: str
    line_start: int
    line_end: int
    verdict: str
    confidence: str
    retried: bool
    audit_format: str
    model: str
    prompt_version: str
    prompt_tokens: int
    output_tokens: int
    duration_ms: float
    markdown: str
    created_at: str = ""


@dataclass(frozen=True)
class GateRow:
    """One gate decision (columns of ``gate_decisions``)."""

    repo: str
    issue: int
    event: str
    verdict: str | None
    label: str
    reason: str
    error_kind: str | None
    model: str
    prompt_version: str
    prompt_tokens: int
    output_tokens: int
    duration_ms: float
    created_at: str = ""
    content_sha: str = ""


def _audit_data(row: AuditRow) -> dict[str, Any]:
    data = asdict(row)
    data["retried"] = int(row.retried)
    data["created_at"] = row.created_at or utc_now()
    data["week"] = week_of(data["created_at"])
    return data


class Store:
    """The decision store.

    Args:
        path: the SQLite file (parent folders are created); ``":memory:"`` for tests.

    Raises:
        StoreError: the file cannot be created, opened or migrated.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = path
        try:
            if path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                self.db = Database(str(path))
            else:
                self.db = Database(memory=True)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if path != ":memory:":
                self.db.enable_wal()
            if MIGRATIONS.pending(self.db):
                with self._write():  # two processes opening a new file migrate it once
                    MIGRATIONS.apply(self.db)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction that takes the write lock up front (``BEGIN IMMEDIATE``).

        sqlite-utils' ``atomic()`` opens a deferred transaction whose first statement is a read
        (``table.exists()``); under WAL, upgrading that read to a write after another process
        committed fails at once with "database is locked", without waiting for the busy
        timeout. Taking the lock first makes a second writer wait instead.
        """
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

    def _table(self, name: str) -> Table:
        table = self.db[name]
        assert isinstance(table, Table)
        return table

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        try:
            with self._write():
                inserted = self._table(table).insert(row)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {table}: {exc}") from exc
        if inserted.last_pk is None:
            raise StoreError(f"the insert into {table} returned no id")
        return int(inserted.last_pk)

    def record_audit(self, row: AuditRow) -> int:
        """Insert one accepted audit; returns its id.

        Raises:
            StoreError: the write failed (locked past the busy timeout, disk full …).
        """
        return self._insert("audits", _audit_data(row))

    def record_audits(self, rows: Sequence[AuditRow]) -> int:
        """Insert accepted audits in one transaction (all or none); returns the count.

        A row replaces any earlier audit of the same segment at the same head SHA (key: repo,
        PR, head SHA, path, first and last line), so a replayed event or a repeated ``/audit``
        leaves one row per segment per head SHA, and the weekly sums (kept by triggers on
        insert and delete) count it once.

        Raises:
            StoreError: the write failed; no row of the batch is kept and none is removed.
        """
        if not rows:
            return 0
        data = [_audit_data(row) for row in rows]
        table = self._table("audits")
        try:
            with self._write():
                for row in rows:
                    table.delete_where(
                        "repo = ? and pr = ? and head_sha = ? and path = ? "
                        "and line_start = ? and line_end = ?",
                        [row.repo, row.pr, row.head_sha, row.path, row.line_start, row.line_end],
                    )
                table.insert_all(data)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to audits: {exc}") from exc
        return len(data)

    def record_gate(self, row: GateRow) -> int:
        """Insert one gate decision; returns its id.

        Raises:
            StoreError: the write failed.
        """
        data = asdict(row)
        data["created_at"] = row.created_at or utc_now()
        return self._insert("gate_decisions", data)

    def audits(self, repo: str, *, limit: int = 10) -> list[dict[str, Any]]:
        """The newest accepted audits of a repository, newest first."""
        return list(
            self._table("audits").rows_where(
                "repo = ?", [repo], order_by="created_at desc, id desc", limit=limit
            )
        )

    def audits_for(self, repo: str, pr: int, head_sha: str) -> list[dict[str, Any]]:
        """Accepted audits of one PR at one head SHA, in path and line order."""
        return list(
            self._table("audits").rows_where(
                "repo = ? and pr = ? and head_sha = ?",
                [repo, pr, head_sha],
                order_by="path, line_start, id",
            )
        )

    def last_gate(self, repo: str, issue: int) -> dict[str, Any] | None:
        """The bot's last gate decision on an issue, or ``None``."""
        rows = self._table("gate_decisions").rows_where(
            "repo = ? and issue = ?", [repo, issue], order_by="id desc", limit=1
        )
        return next(iter(rows), None)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()
