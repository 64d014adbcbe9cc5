"""The bot's labels are its own: it removes a gate label only when it added it.

``.github/triage-bot.yml`` may map a gate label onto a name the repository already uses
(``ready: {name: security}``); a NEEDS_REFINEMENT verdict then used to take ``security`` off
an issue a person had labelled. Now a gate label is removed only when the newest ``labeled``
event that added it to the issue is the bot's own login (GitHub's events, read once a run and
only when a removal is planned); any other is kept, and the run says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot import runner
from bot.clients.github_port import LabelEvent
from bot.config import Settings
from tests.support import FakeChatModel, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY

SHORT = "The app crashes when I click save."
PERSON = ("octocat", "User")
OTHER_APP = ("renovate[bot]", "Bot")


def _settings(tmp_path: Path, payload: Any, mapping: str, **kw: Any) -> Settings:
    rules = tmp_path / "triage-bot.yml"
    rules.write_text(f"labels:\n{mapping}", "utf-8")
    return Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "t.db",
        repo_file_path=rules,
        **kw,
    )


def _payload(action: str, body: str, labels: list[str]) -> Any:
    payload = load_webhook("issues.opened.18")
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "older text"}}
    payload["issue"]["body"] = body
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    return payload


def _labelled(github: FakeGitHub, name: str, who: tuple[str, str] | None) -> None:
    """``name`` on #1, its ``labeled`` events as ``who`` made them (``None``: no event)."""
    github.issue_labels[1].append(name)
    if who is not None:
        github.events[1].append(LabelEvent(name, *who))


# (the mapping, the verdict's reply and body, the gate label on the issue that goes stale)
MAPPINGS = [
    ("  ready: {name: security}\n", NEEDS_REPLY, SHORT, "security"),
    ("  needs_refinement: {name: question}\n", VALID_REPLY, COMPLETE_BODY, "question"),
    ("  validator_error: {name: bug}\n", NEEDS_REPLY, SHORT, "bug"),
]
WHO = [
    ("a person", [PERSON], False),
    ("another app", [OTHER_APP], False),
    ("no labeled event", [], False),
    ("the bot", [("github-actions[bot]", "Bot")], True),
    ("a person, then the bot again", [PERSON, ("github-actions[bot]", "Bot")], True),
    ("the bot, then a person again", [("github-actions[bot]", "Bot"), PERSON], False),
]


@pytest.mark.parametrize(("mapping", "reply", "body", "name"), MAPPINGS)
@pytest.mark.parametrize(("who", "events", "removed"), WHO, ids=[w[0] for w in WHO])
def test_a_mapped_gate_label_is_removed_only_when_the_bot_added_it(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    mapping: str,
    reply: str,
    body: str,
    name: str,
    who: str,
    events: list[tuple[str, str]],
    removed: bool,
) -> None:
    github.issue_labels[1].append(name)
    github.events[1].extend(LabelEvent(name, login, kind) for login, kind in events)
    model.enqueue(reply)
    report = runner.run_event(_settings(tmp_path, _payload("opened", body, [name]), mapping))
    assert (name in github.issue_labels[1]) is not removed
    assert (("remove_label", "1", name) in github.writes) is removed
    assert (f"kept {name} (not added by the bot)" in report.text) is not removed
    assert github.requests.count("label_events") == 1  # asked once, for the removal


@pytest.mark.parametrize("who", [PERSON, OTHER_APP, None], ids=["person", "app", "no event"])
def test_the_takeover_example_security_stays(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, who: tuple[str, str] | None
) -> None:
    """The issue's example, edited: ``ready`` mapped to ``security``, which someone other than
    the bot put on the issue; NEEDS_REFINEMENT adds the bot's label and keeps ``security``."""
    _labelled(github, "security", who)
    model.enqueue(NEEDS_REPLY)
    payload = _payload("edited" if who != PERSON else "opened", SHORT, ["security"])
    report = runner.run_event(_settings(tmp_path, payload, "  ready: {name: security}\n"))
    assert github.issue_labels[1] == ["security", "needs-refinement"]
    assert not any(w[0] == "remove_label" for w in github.writes)
    assert "kept security (not added by the bot)" in report.summary.replace("\\", "")


def test_the_bots_own_label_still_swaps(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """The bot's label, added by the bot: the verdict changes and the label swaps as before."""
    mapping = "  ready: {name: security}\n"
    model.enqueue(VALID_REPLY, NEEDS_REPLY)
    runner.run_event(_settings(tmp_path, _payload("opened", COMPLETE_BODY, []), mapping))
    assert github.issue_labels[1] == ["security"]
    runner.run_event(_settings(tmp_path, _payload("edited", SHORT, ["security"]), mapping))
    assert github.issue_labels[1] == ["needs-refinement"]


@pytest.mark.parametrize("configured", [True, False])
def test_with_a_personal_token_the_bots_user_is_its_own(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, configured: bool
) -> None:
    """A personal access token's writes are a User's: the bot's own login, configured or
    asked of GitHub once, tells its label from a person's."""
    github.bot_login, github.bot_type = "triage-maint", "User"
    mapping = "  ready: {name: security}\n"
    login = {"bot_login": "triage-maint"} if configured else {}
    model.enqueue(VALID_REPLY, NEEDS_REPLY)
    runner.run_event(_settings(tmp_path, _payload("opened", COMPLETE_BODY, []), mapping, **login))
    runner.run_event(_settings(tmp_path, _payload("opened", SHORT, ["security"]), mapping, **login))
    assert github.issue_labels[1] == ["needs-refinement"]
    assert github.requests.count("login") == (0 if configured else 1)


def test_nothing_is_read_when_nothing_is_to_be_removed(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    _labelled(github, "security", PERSON)
    model.enqueue(VALID_REPLY)
    payload = _payload("opened", COMPLETE_BODY, ["security"])
    runner.run_event(_settings(tmp_path, payload, "  ready: {name: security}\n"))
    assert "label_events" not in github.requests
    assert github.issue_labels[1] == ["security"]
