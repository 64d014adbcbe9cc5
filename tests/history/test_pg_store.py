"""The PostgreSQL store's own rules: migrations once under a lock when runners start
together, a server migrated by a newer version refused, no password in a message, and the
dialect translation. Against a real server (``tests/support/pg.py``); skipped without one
locally."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest

from bot.errors import StoreError
from bot.history.pg_store import PostgresStore, pg_sql, server_schema
from bot.urls import shown_url
from tests.support import ROOT
from tests.support.pg import fresh_database

_OPEN = "import sys; from bot.history.pg_store import PostgresStore; PostgresStore(sys.argv[1])"


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from fresh_database()


def test_runners_starting_together_migrate_once(pg_url: str) -> None:
    """Six processes open a fresh server at once: all succeed, each migration is applied once."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN, pg_url], cwd=ROOT, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    with psycopg.connect(pg_url) as conn:
        applied = conn.execute("select migration_id from _yoyo_migration").fetchall()
    schema = server_schema(pg_url)
    assert [row[0] for row in applied] == list(schema.shipped)  # each once, in order
    assert schema.shipped[:2] == ("0001_schema", "0002_github_memory")
    assert (schema.missing, schema.unknown, schema.missing_tables) == ((), (), ())


def test_a_server_migrated_by_a_newer_version_is_refused(pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
            "values ('f' || repeat('0', 63), '0099_future', now())"
        )
    with pytest.raises(StoreError, match="newer triage-bot"):
        PostgresStore(pg_url)


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    url = "postgresql://triage:s3cret@127.0.0.1:1/nowhere?connect_timeout=2"
    with pytest.raises(StoreError) as caught:
        PostgresStore(url)
    assert "s3cret" not in str(caught.value)
    assert "s3cret" not in shown_url(url)


def test_the_protocol_statements_translate_to_psycopg_parameters() -> None:
    assert pg_sql("select * from t where a = ? and b like '%x'") == (
        "select * from t where a = %s and b like '%%x'"
    )
