"""Both stores, one protocol (issue 18): the same rows, unique keys, sums, read-only rule and
locks from the SQLite file and from a real PostgreSQL server.

Every test here takes ``store_target`` (``tests/conftest.py``) and so runs twice: on a SQLite
file and on a fresh database of the test server (``tests/pg.py``; skipped without
``TRIAGE_TEST_PG_URL``, a failure under ``TRIAGE_REQUIRE_PG=1`` as in ``.ci/run``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot import runner
from bot.audit.stats import weekly_stats
from bot.config import Settings
from bot.errors import StoreError
from bot.factory import make_store
from bot.gate.author_comment import AUTHOR_MARKER
from bot.gate.stats import gate_weeks
from bot.history.protocol import GateRow, HistoryStore
from tests.fake_github import FakeGitHub
from tests.replies import NEEDS_REPLY
from tests.support import FakeChatModel, audit_row, load_webhook, write_payload

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _open(target: str, **kw: Any) -> HistoryStore:
    return make_store(Settings(db_path=target), **kw)


def _gate(**overrides: Any) -> GateRow:
    values: dict[str, Any] = {
        "repo": "o/r", "issue": 3, "event": "issues.opened", "verdict": "VALID",
        "label": "ready-for-dev", "reason": "ok", "error_kind": None, "model": "m",
        "prompt_version": "validator@0", "prompt_tokens": 10, "output_tokens": 5,
        "duration_ms": 250.0, "created_at": "2026-11-30T08:00:00+00:00", "content_sha": "c1",
    }  # fmt: skip
    values.update(overrides)
    return GateRow(**values)


def _count(store: HistoryStore, table: str) -> int:
    return int(store.fetch(f"select count(*) from {table}", [])[0][0])


def test_rows_come_back_with_the_same_shapes(store_target: str) -> None:
    store = _open(store_target)
    try:
        assert store.record_audits([audit_row(created_at="2026-11-30T08:00:00+00:00")]) == 1
        (row,) = store.audits("o/r")
        assert isinstance(row["id"], int)
        assert (row["pr"], row["line_start"], row["retried"]) == (7, 10, 1)
        assert row["duration_ms"] == 1234.5
        assert (row["created_at"], row["week"]) == ("2026-11-30T08:00:00+00:00", "2026-11-30")
        gate_id = store.record_gate(_gate())
        last = store.last_gate("o/r", 3)
        assert last is not None
        assert (last["id"], last["label"], last["content_sha"]) == (gate_id, "ready-for-dev", "c1")
        assert store.last_gate("o/r", 4) is None
    finally:
        store.close()


def test_a_replayed_audit_replaces_its_row_and_is_counted_once(store_target: str) -> None:
    store = _open(store_target)
    try:
        first = audit_row(verdict="FIX", confidence="High", created_at="2026-11-30T08:00:00+00:00")
        store.record_audits([first, audit_row(path="src/b.py", created_at=first.created_at)])
        store.record_audits([replace(first, verdict="GO")])  # the same segment and head SHA
        assert _count(store, "audits") == 2
        (week,) = weekly_stats(store, "o/r", 1, now=NOW)
        assert (week.audits, week.verdicts["GO"], week.verdicts["FIX"]) == (2, 1, 0)
        store.record_audits([replace(first, head_sha="b" * 40)])  # a new push: another row
        assert _count(store, "audits") == 3
    finally:
        store.close()


def test_one_gate_row_per_text_model_prompt_and_outcome(store_target: str) -> None:
    store = _open(store_target)
    try:
        store.record_gate(_gate(verdict=None, label="validator-error", error_kind="timeout"))
        store.record_gate(_gate())
        store.record_gate(_gate(reason="judged again"))  # a second runner, the same outcome
        store.record_gate(_gate(content_sha=""))  # unknown text: never a duplicate
        store.record_gate(_gate(content_sha=""))
        assert _count(store, "gate_decisions") == 4
        store.record_gate(_gate(reason="newest"))
        last = store.last_gate("o/r", 3)
        assert last is not None
        assert last["reason"] == "newest"  # the replacing row is the newest
        (week,) = gate_weeks(store, "o/r", 1, now=NOW)
        assert week.decisions == 4  # the weekly counts followed the replacements
        assert week.outcomes == {"VALID": 3, "NEEDS_REFINEMENT": 0, "validator-error": 1}
        assert (week.p50_ms, week.p95_ms) == (250.0, 250.0)
    finally:
        store.close()


def test_read_only_refuses_writes_and_reads_what_was_written(store_target: str) -> None:
    writer = _open(store_target)
    writer.record_audits([audit_row()])
    writer.close()
    reader = _open(store_target, read_only=True)
    try:
        assert len(reader.audits("o/r")) == 1
        with pytest.raises(StoreError, match="read-only"):
            reader.record_gate(_gate())
    finally:
        reader.close()


def test_reopening_keeps_the_rows_and_migrates_nothing_twice(store_target: str) -> None:
    for _ in range(3):
        store = _open(store_target)
        store.record_audits([audit_row()])
        store.close()
    store = _open(store_target)
    assert len(store.audits("o/r")) == 1
    store.close()


def test_exclusive_makes_a_second_holder_wait(store_target: str) -> None:
    """Two connections (as two runners), one subject: the second enters after the first left."""
    first, second = _open(store_target), _open(store_target)
    order: list[str] = []

    def other() -> None:
        with second.exclusive("o/r#3"):
            order.append("second in")

    try:
        with first.exclusive("o/r#3"):
            thread = threading.Thread(target=other)
            thread.start()
            time.sleep(0.3)
            order.append("first out")
        thread.join(10)
        assert order == ["first out", "second in"]
    finally:
        first.close()
        second.close()


NEEDS = NEEDS_REPLY


class RacyGitHub(FakeGitHub):
    """A fake GitHub whose comment lookup answers, then lets the other runner run before the
    caller can post: without a lock both runners see no comment and both post."""

    def find_bot_comment(self, *args: Any, **kwargs: Any) -> Any:
        found = super().find_bot_comment(*args, **kwargs)
        time.sleep(0.3)
        return found


def test_two_runners_on_one_event_post_one_comment_and_write_one_row(
    store_target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: FakeChatModel
) -> None:
    github = RacyGitHub()
    monkeypatch.setattr(runner, "make_github", lambda *a, **k: github)
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = "The app crashes when I click save."
    settings = Settings(
        github_token="t",
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=store_target,
    )
    model.enqueue(NEEDS, NEEDS)
    errors: list[BaseException] = []

    def job() -> None:
        try:
            runner.run_event(settings)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=job) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    number = payload["issue"]["number"]
    comments = [c for c in github.bot_comments(number) if c.body.startswith(AUTHOR_MARKER)]
    assert len(comments) == 1
    # the loser found the winner's comment: it edits it, or leaves it when the text is the same
    assert [w[0] for w in github.writes].count("create_comment") == 1
    store = _open(store_target)
    try:
        assert _count(store, "gate_decisions") == 1
    finally:
        store.close()


def test_what_the_bot_knows_of_github_is_kept_by_both_stores(store_target: str) -> None:
    """``github_memory``'s keyed rows through the protocol's ``get``/``change`` (issue 16's
    tables on both stores; a comment id beyond 32 bits, as GitHub's are)."""
    from bot.history import github_memory as memory

    store = _open(store_target)
    try:
        assert memory.remember_comment(store, "o/r", 3, 4_000_000_000, "hello")
        known = memory.known_comment(store, "o/r", 3)
        assert known == memory.KnownComment(4_000_000_000, memory.body_sha("hello"))
        assert not memory.remember_comment(store, "o/r", 3, 4_000_000_001, "x")  # a race: none
        assert memory.known_comment(store, "o/r", 3) is None
        memory.remember_label(store, "o/r", "Ready-For-Dev")
        memory.remember_label(store, "o/r", "ready-for-dev")  # an upsert, not a duplicate
        assert memory.created_label(store, "o/r", "READY-for-dev")
        memory.remember_repo_file(store, "o/r", ".github/triage-bot.yml", "s1", None)
        memory.remember_repo_file(store, "o/r", ".github/triage-bot.yml", "s2", "skip: {}")
        assert memory.cached_repo_file(store, "o/r", ".github/triage-bot.yml", "s1") is None
        cached = memory.cached_repo_file(store, "o/r", ".github/triage-bot.yml", "s2")
        assert cached == memory.CachedFile("skip: {}")
    finally:
        store.close()
    reader = _open(store_target, read_only=True)
    try:
        with pytest.raises(StoreError):
            memory.remember_label(reader, "o/r", "x")
    finally:
        reader.close()


def _migrate_before_policy(target: str) -> None:
    """``target`` migrated up to the last migration before the policy version existed."""
    if target.startswith("postgresql"):
        import psycopg
        from yoyo import get_backend, read_migrations  # type: ignore[import-untyped]

        from bot.history.pg_store import MIGRATIONS_DIR

        backend = get_backend("postgresql+psycopg://" + target.split("://", 1)[1])
        older = read_migrations(str(MIGRATIONS_DIR)).filter(lambda m: m.id < "0003")
        try:
            with backend.lock():
                backend.apply_migrations(backend.to_apply(older))
        finally:
            backend.connection.close()
        with psycopg.connect(target) as conn:
            conn.execute(
                "insert into gate_decisions (repo, issue, event, verdict, label, reason, "
                "model, prompt_version, created_at, prompt_tokens, output_tokens, duration_ms, "
                "content_sha) values ('o/r', 3, 'issues.opened', 'VALID', 'ready-for-dev', "
                "'old', 'm', 'validator@0', '2026-11-30T08:00:00+00:00', 10, 5, 250.0, 'c1')"
            )
        return
    import sqlite_utils

    from bot.history.migrations import MIGRATIONS

    db = sqlite_utils.Database(target)
    MIGRATIONS.apply(db, stop_before="m009_gate_policy")
    db["gate_decisions"].insert(
        {"repo": "o/r", "issue": 3, "event": "issues.opened", "verdict": "VALID",
         "label": "ready-for-dev", "reason": "old", "model": "m",
         "prompt_version": "validator@0", "created_at": "2026-11-30T08:00:00+00:00",
         "prompt_tokens": 10, "output_tokens": 5, "duration_ms": 250.0, "content_sha": "c1"}
    )  # fmt: skip
    db.close()


def test_decisions_from_before_the_policy_version_read_the_same(store_target: str) -> None:
    """A store written before decisions named their policy migrates: its rows read as they
    were (no policy version), are counted as before, and a new decision on the same text under
    a policy is a row of its own."""
    _migrate_before_policy(store_target)
    store = _open(store_target)
    try:
        old = store.last_gate("o/r", 3)
        assert old is not None
        assert (old["reason"], old["label"], old["policy_version"]) == (
            "old",
            "ready-for-dev",
            None,
        )
        (week,) = gate_weeks(store, "o/r", 1, now=NOW)
        assert week.decisions == 1
        store.record_gate(_gate(reason="new", policy_version="policy@12345678"))
        store.record_gate(_gate(reason="newer", policy_version="policy@12345678"))  # replaces
        assert _count(store, "gate_decisions") == 2
        last = store.last_gate("o/r", 3)
        assert last is not None
        assert (last["reason"], last["policy_version"]) == ("newer", "policy@12345678")
    finally:
        store.close()
