"""The PyGithub adapter against recorded GitHub traffic (cassettes/github_*.yaml)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.clients.github_client import PyGithubClient
from bot.errors import GitHubAuthError, GitHubNotFound
from bot.gate.labels import LABEL_FOR_VERDICT, VALIDATOR_ERROR, GateLabel, plan_labels
from bot.gate.plan import apply_gate
from tests.support import CASSETTES, cassette, make_plan

REPO = "Codertocat/Hello-World"


def _client() -> PyGithubClient:
    return PyGithubClient(
        token="test-token-not-real", retries=2, backoff_s=0.0, seconds_between_writes=0.0
    )


def _plan(current: list[str], target: GateLabel) -> Any:
    return make_plan(plan_labels(current, target))


def test_new_label_is_created_then_added_in_two_requests() -> None:
    captured: list[Any] = []
    plan = _plan(["bug"], LABEL_FOR_VERDICT["VALID"])
    with cassette("github_gate_new_label", captured) as cass:
        applied = apply_gate(plan, _client())
    assert cass.play_count == applied.requests == 2
    create, add = captured
    assert (create.method, create.path) == ("POST", "/repos/Codertocat/Hello-World/labels")
    assert json.loads(create.body) == {
        "name": "ready-for-dev",
        "color": "0e8a16",
        "description": "triage-bot: the issue is complete enough to start work",
    }
    assert (add.method, add.path) == ("POST", "/repos/Codertocat/Hello-World/issues/1/labels")
    assert json.loads(add.body) == ["ready-for-dev"]


def test_existing_label_and_stale_gate_label_are_swapped() -> None:
    plan = _plan(["bug", "ready-for-dev"], LABEL_FOR_VERDICT["NEEDS_REFINEMENT"])
    with cassette("github_gate_label_exists_swap") as cass:
        applied = apply_gate(plan, _client())
    assert cass.all_played
    assert applied.requests == 3


def test_502_on_add_labels_is_retried_once() -> None:
    plan = _plan(["bug"], VALIDATOR_ERROR)
    with cassette("github_add_labels_502_then_ok") as cass:
        apply_gate(plan, _client())
    assert cass.all_played
    assert cass.play_count == 3


def test_bad_credentials_is_an_auth_error_with_exit_code_4() -> None:
    with cassette("github_bad_credentials"), pytest.raises(GitHubAuthError) as info:
        apply_gate(_plan([], LABEL_FOR_VERDICT["VALID"]), _client())
    assert info.value.status == 401
    assert info.value.exit_code == 4
    assert "test-token-not-real" not in str(info.value)


def test_deleted_issue_is_not_found() -> None:
    with cassette("github_issue_deleted"), pytest.raises(GitHubNotFound):
        apply_gate(_plan([], LABEL_FOR_VERDICT["VALID"]), _client())


def test_cassettes_hold_no_authorization_header() -> None:
    for path in CASSETTES.glob("*.yaml"):
        text = path.read_text("utf-8").lower()
        assert "authorization" not in text.split("interactions:")[1], path.name
        assert "test-token-not-real" not in text, path.name
