"""The PR audit end to end on recorded GitHub traffic, with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.audit.auditor import Auditor
from bot.audit.contract import render_sections
from bot.audit.plan import apply_audit, plan_audit
from bot.audit.pr_comment import COMMENT_LIMIT, MARKER
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import PullRef
from bot.config import AUDITOR_OPTIONS
from bot.errors import InvalidRange
from bot.history.store import Store
from tests.support import FakeChatModel, cassette

SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
PULL = PullRef("Codertocat/Hello-World", 2, SHA)
GOOD = render_sections(
    {
        "bottom_line": "allowed() lets one upload too many through the window.",
        "verified_defects": (
            "- Line 13: `len(recent) <= MAX_UPLOADS` admits MAX_UPLOADS + 1 uploads; use `<`."
        ),
        "non_blocking_risks": "- record() and allowed() are not atomic across threads.",
        "assumptions": "None",
        "future_improvements": "None",
        "verdict": "FIX",
        "confidence": "High",
    }
)


def _github() -> PyGithubClient:
    return PyGithubClient(
        token="test-token-not-real",
        retries=0,
        backoff_s=0.0,
        seconds_between_writes=0.0,
        login="github-actions[bot]",  # the cassettes' comments are the Actions token's
    )


def _plan(model: FakeChatModel, github: PyGithubClient, **kwargs: Any) -> Any:
    auditor = Auditor(model, AUDITOR_OPTIONS)
    return plan_audit(PULL, github, auditor, audit_format="markdown", **kwargs)


def test_first_audit_stores_the_row_and_creates_the_comment(
    tmp_path: Path, fake_model: FakeChatModel
) -> None:
    store = Store(tmp_path / "t.db")
    captured: list[Any] = []
    with cassette("github_pr_audit_create", captured) as cass:
        github = _github()
        plan = _plan(fake_model.enqueue(GOOD), github)
        applied = apply_audit(plan, github, store)
    assert cass.all_played
    assert cass.play_count <= 1 + 3  # audited files + 3
    assert applied.comment == "created"
    assert [str(s) for s in plan.selection.segments] == ["src/limits.py:7-18"]
    code_sent = fake_model.history[0]["messages"][1].content
    assert "13 |     return len(recent) <= MAX_UPLOADS" in code_sent
    rows = store.audits("Codertocat/Hello-World")
    assert [(r["path"], r["line_start"], r["line_end"], r["verdict"]) for r in rows] == [
        ("src/limits.py", 7, 18, "FIX")
    ]
    posted = json.loads(captured[-1].body)["body"]
    assert posted == plan.comment
    assert posted.startswith(MARKER)
    assert (
        "| `src/limits.py` | 7-18 | FIX | 1 defect\\(s\\) claimed in lines 7–18 by fake-model "
        "| High | no |"
    ) in posted
    assert "GO means that model found no defect there, not that the change is safe" in posted
    version = plan.outcomes[0].prompt_version
    assert posted.rstrip().endswith(f"_Model: `fake-model` · prompt: `{version}`_")
    assert "`poetry.lock` (matches skip glob '\\*\\.lock')" in posted  # inert markdown
    assert "`assets/logo.png` (no patch" in posted
    assert "`old_limits.py` (removed)" in posted


def test_later_audit_edits_the_comment_in_place(tmp_path: Path, fake_model: FakeChatModel) -> None:
    captured: list[Any] = []
    with cassette("github_pr_audit_edit", captured) as cass:
        github = _github()
        applied = apply_audit(_plan(fake_model.enqueue(GOOD), github), github, Store(":memory:"))
    assert cass.all_played
    assert applied.comment == "edited"
    assert captured[-1].method == "PATCH"
    assert captured[-1].path.endswith("/issues/comments/492700401")
    assert not any(r.method == "POST" for r in captured)


def test_rejected_audit_leaves_no_row_and_no_text(
    tmp_path: Path, fake_model: FakeChatModel
) -> None:
    bad = "Here you go!\n" + GOOD
    store = Store(tmp_path / "t.db")
    captured: list[Any] = []
    with cassette("github_pr_audit_create", captured):
        github = _github()
        plan = _plan(fake_model.enqueue(bad, bad), github)
        applied = apply_audit(plan, github, store)
    assert store.audits("Codertocat/Hello-World") == []
    assert applied.comment == "not posted (nothing accepted)"
    assert [r.method for r in captured] == ["GET", "GET", "GET"]  # comments, files, contents
    assert "Here you go" not in plan.comment
    assert "Bottom line" not in plan.comment
    assert "1 rejected" in plan.comment
    assert "`src/limits.py:7-18` (contract not met after one repair (preamble))" in plan.comment


def test_explicit_range_is_checked_against_the_file(fake_model: FakeChatModel) -> None:
    with cassette("github_pr_audit_create"), pytest.raises(InvalidRange, match="has 18 lines"):
        _plan(fake_model, _github(), requested_range="src/limits.py:10-25")
    with cassette("github_pr_audit_create"), pytest.raises(InvalidRange, match="not one of"):
        _plan(fake_model, _github(), requested_range="old_limits.py:1-2")


def test_explicit_range_audits_only_that_range(fake_model: FakeChatModel) -> None:
    with cassette("github_pr_audit_create"):
        plan = _plan(fake_model.enqueue(GOOD), _github(), requested_range="./src/limits.py:9-18")
    assert [str(s) for s in plan.selection.segments] == ["src/limits.py:9-18"]
    assert plan.accepted == 1


def test_comment_never_exceeds_githubs_limit(fake_model: FakeChatModel) -> None:
    from bot.audit.auditor import AuditResult
    from bot.audit.pr_comment import render_audit_comment
    from bot.audit.selection import Segment, Selection

    sections = {
        "bottom_line": "f",
        "verified_defects": "- Line 1: x",
        "non_blocking_risks": "- " + "x" * 7000,
        "assumptions": "None",
        "future_improvements": "None",
        "verdict": "FIX",
        "confidence": "High",
    }
    results = [
        AuditResult(
            Segment(f"f{i}.py", 1, 200),
            False,
            "m",
            "v",
            1,
            1,
            1.0,
            markdown="",
            sections=sections,
            verdict="FIX",
            confidence="High",
        )
        for i in range(40)
    ]
    body = render_audit_comment(
        head_sha=SHA, selection=Selection((), ()), outcomes=results, model="m"
    )
    assert len(body) <= COMMENT_LIMIT
    assert "not shown to stay under GitHub's comment limit" in body
    assert body.startswith(MARKER)
