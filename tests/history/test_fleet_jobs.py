"""Ephemeral runners sharing one PostgreSQL store: a sequence of jobs,
each on a fresh HOME with a fresh (empty) local store folder, every one pointed at the same
server by ``TRIAGE_DB``. A replayed event is skipped, ``/audit_history`` lists every job's
audits, and a gate label a maintainer set by hand is never overwritten.

Runs against the test server (``tests/support/pg.py``); skipped locally without one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import runner
from bot.clients.github_port import ChangedFile
from bot.config import Settings
from bot.run_report import RunReport
from tests.support import FakeChatModel, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.pg import fresh_database
from tests.support.replies import COMPLETE_BODY, GOOD_AUDIT, SOURCE, VALID_REPLY

REPO = "Codertocat/Hello-World"


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from fresh_database()


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
    github.permissions["Codertocat"] = "admin"
    return github


class Jobs:
    """Each :meth:`run` is a new runner: a fresh HOME and data folder, the shared server."""

    def __init__(self, root: Path, url: str) -> None:
        self.root, self.url, self.homes = root, url, []

    def run(self, event_name: str, payload: dict[str, Any]) -> RunReport:
        home = self.root / f"home{len(self.homes)}"
        home.mkdir()
        self.homes.append(home)
        env = {
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "TRIAGE_DB": self.url,
            "GITHUB_TOKEN": "t",  # never sent: the GitHub port is the fake
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(write_payload(home, payload)),
            "GITHUB_REPOSITORY": REPO,
            "TRIAGE_AUDIT_FORMAT": "markdown",  # GOOD_AUDIT is a markdown reply
        }
        return runner.run_event(Settings.resolve({}, env))


def test_jobs_on_fresh_runners_share_one_history(
    tmp_path: Path, pg_url: str, github: FakeGitHub, model: FakeChatModel
) -> None:
    jobs = Jobs(tmp_path, pg_url)
    issue = load_webhook("issues.opened.18")
    issue["issue"]["body"] = COMPLETE_BODY
    number = issue["issue"]["number"]

    model.enqueue(VALID_REPLY)
    jobs.run("issues", issue)
    assert github.issue_labels[number] == ["ready-for-dev"]

    replay = jobs.run("issues", issue)  # a new runner, an empty local store: skipped all the same
    assert "unchanged since the bot's last decision" in replay.text
    assert len(model.history) == 1

    pull = load_webhook("pull_request.opened.0")
    for head in ("a" * 40, "b" * 40):  # two pushes, two runners
        pull["pull_request"]["head"]["sha"] = head
        model.enqueue(GOOD_AUDIT)
        jobs.run("pull_request", pull)

    command = load_webhook("issue_comment.created.0")
    command["comment"]["body"] = "/audit_history 10"
    jobs.run("issue_comment", command)
    (reply,) = [c for c in github.comments[command["issue"]["number"]] if "accepted" in c.body]
    assert "Last 2 accepted audit(s)" in reply.body  # both runners' audits

    github.label_by_hand(number, "needs-refinement")  # a maintainer overrules the bot
    github.issue_labels[number].remove("ready-for-dev")
    edited = load_webhook("issues.opened.18")
    edited.update(action="edited", changes={"body": {"from": COMPLETE_BODY}})
    edited["issue"]["body"] = COMPLETE_BODY + " It happens on every page."
    edited["issue"]["labels"] = [{"name": "needs-refinement"}]
    report = jobs.run("issues", edited)
    assert "by hand" in report.text
    assert github.issue_labels[number] == ["needs-refinement"]
    assert len(model.history) == 3  # the gate once, two audits: no call for the replay or edit

    for home in jobs.homes:  # nothing was kept on a runner
        assert not list(home.rglob("triage.db*"))
