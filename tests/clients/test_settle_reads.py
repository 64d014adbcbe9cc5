"""Settling's reads on recorded traffic: a merged pull request's threads, a comparison, and
what is gone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import ChangedFile, ThreadComment
from bot.clients.pull_history import parse_comparison, parse_pull_history
from bot.errors import GitHubError
from tests.support import cassette

REPO = "Codertocat/Hello-World"
OLD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
NEW = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"


def _client() -> PyGithubClient:
    return PyGithubClient(token="test-token-not-real", retries=0, backoff_s=0.0)


def test_a_merged_pull_request_is_read_in_one_graphql_request() -> None:
    captured: list[Any] = []
    with cassette("github_settle_merged_pull", captured) as cass:
        history = _client().pull_history(REPO, 2)
    assert cass.play_count == 1
    sent = json.loads(captured[0].body)
    assert sent["variables"] == {"owner": "Codertocat", "name": "Hello-World", "number": 2}
    assert "reviewThreads" in sent["query"]
    assert history is not None
    assert (history.state, history.head_sha, history.complete) == ("MERGED", NEW, True)
    assert history.merged_at == "2026-11-30T06:00:00+00:00"
    resolved, other = history.threads
    assert resolved.resolved
    assert resolved.comments == (
        ThreadComment(2179001, "github-actions", "src/limits.py", 13, OLD),
        ThreadComment(2179002, "Codertocat", "src/limits.py", 13, OLD),
    )
    assert not other.resolved
    assert other.comments[0].line is None  # a file-level comment


def test_a_comparison_is_one_request_with_one_commit_a_page() -> None:
    captured: list[Any] = []
    with cassette("github_settle_merged_pull", captured) as cass:
        client = _client()
        client.pull_history(REPO, 2)
        comparison = client.compare(REPO, OLD, NEW)
    assert cass.all_played
    assert cass.play_count == 2
    assert captured[-1].uri.endswith(f"/compare/{OLD}...{NEW}?per_page=1")
    assert comparison is not None
    assert (comparison.status, comparison.truncated) == ("ahead", False)
    limits, renamed, binary = comparison.files
    assert limits.patch is not None
    assert "-    return len(recent) <= MAX_UPLOADS" in limits.patch
    assert renamed == ChangedFile("src/rates.py", "renamed", None, "src/old_rates.py")
    assert binary.patch is None


def test_a_pull_request_and_a_head_github_no_longer_has_read_as_none() -> None:
    with cassette("github_settle_gone") as cass:
        client = _client()
        assert client.pull_history(REPO, 99) is None
        assert client.compare(REPO, "0" * 39 + "1", NEW) is None
    assert cass.all_played


def test_a_graphql_answer_with_another_error_and_no_pull_request_is_an_error() -> None:
    answer = {"data": {"repository": None}, "errors": [{"type": "FORBIDDEN", "message": "no"}]}
    with pytest.raises(GitHubError, match="FORBIDDEN"):
        parse_pull_history(answer, what="read")


def test_more_threads_than_one_query_reads_marks_the_history_incomplete() -> None:
    answer = {
        "data": {
            "repository": {
                "pullRequest": {
                    "number": 2,
                    "state": "MERGED",
                    "headRefOid": NEW,
                    "reviewThreads": {"pageInfo": {"hasNextPage": True}, "nodes": []},
                }
            }
        }
    }
    history = parse_pull_history(answer, what="read")
    assert history is not None
    assert history.complete is False


def test_a_comparison_listing_githubs_300_files_may_have_more() -> None:
    files = [{"filename": f"f{i}", "status": "modified"} for i in range(300)]
    assert parse_comparison({"status": "ahead", "files": files}, what="c").truncated
    assert not parse_comparison({"status": "ahead", "files": files[:299]}, what="c").truncated


def test_an_answer_that_is_not_a_comparison_is_an_error() -> None:
    with pytest.raises(GitHubError, match="not a comparison"):
        parse_comparison({"files": []}, what="compare")
