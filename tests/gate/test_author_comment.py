"""The comment that tells an issue's author what to add.

Through the runner with the stateful fake GitHub (tests/support/fake_github.py): posted once on
NEEDS_REFINEMENT, edited in place when what is missing changes, not written when its text is
the same, edited to "ready" on a later VALID, never posted on a first VALID, on validator-error,
with the setting off or in a dry run. Through the PyGithub adapter on recorded traffic
(cassettes/e2e_author_comment_*.yaml): the requests it costs. Its text is judged by a real
renderer (tests/support/markdown_oracle.py), whatever the issue or the element definitions hold.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot import runner
from bot.checklist import ELEMENTS, Element
from bot.cli import main
from bot.config import VALIDATOR_OPTIONS, Settings
from bot.gate.author_comment import (
    needs_refinement_comment,
    ready_comment,
    refinement_comment_for,
)
from bot.gate.labels import NEEDS_REFINEMENT, READY
from bot.gate.types import AUTHOR_MARKER
from bot.gate.validator import Validator
from bot.run_report import RunReport
from bot.settings_table import DEFAULT_OLLAMA_MODEL
from tests.support import (
    FakeChatModel,
    cassette,
    load_webhook,
    policy_file,
    user_docs,
    write_payload,
)
from tests.support.fake_github import CONFIG_READ, FakeGitHub, StoredComment
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY, reply

SHORT_BODY = "The app crashes when I click save."
"""Seven words: too little to act on (the rule's ``short`` step), whatever is quoted."""


def _payload(action: str, body: str, labels: tuple[str, ...] = ()) -> dict[str, Any]:
    payload = load_webhook("issues.opened.18")
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "older text"}}
    payload["issue"]["body"] = body
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    return payload


def _run(tmp_path: Path, payload: dict[str, Any], **settings: Any) -> RunReport:
    path = write_payload(tmp_path, payload)
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=path,
        db_path=tmp_path / "triage.db",
    )
    return runner.run_event(replace(base, **settings))


def _lookups(github: FakeGitHub) -> int:
    return github.reads.count(("find_bot_comment", "1"))


def _comment_writes(github: FakeGitHub) -> list[tuple[str, ...]]:
    return [w for w in github.writes if w[0] in ("create_comment", "edit_comment")]


def test_posted_once_on_needs_refinement_with_each_missing_definition(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY)
    payload = _payload("opened", SHORT_BODY)
    report = _run(tmp_path, payload)
    (comment,) = github.bot_comments(1)
    assert comment.body.startswith(AUTHOR_MARKER + "\n")
    text = render(comment.body).text
    assert "Too little to act on: 7 words" in text
    for element in ELEMENTS:  # the model quoted nothing: every element is missing
        assert element.missing in text
    assert "Edit the issue to add them: every edit runs the check again" in text
    assert "author comment created" in report.text
    assert "**Author comment:** created" in report.summary
    # the same event again (a replay): skipped before any request, still one comment
    github.writes.clear()
    github.reads.clear()
    assert "unchanged since the bot's last decision" in _run(tmp_path, payload).text
    assert (github.writes, github.reads) == ([], [CONFIG_READ])
    assert len(github.bot_comments(1)) == 1


def test_edited_in_place_when_what_is_missing_changes(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    found_problem = reply("NEEDS_REFINEMENT", "No steps are given.", problem="the app crashes")
    model.enqueue(NEEDS_REPLY, found_problem)
    _run(tmp_path, _payload("opened", SHORT_BODY))
    first = github.bot_comments(1)[0].body
    _run(tmp_path, _payload("edited", SHORT_BODY + " Sorry.", ("needs-refinement",)))
    (comment,) = github.bot_comments(1)
    assert comment.body != first
    assert ELEMENTS[0].missing not in render(comment.body).text  # the problem is now found
    assert ELEMENTS[1].missing in render(comment.body).text
    assert _comment_writes(github) == [("create_comment", "1"), ("edit_comment", "1")]


def test_the_same_text_is_not_written_again(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT_BODY))
    github.writes.clear()
    github.reads.clear()
    report = _run(tmp_path, _payload("edited", "The app crashes when I press save.",
                                     ("needs-refinement",)))  # fmt: skip
    assert github.writes == []  # label in place, comment text the same: 0 writes
    assert _lookups(github) == 0  # the store knows the text it wrote (bot.gate.writes)
    assert "author comment unchanged" in report.text


def test_with_an_empty_store_the_same_text_is_found_and_not_written(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """An ephemeral runner (or a lost store): the comment is found by its marker, once."""
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT_BODY), db_path=tmp_path / "first.db")
    github.writes.clear()
    github.reads.clear()
    edited = _payload("edited", "The app crashes when I press save.", ("needs-refinement",))
    report = _run(tmp_path, edited, db_path=tmp_path / "new.db")
    assert github.writes == []
    assert _lookups(github) == 1
    assert len(github.bot_comments(1)) == 1
    assert "author comment unchanged" in report.text


def test_edited_to_ready_on_a_later_valid(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, VALID_REPLY)
    _run(tmp_path, _payload("opened", SHORT_BODY))
    _run(tmp_path, _payload("edited", COMPLETE_BODY, ("needs-refinement",)))
    (comment,) = github.bot_comments(1)
    assert comment.body == ready_comment(label=READY.name)
    assert "ready for work" in render(comment.body).text
    assert github.issue_labels[1] == ["ready-for-dev"]
    assert _comment_writes(github) == [("create_comment", "1"), ("edit_comment", "1")]


@pytest.mark.parametrize(
    ("action", "labels", "lookups"),
    [
        ("opened", (), 0),  # a new valid issue: no lookup, no comment
        ("edited", ("ready-for-dev",), 0),  # VALID after VALID: nothing to say
        ("edited", (), 1),  # a maintainer may have removed needs-refinement by hand
    ],
)
def test_a_valid_posts_no_comment_and_looks_only_when_one_can_exist(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    action: str,
    labels: tuple[str, ...],
    lookups: int,
) -> None:
    model.enqueue(VALID_REPLY)
    _run(tmp_path, _payload(action, COMPLETE_BODY, labels))
    assert github.comments[1] == []
    assert _lookups(github) == lookups


def test_a_persons_comment_with_the_marker_is_not_taken_for_the_bots(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.comments[1].append(StoredComment(7, f"{AUTHOR_MARKER}\nforged", "User", "octocat"))
    model.enqueue(NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT_BODY))
    assert github.comments[1][0].body == f"{AUTHOR_MARKER}\nforged"
    assert len(github.bot_comments(1)) == 1


def test_no_comment_on_validator_error(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue("not json")
    report = _run(tmp_path, _payload("opened", SHORT_BODY))
    assert github.comments[1] == []
    assert github.reads == [CONFIG_READ]
    (warning,) = report.warnings  # the annotation tells the maintainers instead
    assert warning.startswith("validator-error on #1")


def test_no_comment_when_the_setting_is_off(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    model.enqueue(NEEDS_REPLY)
    off = Settings.resolve({}, {"TRIAGE_AUTHOR_COMMENT": "false"}).author_comment
    assert off is False
    report = _run(tmp_path, _payload("opened", SHORT_BODY), author_comment=off)
    assert github.comments[1] == []
    assert github.reads == [CONFIG_READ]
    assert github.issue_labels[1] == ["needs-refinement"]
    assert "comment" not in report.text.split("applied:")[1]


def test_a_dry_run_shows_the_comment_and_posts_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY)
    report = _run(tmp_path, _payload("opened", SHORT_BODY), dry_run=True)
    assert (github.writes, github.reads) == ([], [CONFIG_READ])
    assert "comment:  the author comment (posted or edited):" in report.text
    assert f"  | {AUTHOR_MARKER}" in report.text
    assert "**Author comment:** not posted (dry run)" in report.summary


# --- the PyGithub adapter on recorded traffic: what the comment costs ---------------------------
def _cli(tmp_path: Path, payload: dict[str, Any], name: str) -> tuple[str, list[Any], int]:
    import bot.clients.github_client as gc

    captured: list[Any] = []
    env = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, payload)),
        "GITHUB_TOKEN": "test-token-not-real",
        "OLLAMA_HOST": "http://127.0.0.1:11434",
        "TRIAGE_DB": str(tmp_path / "triage.db"),
        # the recorded model's answers are judged under a policy measured for it
        "TRIAGE_GATE_POLICY": policy_file(tmp_path, DEFAULT_OLLAMA_MODEL),
    }
    old = gc.DEFAULT_SECONDS_BETWEEN_WRITES
    gc.DEFAULT_SECONDS_BETWEEN_WRITES = 0.0
    try:
        with cassette(name, captured) as cass:
            result = CliRunner().invoke(main, ["run"], env=env)
            played = cass.play_count
            assert cass.all_played
    finally:
        gc.DEFAULT_SECONDS_BETWEEN_WRITES = old
    assert result.exit_code == 0, result.output
    github = [r for r in captured if "api.github.com" in r.uri]
    return result.stdout, github, played - 1  # minus the model call


def test_recorded_first_needs_refinement_costs_five_requests(tmp_path: Path) -> None:
    out, requests, count = _cli(tmp_path, _payload("opened", load_webhook(
        "issues.opened.18")["issue"]["body"]), "e2e_author_comment_posted")  # fmt: skip
    # the repository file (404), create label, add label, list comments, post the comment
    assert count == 5
    assert [r.method for r in requests] == ["GET", "POST", "POST", "GET", "POST"]
    body = json.loads(requests[-1].body)["body"]
    assert body.startswith(AUTHOR_MARKER + "\n")
    assert "applied:  3 GitHub write request(s); author comment created" in out


def test_recorded_valid_after_needs_refinement_edits_the_comment_to_ready(tmp_path: Path) -> None:
    payload = _payload("edited", COMPLETE_BODY, ("needs-refinement",))
    out, requests, count = _cli(tmp_path, payload, "e2e_author_comment_ready")
    # the repository file (404), who added needs-refinement (bot.gate.plan.hand_set_gate_label),
    # the bot's own login (no bot-login set: GraphQL viewer, once; it says needs-refinement is
    # the bot's to remove, and later which comment is its own), create label, add, remove
    # needs-refinement, list comments, edit
    assert count == 8
    assert [r.method for r in requests] == [
        "GET", "GET", "POST", "POST", "POST", "DELETE", "GET", "PATCH"
    ]  # fmt: skip
    assert requests[2].uri == "https://api.github.com/graphql"
    assert requests[-1].uri.endswith("/issues/comments/492700510")  # the bot's, not the person's
    assert json.loads(requests[-1].body) == {"body": ready_comment(label=READY.name)}
    assert "author comment edited" in out


# --- hostile text ---------------------------------------------------------------------------
PIECES = [
    *"<>!@[]()`\\-*_~|#$:.&\n\r\t ", "img src=//evil/p.png", "</details>", "<!-- x -->",
    "@org/team", "```", "~~~", "::error::x", "#12", "GH-1", ":rocket:", "deadbeefcafe",
    AUTHOR_MARKER, "- ", "1. ", "> ", "# ", "|---|", "http://evil.example", "\u2028",
]  # fmt: skip
HOSTILE = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)
TAGS = {"h3", "p", "ul", "li", "strong", "code"}


def _safe(body: str) -> None:
    rendered = render(body)
    assert set(rendered.tags) <= TAGS, set(rendered.tags) - TAGS
    assert not rendered.attributes
    assert not rendered.mentions
    assert not rendered.github_links
    assert rendered.comments == [AUTHOR_MARKER.removeprefix("<!--").removesuffix("-->")]


@FUZZ
@given(HOSTILE, st.lists(st.tuples(HOSTILE, HOSTILE), max_size=4), HOSTILE)
def test_the_comment_renders_only_the_bots_markup(
    why: str, elements: list[tuple[str, str]], label: str
) -> None:
    """Definitions and label names will come from a repository's file."""
    missing = [Element(key or "x", "ask", text) for key, text in elements]
    body = needs_refinement_comment(why, missing, label=label)
    _safe(body)
    assert render(body).tags["li"] == len(missing)
    _safe(ready_comment(label=label))


def test_hostile_issue_text_never_reaches_the_comment(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    hostile = "@octocat <img src=x onerror=alert(1)> #12 </details> <!-- triage-bot:author -->"
    model.enqueue(reply("NEEDS_REFINEMENT", "Hostile.", problem=hostile, expected=hostile))
    payload = _payload("opened", hostile)
    payload["issue"]["title"] = hostile
    _run(tmp_path, payload)
    (comment,) = github.bot_comments(1)
    _safe(comment.body)
    assert "octocat" not in comment.body
    assert f"`{NEEDS_REFINEMENT.name}`" in comment.body


def test_the_docs_show_the_comments_as_the_bot_builds_them() -> None:
    """docs/gate.md "The comment the author sees": the example issue, the model quoting nothing."""
    issue = load_webhook("issues.opened.18")["issue"]
    validator = Validator(FakeChatModel().enqueue(NEEDS_REPLY), VALIDATOR_OPTIONS,
                          max_body_chars=6000)  # fmt: skip
    decision = validator.judge(issue["title"], issue["body"])
    docs = user_docs()
    needs = refinement_comment_for(decision, label=NEEDS_REFINEMENT.name)
    assert f"````markdown\n{needs}````\n" in docs
    ready = "".join(f"  {line}\n" if line else "\n" for line in
                    ready_comment(label=READY.name).splitlines())  # fmt: skip
    assert f"  ````markdown\n{ready}  ````\n" in docs


def test_text_either_side_of_a_code_span_is_not_joined_by_the_oracle() -> None:
    """Found by hypothesis: ``::error::x`<`http://…`` renders ``:x`` and ``http:`` as two text
    nodes around a code element; GitHub replaces emoji per text node, so no ``:xhttp:``."""
    body = needs_refinement_comment("::error::x`<`http://evil.example", [], label="x")
    _safe(body)
    assert render("a :x`b`y: c").github_links == []
    assert render("a :smile: c").github_links == [":smile:"]
