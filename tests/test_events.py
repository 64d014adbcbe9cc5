"""Routing real webhook payloads, and clear errors for malformed ones."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from bot.errors import EventError
from bot.events import IssuesEvent, Skip, load_payload, route_event
from tests.support import ROOT, load_webhook, write_payload


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


def _load_within(path: Path, seconds: float) -> BaseException | None:
    """What :func:`load_payload` raised on ``path``, run in a thread given ``seconds``; a
    load still blocked then fails the test (the FIFO is opened for writing and closed, so the
    blocked thread sees end of file and ends)."""
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            load_payload(path)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"load_payload({path}) still blocked after {seconds} s")
    return outcome[0]


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "event.fifo"
    os.mkfifo(path)
    return path


def _symlink_to_fifo(tmp_path: Path) -> Path:
    link = tmp_path / "event.json"
    link.symlink_to(_fifo(tmp_path))
    return link


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (_fifo, "a FIFO"),
        (_symlink_to_fifo, "a FIFO"),  # the link is followed, and what it names is checked
        (lambda tmp: Path("/dev/null"), "a character device"),
        (lambda tmp: Path("/dev/zero"), "a character device"),
        (lambda tmp: tmp, "a directory"),
    ],
)
def test_an_event_path_that_is_not_a_regular_file_is_refused_at_once(
    tmp_path: Path, make: Any, kind: str
) -> None:
    path = make(tmp_path)
    error = _load_within(path, 10)
    assert isinstance(error, EventError)
    assert str(error) == f"event file is {kind}, not a regular file: {path}"


def test_the_run_command_exits_3_on_a_fifo_event_path(tmp_path: Path) -> None:
    """The real process: ``triage-bot run`` with ``GITHUB_EVENT_PATH`` naming a FIFO no one
    writes to ends with exit 3 instead of waiting for a writer."""
    fifo = _fifo(tmp_path)
    env = {**os.environ, "GITHUB_EVENT_NAME": "issues", "GITHUB_EVENT_PATH": str(fifo)}
    env.pop("GITHUB_ACTIONS", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from bot.cli import main; main()", "run", "--dry-run"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("triage-bot run blocked on a FIFO event path")
    assert done.returncode == 3, done.stderr
    assert "event file is a FIFO, not a regular file" in done.stderr


def test_a_regular_file_behind_a_symlink_is_read(tmp_path: Path) -> None:
    target = write_payload(tmp_path, load_webhook("issues.opened.18"))
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert load_payload(link)["action"] == "opened"
