"""A fresh PostgreSQL database per test, on the server ``TRIAGE_TEST_PG_URL`` names.

``.ci/run`` starts a throw-away server (``scripts/test_postgres.sh``) and sets the URL and
``TRIAGE_REQUIRE_PG=1``; locally, without a URL, the PostgreSQL variants of the store tests are
skipped with the reason below, unless ``TRIAGE_REQUIRE_PG=1`` makes that a failure. No mock
database: each test gets an empty database of its own (created, then dropped with its
connections), so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

__all__ = ["PG_URL_VAR", "REQUIRE_VAR", "fresh_database", "server_url"]

PG_URL_VAR = "TRIAGE_TEST_PG_URL"
REQUIRE_VAR = "TRIAGE_REQUIRE_PG"
SKIP_REASON = (
    f"no PostgreSQL server: set {PG_URL_VAR}=postgresql://USER@127.0.0.1:PORT/DB (start one "
    "with scripts/test_postgres.sh start DIR, see CONTRIBUTING.md)"
)


def server_url() -> str:
    """The test server's URL; skips the test when unset (fails under ``TRIAGE_REQUIRE_PG=1``)."""
    url = os.environ.get(PG_URL_VAR, "").strip()
    if not url:
        if os.environ.get(REQUIRE_VAR) == "1":
            pytest.fail(f"{REQUIRE_VAR}=1 but {SKIP_REASON}")
        pytest.skip(SKIP_REASON)
    return url


def fresh_database() -> Iterator[str]:
    """Yield the URL of a new, empty database on the test server; drop it afterwards."""
    url = server_url()
    name = f"triage_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'create database "{name}"')
    parts = urlsplit(url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'drop database if exists "{name}" with (force)')
