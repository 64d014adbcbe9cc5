"""`triage-bot history`, `stats` and `backlog` as a maintainer runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.history.store import Store, utc_now
from bot.settings_table import DEFAULT_OLLAMA_MODEL
from tests.support import audit_row, cassette, policy_file


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "t.db"
    store = Store(db)
    store.record_audits(
        [
            audit_row(verdict="FIX", created_at=utc_now()),
            audit_row(verdict="GO", retried=False, head_sha="b" * 40),
        ]
    )
    store.close()
    return db


def test_history_table_and_json(tmp_path: Path) -> None:
    db = _db(tmp_path)
    table = CliRunner().invoke(main, ["history", "--repo", "o/r", "--db", str(db)])
    assert table.exit_code == 0
    assert "Accepted audits of o/r" in table.stdout
    assert "src/app.py:10-40" in table.stdout
    raw = CliRunner().invoke(main, ["history", "--repo", "o/r", "--db", str(db), "--json"])
    rows = json.loads(raw.stdout)
    assert [r["verdict"] for r in rows] == ["GO", "FIX"]  # newest first: GO was written last
    assert "markdown" not in rows[0]


def test_stats_table_and_json(tmp_path: Path) -> None:
    db = _db(tmp_path)
    raw = CliRunner().invoke(main, ["stats", "--repo", "o/r", "--db", str(db), "--json"])
    assert raw.exit_code == 0
    weeks = json.loads(raw.stdout)
    assert sum(w["audits"] for w in weeks) == 2
    table = CliRunner().invoke(main, ["stats", "--repo", "o/r", "--db", str(db)])
    assert "last 8 week(s)" in table.stdout


def test_backlog_judges_only_ungated_issues_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bot.clients.github_client as gc

    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    db = tmp_path / "t.db"
    args = ["backlog", "--repo", "Codertocat/Hello-World", "--db", str(db),
            "--ollama-host", "http://127.0.0.1:11434"]  # fmt: skip
    # the recorded model's answers are judged under a policy measured for it
    env = {
        "GITHUB_TOKEN": "test-token-not-real",
        "TRIAGE_GATE_POLICY": policy_file(tmp_path, DEFAULT_OLLAMA_MODEL),
    }
    with cassette("e2e_backlog") as cass:
        first = CliRunner().invoke(main, args, env=env)
    assert first.exit_code == 0, first.output
    assert cass.all_played
    assert "backlog of Codertocat/Hello-World: 2 issue(s)" in first.stdout
    assert "#3: ready-for-dev" in first.stdout
    assert "#4: needs-refinement" in first.stdout
    # the real client passes the list's creation times: the judged issues are in the index
    indexed = Store(db)
    try:
        assert [indexed.indexed_issue("Codertocat/Hello-World", n) is not None for n in (3, 4)] == [
            True,
            True,
        ]
    finally:
        indexed.close()
    with cassette("e2e_backlog") as cass:
        again = CliRunner().invoke(main, args, env=env)
    assert again.exit_code == 0
    assert "0 issue(s)" in again.stdout
    assert cass.play_count == 2  # the repository file and the issue list: both are done


def test_backlog_retry_errors_rejudges_the_bots_validator_errors_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an outage, `--retry-errors` re-judges #3 (validator-error by the bot)
    and leaves #4 (validator-error by a person) and #1 (a verdict) alone; on an empty store
    (a fresh runner) the labels and who added them decide."""
    import bot.clients.github_client as gc

    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    db = tmp_path / "t.db"
    args = ["backlog", "--repo", "Codertocat/Hello-World", "--db", str(db), "--retry-errors",
            "--ollama-host", "http://127.0.0.1:11434"]  # fmt: skip
    # the login the cassette's bot writes as (with a personal access token from a shell, the
    # bot would ask GitHub for it once: tests/clients/test_bot_identity.py)
    env = {"GITHUB_TOKEN": "test-token-not-real", "TRIAGE_BOT_LOGIN": "github-actions[bot]"}
    captured: list[Any] = []
    with cassette("e2e_backlog_retry_errors", captured) as cass:
        result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    assert [(r.method, r.path) for r in captured] == [
        ("GET", "/repos/Codertocat/Hello-World/contents/.github/triage-bot.yml"),  # 404: none
        ("GET", "/repos/Codertocat/Hello-World/issues"),
        ("GET", "/repos/Codertocat/Hello-World/issues/3/events"),
        ("GET", "/repos/Codertocat/Hello-World/issues/4/events"),
        ("POST", "/api/chat"),
        ("POST", "/repos/Codertocat/Hello-World/labels"),
        ("POST", "/repos/Codertocat/Hello-World/issues/3/labels"),
        ("DELETE", "/repos/Codertocat/Hello-World/issues/3/labels/validator-error"),
    ]
    assert "backlog --retry-errors of Codertocat/Hello-World: 1 issue(s)" in result.stdout
    assert "#3: ready-for-dev" in result.stdout
    assert "#4: skipped, a maintainer set 'validator-error' by hand" in result.stdout
    store = Store(db, read_only=True)
    last = store.last_gate("Codertocat/Hello-World", 3)
    assert store.last_gate("Codertocat/Hello-World", 4) is None
    store.close()
    assert last is not None
    assert last["label"] == "ready-for-dev"
