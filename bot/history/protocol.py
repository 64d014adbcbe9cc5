"""What every store is: the ``HistoryStore`` protocol, its rows, and the SQL both dialects share.

One history for a pool of runners: two stores implement the protocol:
:class:`bot.history.store.Store` (the embedded SQLite file, sqlite-utils) and
:class:`bot.history.pg_store.PostgresStore` (a shared PostgreSQL server, psycopg 3). They hold
the same tables, constraints and unique keys and run the same statements below; each writes them
in the ``?`` parameter style, which the PostgreSQL store translates (its module holds every
dialect difference at run time; each store's migrations hold the differences in DDL).

Idempotency (the unique keys, created by both stores' migrations): a write first deletes the row
with its key, then inserts, in one transaction that holds the key's lock (SQLite's write lock,
PostgreSQL's transaction advisory lock on the subject), so a replayed event or two runners on
the same event leave one row, the newest, and the weekly sums (kept by triggers on insert and
delete) count it once.

- ``audits``: one row per segment and head SHA (:data:`AUDIT_KEY`).
- ``gate_decisions``: one row per issue, judged text, model, prompt version, decision policy
  and outcome label (:data:`GATE_KEY`). A retry that turns a ``validator-error`` into a verdict
  on the same text keeps both rows (the error stays counted in ``/triage_stats``); a row
  without a content hash (older rows, rows written without one) never matches another (SQL
  ``NULL`` is distinct).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

from bot.urls import NO_SECRETS, Redactor

__all__ = [
    "AUDITS_SQL",
    "AUDIT_KEY",
    "GATE_KEY",
    "LAST_AUDIT_SQL",
    "LAST_GATE_SQL",
    "LOCK_TIMEOUT_S",
    "TABLES",
    "AuditRow",
    "GateRow",
    "HistoryStore",
    "IndexedIssue",
    "KeyedTable",
    "SchemaState",
    "audit_params",
    "delete_sql",
    "first_week",
    "gate_params",
    "get_sql",
    "insert_sql",
    "key_where",
    "schema_state",
    "utc_now",
    "week_of",
]


TABLES = (
    "audits",
    "gate_decisions",
    "audit_weeks",
    "gate_weeks",
    "author_comments",
    "created_labels",
    "repo_files",
    "gate_outcomes",
    "audit_defects",
    "settle_cursors",
    "issue_index",
    "index_terms",
    "duplicate_suggestions",
)
"""The tables every store's migrations create and its statements use."""


@dataclass(frozen=True)
class SchemaState:
    """A store's schema against the migrations the installed triage-bot ships (``triage-bot
    doctor``), each store's migrations named as it names them.

    ``shipped``: this installation's migrations, in the order they apply (none: the install
    lacks its files); ``missing``: shipped but not recorded as applied, in that order;
    ``unknown``: recorded but not shipped (a newer triage-bot migrated the store);
    ``missing_tables``: :data:`TABLES` that the recorded first part of ``shipped`` creates and
    the store lacks; ``early_tables``: :data:`TABLES` the store holds that only migrations it
    does not record create.
    """

    shipped: tuple[str, ...]
    missing: tuple[str, ...]
    unknown: tuple[str, ...]
    missing_tables: tuple[str, ...]
    early_tables: tuple[str, ...] = ()

    @property
    def behind(self) -> bool:
        """Whether the store records a first part of ``shipped`` and nothing else, short of the
        whole: a fresh store (none recorded) or one an older triage-bot migrated. The next job
        that opens it for writing applies the rest."""
        pending = self.shipped[len(self.shipped) - len(self.missing) :]
        return bool(self.missing) and not self.unknown and self.missing == pending


def schema_state(
    shipped: Sequence[str],
    applied: Collection[str],
    present: Collection[str],
    tables_after: Callable[[int], Collection[str]],
) -> SchemaState:
    """A store's :class:`SchemaState` from what it records and holds.

    Args:
        shipped: this installation's migrations, in the order they apply.
        applied: the migrations the store records.
        present: the tables the store holds.
        tables_after: the tables the first ``k`` shipped migrations leave, for ``k`` from 0 to
            ``len(shipped)`` (the whole ``shipped`` leaves :data:`TABLES`).
    """
    done = 0
    while done < len(shipped) and shipped[done] in applied:
        done += 1
    expected = set(tables_after(done))
    return SchemaState(
        shipped=tuple(shipped),
        missing=tuple(m for m in shipped if m not in applied),
        unknown=tuple(sorted(set(applied) - set(shipped))),
        missing_tables=tuple(t for t in TABLES if t in expected and t not in present),
        early_tables=tuple(t for t in TABLES if t not in expected and t in present),
    )


def utc_now() -> str:
    """The current UTC time as ISO 8601 with offset, seconds precision."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def week_of(created_at: str) -> str:
    """The Monday (``YYYY-MM-DD``, UTC) of the week of an ISO 8601 timestamp."""
    return _monday(datetime.fromisoformat(created_at)).isoformat()


def first_week(weeks: int, now: datetime | None = None) -> str:
    """The Monday (``YYYY-MM-DD``, UTC) that opens the last ``weeks`` weeks, the current one
    included: the weekly views read the rows whose ``week`` is this or later (ISO dates compare
    as text). ``now`` is the reference time, the current time when ``None``."""
    return (_monday(now or datetime.now(UTC)) - timedelta(weeks=weeks - 1)).isoformat()


def _monday(moment: datetime) -> date:
    utc = moment.astimezone(UTC)
    return (utc - timedelta(days=utc.weekday())).date()


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
    """One gate decision (columns of ``gate_decisions``; ``week`` is set on insert from
    ``created_at``, as for audits; an empty ``content_sha`` is stored as ``NULL``;
    ``policy_version`` is the decision policy's, ``""`` for a decision made outside one)."""

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
    policy_version: str = ""


@dataclass(frozen=True)
class IndexedIssue:
    """One issue of the duplicate-search index (columns of ``issue_index``): its title and
    first body, their terms joined by single spaces, and when it was created (canonical UTC,
    ``YYYY-MM-DDTHH:MM:SSZ``, as the store keeps it)."""

    number: int
    title: str
    body: str
    title_terms: str
    body_terms: str
    created_at: str


AUDIT_KEY = ("repo", "pr", "head_sha", "path", "line_start", "line_end")
"""The columns of ``audits``' unique key: one row per segment per head SHA."""

GATE_KEY = ("repo", "issue", "content_sha", "model", "prompt_version", "policy_version", "label")
"""The columns of ``gate_decisions``' unique key (see the module doc)."""


def _redacted(data: dict[str, Any], redact: Redactor) -> dict[str, Any]:
    return {k: redact(v) if isinstance(v, str) else v for k, v in data.items()}


def audit_params(row: AuditRow, redact: Redactor = NO_SECRETS) -> dict[str, Any]:
    """The ``audits`` columns of ``row``, every text through ``redact``: ``retried`` as 0/1,
    ``created_at`` now when empty, ``week`` from ``created_at``."""
    data = _redacted(asdict(row), redact)
    data["retried"] = int(row.retried)
    data["created_at"] = row.created_at or utc_now()
    data["week"] = week_of(data["created_at"])
    return data


def gate_params(row: GateRow, redact: Redactor = NO_SECRETS) -> dict[str, Any]:
    """The ``gate_decisions`` columns of ``row``, every text through ``redact``:
    ``created_at`` now when empty, ``week`` from it, an empty ``content_sha`` as ``None`` (a
    row of unknown text matches no other)."""
    data = _redacted(asdict(row), redact)
    data["created_at"] = row.created_at or utc_now()
    data["week"] = week_of(data["created_at"])
    data["content_sha"] = row.content_sha or None
    return data


def delete_sql(table: str, key: Sequence[str]) -> str:
    """``delete from TABLE where k1 = ? and …``: the row with a unique key, before its insert."""
    where = " and ".join(f"{k} = ?" for k in key)
    return f"delete from {table} where {where}"  # noqa: S608 (names are the constants above)


def insert_sql(table: str, columns: Sequence[str]) -> str:
    """``insert into TABLE (…) values (?, …) returning id`` (SQLite ≥ 3.35 and PostgreSQL)."""
    marks = ", ".join("?" for _ in columns)
    return f"insert into {table} ({', '.join(columns)}) values ({marks}) returning id"  # noqa: S608


AUDITS_SQL = "select * from audits where repo = ? order by created_at desc, id desc limit ?"
"""The newest accepted audits of a repository (``/audit_history``, ``triage-bot history``)."""

LAST_GATE_SQL = "select * from gate_decisions where repo = ? and issue = ? order by id desc limit 1"
"""The bot's last gate decision on an issue (replay check, backlog)."""

LAST_AUDIT_SQL = "select * from audits where repo = ? and pr = ? order by id desc limit 1"
"""The last accepted audit row written for a pull request."""

LOCK_TIMEOUT_S = 120.0
"""How long :meth:`HistoryStore.exclusive` waits for a subject's lock before failing (s): longer
than a run holds it to write an issue's or a pull request's labels and comments."""


def key_where(key: Mapping[str, Any]) -> str:
    """``a = ? and b = ?`` for ``key``'s columns (names from code, never from input)."""
    return " and ".join(f"{column} = ?" for column in key)


Execute = Callable[[str, Sequence[Any]], Any]
"""Runs one statement written with ``?`` parameters and returns a cursor (each store's own)."""


class KeyedTable:
    """One table of small keyed rows (``author_comments``, ``created_labels``, ``repo_files``:
    :mod:`bot.history.github_memory`), written inside the transaction of
    :meth:`HistoryStore.change`. The statements are SQL both dialects accept as written
    (``on conflict … do update`` since SQLite 3.24); each store passes its way to execute them.
    Table and column names come from code, never from input.
    """

    def __init__(self, name: str, execute: Execute) -> None:
        self.name, self._execute = name, execute

    def count(self, key: Mapping[str, Any]) -> int:
        """Rows whose columns equal ``key``'s values."""
        sql = f"select count(*) from {self.name} where {key_where(key)}"  # noqa: S608
        return int(self._execute(sql, list(key.values())).fetchone()[0])

    def delete(self, key: Mapping[str, Any]) -> None:
        """Delete the rows whose columns equal ``key``'s values."""
        self._execute(f"delete from {self.name} where {key_where(key)}", list(key.values()))  # noqa: S608

    def insert(self, row: Mapping[str, Any]) -> None:
        """Insert ``row`` (a duplicate key raises the database's error)."""
        marks = ", ".join("?" for _ in row)
        sql = f"insert into {self.name} ({', '.join(row)}) values ({marks})"  # noqa: S608
        self._execute(sql, list(row.values()))

    def update(self, key: Mapping[str, Any], values: Mapping[str, Any]) -> None:
        """Set ``values``' columns on the rows whose columns equal ``key``'s values."""
        sets = ", ".join(f"{column} = ?" for column in values)
        sql = f"update {self.name} set {sets} where {key_where(key)}"  # noqa: S608
        self._execute(sql, [*values.values(), *key.values()])

    def upsert(self, row: Mapping[str, Any], pk: Sequence[str]) -> None:
        """Insert ``row``, or update the row with its primary key ``pk`` to it."""
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in row if c not in pk)
        sql = (
            f"insert into {self.name} ({', '.join(row)}) values ({marks}) "  # noqa: S608
            f"on conflict ({', '.join(pk)}) do update set {updates}"
        )
        self._execute(sql, list(row.values()))


def get_sql(table: str, key: Mapping[str, Any]) -> str:
    """``select * from TABLE where …`` for :meth:`HistoryStore.get`."""
    return f"select * from {table} where {key_where(key)} limit 1"  # noqa: S608


class HistoryStore(Protocol):
    """The decision store, whichever database holds it.

    Rows come back as ``dict`` (column → value) with the same types from both stores:
    ``id``, counts and line numbers as ``int``, ``duration_ms`` as ``float``, timestamps as ISO
    8601 text, ``retried`` as 0/1.
    """

    read_only: bool

    def record_audits(self, rows: Sequence[AuditRow]) -> int:
        """Insert accepted audits in one transaction (all or none), each replacing the row with
        its :data:`AUDIT_KEY`; returns the count.

        Raises:
            StoreError: the write failed (no row of the batch kept, none removed) or the store
                is read-only.
        """
        ...

    def record_gate(self, row: GateRow) -> int:
        """Insert one gate decision, replacing the row with its :data:`GATE_KEY`; returns its
        id.

        Raises:
            StoreError: the write failed or the store is read-only.
        """
        ...

    def audits(self, repo: str, *, limit: int = 10) -> list[dict[str, Any]]:
        """The newest accepted audits of a repository, newest first (:data:`AUDITS_SQL`)."""
        ...

    def last_gate(self, repo: str, issue: int) -> dict[str, Any] | None:
        """The bot's last gate decision on an issue, or ``None`` (:data:`LAST_GATE_SQL`)."""
        ...

    def last_audit(self, repo: str, pr: int) -> dict[str, Any] | None:
        """The last audit row written for a pull request, or ``None`` (:data:`LAST_AUDIT_SQL`)."""
        ...

    def get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The row of ``table`` whose columns equal ``key``'s values, or ``None``
        (:func:`get_sql`).

        Raises:
            StoreError: the read failed.
        """
        ...

    def change(self, table: str, change: Callable[[KeyedTable], object]) -> None:
        """Run ``change`` on ``table`` in one write transaction (all or nothing).

        Raises:
            StoreError: the write failed, or the store was opened read-only.
        """
        ...

    def fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of a read-only query written with ``?`` parameters.

        Raises:
            StoreError: the query failed.
        """
        ...

    def index_issues(self, repo: str, rows: Sequence[IndexedIssue]) -> int:
        """Insert or replace indexed issues in one transaction (all or none), keeping
        ``index_terms`` exact; a row equal to the stored one is left as it is (its
        ``indexed_at`` too). NUL is stripped from every text, a lone surrogate stored as U+FFFD
        and ``created_at`` made canonical UTC. Returns the count.

        Raises:
            ValueError: a ``created_at`` is unparseable or has no UTC offset.
            StoreError: the write failed or the store is read-only.
        """
        ...

    def index_size(self, repo: str) -> int:
        """How many issues of ``repo`` the index holds."""
        ...

    def term_docs(self, repo: str, terms: Collection[str]) -> dict[str, int]:
        """How many indexed issues of ``repo`` contain each of ``terms`` that any does."""
        ...

    def issues_with_terms(
        self,
        repo: str,
        terms: Sequence[str],
        *,
        before: str | None = None,
        exclude: int | None = None,
        limit: int = 5000,
    ) -> list[IndexedIssue]:
        """The indexed issues of ``repo`` that contain one of ``terms``, created strictly
        before ``before`` (ISO 8601 with offset) when given, other than ``exclude``, newest
        number first, at most ``limit``. Terms are data, never query syntax.

        Raises:
            ValueError: ``before`` is unparseable or has no UTC offset.
            StoreError: the read failed.
        """
        ...

    def indexed_issue(self, repo: str, number: int) -> IndexedIssue | None:
        """The indexed issue ``number`` of ``repo``, or ``None``."""
        ...

    def title_vectors(self, repo: str, model: str, numbers: Collection[int]) -> dict[int, bytes]:
        """The stored ``model`` title vectors of those indexed ``numbers`` that have one."""
        ...

    def keep_title_vectors(
        self, repo: str, model: str, vectors: Sequence[tuple[int, str, bytes]]
    ) -> None:
        """Store ``(number, title, vector)`` rows in one transaction, each only while the index
        holds that issue with that title. A changed title or a dropped issue loses its vectors.

        Raises:
            StoreError: the write failed or the store is read-only.
        """
        ...

    def issues_without_vector(
        self, repo: str, model: str, limit: int, below: int | None = None
    ) -> list[tuple[int, str]]:
        """Up to ``limit`` indexed issues of ``repo`` without a ``model`` title vector, numbered
        below ``below`` when given (number and title, newest first)."""
        ...

    def drop_indexed(self, repo: str, numbers: Collection[int]) -> int:
        """Remove issues from the index (deleted or transferred), keeping ``index_terms``
        exact; returns how many it held.

        Raises:
            StoreError: the write failed or the store is read-only.
        """
        ...

    def exclusive(self, subject: str) -> AbstractContextManager[None]:
        """Hold the lock on ``subject`` (``owner/name#number``) across runners sharing this
        store while the block runs: a pipeline re-reads and writes an issue or pull request
        under it, so two runs never both write one.

        Raises:
            StoreError: the lock was not granted within :data:`LOCK_TIMEOUT_S`.
        """
        ...

    def close(self) -> None:
        """Close the connection."""
        ...
