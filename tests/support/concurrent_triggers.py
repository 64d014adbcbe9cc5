"""Several ``triage-bot run`` processes started together on one issue or one pull request, as
GitHub starts the workflow's runs for an ``issues`` event and a ``/triage`` comment (each in its
own concurrency group), against a loopback GitHub (:mod:`tests.support.loopback_github`), a loopback
OpenAI-compatible model (:mod:`tests.support.fake_openai`) and one store (a SQLite file or a
PostgreSQL URL). For tests/reliability/test_one_writer_processes.py and benchmarks/one_writer.py.

The model answers VALID and NEEDS_REFINEMENT in turn, after a delay that lets every process
plan before any writes, so the runs disagree and race; one writer per issue means the issue ends
with one gate label, the pull request with one comment, whatever the order.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import load_webhook
from tests.support.fake_openai import Answer, FakeOpenAI, Received, completion, fake_openai_server
from tests.support.loopback_github import LoopbackGitHub, loopback_github
from tests.support.replies import COMPLETE_BODY, GOOD_AUDIT, NEEDS_REPLY, SOURCE, VALID_REPLY

__all__ = ["GATE_LABELS", "REPO", "Rig", "rig"]

REPO = "Codertocat/Hello-World"
GATE_LABELS = {"ready-for-dev", "needs-refinement", "validator-error"}
TRIGGERS = ("issues", "triage")
"""What starts a gate run: the ``issues.opened`` event, or a maintainer's ``/triage``."""
PR_TRIGGERS = ("pull_request", "audit")
"""What starts an audit run: the ``pull_request.opened`` event, or a maintainer's ``/audit``."""
BIN = Path(sys.executable).with_name("triage-bot")


@dataclass
class Rig:
    """The loopback GitHub and model, the store, and a folder for payloads."""

    github: LoopbackGitHub
    model: FakeOpenAI
    store: str
    folder: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """The environment of one run (no variable of the developer's shell leaks in)."""
        return {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.folder / "home"),
            "GITHUB_API_URL": self.github.url,
            "GITHUB_TOKEN": "loopback-token",
            "TRIAGE_BOT_LOGIN": "github-actions[bot]",
            "TRIAGE_OPENAI_BASE_URL": self.model.url,
            "TRIAGE_VALIDATOR_MODEL": "fake",
            "TRIAGE_AUDIT_FORMAT": "markdown",
            "TRIAGE_REVIEW_COMMENTS": "false",
            "TRIAGE_DB": self.store,
            **self.extra_env,
        }

    def _payload(self, trigger: str, number: int) -> tuple[str, Path]:
        if trigger in ("issues", "edited"):
            payload = load_webhook("issues.opened.18")
            with self.github.lock:
                payload["issue"]["body"] = self.github.issues[number]["body"]
            payload["issue"]["labels"] = []  # as a stale or early payload shows them
            if trigger == "edited":
                payload["action"] = "edited"
                payload["changes"] = {"body": {"from": "the text before"}}
            name = "issues"
        elif trigger == "pull_request":
            payload = load_webhook("pull_request.opened.0")
            with self.github.lock:
                payload["pull_request"]["head"]["sha"] = self.github.pulls[number]["head"]
            payload["pull_request"]["number"] = payload["number"] = number
            name = "pull_request"
        else:
            payload = load_webhook("issue_comment.created.0")
            payload["comment"]["body"] = f"/{trigger}"
            payload["issue"]["body"] = COMPLETE_BODY
            payload["issue"]["labels"] = []
            if trigger == "audit":
                payload["issue"]["pull_request"] = {"url": f"{self.github.url}/pulls/{number}"}
            name = "issue_comment"
        if "issue" in payload:
            payload["issue"]["number"] = number
        path = self.folder / f"{trigger}-{number}-{next(_ids)}.json"
        path.write_text(json.dumps(payload), "utf-8")
        return name, path

    def start(self, trigger: str, number: int) -> subprocess.Popen[str]:
        """Start one ``triage-bot run`` for ``trigger`` on issue or pull request ``number``;
        ``backlog`` runs ``triage-bot backlog`` over every open issue instead."""
        if trigger == "backlog":
            command = [str(BIN), "backlog", "--repo", REPO, "--limit", "100"]
        else:
            name, path = self._payload(trigger, number)
            command = [str(BIN), "run", "--event-name", name, "--event-path", str(path)]
        return subprocess.Popen(
            command,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def race(self, triggers: list[str], number: int) -> list[str]:
        """Run ``triggers`` on ``number`` at once; their outputs (each must exit 0)."""
        runs = [self.start(trigger, number) for trigger in triggers]
        outputs = [run.communicate(timeout=180)[0] for run in runs]
        for run, out in zip(runs, outputs, strict=True):
            assert run.returncode == 0, out
        return outputs


_ids = itertools.count()


def in_turn(*replies: str) -> Callable[[Received], Answer]:
    """A model answering the gate with ``replies`` in turn (then the last again)."""
    queue = list(replies)
    lock = threading.Lock()

    def answer(request: Received) -> Answer:
        if request.path.endswith("/models"):
            return Answer(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        with lock:
            text = queue.pop(0) if len(queue) > 1 else queue[0]
        return completion(text)

    return answer


def _answers() -> Any:
    turn = itertools.count()
    lock = threading.Lock()

    def answer(request: Received) -> Answer:
        if request.path.endswith("/models"):
            return Answer(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        if "response_format" not in (request.body or {}):  # a markdown audit
            return completion(GOOD_AUDIT)
        with lock:
            n = next(turn)
        return completion(VALID_REPLY if n % 2 == 0 else NEEDS_REPLY)

    return answer


@contextmanager
def rig(
    folder: Path,
    store: str,
    *,
    delay_s: float = 1.0,
    answer: Callable[[Received], Answer] | None = None,
) -> Iterator[Rig]:
    """A loopback GitHub with the example issue's repository, a model answering after
    ``delay_s`` seconds (VALID and NEEDS_REFINEMENT in turn, or ``answer``), and ``store``."""
    (folder / "home").mkdir(exist_ok=True)
    answers = answer or _answers()
    with loopback_github(REPO) as github, fake_openai_server(answers, delay_s=delay_s) as model:
        github.permissions["Codertocat"] = "admin"
        yield Rig(github, model, store, folder)


def new_issue(rig: Rig, number: int) -> None:
    """Issue ``number``: the example issue's title and a complete body, no label."""
    payload = load_webhook("issues.opened.18")
    rig.github.add_issue(number, payload["issue"]["title"], COMPLETE_BODY)


def new_pull(rig: Rig, number: int, head: str) -> None:
    """Pull request ``number`` at ``head``, adding forty plain lines."""
    rig.github.add_pull(number, head, {"src/values.py": SOURCE})
