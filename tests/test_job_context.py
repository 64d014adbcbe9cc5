"""One job, one context: whatever the event, the runner's job builds the GitHub client and the
store at most once and each model role at most once, reading the repository file once (here at
the default branch's commit, through the store), and closes the store when the job ends."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot import runner
from bot.chat import ChatModel, ModelRole
from bot.clients.github_port import ChangedFile
from bot.config import Settings
from bot.history.protocol import HistoryStore
from bot.history.store import Store
from bot.run_report import RunReport
from tests.support import FakeChatModel, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE, GOOD_AUDIT, NEEDS_REPLY

SHA = "a" * 40
REPO_FILE = ".github/triage-bot.yml"


class _Store(Store):
    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()


@dataclass
class Builds:
    """The runner's builders, counting what each job built."""

    github: FakeGitHub
    model: FakeChatModel
    db: Path
    built: Counter[str] = field(default_factory=Counter)
    stores: list[_Store] = field(default_factory=list)

    def make_github(self, settings: Settings, **_: Any) -> FakeGitHub:
        self.built["github"] += 1
        return self.github.built_for(settings.bot_login)

    def make_store(self, settings: Settings, *, read_only: bool = False) -> HistoryStore:
        self.built["store"] += 1
        self.stores.append(_Store(self.db, read_only=read_only))
        return self.stores[-1]

    def make_chat_model(self, settings: Settings, role: ModelRole) -> ChatModel:
        self.built[f"model {role}"] += 1
        return self.model


@pytest.fixture
def builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Builds:
    github = FakeGitHub(permissions={"Codertocat": "admin"})
    github.repo_files[(SHA, REPO_FILE)] = "author_comment: {enabled: true}\n"
    github.open_issue_list = [
        {"number": n, "title": COMPLETE_TITLE, "body": COMPLETE_BODY, "state": "open", "labels": []}
        for n in (1, 2)
    ]
    source = [f"value_{i} = {i}" for i in range(1, 41)]
    patch = "@@ -0,0 +1,40 @@\n" + "\n".join(f"+{line}" for line in source)
    github.files[2] = [ChangedFile("src/values.py", "added", patch)]
    github.contents["src/values.py"] = source
    made = Builds(github, FakeChatModel(), tmp_path / "triage.db")
    for name in ("make_github", "make_store", "make_chat_model"):
        monkeypatch.setattr(runner, name, getattr(made, name))
    return made


def _event(tmp_path: Path, name: str, payload: dict[str, Any]) -> Settings:
    return Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name=name,
        event_path=write_payload(tmp_path, payload),
        db_path=tmp_path / "triage.db",
        git_ref="refs/heads/master",
        commit_sha=SHA,
        audit_format="markdown",
        repository="Codertocat/Hello-World",
    )


def _issue(tmp_path: Path) -> RunReport:
    payload = load_webhook("issues.opened.18")
    return runner.run_event(_event(tmp_path, "issues", payload))


def _triage(tmp_path: Path) -> RunReport:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = "/triage"
    return runner.run_event(_event(tmp_path, "issue_comment", payload))


def _schedule(tmp_path: Path) -> RunReport:
    return runner.run_event(_event(tmp_path, "schedule", {"schedule": "17 * * * *"}))


def _backlog(tmp_path: Path) -> RunReport:
    return runner.run_backlog(_event(tmp_path, "", {}), "Codertocat/Hello-World")


def _pull(tmp_path: Path) -> RunReport:
    payload = load_webhook("pull_request.opened.0")
    payload["pull_request"]["head"]["sha"] = SHA
    return runner.run_event(_event(tmp_path, "pull_request_target", payload))


JOBS: dict[str, tuple[Callable[[Path], RunReport], int, set[str]]] = {
    "issues event": (_issue, 1, {"github", "store", "model validator"}),
    "/triage": (_triage, 1, {"github", "store", "model validator"}),
    "schedule (no validator-error)": (_schedule, 0, {"github", "store"}),
    "backlog of two issues": (_backlog, 2, {"github", "store", "model validator"}),
    "pull request event": (_pull, 1, {"github", "store", "model auditor"}),
}
"""Job → (run it, model replies it uses, what it builds)."""


@pytest.mark.parametrize("job", sorted(JOBS))
def test_a_job_builds_each_client_once_and_closes_the_store(
    tmp_path: Path, builds: Builds, job: str
) -> None:
    run, replies, expected = JOBS[job]
    reply = GOOD_AUDIT if "model auditor" in expected else NEEDS_REPLY
    builds.model.enqueue(*[reply] * replies)
    run(tmp_path)
    assert builds.model.queue == []  # every reply was used: the job ran its pipeline
    assert builds.built == Counter(dict.fromkeys(expected, 1))
    assert [store.closed for store in builds.stores] == [True]
    config_reads = [r for r in builds.github.reads if r[0] == "repo_file"]
    assert len(config_reads) <= 1  # once, or none when the store kept it at this commit
