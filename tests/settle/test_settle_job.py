"""Settling in a job: the schedule run after its backlog (budget setting, a store that does not
outlive the job, a failure as a warning, the audited pull requests after the issues) and
``triage-bot settle`` (output, exit codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot import runner
from bot.cli import SETTLE_BUDGET, main
from bot.clients.github_port import DuplicateMark, EditHistory, IssuePage, SettlePort, TimelineItem
from bot.config import Settings
from bot.context import store_outlives_job
from bot.errors import GitHubUnavailable
from bot.factory import make_store
from bot.gate.issue_text import prepare_issue
from bot.history.protocol import GateRow
from bot.history.record import DEFECT_TABLE, GATE_TABLE, put_defects
from bot.neutralise import neutralise
from bot.settle.job import NO_LIVE_RECORD
from tests.support import write_payload
from tests.support.dataset_world import COMMIT, REPO, SHORT_BODY, T0, closed, issue_item, labeled
from tests.support.fake_github import FakeGitHub
from tests.support.pull_world import CASES, audited_pulls
from tests.support.settle_github import SettleGitHub

BOT = "github-actions[bot]"


@dataclass
class JobGitHub(FakeGitHub):
    """The job's fake GitHub, with the settling reads of :class:`SettleGitHub`."""

    world: SettleGitHub = field(default_factory=SettleGitHub)

    def updated_issues_page(self, repo: str, page: int, *, since: datetime | None) -> IssuePage:
        return self.world.updated_issues_page(repo, page, since=since)

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        return self.world.issue_timeline(repo, number)

    def edit_histories(self, node_ids: Any) -> dict[str, EditHistory]:
        return self.world.edit_histories(node_ids)

    def duplicate_marks(self, node_ids: Any) -> dict[str, tuple[DuplicateMark, ...]]:
        return self.world.duplicate_marks(node_ids)


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> JobGitHub:
    fake = JobGitHub()
    monkeypatch.setattr(runner, "make_github", lambda settings, **k: fake.built_for(None))
    return fake


def _decided(db: str, github: JobGitHub, count: int = 2) -> None:
    """``count`` issues the bot called VALID, fixed by a commit since: each agrees."""
    store = make_store(Settings(db_path=db))
    try:
        for n in range(1, count + 1):
            start = T0 + timedelta(hours=n)
            title = f"Export fails ({n})"
            item = issue_item(n, title=title, body=SHORT_BODY, created=start)
            events = [
                labeled(start + timedelta(minutes=1), "ready-for-dev", BOT, "Bot"),
                closed(start + timedelta(days=2), commit=COMMIT),
            ]
            github.world.put(item, events, updated=start + timedelta(days=2))
            sha = prepare_issue(title, SHORT_BODY, max_body_chars=6000).content_sha
            store.record_gate(
                GateRow(
                    repo=REPO, issue=n, event="issues.opened", verdict="VALID",
                    label="ready-for-dev", reason="r", error_kind=None, model="m",
                    prompt_version="v", prompt_tokens=1, output_tokens=1, duration_ms=1.0,
                    created_at=(start + timedelta(minutes=1)).isoformat(), content_sha=sha,
                )
            )  # fmt: skip
    finally:
        store.close()


def _outcomes(db: str) -> dict[int, str]:
    store = make_store(Settings(db_path=db), read_only=True)
    try:
        return {
            int(n): str(o) for n, o in store.fetch(f"select issue, outcome from {GATE_TABLE}", [])
        }
    finally:
        store.close()


def _scheduled(tmp_path: Path, db: str, **kw: Any) -> runner.RunReport:
    payload = write_payload(tmp_path, {"schedule": "17 * * * *"})
    settings = Settings(
        github_token="t", db_path=db, event_name="schedule", event_path=payload,
        repository=REPO, bot_login=BOT, **kw,
    )  # fmt: skip
    return runner.run_event(settings)


def test_the_schedule_run_settles_after_its_backlog(
    tmp_path: Path, github: JobGitHub, store_target: str
) -> None:
    _decided(store_target, github)
    report = _scheduled(tmp_path, store_target)
    assert "backlog --retry-errors of Codertocat/Hello-World: 0 issue(s)" in report.text
    assert "issues settled 2 agree; 0 unsettled; 0 unchanged; 4 request(s)" in report.text
    assert "### Settling Codertocat/Hello-World" in report.summary
    assert _outcomes(store_target) == {1: "agree", 2: "agree"}
    assert report.warnings == []


def test_the_schedule_run_stops_at_its_budget_and_the_next_resumes(
    tmp_path: Path, github: JobGitHub
) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github, count=3)
    report = _scheduled(tmp_path, db, settle_budget=3)  # list, GraphQL, one timeline
    assert "stopped: the request budget is spent" in report.text
    assert _outcomes(db) == {1: "agree"}
    _scheduled(tmp_path, db, settle_budget=200)
    assert _outcomes(db) == {1: "agree", 2: "agree", 3: "agree"}


def _audited(db: str, github: JobGitHub) -> None:
    """Two merged pull requests (10, 11), two defects each: on #10 a later commit replaced
    line 13; on #11 the author replied to the bot's review comment on it."""
    cases = {1: CASES[0], 2: CASES[5]}
    assert (CASES[0].expected, CASES[5].expected) == ("acted_on", "answered")
    store = make_store(Settings(db_path=db))
    try:
        for pull in audited_pulls(2, first=10, case_of=cases.__getitem__):
            github.pull_histories[pull.history.number] = pull.history
            github.comparisons.update(pull.comparisons)
            put_defects(store, pull.defects)
    finally:
        store.close()


def _defects(db: str) -> dict[tuple[int, int], str | None]:
    store = make_store(Settings(db_path=db), read_only=True)
    try:
        rows = store.fetch(f"select pr, line, outcome from {DEFECT_TABLE}", [])
        return {(int(pr), int(line)): (str(o) if o else None) for pr, line, o in rows}
    finally:
        store.close()


PULLS_SETTLED = (
    "settle:   pull requests read 2 (0 still open); defects settled 1 acted_on, 1 answered, "
    "2 not_acted_on; 4 request(s)"
)


def test_the_schedule_run_settles_the_audited_pull_requests_after_the_issues(
    tmp_path: Path, github: JobGitHub, store_target: str
) -> None:
    _decided(store_target, github)
    _audited(store_target, github)
    report = _scheduled(tmp_path, store_target)
    issues = "issues settled 2 agree; 0 unsettled; 0 unchanged; 4 request(s)"
    assert report.text.index(issues) < report.text.index(PULLS_SETTLED)
    shown = report.summary.index(neutralise(PULLS_SETTLED))  # the markdown of that line
    assert report.summary.index("### Settling Codertocat/Hello-World") < shown
    assert _outcomes(store_target) == {1: "agree", 2: "agree"}
    assert _defects(store_target) == {
        (10, 13): "acted_on", (10, 3): "not_acted_on",
        (11, 13): "answered", (11, 3): "not_acted_on",
    }  # fmt: skip
    # the pull requests' reads came after every issue read; the bot's login, known, not asked
    reads = [name for name, _ in github.reads if name in ("pull_history", "compare", "login")]
    assert reads == ["pull_history", "compare", "pull_history", "compare"]
    assert report.warnings == []


def test_the_pull_requests_get_what_the_issues_left_of_the_budget(
    tmp_path: Path, github: JobGitHub
) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    _audited(db, github)
    report = _scheduled(tmp_path, db, settle_budget=5)  # 4 for the issues, 1 left
    assert "issues settled 2 agree; 0 unsettled; 0 unchanged; 4 request(s)" in report.text
    pulls = "settle:   pull requests read 0 (0 still open); defects settled none; 1 request(s)"
    assert pulls in report.text
    assert neutralise(pulls) in report.summary
    assert "stopped: request budget spent (5 of 5 requests spent); the next run resumes" in (
        report.text
    )
    assert set(_defects(db).values()) == {None}  # #10 read, its comparison not: left whole
    again = _scheduled(tmp_path, db, settle_budget=200)
    assert "issues settled none; 0 unsettled; 1 unchanged; 1 request(s)" in again.text
    assert PULLS_SETTLED in again.text  # #10 read again: nothing of it was written
    assert _defects(db)[(11, 13)] == "answered"


def test_with_a_store_that_does_not_outlive_the_job_the_schedule_keeps_no_record(
    tmp_path: Path, github: JobGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    _decided(str(tmp_path / "xdg-data" / "triage-bot" / "triage.db"), github)
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.setenv("GITHUB_EVENT_NAME", "schedule")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(write_payload(tmp_path, {"schedule": "1 * * * *"})))
    monkeypatch.setenv("RUNNER_ENVIRONMENT", "github-hosted")
    monkeypatch.setenv("TRIAGE_BOT_LOGIN", BOT)
    import os

    settings = Settings.resolve({}, os.environ)
    report = runner.run_event(settings)
    assert f"settle:   {NO_LIVE_RECORD}" in report.text
    assert NO_LIVE_RECORD in report.summary
    assert github.world.total == 0


def test_a_budget_of_zero_turns_settling_off(tmp_path: Path, github: JobGitHub) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    report = _scheduled(tmp_path, db, settle_budget=0)
    assert "settle:" not in report.text
    assert github.world.total == 0


def test_a_failure_while_settling_is_a_warning_and_keeps_what_was_settled(
    tmp_path: Path, github: JobGitHub
) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    github.world.fail("graphql", GitHubUnavailable("read the edit history: 502", 502))
    report = _scheduled(tmp_path, db)
    assert report.warnings == ["settling stopped: read the edit history: 502"]
    assert "backlog --retry-errors" in report.text
    _scheduled(tmp_path, db)
    assert _outcomes(db) == {1: "agree", 2: "agree"}


def test_which_stores_outlive_the_job() -> None:
    hosted = {"runner_environment": "github-hosted"}
    assert not store_outlives_job(Settings(db_path="/home/runner/.local/share/t.db", **hosted))
    kept = Settings(db_path="/cache/t.db", explicit=frozenset({"db_path"}), **hosted)
    assert store_outlives_job(kept)
    assert store_outlives_job(Settings(db_path="postgresql://u@db.internal/triage", **hosted))
    assert store_outlives_job(Settings(db_path="/srv/t.db", runner_environment="self-hosted"))
    assert store_outlives_job(Settings(db_path="/srv/t.db"))  # a shell, outside Actions
    assert not store_outlives_job(Settings(**hosted))  # the default file


def test_the_job_github_is_a_settle_port(github: JobGitHub) -> None:
    assert isinstance(github, SettlePort)
    assert not isinstance(FakeGitHub(), SettlePort)


def _cli(*args: str, db: str, token: str | None = "t") -> Any:
    env = {"TRIAGE_DB": db, "TRIAGE_BOT_LOGIN": BOT, "GITHUB_TOKEN": token}
    return CliRunner().invoke(main, ["settle", *args], env=env, catch_exceptions=False)


def test_the_settle_command_prints_what_it_settled(tmp_path: Path, github: JobGitHub) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    result = _cli("--repo", REPO, db=db)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "settle:   Codertocat/Hello-World: issues settled 2 agree; 0 unsettled; "
        "0 unchanged; 4 request(s)"
    )
    assert "cursor: " in result.output
    again = _cli("--repo", REPO, db=db)
    assert "issues settled none; 0 unsettled; 1 unchanged; 1 request(s)" in again.output


def test_the_settle_command_starts_at_since_and_stops_at_its_budget(
    tmp_path: Path, github: JobGitHub
) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github, count=3)
    since = (T0 + timedelta(hours=2, days=2)).strftime("%Y-%m-%dT%H:%M:%S")
    result = _cli("--repo", REPO, "--since", since, "--budget", "3", db=db)
    assert result.exit_code == 0, result.output
    assert "stopped: the request budget is spent (3 of 3 requests spent)" in result.output
    assert _outcomes(db) == {2: "agree"}


def test_the_settle_command_exit_codes(tmp_path: Path, github: JobGitHub) -> None:
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    assert _cli("--repo", "not a repo", db=db).exit_code == 2
    assert _cli("--repo", REPO, "--budget", "0", db=db).exit_code == 2  # click's range
    github.world.fail("timeline", GitHubUnavailable("read the timeline: 502", 502), times=1)
    failed = _cli("--repo", REPO, db=db)
    assert failed.exit_code == 4
    assert "read the timeline: 502" in failed.output
    assert _cli("--repo", REPO, db=db).exit_code == 0
    assert _outcomes(db) == {1: "agree", 2: "agree"}
    assert SETTLE_BUDGET == 5000


def test_the_settle_command_without_a_token_says_so(tmp_path: Path) -> None:
    result = _cli("--repo", REPO, db=str(tmp_path / "kept.db"), token=None)
    assert result.exit_code == 2
    assert "no GitHub token" in result.output


def test_the_settle_command_refuses_a_since_in_the_future(
    tmp_path: Path, github: JobGitHub
) -> None:
    # A typo (2062 for 2026) would list nothing and say nothing: refused, before any request.
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    result = _cli("--repo", REPO, "--since", "2999-01-01", db=db)
    assert result.exit_code == 2
    assert "--since" in result.output
    assert "future" in result.output
    assert github.world.total == 0


def test_the_cursor_line_names_where_the_next_run_resumes(
    tmp_path: Path, github: JobGitHub
) -> None:
    # A --since after every issue lists none: the stored cursor stays, and the line says so.
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    first = _cli("--repo", REPO, db=db)
    stored = first.output.split("cursor: ", 1)[1].split()[0]
    later = (T0 + timedelta(days=200)).strftime("%Y-%m-%d")
    again = _cli("--repo", REPO, "--since", later, db=db)
    assert again.exit_code == 0, again.output
    assert f"cursor: {stored}" in again.output


def test_the_settle_command_on_a_repository_the_store_does_not_hold(
    tmp_path: Path, github: JobGitHub
) -> None:
    # GitHub's names ignore case, the store's do not: settling "codertocat/hello-world" would
    # list the whole repository, find no decision under that name and say it settled nothing.
    db = str(tmp_path / "kept.db")
    _decided(db, github)
    result = _cli("--repo", REPO.lower(), db=db)
    assert result.exit_code == 2
    assert f"--repo {REPO}" in result.output
    assert github.world.total == 0
    unknown = _cli("--repo", "someone/else", db=db)
    assert unknown.exit_code == 0, unknown.output
    assert "nothing to settle" in unknown.output
    assert github.world.total == 0


def test_the_settle_command_without_a_token_gives_no_dry_run_advice(tmp_path: Path) -> None:
    result = _cli("--repo", REPO, db=str(tmp_path / "kept.db"), token=None)
    assert result.exit_code == 2
    assert "--dry-run" not in result.output  # settle has none


def test_the_settle_help_names_the_pull_requests_too() -> None:
    result = CliRunner().invoke(main, ["settle", "--help"])
    assert "pull request" in " ".join(result.output.split())
