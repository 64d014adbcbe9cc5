"""The store table and the one migration path: both stores hold the same schema, a store this
release wrote opens, upgrades and passes ``doctor``, and a new kind of store is one row."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from yoyo import get_backend, read_migrations  # type: ignore[import-untyped]

from bot import stores
from bot.config import Settings
from bot.doctor import check_store
from bot.errors import ConfigError, StoreError
from bot.factory import make_store, store_for
from bot.history import migrate
from bot.history.github_memory import known_comment
from bot.history.pg_store import PostgresStore
from bot.history.protocol import TABLES, SchemaState, schema_state
from bot.history.store import Store
from bot.urls import NO_SECRETS, Redactor
from tests.support import audit_row
from tests.support.pg import fresh_database

FIXTURES = Path(__file__).parents[1] / "data" / "release_store"
RELEASE_SQLITE = FIXTURES / "release_store.db"
"""Written by ``tests/data/release_store/make_release_store.py`` with the release's code."""
RELEASE_PG_MIGRATIONS = FIXTURES / "release_pg_migrations"
"""The release's PostgreSQL migrations, copied verbatim from ``bot/history/pg_migrations/``."""


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from fresh_database()


RELEASE_TABLES = set(migrate.tables_after(migrate.shipped(), 4)) & set(TABLES)
"""The tables of the release's store: what the migrations it records (the first four) create."""


def _sqlite_columns(path: Path | str) -> dict[str, list[tuple[str, bool]]]:
    with sqlite3.connect(path) as conn:
        return {
            table: [(r[1], bool(r[3] or r[5])) for r in conn.execute(f"pragma table_info({table})")]
            for table in TABLES
        }


PG_SEARCH_COLUMN = ("issue_index", "search")
"""PostgreSQL's full-text column (a generated ``tsvector``); SQLite's is the FTS5 table
``issue_index_fts``, outside :data:`TABLES`."""


def _pg_columns(url: str) -> dict[str, list[tuple[str, bool]]]:
    with psycopg.connect(url) as conn:
        return {
            table: [
                (name, nullable == "NO")
                for name, nullable in conn.execute(
                    "select column_name, is_nullable from information_schema.columns "
                    "where table_name = %s order by ordinal_position",
                    [table],
                )
            ]
            for table in TABLES
        }


def test_both_stores_hold_the_same_schema(tmp_path: Path, pg_url: str) -> None:
    """Tables, columns in order, and which may not be null: a fresh SQLite file, a fresh
    PostgreSQL database and the file this release wrote."""
    make_store(Settings(db_path=str(tmp_path / "new.db"))).close()
    make_store(Settings(db_path=pg_url)).close()
    fresh = _sqlite_columns(tmp_path / "new.db")
    assert all(fresh.values())
    pg = _pg_columns(pg_url)
    table, column = PG_SEARCH_COLUMN
    assert (column, False) in pg[table]
    pg[table].remove((column, False))
    assert pg == fresh
    release = _sqlite_columns(RELEASE_SQLITE)
    assert {t for t, c in release.items() if c} == RELEASE_TABLES
    assert release == {t: c if t in RELEASE_TABLES else [] for t, c in fresh.items()}


def _indexes_and_triggers(path: Path | str) -> set[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "select type, name, tbl_name from sqlite_master where type in ('index', 'trigger') "
            "and name not like 'sqlite_autoindex%'"
        )
        return {(str(kind), str(name)) for kind, name, table in rows if table in RELEASE_TABLES}


def test_a_fresh_sqlite_file_is_the_release_file(tmp_path: Path) -> None:
    """The same indexes and triggers as the sqlite-utils migrations left."""
    make_store(Settings(db_path=str(tmp_path / "new.db"))).close()
    assert _indexes_and_triggers(tmp_path / "new.db") == _indexes_and_triggers(RELEASE_SQLITE)


def test_the_release_sqlite_store_opens_upgrades_and_passes_doctor(tmp_path: Path) -> None:
    path = tmp_path / "triage.db"
    shutil.copy(RELEASE_SQLITE, path)
    settings = Settings(db_path=str(path))
    before = check_store(settings)
    assert (before.ok, before.warning) == (True, True), before.detail
    pending = (
        "0005_record, 0006_unsettled_reasons, 0007_issue_index, 0008_duplicate_suggestions, "
        "0009_title_vectors"
    )
    assert f"{pending} pending" in before.detail
    reader = make_store(settings, read_only=True)
    assert [r["verdict"] for r in reader.audits("o/r")] == ["FIX"]
    reader.close()
    store = make_store(settings)
    assert store.last_gate("o/r", 3) is not None
    assert known_comment(store, "o/r", 3) is not None
    store.record_audits([audit_row(repo="o/r", pr=8, created_at="2026-01-05T11:00:00+00:00")])
    weeks = store.fetch("select sum(audits) from audit_weeks where repo = ?", ["o/r"])
    assert weeks == [(2,)]
    store.close()
    after = check_store(settings)
    assert (after.ok, after.warning) == (True, False), after.detail
    assert "(9 migrations)" in after.detail


def test_a_sqlite_store_before_m008_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "triage.db"
    shutil.copy(RELEASE_SQLITE, path)
    with sqlite3.connect(path) as conn:
        conn.execute("delete from _sqlite_migrations where name >= 'm008'")
    with pytest.raises(StoreError, match=r"open it once with triage-bot 0\.1\.0"):
        check_store(Settings(db_path=str(path)))
    with pytest.raises(StoreError, match=r"open it once with triage-bot 0\.1\.0"):
        make_store(Settings(db_path=str(path)))


def test_the_release_postgresql_store_opens_upgrades_and_passes_doctor(pg_url: str) -> None:
    """The release's own yoyo migrations, then a row, then this version."""
    backend = get_backend("postgresql+psycopg://" + pg_url.split("://", 1)[1])
    try:
        with backend.lock():
            backend.apply_migrations(backend.to_apply(read_migrations(str(RELEASE_PG_MIGRATIONS))))
    finally:
        backend.connection.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "insert into gate_decisions (repo, issue, label, model, prompt_version, created_at, "
            "content_sha) values ('o/r', 3, 'ready-for-dev', 'm', 'v', "
            "'2026-01-06T09:00:00+00:00', 'abc')"
        )
    settings = Settings(db_path=pg_url)
    before = check_store(settings)
    assert (before.ok, before.warning) == (True, True), before.detail
    pending = (
        "0005_record, 0006_unsettled_reasons, 0007_issue_index, 0008_duplicate_suggestions, "
        "0009_title_vectors"
    )
    assert f"{pending} pending" in before.detail
    store = make_store(settings)
    assert isinstance(store, PostgresStore)
    assert store.last_gate("o/r", 3) is not None
    store.record_audits([audit_row(repo="o/r", pr=8)])
    store.close()
    assert check_store(settings).detail.endswith("is reachable and migrated (9 migrations)")


# --- a new kind of store is one row -------------------------------------------------------


class MemoStore(Store):
    """A throwaway store kind: a SQLite store in memory behind a ``memo://`` target."""

    def __init__(self, target: str, *, read_only: bool = False, redact: Redactor = NO_SECRETS):
        super().__init__(":memory:", redact=redact)
        self.target = target


def memo_schema(target: str) -> SchemaState | None:
    """Every migration applied, every table there."""
    del target
    shipped = migrate.shipped()
    return schema_state(shipped, shipped, TABLES, lambda done: migrate.tables_after(shipped, done))


def _memo_target(text: str) -> str:
    if "@" not in text:
        raise ValueError("a memo:// target names its user")
    return text


MEMO = stores.StoreKind(
    "Memo",
    described="a memo:// target",
    accepts=lambda text: text.startswith("memo://"),
    target=_memo_target,
    shown=lambda text: "memo://" + text.rpartition("@")[2],
    secrets=lambda text: (text.split("://", 1)[1].split("@")[0].partition(":")[2],),
    opens=f"{__name__}:MemoStore",
    schema=f"{__name__}:memo_schema",
)


def test_a_new_kind_of_store_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings rule, the factory, the doctor and the redaction all read the row."""
    monkeypatch.setattr(stores, "STORES", (*stores.STORES, MEMO))
    target = "memo://me:memo-secret-1@box"
    settings = Settings.resolve({}, {"TRIAGE_DB": target})
    assert settings.db_path == target
    assert store_for(settings) == (MEMO, target)
    store = make_store(settings)
    assert isinstance(store, MemoStore)
    store.record_audits([audit_row()])
    assert len(store.audits("o/r")) == 1
    store.close()
    check = check_store(settings)
    count = len(migrate.shipped())
    shown = f"Memo memo://box is reachable and migrated ({count} migrations)"
    assert check.line() == f"ok   store: {shown}"
    assert settings.redactor()(f"failed on {target}") == "failed on memo://me:***@box"
    with pytest.raises(ConfigError, match="a memo:// target names its user"):
        Settings.resolve({}, {"TRIAGE_DB": "memo://box"})
    with pytest.raises(ConfigError, match="or a memo:// target"):
        Settings.resolve({}, {"TRIAGE_DB": "mysql://box"})


def test_no_two_rows_accept_a_target(monkeypatch: pytest.MonkeyPatch) -> None:
    targets = ["/tmp/a.db", "~/t.db", ":memory:", "postgresql://h/d", "postgres://h/d"]
    for target in targets:
        assert sum(kind.accepts(target) for kind in stores.STORES) == 1, target
    greedy = replace(MEMO, accepts=lambda text: True)
    monkeypatch.setattr(stores, "STORES", (*stores.STORES, greedy))
    with pytest.raises(ValueError, match="both SQLite and Memo stores accept"):
        stores.store_kind("/tmp/a.db")
