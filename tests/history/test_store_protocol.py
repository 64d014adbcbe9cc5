"""Both stores, one protocol: the same rows, unique keys, sums, read-only rule and
locks from the SQLite file and from a real PostgreSQL server.

Every test here takes ``store_target`` (``tests/conftest.py``) and so runs twice: on a SQLite
file and on a fresh database of the test server (``tests/support/pg.py``; skipped without
``TRIAGE_TEST_PG_URL``, a failure under ``TRIAGE_REQUIRE_PG=1`` as in ``.ci/run``).
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot import runner
from bot.audit.contract import CONFIDENCES, VERDICTS
from bot.audit.stats import ModelStats, WeekStats, model_stats, weekly_stats
from bot.config import Settings
from bot.errors import StoreError
from bot.factory import make_store
from bot.gate.stats import gate_weeks
from bot.gate.types import AUTHOR_MARKER
from bot.history.protocol import (
    AUDIT_KEY,
    AuditRow,
    Execute,
    GateRow,
    HistoryStore,
    KeyedTable,
    audit_params,
    first_week,
)
from tests.support import FakeChatModel, audit_row, load_webhook, migrate_first, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import NEEDS_REPLY

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
    github.issue_texts[payload["issue"]["number"]] = (
        payload["issue"]["title"],
        "The app crashes when I click save.",
    )
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
    # the loser found the winner's decision under the lock: superseded, it writes nothing
    assert [w[0] for w in github.writes].count("create_comment") == 1
    store = _open(store_target)
    try:
        assert _count(store, "gate_decisions") == 1
    finally:
        store.close()


def test_what_the_bot_knows_of_github_is_kept_by_both_stores(store_target: str) -> None:
    """``github_memory``'s keyed rows through the protocol's ``get``/``change`` (what the
    bot remembers of GitHub, on both stores; a comment id beyond 32 bits, as GitHub's are)."""
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


@contextmanager
def _raw(target: str) -> Iterator[Execute]:
    """Run the protocol's statements (``?`` parameters) on ``target`` in one transaction,
    without a store: opening one would migrate it."""
    if target.startswith("postgresql"):
        import psycopg

        from bot.history.pg_store import pg_sql

        with psycopg.connect(target) as conn:
            yield lambda sql, params: conn.execute(pg_sql(sql), params)
        return
    conn = sqlite3.connect(target)
    try:
        with conn:
            yield conn.execute
    finally:
        conn.close()


def _migrate_before_policy(target: str) -> None:
    """``target`` migrated up to the last migration before the policy version existed."""
    migrate_first(target, 2)
    with _raw(target) as run:
        KeyedTable("gate_decisions", run).insert(
            {"repo": "o/r", "issue": 3, "event": "issues.opened", "verdict": "VALID",
             "label": "ready-for-dev", "reason": "old", "model": "m",
             "prompt_version": "validator@0", "created_at": "2026-11-30T08:00:00+00:00",
             "prompt_tokens": 10, "output_tokens": 5, "duration_ms": 250.0,
             "content_sha": "c1"}
        )  # fmt: skip


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


_OLD_VERDICTS = ("GO", "GO_WITH_NOTES", "FIX", "MAYBE")
"""What a store of the previous schema holds in ``verdict``: its contract's verdicts, and one
no contract names (a row another version wrote: counted in the audits, under no verdict)."""

_OLD_CONFIDENCES = ("High", "Medium", "Low")

_OLD_WEEKLY = (
    "select week, audits, retried, go, go_with_notes, fix, high, medium, low from audit_weeks "
    "where repo = ? and week >= ? and audits > 0 order by week"
)
"""The previous version's weekly read: one column per verdict and confidence."""

_OLD_BY_MODEL = (
    "select model, count(*), sum(retried), sum(case when verdict = 'GO' then 1 else 0 end), "
    "sum(case when verdict = 'GO_WITH_NOTES' then 1 else 0 end), "
    "sum(case when verdict = 'FIX' then 1 else 0 end) from audits where repo = ? and week >= ? "
    "group by model order by count(*) desc, model"
)
"""The previous version's read per model, over ``audits`` itself."""

_REPOS = ("o/r", "o/other")
MINUTES_60_WEEKS = 60 * 7 * 24 * 60
_WEEKS = (1, 8, 52)


def _old_audits(seed: int, now: datetime) -> tuple[list[AuditRow], list[AuditRow]]:
    """Audits over the last 60 weeks in two repositories by three models, then a replacement
    for some of them (the same segment and head SHA judged again: the delete trigger runs)."""
    rng = random.Random(seed)
    rows = [
        audit_row(
            repo=rng.choice(_REPOS),
            pr=i,
            head_sha=f"{i:040x}",
            model=rng.choice(("gemma", "llama", "qwen")),
            verdict=rng.choice(_OLD_VERDICTS),
            confidence=rng.choice(_OLD_CONFIDENCES),
            retried=rng.random() < 0.3,
            created_at=(now - timedelta(minutes=rng.randrange(MINUTES_60_WEEKS))).isoformat(),
        )
        for i in range(rng.randrange(150, 300))
    ]
    again = [
        replace(row, verdict=rng.choice(_OLD_VERDICTS), retried=not row.retried)
        for row in rng.sample(rows, 40)
    ]
    return rows, again


def _old_figures(
    run: Execute, repo: str, weeks: int, now: datetime
) -> tuple[list[WeekStats], list[ModelStats]]:
    """What the previous version showed: its own queries over its own tables, read into this
    version's shapes (a verdict or confidence it had no column for counts 0)."""
    since = first_week(weeks, now)
    names = ("go", "go_with_notes", "fix", "high", "medium", "low")  # its columns
    week_stats = []
    for week, audits, retried, *counts in run(_OLD_WEEKLY, [repo, since]).fetchall():
        old = dict(zip(names, counts, strict=True))
        verdicts = {v: old.get(v.lower(), 0) for v in VERDICTS}
        confidences = {c: old.get(c.lower(), 0) for c in CONFIDENCES}
        week_stats.append(WeekStats(week, audits, retried, verdicts, confidences))
    per_model = []
    for model, audits, retried, *counts in run(_OLD_BY_MODEL, [repo, since]).fetchall():
        old = dict(zip(names[:3], counts, strict=True))
        verdicts = {v: old.get(v.lower(), 0) for v in VERDICTS}
        per_model.append(ModelStats(model, audits, retried or 0, verdicts))
    return week_stats, per_model


def _cli_stats(db: str, repo: str, weeks: int) -> tuple[str, str]:
    """``triage-bot stats`` for ``repo``: its JSON and its table."""
    from click.testing import CliRunner

    from bot.cli import main

    args = ["stats", "--repo", repo, "--weeks", str(weeks), "--db", db]
    as_json, table = (CliRunner().invoke(main, args + extra) for extra in (["--json"], []))
    assert (as_json.exit_code, table.exit_code) == (0, 0), as_json.output + table.output
    return as_json.output, table.output


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_audits_from_before_the_counts_by_value_read_the_same(
    store_target: str, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose weekly sums were one column per verdict and confidence migrates: every
    statistic (per week, per model, the ``/audit_stats`` reply, ``stats`` as JSON and as a
    table) reads as the previous version showed it, for each repository and window; the
    audits and the gate's weekly counts are left as they were; new audits are counted."""
    from bot.audit import stats
    from bot.commands import handlers

    now = datetime.now(UTC)
    migrate_first(store_target, 3)
    rows, again = _old_audits(seed, now)
    with _raw(store_target) as run:
        table = KeyedTable("audits", run)
        for row in rows + again:
            params = audit_params(row)
            table.delete({k: params[k] for k in AUDIT_KEY})
            table.insert(params)
        KeyedTable("gate_decisions", run).insert(_old_gate(now))
        before = {(r, w): _old_figures(run, r, w, now) for r in _REPOS for w in _WEEKS}
        audits_before = run("select * from audits order by id", []).fetchall()
        gate_before = run("select * from gate_weeks", []).fetchall()
    assert any(w for w, _ in before.values())  # the windows hold audits

    shown_before = {}
    empty = str(tmp_path / "empty.db")  # the CLI opens a store; the figures come from above
    for (repo, weeks), (week_stats, per_model) in before.items():
        monkeypatch.setattr(handlers, "weekly_stats", lambda *a, f=week_stats, **k: f)
        monkeypatch.setattr(handlers, "model_stats", lambda *a, f=per_model, **k: f)
        monkeypatch.setattr(stats, "weekly_stats", lambda *a, f=week_stats, **k: f)
        monkeypatch.setattr(handlers, "defect_records", lambda *a, **k: [])  # none reported
        reply = handlers.stats_reply(None, repo, weeks)  # type: ignore[arg-type]
        shown_before[repo, weeks] = (reply, _cli_stats(empty, repo, weeks))
    monkeypatch.undo()

    # read-only first: a SQLite file is then read through a migrated copy, left as it is
    cli_after = {(r, w): _cli_stats(store_target, r, w) for r in _REPOS for w in _WEEKS}
    store = _open(store_target)
    try:
        for (repo, weeks), (week_stats, per_model) in before.items():
            assert weekly_stats(store, repo, weeks, now=now) == week_stats
            assert model_stats(store, repo, weeks, now=now) == per_model
            reply, cli = shown_before[repo, weeks]
            assert handlers.stats_reply(store, repo, weeks) == reply
            assert cli_after[repo, weeks] == cli
            assert [s.as_dict() for s in week_stats] == json.loads(cli[0])
        assert store.fetch("select * from audits order by id", []) == audits_before
        assert sorted(store.fetch("select * from gate_weeks", [])) == sorted(gate_before)
        store.record_audits([audit_row(verdict="FIX", model="new", created_at=now.isoformat())])
        (newest,) = [m for m in model_stats(store, "o/r", 1, now=now) if m.model == "new"]
        assert (newest.audits, newest.retried, newest.verdicts["FIX"]) == (1, 1, 1)
    finally:
        store.close()


def _old_gate(now: datetime) -> dict[str, Any]:
    """A gate decision of the previous schema (its weekly counts must not change; the
    triggers set its week)."""
    return {
        "repo": "o/r", "issue": 3, "event": "issues.opened", "verdict": "VALID",
        "label": "ready-for-dev", "reason": "old", "model": "m", "prompt_version": "validator@0",
        "created_at": now.isoformat(timespec="seconds"), "prompt_tokens": 10,
        "output_tokens": 5, "duration_ms": 250.0, "content_sha": "c1", "policy_version": "p@0",
    }  # fmt: skip
