"""Each verified defect an audit reports goes to the live record with the audit's rows, on
recorded GitHub traffic, on both stores."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bot.audit.auditor import Auditor
from bot.audit.plan import apply_audit, plan_audit
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import PullRef
from bot.config import AUDITOR_OPTIONS, Settings
from bot.errors import StoreError
from bot.factory import make_store
from bot.history.protocol import HistoryStore, KeyedTable
from bot.history.record import DEFECT_TABLE, pending_defects
from bot.history.store import Store
from tests.support import FakeChatModel, cassette

REPO = "Codertocat/Hello-World"
SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
PULL = PullRef(REPO, 2, SHA)
OFF_BY_ONE = {
    "line": 13,
    "quote": "len(recent) <= MAX_UPLOADS",
    "category": "off-by-one",
    "failure": "with MAX_UPLOADS uploads already in the window, a further one is allowed",
}
CLOCK = {
    "line": 12,
    "quote": "now - t < WINDOW_S",
    "category": "wrong condition",
    "failure": "a timestamp later than now (a clock step back) counts as recent forever",
}
UNVERIFIABLE = {
    "line": 14,
    "quote": "history.clear()",
    "category": "other",
    "failure": "history is wiped",
}


def _reply(*defects: dict[str, object]) -> str:
    return json.dumps(
        {
            "bottom_line": "allowed() lets one upload too many through the window.",
            "verified_defects": list(defects),
            "non_blocking_risks": [],
            "assumptions": [],
            "future_improvements": [],
            "verdict": "FIX",
            "confidence": "High",
        }
    )


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _audit(
    model: FakeChatModel,
    name: str,
    store: HistoryStore,
    *,
    review: bool,
    captured: list[Any] | None = None,
) -> tuple[Any, list[Any]]:
    captured = [] if captured is None else captured
    with cassette(name, captured):
        github = PyGithubClient(
            token="test-token-not-real",
            retries=0,
            backoff_s=0.0,
            seconds_between_writes=0.0,
            login="github-actions[bot]",
        )
        auditor = Auditor(model, AUDITOR_OPTIONS, fmt="json")
        plan = plan_audit(PULL, github, auditor, audit_format="json", review_comments=review)
        applied = apply_audit(plan, github, store)
    return applied, captured


def test_each_verified_defect_is_recorded_beside_its_line_comments(
    store: HistoryStore, fake_model: FakeChatModel
) -> None:
    reply = _reply(OFF_BY_ONE, CLOCK, UNVERIFIABLE)
    applied, _ = _audit(
        fake_model.enqueue(reply, reply), "github_pr_review_create", store, review=True
    )
    assert applied.review == "2 line comment(s) posted"
    assert applied.defects_recorded == 2
    rows = pending_defects(store, REPO)
    assert [(r.pr, r.head_sha, r.path, r.line, r.category) for r in rows] == [
        (2, SHA, "src/limits.py", 12, "wrong condition"),
        (2, SHA, "src/limits.py", 13, "off-by-one"),
    ]  # the unverifiable claim was dropped by the repair: never recorded
    version = applied.plan.outcomes[0].prompt_version
    assert {(r.model, r.prompt_version) for r in rows} == {("fake-model", version)}


def test_a_defect_without_a_line_comment_is_recorded_too(
    store: HistoryStore, fake_model: FakeChatModel
) -> None:
    applied, captured = _audit(
        fake_model.enqueue(_reply(OFF_BY_ONE)), "github_pr_audit_create", store, review=False
    )
    assert not any(r.path.endswith("/reviews") for r in captured)
    assert applied.defects_recorded == 1
    assert [(r.line, r.review_comment_id) for r in pending_defects(store, REPO)] == [(13, None)]


def test_the_same_audit_again_records_each_line_once(
    store: HistoryStore, fake_model: FakeChatModel
) -> None:
    for _ in range(2):
        model = fake_model.enqueue(_reply(OFF_BY_ONE))
        _audit(model, "github_pr_audit_create", store, review=False)
    assert [r.line for r in pending_defects(store, REPO)] == [13]


class _NoDefects(Store):
    """A SQLite store whose writes to the defects table fail."""

    def change(self, table: str, change: Callable[[KeyedTable], object]) -> None:
        if table == DEFECT_TABLE:
            raise StoreError("disk I/O error")
        super().change(table, change)


def test_a_failed_defect_write_posts_nothing(fake_model: FakeChatModel) -> None:
    captured: list[Any] = []
    with pytest.raises(StoreError, match="disk I/O"):
        _audit(
            fake_model.enqueue(_reply(OFF_BY_ONE)),
            "github_pr_audit_create",
            _NoDefects(":memory:"),
            review=False,
            captured=captured,
        )
    assert captured  # the audit read GitHub
    assert [r.method for r in captured] == ["GET"] * len(captured)  # and wrote nothing there
