"""Settling through the PyGithub adapter, on the dataset's loopback GitHub (a real HTTP server
serving GitHub's wire shapes) and on its recording (cassettes/settle_issues.yaml): every kind
of decided issue, and every settling rule of an audited pull request, settles to the outcome
its history implies, at the requests the docs promise, on both stores."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.config import Settings
from bot.factory import make_github, make_store
from bot.history.record import DEFECT_TABLE, GATE_TABLE, DefectRow, cursor, put_defects
from bot.runner import run_settle
from bot.settle.budget import Budget
from bot.settle.pulls import PullsReport
from bot.settle.settling import ISSUES, settle_repo
from tests.support import cassette
from tests.support.dataset_server import LoopbackGitHub
from tests.support.dataset_world import MAINTAINER, REPO
from tests.support.pull_world import CASES, audited_pulls
from tests.support.settle_world import BOT, KINDS, decide_all, world


def _outcomes(db: str) -> dict[int, str]:
    store = make_store(Settings(db_path=db), read_only=True)
    try:
        rows = store.fetch(f"select issue, outcome from {GATE_TABLE}", [])
        return {int(n): str(o) for n, o in rows}
    finally:
        store.close()


def test_every_kind_settles_to_its_outcome_through_the_adapter(store_target: str) -> None:
    issues = world(3 * len(KINDS))
    want = {d.number: d.outcome for d in issues if d.outcome is not None}
    store = make_store(Settings(db_path=store_target))
    decide_all(store, issues)
    with LoopbackGitHub([d.scenario for d in issues], pulls_every=5) as github:
        client = make_github(Settings(github_token="t", github_api_url=github.base_url))
        report = settle_repo(client, store, REPO, Budget(200), bot_login=BOT)
        assert dict(github.requests) == {"list": 1, "graphql": 1, "timeline": len(want)}
    assert _outcomes(store_target) == want
    assert report.requests == 2 + len(want)
    assert report.stopped is None
    newest = max(d.scenario.item["updated_at"] for d in issues)
    assert cursor(store, REPO, ISSUES) == newest
    store.close()


def test_the_settle_command_on_the_loopback_reads_the_repository_file_first(
    tmp_path: Path,
) -> None:
    # The repository file renames the gate's needs-refinement label; the bot's own labels
    # under either name never count as a maintainer's.
    issues = world(len(KINDS))
    db = str(tmp_path / "kept.db")
    store = make_store(Settings(db_path=db))
    decide_all(store, issues)
    store.close()
    with LoopbackGitHub([d.scenario for d in issues], pulls_every=0) as github:
        env = {"GITHUB_TOKEN": "t", "GITHUB_API_URL": github.base_url, "TRIAGE_DB": db,
               "TRIAGE_BOT_LOGIN": BOT}  # fmt: skip
        result = CliRunner().invoke(main, ["settle", "--repo", REPO], env=env)
        assert result.exit_code == 0, result.output
        assert github.requests["contents"] == 1
        again = CliRunner().invoke(main, ["settle", "--repo", REPO, "--budget", "1"], env=env)
        assert again.exit_code == 0, again.output
    assert _outcomes(db) == {d.number: d.outcome for d in issues if d.outcome is not None}
    assert (
        "issues settled 3 agree, 2 disagree, 1 override; 1 unsettled; 1 unchanged; 9 request(s)"
        in result.output
    )
    assert "issues settled none; 0 unsettled; 1 unchanged; 1 request(s)" in again.output


def test_the_settle_command_on_recorded_traffic(store_target: str) -> None:
    # cassettes/settle_issues.yaml: one issue of each kind, a closed pull request among them.
    issues = world(len(KINDS))
    store = make_store(Settings(db_path=store_target))
    decide_all(store, issues)
    store.close()
    env = {"GITHUB_TOKEN": "t", "TRIAGE_DB": store_target, "TRIAGE_BOT_LOGIN": BOT}
    captured: list[Any] = []
    with cassette("settle_issues", captured) as cass:
        result = CliRunner().invoke(main, ["settle", "--repo", REPO], env=env)
    assert result.exit_code == 0, result.output
    assert cass.all_played
    assert _outcomes(store_target) == {d.number: d.outcome for d in issues if d.outcome}
    paths = [(r.method, r.path) for r in captured]
    assert paths[:3] == [
        ("GET", f"/repos/{REPO}/contents/.github/triage-bot.yml"),
        ("GET", f"/repos/{REPO}/issues"),
        ("POST", "/graphql"),
    ]
    decided = sorted(d.number for d in issues if d.verdict is not None)
    assert sorted(p for _, p in paths[3:]) == [
        f"/repos/{REPO}/issues/{n}/timeline" for n in decided
    ]
    listed = captured[1]
    assert dict(listed.query) == {
        "state": "all", "sort": "updated", "direction": "asc", "per_page": "100", "page": "1",
    }  # fmt: skip


def test_issues_then_audited_pull_requests_settle_over_http_and_resume(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", lambda _: None)  # PyGithub's 1 s between POSTs
    # triage-bot settle's path (bot.runner.run_settle) on the loopback GitHub: every issue kind
    # and every settling rule of an audited pull request once, and a pull request GitHub no
    # longer has (GraphQL's NOT_FOUND); the bot's login asked once a run (GraphQL viewer).
    issues = world(len(KINDS))
    audited = audited_pulls(len(CASES), first=len(KINDS) + 1)
    gone = DefectRow(REPO, 99, "c" * 40, "src/limits.py", 7, "logic", "fake-model", "p1")
    store = make_store(Settings(db_path=store_target))
    decide_all(store, issues)
    for pull in audited:
        put_defects(store, pull.defects)
    put_defects(store, [gone])
    store.close()
    want = {k: v for pull in audited for k, v in pull.expected.items()} | {(99, 7): "unmerged"}
    scenarios = [d.scenario for d in issues]
    with LoopbackGitHub(scenarios, pulls_every=0, audited=audited, login=BOT) as github:
        settings = Settings(github_token="t", github_api_url=github.base_url, db_path=store_target)
        # 1 viewer + 1 list + 1 GraphQL + 7 timelines = 10; the pull requests get 5
        first = run_settle(settings, REPO, budget=15)
        pulls = first.parts[0]
        assert isinstance(pulls, PullsReport)
        assert pulls.stopped is not None
        assert "budget" in pulls.stopped
        assert github.requests["viewer"] == 1
        second = run_settle(settings, REPO, budget=200)
        assert second.stopped is None
        rows = _defect_outcomes(store_target)
        assert rows == want
        assert all(n <= 3 for n in github.per_pull.values())  # one stopped between reads: 3
        assert sorted(github.per_issue.values()) == [1] * sum(
            1 for d in issues if d.verdict is not None
        )
        before = dict(github.requests)
        third = run_settle(settings, REPO, budget=200)
        spent = {k: v - before.get(k, 0) for k, v in github.requests.items() if v != before.get(k)}
        assert spent == {"contents": 1, "viewer": 1, "list": 1}
        third_pulls = third.parts[0]
        assert isinstance(third_pulls, PullsReport)
        assert (third_pulls.pulls_read, third_pulls.requests) == (0, 0)
    assert _outcomes(store_target) == {d.number: d.outcome for d in issues if d.outcome}
    assert _defect_outcomes(store_target) == want


def _defect_outcomes(db: str) -> dict[tuple[int, int], str]:
    store = make_store(Settings(db_path=db), read_only=True)
    try:
        rows = store.fetch(f"select pr, line, outcome from {DEFECT_TABLE}", [])
        return {(int(pr), int(line)): str(o) for pr, line, o in rows}
    finally:
        store.close()


def test_the_settle_command_with_a_persons_token_and_no_bot_login_settles_nothing(
    tmp_path: Path,
) -> None:
    # From a shell a maintainer runs it with their own token: GitHub's viewer is then that
    # maintainer, whose labels and questions would be left out as the bot's own, and the bot's
    # as nobody's, settling four of these seven wrongly, for good. It stops instead.
    issues = world(len(KINDS))
    db = str(tmp_path / "kept.db")
    store = make_store(Settings(db_path=db))
    decide_all(store, issues)
    store.close()
    with LoopbackGitHub([d.scenario for d in issues], pulls_every=0, login=MAINTAINER) as github:
        env = {"GITHUB_TOKEN": "t", "GITHUB_API_URL": github.base_url, "TRIAGE_DB": db,
               "TRIAGE_BOT_LOGIN": None}  # fmt: skip
        refused = CliRunner().invoke(main, ["settle", "--repo", REPO], env=env)
        assert refused.exit_code == 2, refused.output
        assert "TRIAGE_BOT_LOGIN" in refused.output
        assert MAINTAINER in refused.output
        assert github.requests["timeline"] == 0
        assert _outcomes(db) == {}
        # a bot that runs as a machine user says so, and is taken at its word
        env["TRIAGE_BOT_LOGIN"] = BOT
        done = CliRunner().invoke(main, ["settle", "--repo", REPO], env=env)
        assert done.exit_code == 0, done.output
    assert _outcomes(db) == {d.number: d.outcome for d in issues if d.outcome is not None}
