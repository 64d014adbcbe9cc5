"""``model_concurrency`` in the jobs: a backlog judges up to N issues at once and a PR audit
audits up to N segments at once, against a fake model server that batches (its calls wait for
each other, so N are provably in flight together). What a run writes and reports is what the
one-at-a-time run writes and reports, item for item and in the same order: labels, comments and
decision rows on the caller's thread, one issue at a time; the audit's outcomes, comment and
step summary's model-call table in segment order. One call in ten fails (a reply cut at its output
limit) and stays that item's own outcome: nothing lost, nothing doubled."""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot import runner
from bot.audit.contract import render_sections
from bot.chat import ChatMessage, ChatResult, RoleOptions
from bot.clients.github_port import ChangedFile
from bot.config import Settings
from bot.errors import ModelTruncated, ModelUnavailable
from bot.history.protocol import GateRow
from bot.history.store import Store
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE, NEEDS_REPLY, VALID_REPLY

REPO = "Codertocat/Hello-World"
SERVER = "http://127.0.0.1:9/v1"  # an OpenAI-compatible server: a backend that batches
ITEMS = 40
WIDTHS = (2, 4, 8)


def _fails(case: int) -> bool:
    """One call in ten: the server refuses it."""
    return case % 10 == 3


class Batching:
    """A :class:`~bot.chat.ChatModel` standing for a server that batches: the first ``width``
    calls wait for each other (a barrier, so that many are in flight together; the later ones
    take a moment each), it counts how many run at once,
    answers the case its prompt names (``case N``) with ``answer(N)``, and is refused for the
    cases :func:`_fails` names with a reply cut at its output limit (with ``down_from``,
    refused as by a server that is down, for every case from that one on)."""

    name = "fake-model"

    def __init__(
        self, width: int, answer: Callable[[int], str], *, down_from: int | None = None
    ) -> None:
        self.answer = answer
        self.down_from = down_from
        self.first = threading.Barrier(width, timeout=10)
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.cases: list[int] = []
        self.threads: set[int] = set()

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        found = re.search(r"case[ _](\d+)", "\n".join(m.content for m in messages[1:]))
        assert found is not None, "every prompt names its case"
        case = int(found.group(1))
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.cases.append(case)
            self.threads.add(threading.get_ident())
            early = len(self.cases) <= self.first.parties
        try:
            if early:
                self.first.wait()
            else:
                time.sleep(random.uniform(0, 0.003))
            if self.down_from is not None and case >= self.down_from:
                raise ModelUnavailable(f"the server at {SERVER} answered 503: case {case}")
            if self.down_from is None and _fails(case):  # a call that ran, and its cost
                raise ModelTruncated(
                    f"case {case}: cut", prompt_tokens=100, output_tokens=20, duration_ms=5.0
                )
            return ChatResult(self.answer(case), "stop", self.name, 100, 20, 5.0)
        finally:
            with self.lock:
                self.now -= 1


@dataclass
class CallerThreadGitHub(FakeGitHub):
    """The fake GitHub that notes which threads talked to it."""

    threads: set[int] = field(default_factory=set)

    def _enter(self, method: str) -> None:
        self.threads.add(threading.get_ident())
        super()._enter(method)


def _settings(tmp_path: Path, concurrency: int, **kw: Any) -> Settings:
    return Settings(
        github_token="t",
        db_path=tmp_path / f"triage-{concurrency}.db",
        openai_base_url=SERVER,
        model_concurrency=concurrency,
        **kw,
    )


def _use(monkeypatch: pytest.MonkeyPatch, github: FakeGitHub, model: Batching) -> None:
    monkeypatch.setattr(runner, "make_github", lambda settings, **k: github)
    monkeypatch.setattr(runner, "make_chat_model", lambda settings, role: model)


# --- backlog ---------------------------------------------------------------------------------
def _gate_answer(case: int) -> str:
    return VALID_REPLY if case % 2 == 0 else NEEDS_REPLY


def _open_issues(github: FakeGitHub, count: int = ITEMS) -> None:
    github.open_issue_list = [
        {"number": n, "title": f"{COMPLETE_TITLE} (case {n})", "body": COMPLETE_BODY,
         "state": "open", "labels": []}
        for n in range(1, count + 1)
    ]  # fmt: skip


def _rows(tmp_path: Path, concurrency: int) -> list[tuple[int, str, str | None]]:
    """The decision rows as written, oldest first: (issue, label, error kind)."""
    store = Store(tmp_path / f"triage-{concurrency}.db", read_only=True)
    try:
        rows = store.fetch("select issue, label, error_kind from gate_decisions order by id", [])
    finally:
        store.close()
    return [(issue, label, kind) for issue, label, kind in rows]


def _backlog(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, concurrency: int, **kw: Any
) -> tuple[runner.RunReport, CallerThreadGitHub, Batching, list[tuple[int, int, int]]]:
    github = CallerThreadGitHub()
    _open_issues(github)
    model = Batching(concurrency, _gate_answer)
    _use(monkeypatch, github, model)
    progress: list[tuple[int, int, int]] = []
    report = runner.run_backlog(
        _settings(tmp_path, concurrency),
        REPO,
        limit=ITEMS,
        on_progress=lambda done, total: progress.append((done, total, threading.get_ident())),
        **kw,
    )
    return report, github, model, progress


@pytest.mark.parametrize("concurrency", WIDTHS)
def test_a_backlog_judges_n_at_once_and_writes_as_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, concurrency: int
) -> None:
    one, one_github, one_model, _ = _backlog(monkeypatch, tmp_path, 1)
    many, github, model, progress = _backlog(monkeypatch, tmp_path, concurrency)

    assert one_model.most == 1
    assert model.most == concurrency  # N calls in flight together, never more
    assert sorted(model.cases) == list(range(1, ITEMS + 1))  # each issue asked once
    assert many.text == one.text  # every issue's line, in the selection's order
    assert many.summary == one.summary
    assert github.writes == one_github.writes  # labels and comments in the same order
    assert github.issue_labels == one_github.issue_labels
    assert _rows(tmp_path, concurrency) == _rows(tmp_path, 1)
    caller = threading.get_ident()
    assert github.threads == {caller}  # every GitHub request from the caller's thread
    assert progress == [(n, ITEMS, caller) for n in range(1, ITEMS + 1)]


def test_each_issue_gets_its_own_verdict_and_a_refused_call_only_its_own_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report, github, _, _ = _backlog(monkeypatch, tmp_path, 4)
    for n in range(1, ITEMS + 1):
        if _fails(n):
            expected = "validator-error"
        else:
            expected = "ready-for-dev" if n % 2 == 0 else "needs-refinement"
        assert github.issue_labels[n] == [expected], n
    rows = _rows(tmp_path, 4)
    assert sorted(issue for issue, _, _ in rows) == list(range(1, ITEMS + 1))  # one row each
    assert {issue for issue, _, kind in rows if kind} == {n for n in range(1, ITEMS + 1)
                                                         if _fails(n)}  # fmt: skip
    assert "validator-error: 4" in report.text
    assert "`validator-error`: 4" in report.summary


@pytest.mark.parametrize("concurrency", [1, 4])
def test_retry_errors_stops_at_the_outage_and_writes_nothing_after_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, concurrency: int
) -> None:
    """Every issue is at validator-error; the server answers again, then goes down at case 6:
    the run writes up to that issue, one at a time, and leaves the rest for the next run
    whatever calls were already running for them."""
    github = CallerThreadGitHub()
    _open_issues(github, 20)
    for n in range(1, 21):
        github.issue_labels[n] = ["validator-error"]
    model = Batching(1, _gate_answer, down_from=6)
    _use(monkeypatch, github, model)
    settings = _settings(tmp_path, concurrency)
    store = Store(settings.db_path)
    for n in range(1, 21):
        store.record_gate(_error_row(n))
    store.close()

    report = runner.run_backlog(settings, REPO, retry_errors=True)

    assert "stopped: the model is still out (model_unavailable); 14 issue(s) left" in report.text
    judged = [int(m) for m in re.findall(r"^#(\d+): ", report.text, re.MULTILINE)]
    assert judged == [1, 2, 3, 4, 5, 6]
    assert {n for n in range(1, 21) if github.issue_labels[n] != ["validator-error"]} == {
        1, 2, 3, 4, 5,
    }  # fmt: skip
    written = {w[1] for w in github.writes if w[0] != "create_label"}
    assert written == {"1", "2", "3", "4", "5"}
    assert [issue for issue, _, _ in _rows(tmp_path, concurrency)][20:] == [1, 2, 3, 4, 5, 6]
    assert len(model.cases) <= 6 + concurrency  # none started past the outage's N next


def _error_row(number: int) -> GateRow:
    """A decision row of an earlier outage: ``validator-error`` on ``number``."""
    return GateRow(
        REPO, number, "issues.opened", None, "validator-error", "", "model_unavailable",
        "fake-model", "validator@old", 0, 0, 0.0,
    )  # fmt: skip


@pytest.mark.parametrize("job", ["backlog", "audit"])
def test_the_embedded_backend_makes_one_call_at_a_time_whatever_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, job: str
) -> None:
    """No server configured: the model is llama.cpp in this process, one call at a time, on
    the job's own thread."""
    github = CallerThreadGitHub()
    settings = Settings(github_token="t", db_path=tmp_path / "t.db", model_concurrency=8,
                        audit_format="markdown", max_segments=ITEMS)  # fmt: skip
    if job == "backlog":
        _open_issues(github, 12)
        model = Batching(1, _gate_answer)
        _use(monkeypatch, github, model)
        runner.run_backlog(settings, REPO)
    else:
        _pull(github)
        model = Batching(1, _audit_answer)
        _use(monkeypatch, github, model)
        runner.run_pull(settings, REPO, 2)
    assert model.threads == {threading.get_ident()}
    assert model.most == 1


# --- audit -----------------------------------------------------------------------------------
def _audit_answer(case: int) -> str:
    return render_sections(
        {
            "bottom_line": f"case_{case}.py adds five assignments and nothing else.",
            "verified_defects": "None",
            "non_blocking_risks": "None",
            "assumptions": "None",
            "future_improvements": "None",
            "verdict": "GO",
            "confidence": "High",
        }
    )


SEGMENT_ORDER = sorted(range(1, ITEMS + 1), key=lambda n: f"src/case_{n}.py")
"""The selection's order: by path."""


def _pull(github: FakeGitHub) -> None:
    lines = [f"value_{i} = {i}" for i in range(5)]
    patch = "@@ -0,0 +1,5 @@\n" + "\n".join(f"+{line}" for line in lines)
    github.files[2] = [
        ChangedFile(path=f"src/case_{n}.py", status="added", patch=patch)
        for n in range(1, ITEMS + 1)
    ]
    for n in range(1, ITEMS + 1):
        github.contents[f"src/case_{n}.py"] = lines
    github.heads[2] = "a" * 40


def _audit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, concurrency: int
) -> tuple[runner.RunReport, CallerThreadGitHub, Batching]:
    github = CallerThreadGitHub()
    _pull(github)
    model = Batching(concurrency, _audit_answer)
    _use(monkeypatch, github, model)
    settings = _settings(
        tmp_path, concurrency, audit_format="markdown", max_segments=ITEMS, review_comments=False
    )
    return runner.run_pull(settings, REPO, 2), github, model


@pytest.mark.parametrize("concurrency", WIDTHS)
def test_a_pr_audit_audits_n_segments_at_once_in_segment_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, concurrency: int
) -> None:
    one, one_github, one_model = _audit(monkeypatch, tmp_path, 1)
    many, github, model = _audit(monkeypatch, tmp_path, concurrency)

    assert one_model.most == 1
    assert model.most == concurrency
    # each segment audited once; a cut reply gets its one repair turn, cut again
    assert sorted(model.cases) == sorted([*range(1, ITEMS + 1), *filter(_fails, range(ITEMS))])
    assert many.text == one.text  # outcomes and the comment in segment order
    assert many.summary == one.summary  # the model-call table lists every call, in order
    assert many.outputs == one.outputs == {"audits-accepted": "36", "audits-rejected": "4"}
    assert many.warnings == one.warnings
    assert github.writes == one_github.writes
    assert [c.body for c in github.comments[2]] == [c.body for c in one_github.comments[2]]
    assert github.threads == {threading.get_ident()}


def test_each_segment_keeps_its_own_audit_and_a_refused_call_only_rejects_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report, _, _ = _audit(monkeypatch, tmp_path, 8)
    outcomes = re.findall(r"segment (src/case_(\d+)\.py:1-5)\s+(ACCEPTED|REJECTED)", report.text)
    assert [int(n) for _, n, _ in outcomes] == SEGMENT_ORDER
    for _, n, state in outcomes:
        assert state == ("REJECTED" if _fails(int(n)) else "ACCEPTED"), n
    calls = re.findall(r"^\| auditor first \| `src/case_(\d+)\.py:1-5` \|", report.summary, re.M)
    assert [int(n) for n in calls] == SEGMENT_ORDER  # every call, in order
    store = Store(tmp_path / "triage-8.db", read_only=True)
    try:
        rows = store.audits(REPO, limit=100)
    finally:
        store.close()
    assert sorted(r["path"] for r in rows) == sorted(
        f"src/case_{n}.py" for n in range(1, ITEMS + 1) if not _fails(n)
    )
    for row in rows:  # each row holds its own segment's audit, not a neighbour's
        assert f"{Path(row['path']).name} adds five" in row["markdown"].replace("\\_", "_")
