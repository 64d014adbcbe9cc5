"""One writer per issue and pull request: a run re-checks its plan under the store's lock.

Two runs on one issue or pull request are interleaved in one process: the first run's model
call runs the second one to its end, so the second writes while the first is still planning.
Whichever order, the issue ends with one gate label and the pull request with one comment.
Real processes on a shared store: tests/reliability/test_one_writer_processes.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot import audit, gate, runner
from bot.audit.pr_comment import MARKER, audited_head
from bot.chat import ChatMessage, ChatResult, RoleOptions
from bot.clients.github_port import ChangedFile, LabelEvent, PullRef
from bot.config import Settings
from bot.errors import ModelUnavailable, StoreError
from bot.events import IssuesEvent, route_event
from bot.history.store import Store
from bot.run_report import RunReport
from tests.support import FakeChatModel, load_webhook
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY, GOOD_AUDIT, NEEDS_REPLY, SOURCE, VALID_REPLY

REPO = "Codertocat/Hello-World"
GATE = {"ready-for-dev", "needs-refinement", "validator-error"}
EDITED_BODY = COMPLETE_BODY + " It is on line 12 of the README."


@dataclass
class Interleaving(FakeChatModel):
    """A fake model whose next calls first run a hook each: the other run, to its end."""

    hooks: list[Callable[[], object]] = field(default_factory=list)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        if self.hooks:
            self.hooks.pop(0)()
        return super().chat(messages, options=options, schema=schema)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Interleaving:
    fake = Interleaving()
    monkeypatch.setattr(runner, "make_chat_model", lambda *a, **k: fake)
    return fake


@pytest.fixture
def github(github: FakeGitHub) -> FakeGitHub:
    github.files[2] = [
        ChangedFile(
            path="src/values.py",
            status="added",
            patch="@@ -0,0 +1,40 @@\n" + "\n".join(f"+{line}" for line in SOURCE),
        )
    ]
    github.contents["src/values.py"] = SOURCE
    github.heads[2] = "a" * 40
    return github


def _event(action: str = "opened", body: str = COMPLETE_BODY, labels: Sequence[str] = ()) -> Any:
    payload = load_webhook("issues.opened.18" if action == "opened" else "issues.edited.7")
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "older text"}}
    payload["issue"]["body"] = body
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    event = route_event("issues", payload)
    assert isinstance(event, IssuesEvent)
    return event


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(github_token="t", db_path=tmp_path / "triage.db", audit_format="markdown", **kw)


def _gate(tmp_path: Path, event: IssuesEvent, *, force: bool = False) -> Callable[[], RunReport]:
    def run() -> RunReport:
        with runner.job_context(_settings(tmp_path)) as job:
            return gate.run(job, event, force=force)

    return run


def _gate_labels(github: FakeGitHub, number: int) -> list[str]:
    return [name for name in github.issue_labels[number] if name in GATE]


def _issue_now(github: FakeGitHub, event: IssuesEvent) -> None:
    github.issue_texts[event.issue.number] = (event.issue.title, event.issue.body)


# --- the gate --------------------------------------------------------------------------------


@pytest.mark.parametrize("first", ["event", "triage"])
def test_an_issues_event_and_a_triage_leave_one_gate_label(
    tmp_path: Path, github: FakeGitHub, model: Interleaving, first: str
) -> None:
    """The event judges VALID, ``/triage`` NEEDS_REFINEMENT; each is run inside the other's
    model call. An event that finds the other's decision on the same text is superseded;
    ``/triage`` always plans again from the issue's current labels."""
    event = _event()
    _issue_now(github, event)
    outer, inner = (
        (_gate(tmp_path, event), _gate(tmp_path, event, force=True))
        if first == "event"
        else (_gate(tmp_path, event, force=True), _gate(tmp_path, event))
    )
    reports: list[RunReport] = []
    model.hooks.append(lambda: reports.append(inner()))
    model.enqueue(*((NEEDS_REPLY, VALID_REPLY) if first == "event" else (VALID_REPLY, NEEDS_REPLY)))
    report = outer()
    assert _gate_labels(github, event.issue.number) == ["needs-refinement"]
    if first == "event":
        assert "superseded: superseded by the decision written at" in report.text
        assert "**Superseded:**" in report.summary
        assert ("issue", str(event.issue.number)) in github.reads
    else:  # /triage wrote last: its label, the event's removed
        assert ("remove_label", str(event.issue.number), "ready-for-dev") in github.writes


def test_an_unchanged_store_row_costs_no_second_read(
    tmp_path: Path, github: FakeGitHub, model: Interleaving
) -> None:
    model.enqueue(VALID_REPLY)
    report = _gate(tmp_path, _event())()
    assert "applied:" in report.text
    assert not [read for read in github.reads if read[0] == "issue"]
    assert "lock:" not in report.text


def test_an_edit_while_judging_supersedes_the_older_text(
    tmp_path: Path, github: FakeGitHub, model: Interleaving
) -> None:
    """The ``opened`` run judged the first text; the ``edited`` run for the new text wrote
    first: the older plan is dropped, whichever verdict it has."""
    opened, edited = _event(), _event("edited", EDITED_BODY)
    _issue_now(github, edited)
    model.hooks.append(_gate(tmp_path, edited))
    model.enqueue(VALID_REPLY, NEEDS_REPLY)
    report = _gate(tmp_path, opened)()
    assert _gate_labels(github, edited.issue.number) == ["ready-for-dev"]
    assert "the issue was edited while it was judged" in report.text


def test_a_newer_text_judged_last_is_written_over_an_older_decision(
    tmp_path: Path, github: FakeGitHub, model: Interleaving
) -> None:
    """The ``edited`` run judged the current text; a late ``opened`` run on the first text
    wrote while it judged: the current text's plan is made again and written."""
    opened, edited = _event(), _event("edited", EDITED_BODY)
    _issue_now(github, edited)
    model.hooks.append(_gate(tmp_path, opened))
    model.enqueue(NEEDS_REPLY, VALID_REPLY)
    report = _gate(tmp_path, edited)()
    assert _gate_labels(github, edited.issue.number) == ["ready-for-dev"]
    assert "superseded" not in report.text
    assert ("remove_label", str(edited.issue.number), "needs-refinement") in github.writes


@pytest.mark.parametrize("inner_fails", [True, False])
def test_a_verdict_wins_over_a_validator_error_on_the_same_text(
    tmp_path: Path, github: FakeGitHub, model: Interleaving, inner_fails: bool
) -> None:
    event = _event()
    _issue_now(github, event)
    model.hooks.append(_gate(tmp_path, event))
    down = ModelUnavailable("the server is down")
    model.enqueue(*((down, VALID_REPLY) if inner_fails else (VALID_REPLY, down)))
    _gate(tmp_path, event)()
    assert _gate_labels(github, event.issue.number) == ["ready-for-dev"]


def test_two_backlog_runs_at_once_leave_one_gate_label_each(
    tmp_path: Path, github: FakeGitHub, model: Interleaving
) -> None:
    issues = [
        {"number": n, "title": f"Issue {n}", "body": COMPLETE_BODY, "labels": [], "state": "open"}
        for n in range(1, 6)
    ]
    github.open_issue_list = issues

    def backlog() -> RunReport:
        return runner.run_backlog(_settings(tmp_path), REPO, limit=50)

    reports: list[RunReport] = []
    model.hooks.append(lambda: reports.append(backlog()))
    model.enqueue(*[NEEDS_REPLY] * 5, *[VALID_REPLY] * 5)
    outer = backlog()
    for n in range(1, 6):
        assert len(_gate_labels(github, n)) == 1, (n, github.issue_labels[n])
    assert "superseded by another run: 5" in outer.text


# --- a stale payload and a person's label ------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "outcome"),
    [
        # the bot added it, a person took it off and put it back: theirs, and it wins
        ([("needs-refinement", "octocat", "User", True), ("needs-refinement", "octocat", "User",
                                                          False)], "hand-set"),
        # the same, the person writing the name in another case
        ([("needs-refinement", "octocat", "User", True), ("Needs-Refinement", "octocat", "User",
                                                          False)], "hand-set"),
        # another app put it back: kept beside the bot's new label
        ([("needs-refinement", "renovate[bot]", "Bot", True), ("needs-refinement", "renovate[bot]",
                                                               "Bot", False)], "kept"),
        # a person took it off: nothing to remove, no request spent on it
        ([("needs-refinement", "octocat", "User", True)], "gone"),
    ],
)  # fmt: skip
def test_a_stale_payload_never_removes_a_label_someone_put_back(
    tmp_path: Path,
    github: FakeGitHub,
    model: Interleaving,
    history: list[tuple[str, str, str, bool]],
    outcome: str,
) -> None:
    """The bot's last decision put needs-refinement on the issue; the payload (stale) shows
    no gate label; the issue's events say who holds the label now."""
    first = _event("opened", "The app crashes.")
    model.enqueue(NEEDS_REPLY)
    _gate(tmp_path, first)()
    assert github.issue_labels[first.issue.number] == ["needs-refinement"]
    number = first.issue.number
    github.issue_labels[number] = []
    for label, login, kind, removed in history:
        github.events[number].append(LabelEvent(label, login, kind, removed=removed))
        if not removed:
            github.issue_labels[number].append(label)
    github.writes.clear()
    model.enqueue(VALID_REPLY)
    report = _gate(tmp_path, _event("edited", COMPLETE_BODY, labels=[]))()
    assert not [w for w in github.writes if w[0] == "remove_label"]
    if outcome == "hand-set":  # as when the payload shows it: nothing written
        assert github.writes == []
        assert "by hand; /triage re-runs the gate" in report.text
    elif outcome == "kept":
        assert "kept needs-refinement (not added by the bot)" in report.text
        assert github.issue_labels[number] == ["needs-refinement", "ready-for-dev"]
    else:
        assert github.issue_labels[number] == ["ready-for-dev"]


# --- the audit -------------------------------------------------------------------------------


def _pull(sha: str = "a" * 40) -> PullRef:
    return PullRef(REPO, 2, sha)


def _audit(tmp_path: Path, sha: str, *, webhook: bool) -> Callable[[], RunReport]:
    def run() -> RunReport:
        with runner.job_context(_settings(tmp_path)) as job:
            return audit.run(job, _pull(sha), skip_if_audited=webhook)

    return run


@pytest.mark.parametrize("first", ["event", "command"])
def test_a_pull_request_event_and_an_audit_command_post_one_comment(
    tmp_path: Path, github: FakeGitHub, model: Interleaving, first: str
) -> None:
    event, command = (
        _audit(tmp_path, "a" * 40, webhook=True),
        _audit(tmp_path, "a" * 40, webhook=False),
    )
    outer, inner = (event, command) if first == "event" else (command, event)
    model.hooks.append(inner)
    model.enqueue(GOOD_AUDIT, GOOD_AUDIT)
    report = outer()
    assert len(github.bot_comments(2)) == 1
    if first == "event":
        assert "superseded: superseded by the audit of this head SHA" in report.text
    else:  # the event's comment, found again under the lock: edited or left as it is
        assert "comment created" not in report.text
        assert [w[0] for w in github.writes].count("create_comment") == 1


@pytest.mark.parametrize("late", ["older", "newer"])
def test_an_audit_of_an_older_head_never_overwrites_the_newer_one(
    tmp_path: Path, github: FakeGitHub, model: Interleaving, late: str
) -> None:
    """Two pushes: the head is now ``b…``. Whichever run writes last, the comment audits it."""
    github.heads[2] = "b" * 40
    older, newer = (
        _audit(tmp_path, "a" * 40, webhook=True),
        _audit(tmp_path, "b" * 40, webhook=True),
    )
    outer, inner = (older, newer) if late == "older" else (newer, older)
    model.hooks.append(inner)
    model.enqueue(GOOD_AUDIT, GOOD_AUDIT)
    report = outer()
    (comment,) = github.bot_comments(2)
    assert audited_head(comment.body) == "b" * 40
    if late == "older":
        assert "the pull request moved on to bbbbbbbbbbbb" in report.text
    assert comment.body.startswith(MARKER)


# --- the lock itself ---------------------------------------------------------------------------


def test_a_run_shows_how_long_it_waited_for_the_lock(
    tmp_path: Path, github: FakeGitHub, model: Interleaving
) -> None:
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        store = Store(tmp_path / "triage.db")
        with store.exclusive(f"{REPO}#1"):
            held.set()
            release.wait(5)
        store.close()

    holder = threading.Thread(target=hold)
    model.hooks.append(lambda: (holder.start(), held.wait(5)))
    model.enqueue(VALID_REPLY)
    threading.Timer(0.4, release.set).start()
    report = _gate(tmp_path, _event())()
    holder.join()
    assert "lock:     waited" in report.text
    assert "Waited" in report.summary


def test_the_sqlite_lock_wait_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Store, "lock_timeout_s", 0.3)
    holder, waiter = Store(tmp_path / "triage.db"), Store(tmp_path / "triage.db")
    started = time.monotonic()
    with holder.exclusive(f"{REPO}#1"), pytest.raises(StoreError, match="stayed locked"):  # noqa: SIM117
        with waiter.exclusive(f"{REPO}#1"):
            pass
    assert time.monotonic() - started < 3
    with waiter.exclusive(f"{REPO}#1"):  # free again once the holder is done
        pass


def test_a_link_planted_at_the_lock_file_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("kept", "utf-8")
    store = Store(tmp_path / "triage.db")
    (tmp_path / "triage.db.lock").symlink_to(victim)
    with pytest.raises(StoreError, match="lock file"), store.exclusive(f"{REPO}#1"):
        pass
    assert victim.read_text("utf-8") == "kept"
    store.close()
