"""Maintainer commands end to end on recorded traffic: authorisation, reaction, rerun, reply."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clients.github_client import PyGithubClient
from bot.commands.comment import authorise
from bot.events import IssueCommentEvent, route_event
from bot.settings_table import DEFAULT_OLLAMA_MODEL
from tests.support import cassette, load_webhook, policy_file, write_payload

OLLAMA = "http://127.0.0.1:11434"
ROLES = ["admin", "write", "maintain", "triage", "read", "none"]
ASSOCIATIONS = ["OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "NONE"]


def _event(body: str, *, association: str = "OWNER", bot: bool = False) -> IssueCommentEvent:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    payload["comment"]["author_association"] = association
    if bot:
        payload["comment"]["user"]["type"] = "Bot"
        payload["sender"]["type"] = "Bot"
    event = route_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    return event


def _github() -> PyGithubClient:
    return PyGithubClient(token="test-token-not-real", retries=0, seconds_between_writes=0.0)


@pytest.mark.parametrize(
    ("role", "association", "bot"),
    list(itertools.product(ROLES, ASSOCIATIONS, [False, True])),
)
def test_authorisation_matrix(role: str, association: str, bot: bool) -> None:
    with cassette(f"github_permission_{role}") as cass:
        auth = authorise(_event("/triage", association=association, bot=bot), _github())
    if bot:
        assert not auth.allowed
        assert cass.play_count == 0
    else:
        assert cass.play_count == 1
        assert auth.allowed == (role in ("admin", "write", "maintain"))


def test_the_bots_own_comment_is_ignored_without_a_request() -> None:
    with cassette("github_permission_admin") as cass:
        auth = authorise(_event("<!-- triage-bot:audit -->\n/triage"), _github())
    assert not auth.allowed
    assert cass.play_count == 0


def _run(tmp_path: Path, body: str, env: dict[str, str]) -> tuple[int, str]:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    path = write_payload(tmp_path, payload)
    result = CliRunner().invoke(
        main, ["run", "--event-name", "issue_comment", "--event-path", str(path)], env=env
    )
    return result.exit_code, result.stdout


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    import bot.clients.github_client as gc

    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    # the bot's login as the action passes it for its own token (the cassettes' comments); the
    # recorded model's answers are judged under a policy measured for it
    return {
        "GITHUB_TOKEN": "test-token-not-real",
        "OLLAMA_HOST": OLLAMA,
        "INPUT_BOT_LOGIN": "github-actions[bot]",
        "TRIAGE_GATE_POLICY": policy_file(tmp_path, DEFAULT_OLLAMA_MODEL),
    }


def test_triage_command_reacts_then_reruns_the_gate(tmp_path: Path, env: dict[str, str]) -> None:
    captured: list[Any] = []
    with cassette("e2e_command_triage", captured) as cass:
        code, out = _run(tmp_path, "/triage", env)
    assert code == 0, out
    assert cass.all_played
    github_requests = [r for r in captured if "api.github.com" in r.uri]
    # permission, 👀, the repository file (404), the issue as it is now (read under its lock),
    # the label (create, add), the author comment (list, post)
    assert len(github_requests) <= 8
    assert json.loads(captured[-1].body)["body"].startswith("<!-- triage-bot:author -->")
    assert json.loads(captured[1].body) == {"content": "eyes"}
    assert "triage-bot: /triage by Codertocat (Codertocat has admin permission)" in out
    assert "changes:  +needs-refinement" in out


def test_help_command_replies(tmp_path: Path, env: dict[str, str]) -> None:
    captured: list[Any] = []
    with cassette("e2e_command_help", captured) as cass:
        code, out = _run(tmp_path, "/help", env)
    assert code == 0, out
    assert cass.all_played
    reply = json.loads(captured[-1].body)["body"]
    assert reply.startswith("triage-bot commands:")
    assert "`/audit_stats [WEEKS]`" in reply


def test_refused_command_does_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    summary = tmp_path / "summary.md"
    with cassette("github_permission_read") as cass:
        code, out = _run(tmp_path, "/triage", env | {"GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 0
    assert cass.play_count == 1  # the permission read, and nothing else
    assert out.startswith("triage-bot: refused: Codertocat has read permission")
    assert "command refused" in summary.read_text()


def test_ordinary_comment_is_skipped_without_requests(tmp_path: Path, env: dict[str, str]) -> None:
    code, out = _run(tmp_path, "Thanks, looks good to me.", env)
    assert code == 0
    assert out.strip() == "triage-bot: skipped: the comment is not a command"


def test_history_and_stats_replies(tmp_path: Path) -> None:
    from bot.commands.handlers import history_reply, stats_reply
    from bot.history.store import Store, utc_now
    from tests.support import audit_row

    store = Store(tmp_path / "t.db")
    assert "No accepted audits" in history_reply(store, "o/r", 10)
    assert "No accepted audits in the last 8 week(s)" in stats_reply(store, "o/r", 8)
    store.record_audits(
        [
            audit_row(verdict="FIX", created_at=utc_now()),
            audit_row(verdict="GO", retried=False, head_sha="b" * 40),
        ]
    )
    history = history_reply(store, "o/r", 1)
    assert history.startswith("Last 1 accepted audit(s):\n```\n#")
    assert "| confidence: Medium | src/app.py:10-40 | retry:" in history
    stats = stats_reply(store, "o/r", 8)
    assert "| 2 | 50% | 0% | 50% |" in stats
    assert "xychart-beta" in stats
    assert "| `m` | 2 | 50% | 0% | 50% | 50% |" in stats  # per model


def test_audit_stats_reads_per_model(tmp_path: Path) -> None:
    """Two models' verdicts are not mixed: each has its row, most audits first; a hostile
    model name stays inline code in its cell."""
    from bot.audit.stats import model_stats
    from bot.commands.handlers import stats_reply
    from bot.history.store import Store
    from tests.support import audit_row
    from tests.support.markdown_oracle import render

    store = Store(tmp_path / "t.db")
    hostile = "x | @octocat <b>#1</b>"
    store.record_audits(
        [audit_row(model="qwen", verdict="GO", path=f"a{i}.py") for i in range(3)]
        + [audit_row(model=hostile, verdict="FIX", retried=False)]
    )
    assert [(m.model, m.audits, m.verdicts["FIX"]) for m in model_stats(store, "o/r", 8)] == [
        ("qwen", 3, 0),
        (hostile, 1, 1),
    ]
    stats = stats_reply(store, "o/r", 8)
    assert "| `qwen` | 3 | 100% | 0% | 0% | 100% |" in stats
    rendered = render(stats)
    assert not rendered.mentions
    assert "b" not in rendered.tags


@pytest.mark.parametrize(
    ("body", "on_pr", "expected"),
    [
        (
            "/triage",
            True,
            "`/triage` runs the issue gate on issues; on a pull request use `/audit`.",
        ),
        ("/audit", False, "`/audit` runs on pull requests; on an issue use `/triage`."),
    ],
)
def test_commands_in_the_wrong_place_get_a_reply(body: str, on_pr: bool, expected: str) -> None:
    from bot.commands.comment import wrong_place_reply
    from bot.commands.handlers import COMMANDS
    from bot.commands.parser import Command, parse_command

    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    if on_pr:
        payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    event = route_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    command = parse_command(body)
    assert isinstance(command, Command)
    assert wrong_place_reply(COMMANDS[command.name], event) == expected


def test_audit_command_on_a_pr_edits_the_bots_comment(tmp_path: Path, env: dict[str, str]) -> None:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = "/audit"
    payload["issue"]["number"] = 2
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/x/y/pulls/2"}
    path = write_payload(tmp_path, payload)
    captured: list[Any] = []
    with cassette("e2e_command_audit", captured) as cass:
        result = CliRunner().invoke(
            main,
            ["run", "--event-name", "issue_comment", "--event-path", str(path)],
            # the review of verified defects has its own cassettes (tests/audit/test_review.py)
            env=env
            | {
                "TRIAGE_DB": str(tmp_path / "t.db"),
                "TRIAGE_REVIEW_COMMENTS": "false",
                "TRIAGE_AUDIT_FORMAT": "markdown",  # the recorded reply
            },
        )
    assert result.exit_code == 0, result.output
    assert cass.all_played
    assert captured[-1].method == "PATCH"
    assert "ACCEPTED  FIX / High" in result.stdout
    assert "comment edited" in result.stdout
