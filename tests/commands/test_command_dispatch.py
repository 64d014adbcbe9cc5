"""Commands are data: dispatch is ``COMMANDS[name].handler(call)`` with no default branch, the
wrong-place reply reads ``spec.where``, and the comment flow reaches GitHub and the store only
through the job's context (built here over the fake GitHub and a counting store) and the
pipelines only through their entries (:func:`bot.gate.run`, :func:`bot.audit.run`, replaced
here by recorders)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot import audit, gate
from bot.chat import ChatModel, ModelRole
from bot.clients.github_port import PullRef
from bot.commands.comment import dispatch, run_comment, wrong_place_reply
from bot.commands.handlers import COMMANDS
from bot.commands.spec import Answer, Command, CommandContext, CommandSpec, Where
from bot.config import Settings
from bot.context import JobContext
from bot.events import IssueCommentEvent, IssuesEvent, route_event
from bot.history.store import Store
from bot.run_report import RunReport
from tests.support import load_webhook
from tests.support.fake_github import FakeGitHub

AUTHOR = "Codertocat"  # the commenter in issue_comment.created.0 (on #1)
REACTION = ("reaction", "492700400", "eyes")  # 👀 on that comment


class _CountedStore(Store):
    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()


def _no_model(settings: Settings, role: ModelRole) -> ChatModel:
    raise AssertionError("no command here builds a model: the pipelines are recorders")


@dataclass
class FakeJob:
    """A job over the fake GitHub and a read-only empty store: records the stores the job
    opened and the pipelines the commands started."""

    client: FakeGitHub
    db: Path
    gates: list[IssuesEvent] = field(default_factory=list)
    audits: list[tuple[PullRef, str | None]] = field(default_factory=list)
    stores: list[_CountedStore] = field(default_factory=list)

    def job(self, settings: Settings | None = None) -> JobContext:
        return JobContext.build(
            settings or Settings(),
            make_github=lambda s, **k: self.client,
            make_store=self._store,
            make_model=_no_model,
            model_concurrency=lambda settings: 1,
        )

    def _store(self, settings: Settings, *, read_only: bool) -> Store:
        assert read_only, "a command's reply only reads"
        self.stores.append(_CountedStore(self.db, read_only=True))
        return self.stores[-1]

    def comment(self, event: IssueCommentEvent, settings: Settings | None = None) -> RunReport:
        """``run_comment`` as the runner calls it: in a job that ends after it."""
        with self.job(settings) as job:
            return run_comment(event, job)


def _event(body: str, *, on_pr: bool = False) -> IssueCommentEvent:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    if on_pr:
        payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    event = route_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    return event


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeJob:
    github = FakeGitHub(permissions={AUTHOR: "admin"})
    github.heads[1] = "a" * 40
    fake = FakeJob(github, tmp_path / "absent.db")

    def gate_run(ctx: JobContext, work: IssuesEvent, *, force: bool = False) -> RunReport:
        assert force, "/triage judges over a hand-set label"
        fake.gates.append(work)
        return RunReport("gate ran", "gate\n")

    def audit_run(
        ctx: JobContext, pull: PullRef, *, requested_range: str | None = None, **_: object
    ) -> RunReport:
        fake.audits.append((pull, requested_range))
        return RunReport("audit ran", "audit\n")

    monkeypatch.setattr(gate, "run", gate_run)
    monkeypatch.setattr(audit, "run", audit_run)
    return fake


def _recording_table(ran: list[str]) -> dict[str, CommandSpec]:
    """The registry with every handler replaced by one that records its command's name."""

    def recorder(name: str) -> Callable[[CommandContext], Answer]:
        def handler(call: CommandContext) -> Answer:
            ran.append(name)
            return f"ran {name}"

        return handler

    return {n: dataclasses.replace(s, handler=recorder(n)) for n, s in COMMANDS.items()}


def _ctx(
    name: str, fakes: FakeJob, commands: dict[str, CommandSpec], *, on_pr: bool
) -> CommandContext:
    event = _event(f"/{name}", on_pr=on_pr)
    return CommandContext(Command(name), event, fakes.job(), commands)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_runs_its_own_handler_and_no_other(name: str, fakes: FakeJob) -> None:
    ran: list[str] = []
    table = _recording_table(ran)
    on_pr = COMMANDS[name].where == "pr"
    assert dispatch(_ctx(name, fakes, table, on_pr=on_pr)) == f"ran {name}"
    assert ran == [name]


@pytest.mark.parametrize("name", ["nope", "audit_statz", "", "HELP"])
def test_a_name_not_in_the_registry_reaches_no_handler(name: str, fakes: FakeJob) -> None:
    """The old ``_dispatch`` sent any unlisted name to ``/audit_stats``; now it is a KeyError."""
    ran: list[str] = []
    with pytest.raises(KeyError):
        dispatch(_ctx(name, fakes, _recording_table(ran), on_pr=False))
    assert ran == []


def test_an_unknown_command_in_a_comment_gets_the_usage_reply_and_runs_nothing(
    fakes: FakeJob,
) -> None:
    report = fakes.comment(_event("/nope 3"))
    assert "reply:\n  | Unknown command. Commands: `/triage`, `/audit`" in report.text
    assert (fakes.gates, fakes.audits, fakes.stores) == ([], [], [])
    assert fakes.client.writes == [REACTION, ("create_comment", "1")]


@pytest.mark.parametrize(
    ("where", "on_pr", "expected"),
    [
        ("any", False, None),
        ("any", True, None),
        ("issue", False, None),
        ("issue", True, "`/trial` runs on issues only."),
        ("pr", True, None),
        ("pr", False, "`/trial` runs on pull requests only."),
    ],
)
def test_the_wrong_place_reply_reads_where(where: Where, on_pr: bool, expected: str | None) -> None:
    spec = CommandSpec("trial", "none", "a trial", lambda call: "ran", where=where)
    assert wrong_place_reply(spec, _event("/trial", on_pr=on_pr)) == expected


@pytest.mark.parametrize("name", [n for n, s in COMMANDS.items() if s.where != "any"])
def test_a_command_in_the_wrong_place_replies_instead_of_running(name: str, fakes: FakeJob) -> None:
    ran: list[str] = []
    on_pr = COMMANDS[name].where != "pr"
    reply = dispatch(_ctx(name, fakes, _recording_table(ran), on_pr=on_pr))
    assert isinstance(reply, str)
    assert reply.startswith(f"`/{name}` ")
    assert ran == []


def test_triage_runs_the_gate_and_posts_no_reply(fakes: FakeJob) -> None:
    report = fakes.comment(_event("/triage"))
    assert [e.issue.number for e in fakes.gates] == [1]
    assert (
        report.text == f"triage-bot: /triage by {AUTHOR} ({AUTHOR} has admin permission)\ngate ran"
    )
    assert fakes.client.writes == [REACTION]


def test_audit_with_a_range_runs_the_audit_on_that_range(fakes: FakeJob) -> None:
    fakes.comment(_event("/audit src/a.py:1-5", on_pr=True))
    assert [(p.number, r) for p, r in fakes.audits] == [(1, "src/a.py:1-5")]


def test_history_and_stats_open_the_store_once_each_and_close_it(fakes: FakeJob) -> None:
    for body in ("/audit_history 3", "/audit_stats"):
        report = fakes.comment(_event(body))
        assert "reply:\n  | No accepted audits" in report.text
    assert [store.closed for store in fakes.stores] == [True, True]


def test_help_lists_the_registry_it_was_dispatched_from(fakes: FakeJob) -> None:
    trial = {"help": COMMANDS["help"]}
    reply = dispatch(_ctx("help", fakes, trial, on_pr=False))
    assert reply == "triage-bot commands:\n- `/help`: list the commands"


def test_a_dry_run_reads_the_permission_and_writes_nothing(fakes: FakeJob) -> None:
    report = fakes.comment(_event("/help"), Settings(dry_run=True))
    assert "reply:\n  | triage-bot commands:" in report.text
    assert fakes.client.writes == []
    assert fakes.client.reads == [("permission", AUTHOR)]
