"""The candidates' state: one GraphQL query for up to 20 issues, on recorded traffic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import IssueState
from bot.clients.issue_states import MAX_ISSUE_STATES, parse_issue_states, usable
from bot.errors import GitHubError, GitHubRateLimited
from tests.support import cassette

REPO = "Codertocat/Hello-World"


def _client() -> PyGithubClient:
    return PyGithubClient(token="test-token-not-real", retries=0, backoff_s=0.0)


def _node(number: int, *, state: str = "OPEN", locked: bool = False, repo: str = REPO) -> Any:
    return {
        "number": number,
        "state": state,
        "stateReason": None,
        "locked": locked,
        "repository": {"nameWithOwner": repo},
    }


def test_five_issues_are_read_in_one_request_and_the_gone_ones_are_absent() -> None:
    captured: list[Any] = []
    with cassette("github_issue_states", captured) as cass:
        states = _client().issue_states(REPO, [12, 7, 9, 4, 5])
    assert cass.play_count == 1
    sent = json.loads(captured[0].body)
    assert sent["variables"] == {"owner": "Codertocat", "name": "Hello-World"}
    for number in (12, 7, 9, 4, 5):
        assert f"i{number}: issue(number: {number})" in sent["query"]
    assert set(states) == {12, 7, 9}
    assert states[7] == IssueState(7, "CLOSED", False, REPO, "COMPLETED")
    assert states[9].locked


def test_only_open_or_closed_unlocked_issues_of_the_repository_are_usable() -> None:
    with cassette("github_issue_states"):
        states = _client().issue_states(REPO, [12, 7, 9, 4, 5])
    assert usable(states, REPO, [5, 7, 4, 9, 12]) == [7, 12]


def test_an_issue_answered_from_another_repository_is_not_usable() -> None:
    answer = {"data": {"repository": {"i3": _node(3, repo="Codertocat/Elsewhere"), "i8": _node(8)}}}
    states = parse_issue_states(answer, what="read")
    assert usable(states, REPO, [3, 8]) == [8]
    assert usable(states, REPO.upper(), [8]) == [8]


def test_no_numbers_cost_no_request() -> None:
    with cassette("github_no_requests") as cass:
        assert _client().issue_states(REPO, []) == {}
    assert cass.play_count == 0


def test_more_numbers_than_one_query_reads_are_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match=str(MAX_ISSUE_STATES)):
        _client().issue_states(REPO, range(1, MAX_ISSUE_STATES + 2))


def test_an_error_other_than_not_found_makes_the_states_unknown() -> None:
    answer = {
        "data": {"repository": {"i3": None, "i8": _node(8)}},
        "errors": [{"type": "FORBIDDEN", "path": ["repository", "i3"], "message": "no"}],
    }
    with pytest.raises(GitHubError, match="FORBIDDEN"):
        parse_issue_states(answer, what="read")


def test_a_repository_github_does_not_answer_is_an_error() -> None:
    answer = {"data": {"repository": None}, "errors": [{"type": "NOT_FOUND", "message": "x"}]}
    with pytest.raises(GitHubError, match="no repository"):
        parse_issue_states(answer, what="read")


def test_a_graphql_rate_limit_is_a_rate_limit() -> None:
    client = _client()

    def limited(*_: Any, **__: Any) -> Any:
        return {}, {"data": None, "errors": [{"type": "RATE_LIMITED", "message": "slow down"}]}

    client._gh.requester.requestJsonAndCheck = limited  # type: ignore[method-assign]
    with pytest.raises(GitHubRateLimited):
        client.issue_states(REPO, [1])
