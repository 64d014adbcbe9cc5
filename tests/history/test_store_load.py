"""The store under load: concurrent writer processes and a kill -9 mid-run.

The writers are real processes (``python -m tests.support.store_load write …``) on one SQLite file,
the
way two workflow runs on one self-hosted runner share the store. See
``tests/support/store_load.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.history.store import Store
from tests.support.store_load import audit_rows, check_db, kill_mid_run, main, run_writers


def test_two_writer_processes_lose_nothing(tmp_path: Path) -> None:
    result = run_writers(tmp_path / "triage.db", processes=2, per_process=200, batch=10)
    assert result["exit_codes"] == [0, 0], result["stderr"]
    assert result["rows"] == 400
    assert result["distinct_keys"] == 400
    assert result["weekly_sum"] == 400
    assert result["weeks_match"]
    assert result["partial_batches"] == 0
    assert result["batches"] == 40
    assert result["integrity"] == "ok"


def test_kill_9_mid_run_leaves_whole_batches_and_a_usable_store(tmp_path: Path) -> None:
    db = tmp_path / "triage.db"
    result = kill_mid_run(db, batch=25, min_rows=100)
    assert not result["finished_before_kill"], "the writer finished before the kill"
    assert result["returncode"] == -9
    assert result["integrity"] == "ok"
    assert result["partial_batches"] == 0
    assert result["rows"] >= 100
    assert result["rows"] == 25 * result["batches"]
    assert result["weekly_sum"] == result["rows"]
    assert result["weeks_match"]
    assert result["reopen"] == "ok"
    assert result["rows_after_write"] == result["rows"] + 25


def test_the_checker_sees_a_partial_batch(tmp_path: Path) -> None:
    """The no-partial-batch check is not vacuous: a batch missing one row is reported."""
    db = tmp_path / "triage.db"
    store = Store(db)
    store.record_audits(audit_rows(7, 0, 0, 5))
    store.record_audits(audit_rows(7, 1, 5, 5))
    store.close()
    assert check_db(db)["partial_batches"] == 0
    with sqlite3.connect(db) as conn:
        conn.execute("delete from audits where pr = 7 + 6")
    figures = check_db(db)
    assert figures["partial_batches"] == 1
    assert figures["batches"] == 1
    assert figures["weeks_match"]  # the delete trigger keeps the weekly sums in step


def test_weekly_sums_are_checked_against_the_raw_rows(tmp_path: Path) -> None:
    db = tmp_path / "triage.db"
    store = Store(db)
    store.record_audits(audit_rows(7, 0, 0, 5))
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("update audit_weeks set audits = audits + 1 where verdict = 'FIX'")
    assert not check_db(db)["weeks_match"]


def test_writer_command_line_replaces_rather_than_duplicates(tmp_path: Path) -> None:
    db = str(tmp_path / "triage.db")
    assert main(["write", db, "30", "5", "--batch", "7"]) == 0
    assert main(["write", db, "30", "5", "--batch", "7"]) == 0
    figures = check_db(db)
    assert (figures["rows"], figures["weekly_sum"], figures["batches"]) == (30, 30, 5)
    assert figures["partial_batches"] == 0
