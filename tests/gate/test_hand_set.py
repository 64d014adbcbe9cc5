"""Who set a gate label is GitHub's answer, not the store's.

A gate label a person added by hand wins on ``edited``/``reopened``; the bot learns who added it
from the issue's ``labeled`` events (one read, only when the issue carries a gate label), so a
decision row lost after the labels were written, or an empty store on an ephemeral runner,
cannot turn the bot's own label into a "hand-set" one or a person's label into the bot's.

How these were checked against the code before the fix: the scenario tests below ran against a
scratch copy of the previous commit's ``bot/`` (same tests, same fake): the lost-row test was
skipped there as "a maintainer set 'needs-refinement' by hand" (one model call short, label
left stale) and the empty-store test judged the issue and overwrote the person's label with
``ready-for-dev``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot import gate, runner
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import LabelEvent
from bot.config import Settings
from bot.errors import ConfigError, GitHubNotFound, StoreError
from bot.events import IssuesEvent, route_event
from bot.gate.plan import asks_who_labelled, hand_set_gate_label
from bot.history.store import Store
from tests.support import FakeChatModel, cassette, load_webhook, write_payload
from tests.support.fake_github import CONFIG_READ, FakeGitHub
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY

REPO = "Codertocat/Hello-World"
VALID, NEEDS = VALID_REPLY, NEEDS_REPLY  # VALID stands on COMPLETE_BODY (tests/support/replies.py)
BOT = ("github-actions[bot]", "Bot")


def _payload(action: str, labels: list[str], body: str = COMPLETE_BODY) -> dict[str, Any]:
    name = {"opened": "issues.opened.18", "edited": "issues.edited.7"}
    payload = load_webhook(name.get(action, "issues.reopened.20"))
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "older text"}}
    payload["issue"]["body"] = body
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    return payload


def _run(tmp_path: Path, payload: dict[str, Any], db: str = "triage.db", **kw: Any) -> Any:
    settings = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / db,
        **kw,
    )
    return runner.run_event(settings)


def test_a_lost_decision_row_does_not_make_the_bots_label_hand_set(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's last row says ``ready-for-dev``; the bot then swapped the label to
    ``needs-refinement`` and its row could not be written. Before the fix the next edit was
    skipped as hand-set (store: last label ready-for-dev, issue: needs-refinement)."""
    model.enqueue(VALID, NEEDS, VALID)
    _run(tmp_path, _payload("opened", ["bug"]))
    assert github.issue_labels[1] == ["ready-for-dev"]

    with monkeypatch.context() as m:
        m.setattr(Store, "record_gate", _raise(StoreError("cannot write: database is locked")))
        with pytest.raises(StoreError):
            _run(tmp_path, _payload("edited", ["bug", "ready-for-dev"], "it broke"))
    assert github.issue_labels[1] == ["needs-refinement"]  # labels written, row lost

    edited = f"{COMPLETE_BODY}\nIt is the same on the main branch."
    report = _run(tmp_path, _payload("edited", ["bug", "needs-refinement"], edited))
    assert "by hand" not in report.text
    assert len(model.history) == 3
    assert github.issue_labels[1] == ["ready-for-dev"]
    store = Store(tmp_path / "triage.db", read_only=True)
    last = store.last_gate(REPO, 1)
    store.close()
    assert last is not None
    assert last["label"] == "ready-for-dev"


def test_on_an_empty_store_a_hand_set_label_is_not_overwritten(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """An ephemeral runner (Actions Runner Controller) starts each job with an empty store.
    Before the fix no row meant "not hand-set", and the edit overwrote the person's label."""
    github.label_by_hand(1, "needs-refinement", login="Codertocat")
    model.enqueue(VALID)
    report = _run(tmp_path, _payload("edited", ["bug", "needs-refinement"]), db="job-2.db")
    assert "a maintainer set 'needs-refinement' by hand" in report.text
    assert report.outputs["skipped"] == "true"
    assert model.history == []
    assert github.writes == []
    assert github.issue_labels[1] == ["needs-refinement"]


def test_on_an_empty_store_the_bots_own_label_is_judged_again(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(VALID, NEEDS)
    _run(tmp_path, _payload("opened", ["bug"]), db="job-1.db")
    report = _run(tmp_path, _payload("edited", ["bug", "ready-for-dev"], "x"), db="job-2.db")
    assert "by hand" not in report.text
    assert github.issue_labels[1] == ["needs-refinement"]


@pytest.mark.parametrize(("bot_login", "asked"), [("triage-maint", 0), (None, 1)])
def test_with_a_personal_token_the_bots_own_writes_are_known_as_its_own(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    bot_login: str | None,
    asked: int,
) -> None:
    """With a PAT the bot's labels are added by a User: its login, from TRIAGE_BOT_LOGIN or
    asked of GitHub once (``login``), says they are the bot's, not a person's."""
    github.bot_login, github.bot_type = "Triage-Maint", "User"  # logins compare case-blind
    model.enqueue(VALID, NEEDS)
    _run(tmp_path, _payload("opened", ["bug"]), db="job-1.db", bot_login=bot_login)
    before = len(github.requests)
    report = _run(
        tmp_path, _payload("edited", ["bug", "ready-for-dev"], "x"), db="job-2.db",
        bot_login=bot_login,
    )  # fmt: skip
    assert "by hand" not in report.text
    assert github.issue_labels[1] == ["needs-refinement"]
    assert github.requests[before:].count("login") == asked


def test_triage_judges_over_a_hand_set_label_and_leaves_it(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """``/triage`` judges the issue although a maintainer set its gate label; the bot adds its
    own label and removes only what it added, so the maintainer's label stays."""
    github.label_by_hand(1, "needs-refinement")
    model.enqueue(VALID)
    event = route_event("issues", _payload("edited", ["bug", "needs-refinement"]))
    assert isinstance(event, IssuesEvent)
    github.issue_texts[1] = (event.issue.title, event.issue.body)
    settings = Settings(github_token="t", db_path=tmp_path / "triage.db")
    with runner.job_context(settings) as job:
        report = gate.run(job, event, force=True)
    assert _label_reads(github) == [("label_events", "1")]  # for the removal, not the skip
    assert github.issue_labels[1] == ["needs-refinement", "ready-for-dev"]
    assert "kept needs-refinement (not added by the bot)" in report.text


def _label_reads(github: FakeGitHub) -> list[tuple[str, ...]]:
    """The reads of who labelled the issue (the author comment's lookup is another matter:
    tests/gate/test_author_comment.py)."""
    return [read for read in github.reads if read[0] == "label_events"]


@pytest.mark.parametrize(
    ("action", "labels", "reads"),
    [
        ("opened", ["bug"], 0),
        ("opened", ["bug", "ready-for-dev"], 0),  # nothing to remove
        ("opened", ["bug", "needs-refinement"], 1),  # to remove it: who added it?
        ("edited", ["bug"], 0),
        ("edited", ["bug", "Needs-Refinement"], 1),  # the hand-set check's read serves both
        ("reopened", ["ready-for-dev"], 1),
    ],
)
def test_github_is_asked_only_when_it_matters(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    action: str,
    labels: list[str],
    reads: int,
) -> None:
    model.enqueue(VALID)
    _run(tmp_path, _payload(action, labels))
    assert _label_reads(github) == [("label_events", "1")] * reads


def test_a_replayed_decision_is_skipped_before_asking_github(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(VALID)
    payload = _payload("edited", ["bug", "ready-for-dev"])
    _run(tmp_path, payload)
    github.reads.clear()
    report = _run(tmp_path, payload)
    assert "unchanged since the bot's last decision" in report.text
    assert github.reads == [CONFIG_READ]  # the configuration only


def test_a_dry_run_asks_github_without_requiring_a_token(
    tmp_path: Path, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, calls = FakeGitHub(), []
    fake.label_by_hand(1, "needs-refinement")

    def make_github(settings: Settings, *, token_required: bool = True) -> FakeGitHub:
        calls.append(token_required)
        return fake

    monkeypatch.setattr(runner, "make_github", make_github)
    report = _run(tmp_path, _payload("edited", ["needs-refinement"]), dry_run=True)
    assert "a maintainer set 'needs-refinement' by hand" in report.text
    assert calls == [False]  # one client for the job: the configuration read, then the events


def _raise(exc: Exception) -> Any:
    def fail(*_: Any, **__: Any) -> Any:
        raise exc

    return fail


# --- the rule itself ------------------------------------------------------------------------


def _event(action: str, labels: list[str]) -> IssuesEvent:
    event = route_event("issues", _payload(action, labels))
    assert isinstance(event, IssuesEvent)
    return event


def _ev(label: str, who: tuple[str, str] | None) -> LabelEvent:
    return LabelEvent(label, who[0] if who else None, who[1] if who else None)


PERSON = ("Codertocat", "User")


@pytest.mark.parametrize(
    ("action", "labels", "events", "bot_login", "expected"),
    [
        ("edited", ["needs-refinement"], [_ev("needs-refinement", PERSON)], None,
         "needs-refinement"),
        ("reopened", ["Ready-For-Dev"], [_ev("ready-for-dev", PERSON)], None, "Ready-For-Dev"),
        # the newest labeled event decides: a person first, then the bot re-added it
        ("edited", ["ready-for-dev"],
         [_ev("ready-for-dev", PERSON), _ev("ready-for-dev", BOT)], None, None),
        ("edited", ["ready-for-dev"],
         [_ev("ready-for-dev", BOT), _ev("ready-for-dev", PERSON)], None, "ready-for-dev"),
        # a person's label next to the bot's stale one is still theirs
        ("edited", ["ready-for-dev", "needs-refinement"],
         [_ev("ready-for-dev", BOT), _ev("needs-refinement", PERSON)], None, "needs-refinement"),
        ("edited", ["needs-refinement"], [_ev("needs-refinement", PERSON)], "codertocat", None),
        ("edited", ["needs-refinement"], [_ev("needs-refinement", ("some-app[bot]", "Bot"))],
         None, None),
        ("edited", ["needs-refinement"], [_ev("needs-refinement", None)], None, None),
        ("edited", ["needs-refinement"], [], None, None),  # no event: not shown to be a person's
        ("edited", ["bug"], [_ev("bug", PERSON)], None, None),  # not a gate label
        ("opened", ["needs-refinement"], [_ev("needs-refinement", PERSON)], None, None),
    ],
)  # fmt: skip
def test_hand_set_rule(
    action: str,
    labels: list[str],
    events: list[LabelEvent],
    bot_login: str | None,
    expected: str | None,
) -> None:
    event = _event(action, labels)
    own = bot_login or "github-actions[bot]"
    assert hand_set_gate_label(event, events, login=lambda: own) == expected


def test_asks_only_for_edited_or_reopened_issues_with_a_gate_label() -> None:
    assert asks_who_labelled(_event("edited", ["bug", "validator-error"]))
    assert asks_who_labelled(_event("reopened", ["ready-for-dev"]))
    assert not asks_who_labelled(_event("edited", ["bug"]))
    assert not asks_who_labelled(_event("opened", ["ready-for-dev"]))


# --- the PyGithub adapter against recorded answers ------------------------------------------


def _client() -> PyGithubClient:
    return PyGithubClient(
        token="test-token-not-real", retries=2, backoff_s=0.0, seconds_between_writes=0.0
    )


def test_label_events_are_read_in_one_request_with_their_removals() -> None:
    captured: list[Any] = []
    with cassette("github_issue_events_hand_set", captured) as cass:
        events = _client().label_events(REPO, 1)
    assert cass.play_count == 1
    (request,) = captured
    assert request.method == "GET"
    assert request.path == "/repos/Codertocat/Hello-World/issues/1/events"
    assert [(e.label, e.actor_login, e.actor_type, e.removed) for e in events] == [
        ("bug", "Codertocat", "User", False),
        ("ready-for-dev", "github-actions[bot]", "Bot", False),
        ("ready-for-dev", "Codertocat", "User", True),
        ("needs-refinement", "Codertocat", "User", False),
    ]
    own = lambda: "github-actions[bot]"  # noqa: E731
    edited = _event("edited", ["bug", "needs-refinement"])
    assert hand_set_gate_label(edited, events, login=own) == "needs-refinement"
    assert (
        hand_set_gate_label(_event("edited", ["bug", "ready-for-dev"]), events, login=own) is None
    )


def test_label_events_of_a_deleted_issue_is_not_found_with_exit_code_4() -> None:
    with cassette("github_issue_events_404"), pytest.raises(GitHubNotFound) as info:
        _client().label_events(REPO, 1)
    assert info.value.exit_code == 4
    assert "list events of Codertocat/Hello-World#1" in str(info.value)


def test_the_bot_login_setting_comes_from_the_action_input_or_the_environment() -> None:
    env = {"TRIAGE_BOT_LOGIN": "triage-maint", "INPUT_BOT-LOGIN": "octo-bot[bot]"}
    assert Settings.resolve({}, env).bot_login == "octo-bot[bot]"
    assert Settings.resolve({}, {"TRIAGE_BOT_LOGIN": "triage-maint"}).bot_login == "triage-maint"
    assert Settings.resolve({}, {}).bot_login is None
    for bad in ("two words", "-dash", "x" * 40, "name@host"):
        with pytest.raises(ConfigError, match="TRIAGE_BOT_LOGIN"):
            Settings.resolve({}, {"TRIAGE_BOT_LOGIN": bad})
