"""GitHub requests per gate event (≤ 3 when the verdict changes, 0 when
it does not), and for each request the store spares, the case where sparing it would be wrong
and the bot asks GitHub instead (bot.gate.writes, bot.history.github_memory,
bot.context.JobContext.with_repository_file).

Counted two ways: through the runner on the fake GitHub (tests/support/fake_github.py logs every
port
call; each is one request), and through the PyGithub adapter on recorded traffic (cassettes/),
which shows what each port call costs on the wire.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot import context, runner
from bot.cli import main
from bot.clients.github_client import PyGithubClient
from bot.config import Settings
from bot.errors import GitHubNotFound, GitHubUnavailable
from bot.gate.author_comment import ready_comment
from bot.gate.labels import NEEDS_REFINEMENT, READY
from bot.gate.types import AUTHOR_MARKER
from bot.gate.writes import write_author_comment
from bot.history.github_memory import known_comment, remember_comment
from bot.history.store import Store
from bot.repo_file import REPO_FILE_PATH
from bot.run_report import RunReport
from bot.settings_table import DEFAULT_OLLAMA_MODEL
from tests.support import FakeChatModel, cassette, load_webhook, policy_file, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY, reply

SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
"""``GITHUB_SHA`` of an ``issues`` event: the default branch's last commit (the cassettes')."""

NEXT_SHA = "7c1f0a9d2b3e4f5061728394a5b6c7d8e9f00112"
ACTIONS_LOGIN = "github-actions[bot]"
"""``bot-login`` as the action passes it when its ``token`` is the job's own ``github.token``
(action.yml): the bot's login is then known, and never asked of GitHub."""
SHORT = "The app crashes when I click save."
SHORT_AGAIN = "The app crashes when I press save."  # judged the same: same missing list
REPO = "Codertocat/Hello-World"


def _payload(action: str, body: str, labels: tuple[str, ...] = (), number: int = 1) -> Any:
    payload = load_webhook("issues.opened.18")
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "older text"}}
    payload["issue"].update(number=number, body=body, labels=[{"name": n} for n in labels])
    return payload


def _run(tmp_path: Path, payload: Any, *, db: str = "kept.db", **settings: Any) -> RunReport:
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / db,
        commit_sha=SHA,
        git_ref="refs/heads/master",
        bot_login=ACTIONS_LOGIN,
    )
    return runner.run_event(replace(base, **settings))


def _cost(github: FakeGitHub, tmp_path: Path, payload: Any, **kw: Any) -> list[str]:
    """The port calls (requests) one event makes."""
    before = len(github.requests)
    _run(tmp_path, payload, **kw)
    return github.requests[before:]


def _warm(github: FakeGitHub, model: FakeChatModel, tmp_path: Path) -> None:
    """A repository's steady state: two earlier issues judged at the same commit."""
    model.enqueue(NEEDS_REPLY, VALID_REPLY)
    _run(tmp_path, _payload("opened", SHORT, number=2))
    _run(tmp_path, _payload("opened", COMPLETE_BODY, number=3))


# --- the budget with the store kept (a self-hosted runner) ----------------------------------
@pytest.mark.parametrize(
    ("earlier", "event", "reply_", "cost"),
    [
        (
            (),
            ("opened", SHORT, ()),
            NEEDS_REPLY,
            ["add_labels", "find_bot_comment", "post_comment"],
        ),
        ((), ("opened", COMPLETE_BODY, ()), VALID_REPLY, ["add_labels"]),
        (
            (("opened", SHORT, ()),),
            ("edited", COMPLETE_BODY, ("needs-refinement",)),
            VALID_REPLY,
            # who added needs-refinement (kept: see test_hand_set_*), add, remove, PATCH by id
            ["label_events", "add_labels", "remove_label", "edit_comment"],
        ),
        (
            (("opened", SHORT, ()),),
            ("edited", SHORT_AGAIN, ("needs-refinement",)),
            NEEDS_REPLY,
            ["label_events"],  # the same comment text: nothing listed, nothing written
        ),
        ((("opened", SHORT, ()),), ("edited", SHORT, ("needs-refinement",)), None, []),
    ],
    ids=["opened-needs", "opened-ready", "edited-ready", "edited-same", "replay"],
)
def test_requests_per_gate_event_with_the_store_kept(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    earlier: tuple[Any, ...],
    event: tuple[str, str, tuple[str, ...]],
    reply_: str | None,
    cost: list[str],
) -> None:
    _warm(github, model, tmp_path)
    for action, body, labels in earlier:
        model.enqueue(NEEDS_REPLY)
        _run(tmp_path, _payload(action, body, labels))
    if reply_ is not None:
        model.enqueue(reply_)
    assert _cost(github, tmp_path, _payload(*event)) == cost
    assert len(github.bot_comments(1)) == (0 if event[1] == COMPLETE_BODY and not earlier else 1)


# --- the bot's login, when no bot-login names it (an app's token, a PAT from the CLI) --------
@pytest.mark.parametrize(
    ("earlier", "event", "reply_", "cost"),
    [
        # a new issue has no comment with the marker: nothing to match, nothing asked
        ((), ("opened", SHORT, ()), NEEDS_REPLY,
         ["add_labels", "find_bot_comment", "post_comment"]),
        # needs-refinement is removed only if the bot added it: its login is asked once
        (
            (("opened", SHORT, ()),),
            ("edited", COMPLETE_BODY, ("needs-refinement",)),
            VALID_REPLY,
            ["label_events", "login", "add_labels", "remove_label", "edit_comment"],
        ),
        # the label's newest event is a Bot's (no person's, no removal): nothing asked
        ((("opened", SHORT, ()),), ("edited", SHORT_AGAIN, ("needs-refinement",)), NEEDS_REPLY,
         ["label_events"]),
        # an empty store: the comment is found by its marker and its author, asked once
        ((("opened", SHORT, ()),), ("edited", SHORT + " Sorry.", ("needs-refinement",)),
         reply("NEEDS_REFINEMENT", "No steps are given.", problem="the app crashes"),
         ["repo_file", "label_events", "find_bot_comment", "login", "edit_comment"]),
    ],
    ids=["opened-needs", "edited-ready", "edited-same", "empty-store-comment"],
)  # fmt: skip
def test_the_bots_login_is_asked_at_most_once_and_only_to_match(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    earlier: tuple[Any, ...],
    event: tuple[str, str, tuple[str, ...]],
    reply_: str,
    cost: list[str],
) -> None:
    empty = event[1].endswith("Sorry.")
    _warm(github, model, tmp_path)
    for action, body, labels in earlier:
        model.enqueue(NEEDS_REPLY)
        _run(tmp_path, _payload(action, body, labels), bot_login=None)
    model.enqueue(reply_)
    db = "empty.db" if empty else "kept.db"
    assert _cost(github, tmp_path, _payload(*event), bot_login=None, db=db) == cost
    assert github.requests.count("login") <= 1 + len(earlier)  # once per job at most


# --- the repository file: once per default-branch commit ------------------------------------
def test_the_repository_file_is_read_once_per_commit(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    github.repo_files[(SHA, REPO_FILE_PATH)] = "author_comment:\n  enabled: false\n"
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY, NEEDS_REPLY)
    assert _cost(github, tmp_path, _payload("opened", SHORT))[0] == "repo_file"
    assert github.reads[0] == ("repo_file", f"{REPO_FILE_PATH}@{SHA}")  # the commit, by SHA
    assert "repo_file" not in _cost(github, tmp_path, _payload("opened", SHORT, number=2))
    assert github.comments[2] == []  # the file's setting, from the store: no comment
    moved = _cost(github, tmp_path, _payload("opened", SHORT, number=4), commit_sha=NEXT_SHA)
    assert moved[0] == "repo_file"  # the branch moved: read at the new commit
    assert ("repo_file", f"{REPO_FILE_PATH}@{NEXT_SHA}") in github.reads
    assert len(github.bot_comments(4)) == 1  # no file at NEXT_SHA: the default (on)


@pytest.mark.parametrize(
    ("event_name", "ref", "sha", "used"),
    [
        ("issues", "refs/heads/master", SHA, True),
        ("issue_comment", "refs/heads/master", SHA, True),
        ("schedule", "refs/heads/master", SHA, True),
        ("pull_request_target", "refs/heads/master", SHA, True),  # a PR into the default branch
        ("pull_request_target", "refs/heads/release", SHA, False),  # into another branch
        ("pull_request", "refs/pull/1/merge", SHA, False),  # a PR's merge commit: never
        ("pull_request", "refs/heads/master", SHA, False),
        ("issues", "refs/heads/main", SHA, False),  # not the payload's default branch
        ("issues", "refs/tags/master", SHA, False),
        ("issues", "refs/heads/master", "master", False),  # not a commit SHA
        ("issues", "refs/heads/master", None, False),  # outside Actions
        ("issues", None, SHA, False),
    ],
)
def test_a_commit_is_used_only_when_it_is_the_default_branchs(
    event_name: str, ref: str | None, sha: str | None, used: bool
) -> None:
    settings = Settings(event_name=event_name, git_ref=ref, commit_sha=sha)
    assert context.default_branch_commit(settings, "master") == (sha if used else None)
    assert context.default_branch_commit(settings, None) is None


def test_without_the_default_branchs_commit_the_file_is_read_every_run(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY)
    for number in (1, 2):
        _run(tmp_path, _payload("opened", SHORT, number=number), git_ref="refs/heads/release")
    assert github.reads.count(("repo_file", f"{REPO_FILE_PATH}@master")) == 2


def test_a_dry_run_reads_the_file_at_the_commit_and_keeps_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY)
    for _ in range(2):
        _run(tmp_path, _payload("opened", SHORT), dry_run=True)
    assert github.requests == ["repo_file", "repo_file"]
    assert not (tmp_path / "kept.db").exists()


# --- the gate label: created once per repository --------------------------------------------
def test_a_gate_label_is_created_once_per_repository(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY, NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT, number=1))
    _run(tmp_path, _payload("opened", SHORT, number=2))
    assert github.requests.count("ensure_label") == 1
    _run(tmp_path, _payload("opened", SHORT, number=4), db="empty.db")  # a new store: asks
    assert github.requests.count("ensure_label") == 2


def test_a_failed_add_forgets_the_label_so_the_next_run_creates_it(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY, NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT, number=1))
    github.repo_labels.clear()  # a maintainer deleted the label; say the add fails
    github.fail("add_labels", GitHubUnavailable("add labels: GitHub answered 422", 422))
    with pytest.raises(GitHubUnavailable):
        _run(tmp_path, _payload("opened", SHORT, number=2))
    assert _cost(github, tmp_path, _payload("opened", SHORT, number=2))[:2] == [
        "ensure_label",
        "add_labels",
    ]
    assert github.label_looks[NEEDS_REFINEMENT.name][0] == NEEDS_REFINEMENT.color


# --- the author comment: by id, and found again when the store is wrong ---------------------
def test_a_deleted_comment_is_found_missing_and_posted_once_again(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    found = reply("NEEDS_REFINEMENT", "No steps are given.", problem="the app crashes")
    model.enqueue(NEEDS_REPLY, found)
    _run(tmp_path, _payload("opened", SHORT))
    github.comments[1].clear()  # a maintainer deleted it
    cost = _cost(github, tmp_path, _payload("edited", SHORT + " Sorry.", ("needs-refinement",)))
    assert cost == ["label_events", "edit_comment", "find_bot_comment", "post_comment"]
    (comment,) = github.bot_comments(1)
    assert comment.body.startswith(AUTHOR_MARKER)


def test_a_deleted_comment_is_not_posted_to_say_ready(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    model.enqueue(NEEDS_REPLY, VALID_REPLY)
    _run(tmp_path, _payload("opened", SHORT))
    github.comments[1].clear()
    report = _run(tmp_path, _payload("edited", COMPLETE_BODY, ("needs-refinement",)))
    assert github.comments[1] == []
    assert "author comment absent" in report.text


def test_an_edit_whose_answer_is_lost_leaves_no_row_and_the_next_run_looks(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub applied the PATCH but the answer never came: the store must not keep the old
    text's hash, or the next run asking for the old text would write nothing."""
    found = reply("NEEDS_REFINEMENT", "No steps are given.", problem="the app crashes")
    model.enqueue(NEEDS_REPLY, found, NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT))
    first = github.bot_comments(1)[0].body
    edit = github.edit_comment

    def applied_then_lost(repo: str, number: int, comment_id: int, body: str) -> None:
        edit(repo, number, comment_id, body)
        raise GitHubUnavailable("edit comment: read timed out", None)

    monkeypatch.setattr(github, "edit_comment", applied_then_lost)
    with pytest.raises(GitHubUnavailable):
        _run(tmp_path, _payload("edited", SHORT + " Sorry.", ("needs-refinement",)))
    assert github.bot_comments(1)[0].body != first
    monkeypatch.setattr(github, "edit_comment", edit)
    cost = _cost(github, tmp_path, _payload("edited", SHORT_AGAIN, ("needs-refinement",)))
    assert cost == ["label_events", "find_bot_comment", "edit_comment"]
    assert github.bot_comments(1)[0].body == first


def test_two_runs_writing_the_comment_at_once_leave_no_row(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An issue run and a `/triage` run (different concurrency groups) write the comment at
    the same time: which text GitHub kept is unknown, so neither is remembered."""
    found = reply("NEEDS_REFINEMENT", "No steps are given.", problem="the app crashes")
    model.enqueue(NEEDS_REPLY, found, NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT))
    first = github.bot_comments(1)[0].body
    edit = github.edit_comment

    def meanwhile(repo: str, number: int, comment_id: int, body: str) -> None:
        edit(repo, number, comment_id, body)
        other = Store(tmp_path / "kept.db")  # the other run remembers its own write first
        assert remember_comment(other, REPO, 1, comment_id, "the other run's text")
        other.close()

    monkeypatch.setattr(github, "edit_comment", meanwhile)
    _run(tmp_path, _payload("edited", SHORT + " Sorry.", ("needs-refinement",)))
    monkeypatch.setattr(github, "edit_comment", edit)
    store = Store(tmp_path / "kept.db", read_only=True)
    assert known_comment(store, REPO, 1) is None
    store.close()
    cost = _cost(github, tmp_path, _payload("edited", SHORT_AGAIN, ("needs-refinement",)))
    assert cost == ["label_events", "find_bot_comment", "edit_comment"]
    assert github.bot_comments(1)[0].body == first


# --- the hand-set label check is not spared -------------------------------------------------
def test_hand_set_label_is_still_asked_of_github_with_the_store_kept(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    """The store says the bot applied needs-refinement; a maintainer removed it and added it
    again by hand. Only the issue's events tell: the read stays, and the label wins."""
    model.enqueue(NEEDS_REPLY)
    _run(tmp_path, _payload("opened", SHORT))
    github.issue_labels[1].remove(NEEDS_REFINEMENT.name)
    github.label_by_hand(1, NEEDS_REFINEMENT.name)
    report = _run(tmp_path, _payload("edited", COMPLETE_BODY, ("needs-refinement",)))
    assert "by hand" in report.text
    assert github.issue_labels[1] == [NEEDS_REFINEMENT.name]
    assert github.requests[-1] == "label_events"


# --- on recorded traffic: what the port calls cost through PyGithub -------------------------
def _cli(tmp_path: Path, payload: Any, name: str, **env: str) -> tuple[str, list[Any]]:
    import bot.clients.github_client as gc

    captured: list[Any] = []
    variables = {
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(write_payload(tmp_path, payload)),
        "GITHUB_TOKEN": "test-token-not-real",
        "OLLAMA_HOST": "http://127.0.0.1:11434",
        "TRIAGE_DB": str(tmp_path / "triage.db"),
        # the recorded model's answers are judged under a policy measured for it
        "TRIAGE_GATE_POLICY": policy_file(tmp_path, DEFAULT_OLLAMA_MODEL),
        "INPUT_BOT_LOGIN": ACTIONS_LOGIN,
        **env,
    }
    old, gc.DEFAULT_SECONDS_BETWEEN_WRITES = gc.DEFAULT_SECONDS_BETWEEN_WRITES, 0.0
    try:
        with cassette(name, captured) as cass:
            result = CliRunner().invoke(main, ["run"], env=variables)
            assert cass.all_played
    finally:
        gc.DEFAULT_SECONDS_BETWEEN_WRITES = old
    assert result.exit_code == 0, result.output
    return result.stdout, [r for r in captured if "api.github.com" in r.uri]


def test_recorded_edit_by_id_after_the_post_then_a_free_replay(tmp_path: Path) -> None:
    first = load_webhook("issues.opened.18")
    _cli(tmp_path, first, "e2e_author_comment_posted")  # the store learns the comment's id
    actions = {"GITHUB_SHA": SHA, "GITHUB_REF": "refs/heads/master"}
    edited = _payload("edited", COMPLETE_BODY, ("needs-refinement",))
    out, requests = _cli(tmp_path, edited, "e2e_author_comment_by_id", **actions)
    assert [(r.method, r.uri.split("/repos/")[1]) for r in requests] == [
        ("GET", f"{REPO}/contents/.github/triage-bot.yml?ref={SHA}"),
        ("GET", f"{REPO}/issues/1/events?per_page=100"),
        ("POST", f"{REPO}/labels"),  # ready-for-dev: new to this store
        ("POST", f"{REPO}/issues/1/labels"),
        ("DELETE", f"{REPO}/issues/1/labels/needs-refinement"),
        ("PATCH", f"{REPO}/issues/comments/492700510"),  # by id: no list of comments
    ]
    assert json.loads(requests[-1].body) == {"body": ready_comment(label=READY.name)}
    assert "author comment edited" in out
    out, requests = _cli(tmp_path, edited, "github_no_requests", **actions)
    assert requests == []
    assert "unchanged since the bot's last decision" in out


def test_recorded_patch_of_a_deleted_comment_lists_and_posts_again(tmp_path: Path) -> None:
    store = Store(tmp_path / "t.db")
    remember_comment(store, REPO, 1, 492700510, "the earlier text")
    client = PyGithubClient(
        token="test-token-not-real", retries=0, backoff_s=0.0, seconds_between_writes=0.0
    )
    captured: list[Any] = []
    body = f"{AUTHOR_MARKER}\nthe new text"
    with cassette("github_comment_patch_404", captured) as cass:
        done = write_author_comment(client, store, REPO, 1, body, create=True)
        assert cass.all_played
    assert [r.method for r in captured] == ["PATCH", "GET", "POST"]
    assert (done.fate, done.reads, done.writes) == ("created", 1, 2)
    known = known_comment(store, REPO, 1)
    assert known is not None
    assert known.comment_id == 492700511  # the new comment's, from the POST's answer
    store.close()


def test_recorded_patch_404_is_not_found() -> None:
    client = PyGithubClient(token="test-token-not-real", retries=0, seconds_between_writes=0.0)
    with cassette("github_comment_patch_404"), pytest.raises(GitHubNotFound):
        client.edit_comment(REPO, 1, 492700510, "x")
