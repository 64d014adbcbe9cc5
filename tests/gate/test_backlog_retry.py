"""Recovery after an outage: `backlog --retry-errors` and the scheduled run.

Each test first has an "outage": the plain backlog judges the open issues while the model is
unreachable, so each gets `validator-error` and a decision row, as a real outage leaves them.
GitHub is the stateful fake (labels, `labeled` events with their actors, reads and writes);
the model is the scripted fake.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot import runner
from bot.config import Settings
from bot.errors import ConfigError, ModelOutputError, ModelUnavailable
from bot.history.store import Store
from bot.repo_file import parse_repo_file
from tests.support import FakeChatModel, write_payload
from tests.support.fake_github import CONFIG_READ_DEFAULT, FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE, NEEDS_REPLY, VALID_REPLY

REPO = "Codertocat/Hello-World"
DOWN = ModelUnavailable("Ollama at http://127.0.0.1:11434 is unreachable: ConnectError")
ERROR, READY, NEEDS = "validator-error", "ready-for-dev", "needs-refinement"


class Interrupted(Exception):
    """The job was cancelled mid-run (a runner restart, a cancelled workflow, Ctrl-C)."""


@pytest.fixture
def github(github: FakeGitHub) -> FakeGitHub:
    fake = github
    fake.open_issue_list = [
        {"number": n, "title": COMPLETE_TITLE, "body": COMPLETE_BODY, "state": "open", "labels": []}
        for n in (1, 2, 3, 4)
    ]
    return fake


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(github_token="t", db_path=tmp_path / "triage.db", **kw)


def _backlog(tmp_path: Path, github: FakeGitHub, **kw: Any) -> runner.RunReport:
    return runner.run_backlog(_settings(tmp_path), REPO, **kw)


def _outage(tmp_path: Path, github: FakeGitHub, model: FakeChatModel) -> None:
    """Open issues (#1-#4) are judged while Ollama is down: each gets validator-error and a row."""
    model.enqueue(*[DOWN] * len(github.open_issue_list))
    _backlog(tmp_path, github)
    assert {n: github.issue_labels[n] for n in (1, 2, 3, 4)} == {n: [ERROR] for n in (1, 2, 3, 4)}
    assert not any(github.bot_comments(n) for n in (1, 2, 3, 4))  # the fault is the bot's
    model.history.clear()
    github.writes.clear()
    github.reads.clear()


def _last(tmp_path: Path, number: int) -> dict[str, Any]:
    store = Store(tmp_path / "triage.db", read_only=True)
    try:
        last = store.last_gate(REPO, number)
    finally:
        store.close()
    assert last is not None
    return last


def _judged(report: runner.RunReport) -> list[int]:
    """Issue numbers judged, in order, from the report's lines (``#N: label (…)``)."""
    return [
        int(line.split(":")[0][1:])
        for line in report.text.splitlines()[1:]
        if line.startswith("#") and "skipped" not in line
    ]


def test_retry_errors_rejudges_exactly_the_validator_error_issues(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _outage(tmp_path, github, model)
    # Since then: a maintainer gave #2 a verdict by hand; another re-added validator-error on
    # #3 by hand (it stays); #5 was opened and never judged (the plain backlog's, not ours).
    github.remove_label(REPO, 2, ERROR)
    github.label_by_hand(2, NEEDS)
    github.remove_label(REPO, 3, ERROR)
    github.label_by_hand(3, ERROR)
    github.open_issue_list.append(
        {"number": 5, "title": COMPLETE_TITLE, "body": COMPLETE_BODY, "state": "open", "labels": []}
    )
    github.writes.clear()
    model.enqueue(VALID_REPLY, NEEDS_REPLY)

    report = _backlog(tmp_path, github, retry_errors=True)

    assert _judged(report) == [1, 4]
    assert len(model.history) == 2
    assert github.issue_labels[1] == [READY]
    assert github.issue_labels[4] == [NEEDS]
    assert github.issue_labels[2] == [NEEDS]  # a verdict by hand: not an error issue any more
    assert github.issue_labels[3] == [ERROR]  # hand-set: never touched
    assert github.issue_labels[5] == []
    assert "#3: skipped, a maintainer set 'validator-error' by hand" in report.text
    assert "backlog --retry-errors of Codertocat/Hello-World: 2 issue(s)" in report.text
    assert ("label_events", "2") not in github.reads  # only issues that carry validator-error
    assert {w for w in github.writes if w[0] != "create_label"} == {
        ("add_labels", "1", READY), ("remove_label", "1", ERROR),
        ("add_labels", "4", NEEDS), ("remove_label", "4", ERROR),
        ("create_comment", "4"),  # the author of #4 is told now what to add (none in the outage)
    }  # fmt: skip
    assert len(github.bot_comments(4)) == 1
    assert (_last(tmp_path, 1)["label"], _last(tmp_path, 4)["label"]) == (READY, NEEDS)
    assert _last(tmp_path, 3)["label"] == ERROR  # no new row for the hand-set one


def test_an_issue_whose_label_was_removed_is_retried_from_the_store(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """No gate label, but the store's last decision is validator-error: retried."""
    _outage(tmp_path, github, model)
    github.remove_label(REPO, 2, ERROR)
    github.writes.clear()
    github.open_issue_list = [i for i in github.open_issue_list if i["number"] == 2]
    model.enqueue(VALID_REPLY)
    report = _backlog(tmp_path, github, retry_errors=True)
    assert _judged(report) == [2]
    assert github.issue_labels[2] == [READY]
    # the store's label is not on the listed issue: its events say the bot's removal took it
    # off, so nothing is removed (no DELETE) and only the new label is written
    assert github.reads == [CONFIG_READ_DEFAULT, ("open_issues", REPO), ("label_events", "2")]
    assert ("remove_label", "2", ERROR) not in github.writes


def test_retry_errors_resumes_after_an_interruption(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _outage(tmp_path, github, model)
    model.enqueue(VALID_REPLY, NEEDS_REPLY)

    def interrupt(done: int, total: int) -> None:
        if done == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        _backlog(tmp_path, github, retry_errors=True, on_progress=interrupt)
    assert github.issue_labels[1] == [READY]
    assert github.issue_labels[2] == [NEEDS]
    assert github.issue_labels[3] == github.issue_labels[4] == [ERROR]

    model.enqueue(VALID_REPLY, VALID_REPLY)
    report = _backlog(tmp_path, github, retry_errors=True)
    assert _judged(report) == [3, 4]  # only those left; nothing judged twice
    assert len(model.history) == 4
    assert [github.issue_labels[n] for n in (1, 2, 3, 4)] == [[READY], [NEEDS], [READY], [READY]]

    again = _backlog(tmp_path, github, retry_errors=True)
    assert "0 issue(s)" in again.text
    assert len(model.history) == 4


def test_an_issue_that_fails_again_waits_behind_those_not_yet_retried(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """Oldest decision first: with --limit, a run never spends its turns on the same issues."""
    _outage(tmp_path, github, model)
    model.enqueue(ModelOutputError("not JSON"), VALID_REPLY)
    first = _backlog(tmp_path, github, retry_errors=True, limit=2)
    assert _judged(first) == [1, 2]
    assert github.issue_labels[1] == [ERROR]  # failed again (not an outage: the run goes on)
    model.enqueue(VALID_REPLY, VALID_REPLY)
    second = _backlog(tmp_path, github, retry_errors=True, limit=2)
    assert _judged(second) == [3, 4]
    model.enqueue(VALID_REPLY)
    third = _backlog(tmp_path, github, retry_errors=True, limit=2)
    assert _judged(third) == [1]


def test_a_run_during_the_outage_stops_at_the_first_issue(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _outage(tmp_path, github, model)
    model.enqueue(DOWN)
    report = _backlog(tmp_path, github, retry_errors=True)
    assert _judged(report) == [1]
    assert len(model.history) == 1
    stopped = "stopped: the model is still out (model_unavailable); 3 issue(s) left"
    assert stopped in report.text
    assert report.warnings == [stopped + " for the next run"]
    assert github.writes == []  # validator-error is already on #1
    model.enqueue(*[VALID_REPLY] * 4)
    assert _judged(_backlog(tmp_path, github, retry_errors=True)) == [2, 3, 4, 1]


def test_retry_errors_does_nothing_when_there_are_none(
    tmp_path: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    github.issue_labels[1] = [READY]
    github.issue_labels[2] = [NEEDS]

    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no issue to judge: no model is built")

    monkeypatch.setattr(runner, "make_chat_model", no_model)
    report = _backlog(tmp_path, github, retry_errors=True)
    assert "backlog --retry-errors of Codertocat/Hello-World: 0 issue(s)" in report.text
    assert github.writes == []
    assert github.reads == [CONFIG_READ_DEFAULT, ("open_issues", REPO)]
    assert report.warnings == []


def test_the_schedule_event_runs_retry_errors_on_the_workflows_repository(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _outage(tmp_path, github, model)
    model.enqueue(*[VALID_REPLY] * 4)
    payload = write_payload(tmp_path, {"schedule": "17 * * * *"})
    settings = _settings(tmp_path, event_name="schedule", event_path=payload, repository=REPO)
    report = runner.run_event(settings)
    assert "backlog --retry-errors of Codertocat/Hello-World: 4 issue(s)" in report.text
    assert [github.issue_labels[n] for n in (1, 2, 3, 4)] == [[READY]] * 4

    no_repo = _settings(tmp_path, event_name="schedule", event_path=payload)
    with pytest.raises(ConfigError, match="GITHUB_REPOSITORY"):
        runner.run_event(no_repo)


def test_the_cli_limit_default_is_the_gates() -> None:
    from bot.cli import backlog
    from bot.gate.backlog import BACKLOG_LIMIT

    (limit,) = [p for p in backlog.params if p.name == "limit"]
    assert limit.default == BACKLOG_LIMIT


# --- label names from the repository file ------------------------------------------------------

MARKUP_NAMES = [
    "![x](https://example.com/x.png)",
    "@octocat ready",
    "<img src=x onerror=alert(1)>",
    "ready | | table",
    "`ready`` #12",
]


@pytest.mark.parametrize("name", MARKUP_NAMES)
def test_a_renamed_gate_label_is_inert_in_the_backlog_summary(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, name: str
) -> None:
    """The step summary names each gate label as code: no image, mention, tag or table cell
    of the name's own reaches the page."""
    repo_file = tmp_path / "triage-bot.yml"
    repo_file.write_text(yaml.safe_dump({"labels": {"ready": {"name": name}}}), "utf-8")
    github.open_issue_list = github.open_issue_list[:1]
    model.enqueue(VALID_REPLY)
    report = runner.run_backlog(_settings(tmp_path, repo_file_path=repo_file), REPO)
    rendered = render(report.summary)
    assert not (rendered.tags.keys() - {"p", "code"}), rendered.html
    assert not rendered.mentions
    assert not rendered.github_links
    assert name in rendered.code


@pytest.mark.parametrize(
    "char", ["\n", "\r", "\x00", "\x1b", "\x85", "\u2028", "\u2029", "\u202e", "\u2066", "\x7f"]
)
@pytest.mark.parametrize("where", ["labels", "skip", "dataset"])
def test_a_label_name_with_a_control_character_is_refused_at_load(
    tmp_path: Path, char: str, where: str
) -> None:
    name = f"ready{char}::error::x"
    data = {
        "labels": {"labels": {"ready": {"name": name}}},
        "skip": {"skip": {"labels": [name]}},
        "dataset": {"dataset": {"needs_info_labels": [name]}},
    }[where]
    with pytest.raises(ConfigError, match="control character"):
        parse_repo_file(yaml.safe_dump(data))
