"""Line review comments stop when authors act on too few of them, by the live record.

Through the runner with the fake GitHub, on both stores: once 30 defects of this model and
prompt version are settled (acted on or not), line comments stop below
``line-comments-min-acted`` and the summary comment, the plan and the step summary say why;
above it, or with fewer settled, they are posted. Another prompt version's record does not
count; 0 keeps them on; an unreadable record stops them (the summary lists every defect).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot import factory, runner
from bot.audit.earned import line_rule
from bot.audit.prompt import system_prompt
from bot.clients.github_port import ChangedFile
from bot.config import Settings
from bot.errors import StoreError
from bot.history.record import DefectOutcome, DefectRow, put_defects, settle_defect
from bot.run_report import RunReport
from tests.support import FakeChatModel
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render

FILE = [
    '"""Rate limits for the upload endpoint."""',
    "",
    "import time",
    "",
    "WINDOW_S = 60",
    "MAX_UPLOADS = 10",
    "",
    "",
    "def allowed(history: list[float], now: float | None = None) -> bool:",
    '    """Whether one more upload fits in the window."""',
    "    now = time.time() if now is None else now",
    "    recent = [t for t in history if now - t < WINDOW_S]",
    "    return len(recent) <= MAX_UPLOADS",
]
PATCH = "@@ -1,6 +1,13 @@\n" + "\n".join(
    (" " if n <= 6 else "+") + line for n, line in enumerate(FILE, 1)
)
SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
REPO = "o/r"
REPLY = json.dumps(
    {
        "bottom_line": "allowed() lets one upload too many through the window.",
        "verified_defects": [
            {
                "line": 13,
                "quote": "len(recent) <= MAX_UPLOADS",
                "category": "off-by-one",
                "failure": "with MAX_UPLOADS uploads in the window, a further one is allowed",
            }
        ],
        "non_blocking_risks": [],
        "assumptions": [],
        "future_improvements": [],
        "verdict": "FIX",
        "confidence": "High",
    }
)


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    fake = FakeGitHub(
        files={2: [ChangedFile("src/limits.py", "modified", PATCH)]},
        contents={"src/limits.py": list(FILE)},
        heads={2: SHA},
    )
    monkeypatch.setattr(
        runner, "make_github", lambda settings, **k: fake.built_for(settings.bot_login)
    )
    return fake


def _seed(
    target: str,
    acted: int,
    settled: int,
    *,
    prompt_version: str | None = None,
    answered: int = 0,
    unmerged: int = 0,
) -> None:
    """``settled`` defects settled acted on or not (``acted`` acted on), plus some counted
    apart, on earlier pull requests, as the audit and settling write them."""
    store = factory.make_store(Settings(db_path=target))
    prompt = prompt_version or system_prompt("json")[1]
    outcomes = (
        [DefectOutcome.ACTED_ON] * acted
        + [DefectOutcome.NOT_ACTED_ON] * (settled - acted)
        + [DefectOutcome.ANSWERED] * answered
        + [DefectOutcome.UNMERGED] * unmerged
    )
    rows = [
        DefectRow(REPO, 100 + i, "a" * 40, "src/x.py", 10, "off-by-one", "fake-model", prompt)
        for i in range(len(outcomes))
    ]
    try:
        put_defects(store, rows)
        for row, outcome in zip(rows, outcomes, strict=True):
            key = {"repo": REPO, "pr": row.pr, "head_sha": row.head_sha, "path": row.path}
            settle_defect(store, {**key, "line": row.line}, outcome, "test")
    finally:
        store.close()


def _audit(target: str, model: FakeChatModel, **settings: Any) -> RunReport:
    model.enqueue(REPLY, REPLY)
    base = Settings(github_token="t", db_path=target, audit_format="json", **settings)
    return runner.run_pull(base, REPO, 2)


def _posted_lines(github: FakeGitHub) -> int:
    return sum(len(comments) for _, _, comments in github.reviews[2])


def test_line_comments_stop_when_authors_acted_on_6_of_60(
    store_target: str, github: FakeGitHub, model: FakeChatModel
) -> None:
    _seed(store_target, 6, 60, answered=3, unmerged=2)
    report = _audit(store_target, model)
    assert _posted_lines(github) == 0
    (comment,) = github.comments[2]
    why = "authors acted on 10% (6 of 60; 95% CI 5–20%) of this model and prompt's settled defects"
    rendered = render(comment.body)
    assert f"<strong>Line comments stopped:</strong> {why}, below 30%" in rendered.html
    assert rendered.tags.get("a", 0) == 0
    assert "line comments: stopped: " + why in report.text
    summary = render(report.summary)
    assert f"<strong>Line comments:</strong> stopped: {why}" in summary.html
    # the summary comment still lists the defect
    assert "off-by-one" in rendered.text


@pytest.mark.parametrize(
    ("acted", "settled", "prompt_version"),
    [
        (36, 60, None),  # acted on often enough
        (2, 29, None),  # too few settled for the rule
        (6, 60, "audit-json@00000000"),  # another prompt version's record
    ],
)
def test_line_comments_are_posted_otherwise(
    store_target: str,
    github: FakeGitHub,
    model: FakeChatModel,
    acted: int,
    settled: int,
    prompt_version: str | None,
) -> None:
    _seed(store_target, acted, settled, prompt_version=prompt_version)
    report = _audit(store_target, model)
    assert _posted_lines(github) == 1
    (comment,) = github.comments[2]
    assert "Line comments stopped" not in comment.body
    assert "line comments: posted" in report.text


def test_a_bound_of_zero_keeps_line_comments_on(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel
) -> None:
    target = str(tmp_path / "triage.db")
    _seed(target, 0, 60)
    _audit(target, model, line_comments_min_acted=0.0)
    assert _posted_lines(github) == 1


class _Unreadable:
    def fetch(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        raise StoreError("cannot read the store: connection lost")


def test_an_unreadable_record_stops_line_comments_and_says_why() -> None:
    rule = line_rule(
        _Unreadable(),  # type: ignore[arg-type]
        REPO,
        model="fake-model",
        prompt_version="audit-json@1",
        min_acted=0.3,
    )
    assert rule.stopped is not None
    assert "could not be read" in rule.stopped
    assert "connection lost" in rule.stopped


def test_the_same_weights_under_another_name_share_a_record(tmp_path: Path) -> None:
    target = str(tmp_path / "triage.db")
    _seed(target, 6, 60)
    store = factory.make_store(Settings(db_path=target), read_only=True)
    prompt = system_prompt("json")[1]
    try:
        alone = line_rule(store, REPO, model="served:tag", prompt_version=prompt, min_acted=0.3)
        aliased = line_rule(
            store,
            REPO,
            model="served:tag",
            prompt_version=prompt,
            min_acted=0.3,
            aliases={"served:tag": "base", "fake-model": "base"},
        )
    finally:
        store.close()
    assert alone.stopped is None
    assert aliased.stopped is not None
