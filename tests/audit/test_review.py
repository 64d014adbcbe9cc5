"""Verified defects on their lines: one COMMENT review per head SHA, on
recorded GitHub traffic (cassettes/github_pr_review_*.yaml), and what the comments may hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.auditor import Auditor, AuditResult
from bot.audit.contract import MAX_DEFECTS
from bot.audit.evidence import parse_claim
from bot.audit.plan import apply_audit, plan_audit
from bot.audit.review import (
    FINDING_PREFIX,
    finding_marker,
    line_comments,
    review_summary,
    to_post,
)
from bot.audit.selection import Segment
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import ChangedFile, PostedReviewComment, PullRef
from bot.config import AUDITOR_OPTIONS
from bot.history.store import Store
from tests.security.test_posting import HOSTILE
from tests.support import FakeChatModel, cassette
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ

SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
PULL = PullRef("Codertocat/Hello-World", 2, SHA)
A = {
    "line": 13,
    "quote": "len(recent) <= MAX_UPLOADS",
    "category": "off-by-one",
    "failure": "with MAX_UPLOADS uploads already in the window, a further one is allowed",
}
B = {
    "line": 12,
    "quote": "now - t < WINDOW_S",
    "category": "wrong condition",
    "failure": "a timestamp later than now (a clock step back) counts as recent forever",
}
UNVERIFIABLE = {
    "line": 13,
    "quote": "history.clear()",
    "category": "other",
    "failure": "UNVERIFIED-CLAIM history is wiped",
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


def _audit(model: FakeChatModel, name: str, *, review: bool = True) -> tuple[Any, list[Any], Any]:
    captured: list[Any] = []
    with cassette(name, captured) as cass:
        github = PyGithubClient(
            token="test-token-not-real",
            retries=0,
            backoff_s=0.0,
            seconds_between_writes=0.0,
            login="github-actions[bot]",  # the cassettes' review comments are the Actions token's
        )
        auditor = Auditor(model, AUDITOR_OPTIONS, fmt="json")
        plan = plan_audit(PULL, github, auditor, audit_format="json", review_comments=review)
        applied = apply_audit(plan, github, Store(":memory:"))
    assert cass.all_played
    return applied, captured, cass


def _reviews(captured: list[Any]) -> list[dict[str, Any]]:
    return [
        json.loads(r.body)
        for r in captured
        if r.method == "POST" and r.path.endswith("/pulls/2/reviews")
    ]


def test_first_audit_posts_one_comment_review_on_the_cited_lines(
    fake_model: FakeChatModel,
) -> None:
    reply = _reply(A, B, UNVERIFIABLE)
    applied, captured, cass = _audit(fake_model.enqueue(reply, reply), "github_pr_review_create")
    [review] = _reviews(captured)
    assert review["event"] == "COMMENT"  # never APPROVE, never REQUEST_CHANGES
    assert review["commit_id"] == SHA
    assert [(c["path"], c["line"], c["side"]) for c in review["comments"]] == [
        ("src/limits.py", 13, "RIGHT"),
        ("src/limits.py", 12, "RIGHT"),
    ]
    assert all(c["body"].startswith(FINDING_PREFIX) for c in review["comments"])
    assert "len(recent) <= MAX\\_UPLOADS" not in review["comments"][0]["body"]  # a code span
    assert "`len(recent) <= MAX_UPLOADS`" in review["comments"][0]["body"]
    assert applied.review == "2 line comment(s) posted"
    # the unverifiable defect reaches no request: not the comment, not the review
    assert not any(r.body and b"UNVERIFIED-CLAIM" in _bytes(r.body) for r in captured)
    assert cass.play_count <= 1 + 3 + 2  # audited files + 3, then the listing and the review


def _bytes(body: str | bytes) -> bytes:
    return body if isinstance(body, bytes) else body.encode("utf-8")


def test_replay_at_the_same_head_posts_no_review(fake_model: FakeChatModel) -> None:
    """The bot's review comments already include one made at this head SHA: nothing more."""
    applied, captured, _ = _audit(fake_model.enqueue(_reply(A, B)), "github_pr_review_replay")
    assert _reviews(captured) == []
    assert applied.review == "nothing new"


def test_a_new_head_gets_a_review_of_its_new_findings_only(fake_model: FakeChatModel) -> None:
    """A was posted at an earlier head (its finding marker is on the PR): only B is new."""
    applied, captured, _ = _audit(fake_model.enqueue(_reply(A, B)), "github_pr_review_new_head")
    [review] = _reviews(captured)
    assert [(c["line"], c["side"]) for c in review["comments"]] == [(12, "RIGHT")]
    assert review["commit_id"] == SHA
    assert applied.review == "1 line comment(s) posted"


def test_off_by_setting_lists_and_posts_nothing(fake_model: FakeChatModel) -> None:
    applied, captured, _ = _audit(
        fake_model.enqueue(_reply(A, B)), "github_pr_audit_create", review=False
    )
    assert not any("/pulls/2/comments" in r.uri or "/reviews" in r.uri for r in captured)
    assert applied.review == "none"


def _result(path: str, items: str, model: str = "m") -> AuditResult:
    sections = {"verified_defects": items, "verdict": "FIX"}
    return AuditResult(
        Segment(path, 10, 20), False, model, "v", 1, 1, 1.0, "", sections, "FIX", "High"
    )


def test_a_defect_off_the_diff_stays_in_the_summary_only() -> None:
    """GitHub answers 422 to a line comment on a line the diff does not show."""
    result = _result("a.py", "- Line 11 (bounds): `x[i]` — i may be 10\n- Line 15: `y` — z")
    comments = line_comments([result], {"a.py": frozenset({15, 16})})
    assert [(c.path, c.line) for c in comments] == [("a.py", 15)]
    assert line_comments([result], {}) == ()  # no patch: nothing on any line


def test_to_post_keeps_one_review_per_head_and_new_findings_only() -> None:
    result = _result("a.py", "- Line 11 (bounds): `x[i]` — i may be 10\n- Line 15: `y1` — z")
    first, second = line_comments([result], {"a.py": frozenset(range(1, 30))})
    at = lambda sha, c: PostedReviewComment(sha, c.body)  # noqa: E731
    assert to_post([first, second], [], SHA) == (first, second)
    assert to_post([first, second], [at(SHA, first)], SHA) == ()
    assert to_post([first, second], [at("0" * 40, first)], SHA) == (second,)


def test_the_finding_survives_a_line_shift() -> None:
    moved = parse_claim("- Line 40 (bounds): `x[i]` — i may be 10, now further down")
    there = parse_claim("- Line 11 (bounds): `x[i]` — i may be 10")
    assert finding_marker("a.py", moved) == finding_marker("a.py", there)
    assert finding_marker("b.py", moved) != finding_marker("a.py", there)


@FUZZ
@given(HOSTILE, HOSTILE)
def test_a_line_comment_renders_only_the_bots_markup(text: str, model: str) -> None:
    """Whatever the model wrote after a verifiable citation, the posted body is the bot's
    hidden marker, its heading and inert text (markdown-it-py as the oracle)."""
    result = _result("a.py", f"- Line 11 (bounds): `x[i]` — {text}", model)
    [comment] = line_comments([result], {"a.py": frozenset({11})})
    rendered = render(comment.body)
    assert set(rendered.tags) <= {"p", "strong", "code", "ul", "li", "em"}
    assert not rendered.attributes
    assert not rendered.mentions
    assert not rendered.github_links
    assert len(rendered.comments) == 1  # the finding marker, nothing forged
    assert comment.body.split("\n", 1)[0] == finding_marker("a.py", result.defects[0])


def test_a_review_body_is_plain() -> None:
    rendered = render(review_summary(2, SHA))
    assert set(rendered.tags) <= {"p", "code"}
    assert not rendered.github_links


def test_a_failed_review_post_is_posted_once_by_the_next_run() -> None:
    """The review POST fails after the summary comment was written: the next run finds the
    comment unchanged and posts the review; a third run posts nothing."""
    from bot.clients.github_port import ChangedFile
    from bot.errors import GitHubUnavailable
    from tests.support.fake_github import FakeGitHub

    lines = ["def allowed(history, now):", "    recent = [t for t in history]", "    return 1"]
    patch = "@@ -0,0 +1,3 @@\n" + "\n".join("+" + line for line in lines)
    github = FakeGitHub(files={2: [ChangedFile("a.py", "added", patch)]}, contents={"a.py": lines})
    defect = {"line": 2, "quote": "for t in history", "category": "other", "failure": "x"}
    store = Store(":memory:")

    def run() -> str:
        auditor = Auditor(FakeChatModel().enqueue(_reply(defect)), AUDITOR_OPTIONS, fmt="json")
        plan = plan_audit(PullRef("o/r", 2, SHA), github, auditor, audit_format="json",
                          review_comments=True)  # fmt: skip
        return apply_audit(plan, github, store).review

    github.fail("create_review", GitHubUnavailable("502"))
    with pytest.raises(GitHubUnavailable):
        run()
    assert github.reviews[2] == []
    assert run() == "1 line comment(s) posted"
    assert run() == "nothing new"
    assert [w[0] for w in github.writes].count("create_review") == 1
    assert [w[0] for w in github.writes].count("create_comment") == 1


def _markdown_reply(items: list[str]) -> str:
    return (
        "## 1. Bottom line\nallowed() counts recent uploads.\n\n## 2. Verified defects\n"
        + "\n".join(items)
        + "\n\n## 3. Non-blocking risks\nNone\n\n## 4. Assumptions\nNone\n\n"
        "## 5. Future improvements\nNone\n\n## 6. Verdict\nFIX\n\n## 7. Confidence\nLow\n"
    )


@pytest.mark.parametrize(
    ("fmt", "count", "lines"),
    [
        ("markdown", 300, (13,)),  # 300 defects on one line
        ("markdown", MAX_DEFECTS + 1, (13,)),
        ("markdown", 120, (12, 13)),  # spread over two lines
        ("markdown", MAX_DEFECTS, (13,)),  # at the cap: all of them
        ("json", MAX_DEFECTS, (12, 13)),
    ],
)
def test_one_audit_adds_at_most_max_defects_line_comments_in_either_format(
    fmt: str, count: int, lines: tuple[int, ...]
) -> None:
    """The JSON schema bounds section 2 at MAX_DEFECTS; a markdown reply has no schema, so the
    review is where the same bound holds. The stored audit keeps the rest."""
    from tests.audit.test_defect_evidence import FILE, PATCH
    from tests.audit.test_defect_evidence import PULL as EVIDENCE_PULL

    quotes = {12: "now - t < WINDOW_S", 13: "len(recent) <= MAX_UPLOADS"}
    cited = [(lines[i % len(lines)], f"CLAIM{i}Z breaks") for i in range(count)]
    if fmt == "markdown":
        reply = _markdown_reply([f"- Line {n}: `{quotes[n]}` {text}" for n, text in cited])
    else:
        defects = [
            {"line": n, "quote": quotes[n], "category": "other", "failure": text}
            for n, text in cited
        ]
        reply = _reply(*defects)
    github = FakeGitHub(
        files={2: [ChangedFile("src/limits.py", "modified", PATCH)]},
        contents={"src/limits.py": list(FILE)},
    )
    auditor = Auditor(FakeChatModel().enqueue(reply, reply), AUDITOR_OPTIONS, fmt=fmt)  # type: ignore[arg-type]
    plan = plan_audit(EVIDENCE_PULL, github, auditor, audit_format=fmt, review_comments=True)
    store = Store(":memory:")
    apply_audit(plan, github, store)
    [(_, _, comments)] = github.reviews[2]
    assert len(comments) == min(count, MAX_DEFECTS)
    assert [c.body.rsplit("CLAIM", 1)[1] for c in comments] == [
        f"{i}Z breaks" for i in range(len(comments))
    ]  # the first ones the audit lists, in order
    [row] = store.audits("o/r")
    assert f"CLAIM{count - 1}Z" in row["markdown"]  # the audit keeps them all


def test_the_json_schema_refuses_one_defect_past_the_cap() -> None:
    from bot.audit.structured import parse_audit_json
    from bot.errors import ModelOutputError

    one = {**A, "failure": "x"}
    parse_audit_json(_reply(*[one] * MAX_DEFECTS))
    with pytest.raises(ModelOutputError, match="verified_defects"):
        parse_audit_json(_reply(*[one] * (MAX_DEFECTS + 1)))


@FUZZ
@given(st.lists(st.lists(st.integers(0, 35), min_size=15, max_size=60), min_size=3, max_size=3))
def test_the_cap_holds_per_audit_whatever_the_defects(audits: list[list[int]]) -> None:
    """Defects of three audits on lines in (10-39) and out of the diff: each audit adds the
    defects on diff lines, in its order, up to MAX_DEFECTS."""
    diff = {f"f{k}.py": frozenset(range(10, 40)) for k in range(3)}
    results = [
        _result(f"f{k}.py", "\n".join(f"- Line {n}: `x` — claim {i}" for i, n in enumerate(lines)))
        for k, lines in enumerate(audits)
    ]
    comments = line_comments(results, diff)
    for k, lines in enumerate(audits):
        mine = [c.line for c in comments if c.path == f"f{k}.py"]
        assert mine == [n for n in lines if n >= 10][:MAX_DEFECTS]
