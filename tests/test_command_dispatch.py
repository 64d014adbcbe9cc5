"""Commands are data (issue 15): dispatch is ``COMMANDS[name].handler(ctx)`` with no default
branch, the wrong-place reply reads ``spec.where``, and the comment flow reaches the store and
the pipelines only through the runner's ``Services`` (replaced here by a recording fake)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.clients.github_port import GitHubPort, PullRef
from bot.commands.comment import dispatch, run_comment, wrong_place_reply
from bot.commands.handlers import COMMANDS
from bot.commands.spec import Answer, Command, CommandContext, CommandSpec, Where
from bot.config import Settings
from bot.events import IssueCommentEvent, IssuesEvent, route_event
from bot.history.store import Store
from bot.report import RunReport
from tests.fake_github import FakeGitHub
from tests.support import load_webhook

AUTHOR = "Codertocat"  # the commenter in issue_comment.created.0 (on issue 1)
REACTION = ("reaction", "492700400", "eyes")  # 👀 on that comment


@dataclass
class FakeServices:
    """Records what a command asked of the runner; the store is a read-only empty file."""

    client: FakeGitHub
    db: Path
    gates: list[IssuesEvent] = field(default_factory=list)
    audits: list[tuple[PullRef, str | None]] = field(default_factory=list)
    stores: int = 0

    def github(self) -> GitHubPort:
        return self.client

    def read_store(self) -> Store:
        self.stores += 1
        return Store(self.db, read_only=True)

    def rerun_gate(self, event: IssuesEvent) -> RunReport:
        self.gates.append(event)
        return RunReport("gate ran", "gate\n")

    def audit(self, pull: PullRef, github: GitHubPort, requested_range: str | None) -> RunReport:
        self.audits.append((pull, requested_range))
        return RunReport("audit ran", "audit\n")


def _event(body: str, *, on_pr: bool = False) -> IssueCommentEvent:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    if on_pr:
        payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    event = route_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    return event


@pytest.fixture
def services(tmp_path: Path) -> FakeServices:
    github = FakeGitHub(permissions={AUTHOR: "admin"})
    github.heads[1] = "a" * 40
    return FakeServices(github, tmp_path / "absent.db")


def _recording_table(ran: list[str]) -> dict[str, CommandSpec]:
    """The registry with every handler replaced by one that records its command's name."""

    def recorder(name: str) -> Callable[[CommandContext], Answer]:
        def handler(ctx: CommandContext) -> Answer:
            ran.append(name)
            return f"ran {name}"

        return handler

    return {n: dataclasses.replace(s, handler=recorder(n)) for n, s in COMMANDS.items()}


def _ctx(
    name: str, services: FakeServices, commands: dict[str, CommandSpec], *, on_pr: bool
) -> CommandContext:
    event = _event(f"/{name}", on_pr=on_pr)
    return CommandContext(Command(name), event, Settings(), services.client, services, commands)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_runs_its_own_handler_and_no_other(name: str, services: FakeServices) -> None:
    ran: list[str] = []
    table = _recording_table(ran)
    on_pr = COMMANDS[name].where == "pr"
    assert dispatch(_ctx(name, services, table, on_pr=on_pr)) == f"ran {name}"
    assert ran == [name]


@pytest.mark.parametrize("name", ["nope", "audit_statz", "", "HELP"])
def test_a_name_not_in_the_registry_reaches_no_handler(name: str, services: FakeServices) -> None:
    """The old ``_dispatch`` sent any unlisted name to ``/audit_stats``; now it is a KeyError."""
    ran: list[str] = []
    with pytest.raises(KeyError):
        dispatch(_ctx(name, services, _recording_table(ran), on_pr=False))
    assert ran == []


def test_an_unknown_command_in_a_comment_gets_the_usage_reply_and_runs_nothing(
    services: FakeServices,
) -> None:
    report = run_comment(_event("/nope 3"), Settings(), services)
    assert "reply:\n  | Unknown command. Commands: `/triage`, `/audit`" in report.text
    assert (services.gates, services.audits, services.stores) == ([], [], 0)
    assert services.client.writes == [REACTION, ("create_comment", "1")]


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
    spec = CommandSpec("trial", "none", "a trial", lambda ctx: "ran", where=where)
    assert wrong_place_reply(spec, _event("/trial", on_pr=on_pr)) == expected


@pytest.mark.parametrize("name", [n for n, s in COMMANDS.items() if s.where != "any"])
def test_a_command_in_the_wrong_place_replies_instead_of_running(
    name: str, services: FakeServices
) -> None:
    ran: list[str] = []
    on_pr = COMMANDS[name].where != "pr"
    reply = dispatch(_ctx(name, services, _recording_table(ran), on_pr=on_pr))
    assert isinstance(reply, str)
    assert reply.startswith(f"`/{name}` ")
    assert ran == []


def test_triage_runs_the_gate_through_the_services_and_posts_no_reply(
    services: FakeServices,
) -> None:
    report = run_comment(_event("/triage"), Settings(), services)
    assert [e.issue.number for e in services.gates] == [1]
    assert (
        report.text == f"triage-bot: /triage by {AUTHOR} ({AUTHOR} has admin permission)\ngate ran"
    )
    assert services.client.writes == [REACTION]


def test_audit_with_a_range_runs_the_audit_through_the_services(services: FakeServices) -> None:
    run_comment(_event("/audit src/a.py:1-5", on_pr=True), Settings(), services)
    assert [(p.number, r) for p, r in services.audits] == [(1, "src/a.py:1-5")]


def test_history_and_stats_open_the_store_once_each_and_close_it(services: FakeServices) -> None:
    for body in ("/audit_history 3", "/audit_stats"):
        report = run_comment(_event(body), Settings(), services)
        assert "reply:\n  | No accepted audits" in report.text
    assert services.stores == 2


def test_help_lists_the_registry_it_was_dispatched_from(services: FakeServices) -> None:
    trial = {"help": COMMANDS["help"]}
    reply = dispatch(_ctx("help", services, trial, on_pr=False))
    assert reply == "triage-bot commands:\n- `/help`: list the commands"


def test_a_dry_run_reads_the_permission_and_writes_nothing(services: FakeServices) -> None:
    report = run_comment(_event("/help"), Settings(dry_run=True), services)
    assert "reply:\n  | triage-bot commands:" in report.text
    assert services.client.writes == []
    assert services.client.reads == [("permission", AUTHOR)]
