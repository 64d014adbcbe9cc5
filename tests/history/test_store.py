"""The store: migrations on open, WAL, accepted rows only, gate decisions, re-opening."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.config import default_db_path
from bot.errors import StoreError
from bot.history import migrate
from bot.history.store import GateRow, Store
from tests.support import audit_row


def _recorded(store: Store) -> list[str]:
    return [r[0] for r in store.db.execute("select migration_id from _yoyo_migration").fetchall()]


def test_open_migrates_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "triage.db"
    store = Store(path)
    assert {"audits", "gate_decisions", "_yoyo_migration"} <= set(store.db.table_names())
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    applied = _recorded(store)
    assert applied == list(migrate.shipped())  # every migration this version knows, once
    store.close()
    reopened = Store(path)
    assert _recorded(reopened) == applied  # none runs twice
    reopened.close()


def test_audit_rows_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.db")
    assert store.record_audits([audit_row()]) == 1
    store.record_audits([audit_row(path="src/b.py", created_at="2030-01-01T00:00:00+00:00")])
    rows = store.audits("o/r")
    assert [r["path"] for r in rows] == ["src/b.py", "src/app.py"]  # newest first
    assert rows[0]["id"] > rows[1]["id"]
    assert rows[1]["retried"] == 1
    assert rows[1]["created_at"].endswith("+00:00")
    assert store.audits("other/repo") == []


def test_gate_decisions(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.db")
    base = {
        "repo": "o/r", "issue": 3, "event": "issues.opened", "verdict": None,
        "label": "validator-error", "reason": "down", "error_kind": "model_unavailable",
        "model": "m", "prompt_version": "validator@0", "prompt_tokens": 0, "output_tokens": 0,
        "duration_ms": 0.0,
    }  # fmt: skip
    store.record_gate(GateRow(**base))  # type: ignore[arg-type]
    base.update(verdict="VALID", label="ready-for-dev", error_kind=None)
    store.record_gate(GateRow(**base))  # type: ignore[arg-type]
    last = store.last_gate("o/r", 3)
    assert last is not None
    assert last["label"] == "ready-for-dev"
    assert store.last_gate("o/r", 4) is None


def test_default_path_is_outside_the_workspace(tmp_path: Path) -> None:
    assert default_db_path({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "triage-bot/triage.db"
    assert default_db_path({}).parts[-4:] == (".local", "share", "triage-bot", "triage.db")


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(blocker / "triage.db")


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        Store(path)


def test_file_opens_in_plain_sqlite3(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = Store(path)
    store.record_audits([audit_row()])
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("select count(*) from audits").fetchone()[0] == 1


def test_writers_opening_a_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    """Switching a new file to WAL does not wait for SQLite's busy timeout; openers wait anyway."""
    import threading

    for trial in range(60):
        path = tmp_path / f"{trial}.db"
        errors: list[BaseException] = []
        start = threading.Barrier(3)

        def open_it(
            path: Path = path, errors: list[BaseException] = errors, start: Any = start
        ) -> None:
            start.wait()
            try:
                Store(path).close()
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []
