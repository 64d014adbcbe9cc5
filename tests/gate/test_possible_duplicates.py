"""The gate's possible duplicates (bot.gate.possible_duplicates, wired in bot.gate.pipeline)
through the runner on the fake GitHub and model: the issue written to the index, the earlier
similar issues listed in the plan and the step summary, and what a dry run, a store that does
not outlive the job, a payload without a creation time and a store fault do instead."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot import runner
from bot.cli import main
from bot.clients.github_port import IssueState
from bot.config import Settings
from bot.duplicates.rank import Ranker
from bot.duplicates.terms import issue_terms
from bot.duplicates.title_stage import VECTOR_MODEL
from bot.errors import GitHubUnavailable, StoreError
from bot.factory import make_store
from bot.gate.possible_duplicates import NO_INDEX, index_row
from bot.history.protocol import IndexedIssue
from bot.run_report import RunReport
from bot.settings_table import default_db_path
from tests.support import FakeChatModel, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.replies import COMPLETE_BODY, VALID_REPLY
from tests.support.title_encoder import WordHash
from tests.support.title_model_files import broken_title_model, short_vocabulary

REPO = "Codertocat/Hello-World"
BOT = "github-actions[bot]"
NUMBER = 1
TITLE = "Spelling error in the README file"
"""The recorded payload's title (created 2019-05-15)."""
HOSTILE_TITLE = (
    "Spelling error `x` <img src=x onerror=alert(1)> @octocat #12 \x1b[2J\n::error::boom"
)


def _earlier(number: int, title: str, day: int, body: str = "") -> IndexedIssue:
    return index_row(number, title, body, datetime(2019, 5, day, 9, 0, tzinfo=UTC))


def _fill(db: Path, rows: list[IndexedIssue]) -> None:
    """Index ``rows`` and twenty unrelated earlier issues (so the shared words are uncommon)."""
    store = make_store(Settings(db_path=str(db)))
    try:
        fillers = [_earlier(100 + n, f"unrelated{n} topic{n}", 1) for n in range(20)]
        store.index_issues(REPO, [*rows, *fillers])
    finally:
        store.close()


def _indexed(db: Path, number: int = NUMBER) -> IndexedIssue | None:
    store = make_store(Settings(db_path=str(db)), read_only=True)
    try:
        return store.indexed_issue(REPO, number)
    finally:
        store.close()


def _payload() -> dict[str, Any]:
    payload = load_webhook("issues.opened.18")
    payload["issue"].update(number=NUMBER, body=COMPLETE_BODY)
    return payload


def _settings(tmp_path: Path, payload: dict[str, Any], **kw: Any) -> Settings:
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=str(tmp_path / "triage.db"),
        bot_login=BOT,
    )
    return replace(base, **kw)


def _run(tmp_path: Path, payload: dict[str, Any] | None = None, **kw: Any) -> RunReport:
    return runner.run_event(_settings(tmp_path, payload or _payload(), **kw))


def _duplicates_line(report: RunReport) -> str:
    return next(line for line in report.text.splitlines() if line.startswith("duplicates: "))


@pytest.fixture(autouse=True)
def _all_open(github: FakeGitHub) -> None:
    """Every issue these tests index is an open issue of the repository (the listing reads
    its candidates' state)."""
    for n in range(1, 100):
        github.issue_states_now[n] = IssueState(n, "OPEN", False, REPO)


def _labelled(github: FakeGitHub) -> bool:
    return any(w[0] == "add_labels" and "ready-for-dev" in w for w in github.writes)


def test_a_run_indexes_the_issue_and_lists_an_earlier_similar_one(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README", 2), _earlier(8, "crash on start", 3)])
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path)
    line = _duplicates_line(report)
    assert line.startswith("duplicates: #7 ")
    assert "Spelling error in README" in line
    assert "#8" not in line  # nothing in common
    rendered = render(report.summary)
    assert "Possible duplicates" in rendered.text
    assert "Spelling error in README" in rendered.code
    stored = _indexed(db)
    assert stored is not None
    assert (stored.title, stored.body) == (TITLE, COMPLETE_BODY)
    assert stored.created_at == "2019-05-15T15:20:18Z"
    assert _labelled(github)
    assert report.warnings == []


@pytest.mark.title_model
def test_with_the_title_model_a_run_ranks_by_the_titles_meaning_and_keeps_their_vectors(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    earlier = [
        _earlier(7, "Spelling error in README", 2),
        _earlier(8, "Typo in the readme file", 3),
        _earlier(9, "crash on start", 4),
    ]
    _fill(db, earlier)
    model.enqueue(VALID_REPLY)
    line = _duplicates_line(_run(tmp_path))
    assert line.startswith("duplicates: #7 ")
    assert "#8 " in line
    assert "#9" not in line
    assert "words only" not in line
    store = make_store(Settings(db_path=str(db)))
    try:
        kept = store.title_vectors(REPO, VECTOR_MODEL, [7, 8, 9])
        assert sorted(kept) == [7, 8]  # the shortlist's, kept by the run; 9 was not retrieved
        words = Ranker(store, REPO).rank(issue_terms(TITLE, COMPLETE_BODY), exclude=NUMBER)
    finally:
        store.close()
    scores = dict(part.split(" ")[:2] for part in line.removeprefix("duplicates: ").split("; "))
    assert scores["#8"] != f"{next(c.score for c in words if c.number == 8):.2f}"


@pytest.mark.title_model
def test_a_broken_title_model_leaves_the_ranking_to_the_words_and_says_why(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """Weights of the right size but the wrong shapes: the issue is still labelled, listed by
    words, and the plan names the file that could not be loaded."""
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README", 2)])
    model.enqueue(VALID_REPLY)
    models = broken_title_model(tmp_path / "models", short_vocabulary)
    report = _run(tmp_path, models_dir=models)
    line = _duplicates_line(report)
    assert line.startswith("duplicates: #7 ")
    assert "ranked by words only: the title model cannot be loaded" in line
    assert "model.safetensors" in line
    assert "not said" in line
    summary = render(report.summary).text
    assert "ranked by words only: the title model cannot be loaded" in summary
    assert _labelled(github)
    assert "validator-error" not in str(github.writes)


def test_an_issue_with_a_lone_surrogate_is_indexed_listed_and_labelled(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README \udfff", 2)])
    payload = _payload()
    payload["issue"]["title"] = TITLE + " \ud800"
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, payload)
    assert _duplicates_line(report).startswith("duplicates: #7 ")
    stored = _indexed(db)
    assert stored is not None
    assert stored.title == TITLE + " \ufffd"
    assert _labelled(github)
    assert report.warnings == []


def test_a_later_issue_is_not_listed(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    later = index_row(9, TITLE, "", datetime(2019, 6, 1, tzinfo=UTC))
    _fill(db, [later])
    model.enqueue(VALID_REPLY)
    line = _duplicates_line(_run(tmp_path))
    assert line.startswith("duplicates: none scoring")
    assert "#9" not in line


def test_a_dry_run_writes_nothing_to_the_index_and_still_lists(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README", 2)])
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, dry_run=True)
    assert _duplicates_line(report).startswith("duplicates: #7 ")
    assert "Spelling error in README" in render(report.summary).code
    assert _indexed(db) is None
    assert github.writes == []


def test_a_dry_run_ranks_by_titles_and_keeps_no_vector(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README", 2)])
    encoder = WordHash()
    monkeypatch.setattr(runner, "load_titles", lambda settings: encoder)
    model.enqueue(VALID_REPLY)
    line = _duplicates_line(_run(tmp_path, dry_run=True))
    assert line.startswith("duplicates: #7 ")
    assert "words only" not in line
    assert encoder.calls  # the title stage ran
    store = make_store(Settings(db_path=str(db)), read_only=True)
    try:
        assert store.title_vectors(REPO, VECTOR_MODEL, [7]) == {}
    finally:
        store.close()
    assert github.writes == []


def test_an_empty_index_says_how_to_fill_it(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path)
    assert "duplicates: the index holds no other issue" in _duplicates_line(report)
    assert _indexed(tmp_path / "triage.db") is not None


def test_a_store_that_does_not_outlive_the_job_is_neither_read_nor_written(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(VALID_REPLY)
    settings = _settings(tmp_path, _payload(), runner_environment="github-hosted")
    settings = replace(settings, db_path=str(default_db_path(os.environ)))  # not set: default
    report = runner.run_event(settings)
    assert _duplicates_line(report) == f"duplicates: {NO_INDEX}"
    assert f"Possible duplicates: {NO_INDEX}" in render(report.summary).text
    assert report.warnings == []
    assert _labelled(github)
    assert _indexed(Path(settings.db_path)) is None


def test_a_payload_without_a_creation_time_is_not_ranked(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README", 2)])
    payload = _payload()
    del payload["issue"]["created_at"]
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, payload)
    assert _duplicates_line(report) == (
        "duplicates: not ranked: the payload gives no creation time"
    )
    assert _indexed(db) is None
    assert _labelled(github)


def test_a_store_fault_while_ranking_is_a_warning_and_the_gate_still_labels(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(tmp_path / "triage.db", [_earlier(7, "Spelling error in README", 2)])

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("disk I/O error")

    monkeypatch.setattr(Ranker, "rank", broken)
    model.enqueue(VALID_REPLY)
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, _payload())),
        "GITHUB_TOKEN": "t",
        "TRIAGE_DB": str(tmp_path / "triage.db"),
        "TRIAGE_BOT_LOGIN": BOT,
    }
    result = CliRunner().invoke(main, ["run"], env=env)
    assert result.exit_code == 0, result.output
    assert "duplicates: the index cannot be used: disk I/O error" in result.stdout
    assert "warning: duplicates: the index cannot be used: disk I/O error" in result.stderr
    assert _labelled(github)
    assert _indexed(tmp_path / "triage.db") is not None  # written before the fault


def test_a_hostile_candidate_title_is_inert_in_the_plan_and_the_summary(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _fill(tmp_path / "triage.db", [_earlier(7, HOSTILE_TITLE, 2, COMPLETE_BODY)])
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path)
    line = _duplicates_line(report)
    assert line.startswith("duplicates: #7 ")
    assert "\x1b" not in report.text
    assert "@octocat #12 \\x1b[2J ::error::boom" in line  # shown, escaped, on one line
    assert not any(ln.lstrip().startswith("::") for ln in report.text.splitlines())
    rendered = render(report.summary)
    assert "img" not in rendered.tags
    assert "onerror" not in rendered.attributes
    assert not rendered.mentions
    assert set(rendered.github_links) == {"#1", "#7"}  # the bot's own: the issue, the candidate
    assert any("<img src=x onerror=alert(1)> @octocat #12" in code for code in rendered.code)


@pytest.mark.title_model
def test_a_hostile_models_path_in_the_words_only_reason_is_inert(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """The reason the title model is not used names its folder: plain text in the plan line,
    inert markdown in the summary."""
    _fill(tmp_path / "triage.db", [_earlier(7, "Spelling error in README", 2)])
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, models_dir=tmp_path / HOSTILE_TITLE)
    line = _duplicates_line(report)
    assert "ranked by words only: the title model is not set up" in line
    assert "\x1b" not in report.text
    assert not any(ln.lstrip().startswith("::") for ln in report.text.splitlines())
    rendered = render(report.summary)
    assert "ranked by words only" in rendered.text
    assert "img" not in rendered.tags
    assert "onerror" not in rendered.attributes
    assert not rendered.mentions
    assert set(rendered.github_links) == {"#1", "#7"}


def test_a_title_model_failing_on_an_issue_leaves_the_words_ranking_and_the_label(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing:
        def encode(self, titles: Sequence[str]) -> Any:
            raise MemoryError("cannot allocate 3 MiB")

    monkeypatch.setattr(runner, "load_titles", lambda settings: Failing())
    _fill(tmp_path / "triage.db", [_earlier(7, "Spelling error in README", 2)])
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path)
    line = _duplicates_line(report)
    assert line.startswith("duplicates: #7 ")
    assert (
        "(ranked by words only: the title model failed: MemoryError: cannot allocate 3 MiB) "
        "(not said: a statement is measured with the title model" in line
    )
    assert _labelled(github)
    assert _indexed(tmp_path / "triage.db") is not None
    assert report.warnings == []


# --- the backlog: index writes only -------------------------------------------------------------
def _open_issues(github: FakeGitHub) -> None:
    github.open_issue_list = [
        {"number": n, "title": f"backlog issue {n} about parsing", "body": COMPLETE_BODY,
         "state": "open", "labels": [], "created_at": f"2019-05-0{n}T10:00:00Z"}
        for n in (2, 3)
    ] + [{"number": 4, "title": "no creation time", "body": COMPLETE_BODY, "state": "open",
          "labels": []}]  # fmt: skip


def test_the_backlog_indexes_each_judged_issue(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _open_issues(github)
    model.enqueue(VALID_REPLY, VALID_REPLY, VALID_REPLY)
    report = runner.run_backlog(Settings(github_token="t", db_path=str(tmp_path / "t.db")), REPO)
    assert report.warnings == []
    assert "duplicates" not in report.text
    for number in (2, 3):
        stored = _indexed(tmp_path / "t.db", number)
        assert stored is not None
        assert stored.title == f"backlog issue {number} about parsing"
        assert stored.created_at == f"2019-05-0{number}T10:00:00Z"
    assert _indexed(tmp_path / "t.db", 4) is None  # no creation time to rank it by


@pytest.mark.parametrize("where", ["dry run", "github-hosted"])
def test_the_backlog_does_not_index_on_a_dry_run_or_an_ephemeral_store(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, where: str
) -> None:
    _open_issues(github)
    db = tmp_path / "t.db"
    _fill(db, [])
    model.enqueue(VALID_REPLY, VALID_REPLY, VALID_REPLY)
    if where == "dry run":
        settings = Settings(github_token="t", db_path=str(db), dry_run=True)
    else:  # the default file on a GitHub-hosted runner
        db = default_db_path(os.environ)
        settings = Settings(github_token="t", db_path=str(db), runner_environment="github-hosted")
    report = runner.run_backlog(settings, REPO)
    assert "issue(s)" in report.text
    assert all(_indexed(db, n) is None for n in (2, 3))


def test_a_store_fault_while_indexing_the_backlog_is_a_warning(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.history.store import Store

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("disk I/O error")

    _open_issues(github)
    monkeypatch.setattr(Store, "index_issues", broken)
    model.enqueue(VALID_REPLY, VALID_REPLY, VALID_REPLY)
    report = runner.run_backlog(Settings(github_token="t", db_path=str(tmp_path / "t.db")), REPO)
    assert report.warnings == ["duplicates: 2 judged issue(s) not indexed: disk I/O error"]
    assert [w for w in github.writes if w[0] == "add_labels"]  # judged and labelled all the same


def test_a_deleted_or_transferred_candidates_title_is_never_shown_and_leaves_the_index(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """A title of an issue since deleted, or moved to a private repository, must not reach a
    public step summary or log."""
    db = tmp_path / "triage.db"
    secret = "Spelling error in README leaks the admin password"
    _fill(db, [_earlier(7, secret, 2), _earlier(8, "Spelling error in README", 3)])
    del github.issue_states_now[7]  # GitHub no longer has it here
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path)
    assert "admin password" not in report.text
    assert "admin password" not in report.summary
    line = _duplicates_line(report)
    assert line.startswith("duplicates: #8 ")
    assert "(#7 gone or locked)" in line
    assert github.requests.count("issue_states") == 1
    assert _indexed(db, 7) is None  # dropped, so later runs do not list it either
    assert _indexed(db, 8) is not None


def test_an_unreadable_state_hides_the_titles_and_says_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    db = tmp_path / "triage.db"
    _fill(db, [_earlier(7, "Spelling error in README", 2)])
    github.fail("issue_states", GitHubUnavailable("GitHub answered 502"))
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path)
    line = _duplicates_line(report)
    assert line.startswith("duplicates: #7 ")
    assert "Spelling error in README" not in report.text + report.summary
    assert "title not shown" in line
    assert _labelled(github)
    assert _indexed(db, 7) is not None  # not known to be gone: kept
