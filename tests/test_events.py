"""Routing real webhook payloads, and clear errors for malformed ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import EventError
from bot.events import IssuesEvent, Skip, load_payload, route_event
from tests.support import load_webhook, write_payload


@pytest.mark.parametrize("name", ["issues.opened.18", "issues.reopened.20"])
def test_opened_and_reopened_run_the_gate(name: str) -> None:
    event = route_event("issues", load_webhook(name))
    assert isinstance(event, IssuesEvent)
    assert event.repository.full_name == "Codertocat/Hello-World"
    assert event.issue.number == 1
    assert event.issue.label_names == ["bug"]


def test_edit_without_title_or_body_change_is_skipped() -> None:
    routed = route_event("issues", load_webhook("issues.edited.7"))
    assert isinstance(routed, Skip)
    assert "neither the title nor the body" in routed.reason


@pytest.mark.parametrize("field", ["title", "body"])
def test_edit_of_title_or_body_runs_the_gate(field: str) -> None:
    payload = load_webhook("issues.edited.7")
    payload["changes"] = {field: {"from": "old text"}}
    assert isinstance(route_event("issues", payload), IssuesEvent)


@pytest.mark.parametrize(
    ("event_name", "name", "needle"),
    [
        ("issues", "issues.labeled.9", "issues.labeled"),
        ("pull_request", "pull_request.closed.3", "pull_request.closed"),
        ("pull_request_target", "pull_request.converted_to_draft.5", "converted_to_draft"),
        ("issue_comment", "issue_comment.edited.7", "issue_comment.edited is not a command"),
        ("push", "issues.opened.18", "'push'"),
    ],
)
def test_other_events_are_skipped_with_a_reason(event_name: str, name: str, needle: str) -> None:
    routed = route_event(event_name, load_webhook(name))
    assert isinstance(routed, Skip)
    assert needle in routed.reason


def test_closed_issue_is_skipped() -> None:
    payload = load_webhook("issues.opened.18")
    payload["issue"]["state"] = "closed"
    assert isinstance(route_event("issues", payload), Skip)


def test_null_body_is_accepted() -> None:
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = None
    event = route_event("issues", payload)
    assert isinstance(event, IssuesEvent)
    assert event.issue.body is None


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda p: p.pop("issue"), "issue"),
        (lambda p: p["issue"].pop("number"), "issue.number"),
        (lambda p: p["issue"].update(number="one"), "issue.number"),
        (lambda p: p["issue"].update(number=-3), "issue.number"),
        (lambda p: p["issue"].update(title=None), "issue.title"),
        (lambda p: p["issue"].update(labels=None), "issue.labels"),
        (lambda p: p.pop("repository"), "repository"),
        (lambda p: p["repository"].update(full_name="../../etc"), "repository.full_name"),
    ],
)
def test_malformed_issues_payload_is_a_clear_event_error(mutate: object, needle: str) -> None:
    payload = load_webhook("issues.opened.18")
    mutate(payload)  # type: ignore[operator]
    with pytest.raises(EventError, match="malformed issues payload") as info:
        route_event("issues", payload)
    assert needle in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EventError, match="not found"):
        load_payload(tmp_path / "nope.json")


@pytest.mark.parametrize(
    ("content", "needle"),
    [("{not json", "not valid JSON"), ("[1, 2]", "JSON object"), ("", "not valid JSON")],
)
def test_unreadable_payloads(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "event.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(EventError, match=needle):
        load_payload(path)


def test_non_utf8_payload(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(EventError, match="unreadable"):
        load_payload(path)


def test_real_payload_round_trips_through_file(tmp_path: Path) -> None:
    path = write_payload(tmp_path, load_webhook("issues.opened.18"))
    assert load_payload(path)["action"] == "opened"


@pytest.mark.parametrize(
    "name",
    [
        "pull_request.opened.0",
        "pull_request.synchronize.22",
        "pull_request.reopened.18",
        "pull_request.ready_for_review.15",
    ],
)
@pytest.mark.parametrize("event_name", ["pull_request_target", "pull_request"])
def test_pull_request_actions_run_the_audit(event_name: str, name: str) -> None:
    from bot.events import PullRequestEvent

    event = route_event(event_name, load_webhook(name))
    assert isinstance(event, PullRequestEvent)
    assert event.pull_request.number == 2
    assert event.pull_request.head.sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


def test_draft_pull_request_is_skipped() -> None:
    payload = load_webhook("pull_request.opened.0")
    payload["pull_request"]["draft"] = True
    routed = route_event("pull_request_target", payload)
    assert isinstance(routed, Skip)
    assert "draft" in routed.reason


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda p: p["pull_request"]["head"].update(sha="not-a-sha"), "pull_request.head.sha"),
        (lambda p: p["pull_request"].pop("number"), "pull_request.number"),
        (lambda p: p.pop("pull_request"), "pull_request"),
    ],
)
def test_malformed_pull_request_payload(mutate: object, needle: str) -> None:
    payload = load_webhook("pull_request.opened.0")
    mutate(payload)  # type: ignore[operator]
    with pytest.raises(EventError, match="malformed pull_request_target payload") as info:
        route_event("pull_request_target", payload)
    assert needle in str(info.value)
