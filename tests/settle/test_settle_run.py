"""The settle run (``bot.settle.settling``) on both stores: outcomes written, the cursor, the
request budget, a rate limit, a fault in the middle and a rerun, a newer decision, the
pull-request step."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.config import Settings
from bot.errors import GitHubRateLimited, GitHubUnavailable
from bot.factory import make_store
from bot.gate.issue_text import prepare_issue
from bot.history.protocol import GateRow, HistoryStore
from bot.history.record import GATE_TABLE, cursor
from bot.settle.budget import Budget
from bot.settle.settling import ISSUES, settle_issues, settle_repo
from tests.support.dataset_world import (
    COMMIT,
    MAINTAINER,
    REPO,
    SHORT_BODY,
    T0,
    closed,
    commented,
    issue_item,
    labeled,
    stamp,
)
from tests.support.settle_github import SettleGitHub

BOT = "github-actions[bot]"


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _title(n: int) -> str:
    return f"Export fails ({n})"


def decide(store: HistoryStore, n: int, verdict: str | None, at: datetime) -> int:
    label = {"VALID": "ready-for-dev", "NEEDS_REFINEMENT": "needs-refinement"}
    return store.record_gate(
        GateRow(
            repo=REPO, issue=n, event="issues.opened", verdict=verdict,
            label=label.get(verdict or "", "validator-error"), reason="r",
            error_kind=None if verdict else "timeout", model="qwen2.5-coder:1.5b",
            prompt_version="validator@abc", prompt_tokens=1, output_tokens=1, duration_ms=1.0,
            created_at=at.isoformat(),
            content_sha=prepare_issue(_title(n), SHORT_BODY, max_body_chars=6000).content_sha,
            policy_version="p1",
        )
    )  # fmt: skip


def fixed(n: int, start: datetime) -> list[dict[str, Any]]:
    """The bot labels it; a commit closes it two days later (VALID by the rules)."""
    return [
        labeled(start + timedelta(minutes=1), "ready-for-dev", BOT, "Bot"),
        closed(start + timedelta(days=2), commit=COMMIT),
    ]


def asked(n: int, start: datetime) -> list[dict[str, Any]]:
    """A maintainer asks for the version and closes it unanswered, not planned."""
    return [
        commented(start + timedelta(hours=1), "Which version do you run?"),
        closed(start + timedelta(days=20), reason="not_planned"),
    ]


def world(
    store: HistoryStore, count: int, *, undecided: int = 0
) -> tuple[SettleGitHub, dict[int, str]]:
    """``count`` decided issues, alternating VALID fixed (agree) and NEEDS_REFINEMENT asked
    (agree), every third decided VALID on an asked one (disagree); ``undecided`` more that
    the bot never judged. Returns the GitHub and each decided issue's outcome."""
    github = SettleGitHub()
    want: dict[int, str] = {}
    for n in range(1, count + undecided + 1):
        start = T0 + timedelta(hours=n)
        kind = "fixed" if n % 2 else "asked"
        state_reason = "completed" if kind == "fixed" else "not_planned"
        item = issue_item(n, title=_title(n), body=SHORT_BODY, created=start,
                          state_reason=state_reason)  # fmt: skip
        events = fixed(n, start) if kind == "fixed" else asked(n, start)
        github.put(item, events, updated=start + timedelta(days=30))
        if n > count:
            continue
        verdict = "VALID" if kind == "fixed" or n % 3 == 0 else "NEEDS_REFINEMENT"
        decide(store, n, verdict, start + timedelta(minutes=1))
        right = (verdict == "VALID") == (kind == "fixed")
        want[n] = "agree" if right else "disagree"
    return github, want


def outcomes(store: HistoryStore) -> dict[int, str]:
    rows = store.fetch(f"select issue, outcome from {GATE_TABLE} where repo = ?", [REPO])
    return {int(n): str(o) for n, o in rows}


def snapshot(store: HistoryStore) -> list[tuple[Any, ...]]:
    return sorted(store.fetch(f"select * from {GATE_TABLE}", []))


def test_each_decided_issue_settles_to_its_outcome_within_three_requests(
    store: HistoryStore,
) -> None:
    github, want = world(store, 12, undecided=5)
    report = settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == want
    assert report.settled == {"agree": sum(v == "agree" for v in want.values()),
                              "disagree": sum(v == "disagree" for v in want.values())}  # fmt: skip
    assert github.requests == {"list": 1, "graphql": 1, "timeline": 12}
    assert report.requests == github.total <= 3 * 12
    assert report.stopped is None
    assert report.unchanged == 5
    assert cursor(store, REPO, ISSUES) == stamp(T0 + timedelta(hours=17, days=30))


def test_a_second_run_changes_nothing_and_reads_only_the_list(store: HistoryStore) -> None:
    github, _ = world(store, 6)
    settle_issues(github, store, REPO, Budget(200))
    before, github.requests = snapshot(store), type(github.requests)()
    report = settle_issues(github, store, REPO, Budget(200))
    assert snapshot(store) == before
    assert github.requests == {"list": 1}  # the last issue again (GitHub's since keeps it)
    assert not report.settled
    assert not report.unsettled


def test_a_spent_budget_stops_and_the_cursor_names_only_handled_issues(
    store: HistoryStore,
) -> None:
    github, want = world(store, 10)
    report = settle_issues(github, store, REPO, Budget(5))  # list, GraphQL, 3 timelines
    assert report.stopped is not None
    assert "budget" in report.stopped
    assert report.requests == 5
    assert outcomes(store) == {n: want[n] for n in (1, 2, 3)}
    assert cursor(store, REPO, ISSUES) == stamp(T0 + timedelta(hours=3, days=30))
    report = settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == want
    assert report.stopped is None
    assert sum(report.settled.values()) == 7


def test_a_rate_limit_stops_the_run_like_a_spent_budget(store: HistoryStore) -> None:
    github, want = world(store, 4)
    github.fail("timeline", GitHubRateLimited("read the timeline: rate limited", 403), times=1)
    report = settle_issues(github, store, REPO, Budget(200))
    assert report.stopped is not None
    assert "rate limit" in report.stopped
    assert outcomes(store) == {}
    assert cursor(store, REPO, ISSUES) is None
    settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == want


def test_a_fault_in_the_middle_loses_nothing_and_a_rerun_finishes(store: HistoryStore) -> None:
    github, want = world(store, 6)
    original = github.issue_timeline
    calls = 0

    def flaky(repo: str, number: int) -> Any:
        nonlocal calls
        calls += 1
        if calls == 4:
            raise GitHubUnavailable("read the timeline: GitHub answered 502", 502)
        return original(repo, number)

    github.issue_timeline = flaky  # type: ignore[method-assign]
    with pytest.raises(GitHubUnavailable):
        settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {n: want[n] for n in (1, 2, 3)}
    assert cursor(store, REPO, ISSUES) == stamp(T0 + timedelta(hours=3, days=30))
    settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == want
    before = snapshot(store)
    settle_issues(github, store, REPO, Budget(200))
    assert snapshot(store) == before


def test_a_newer_decision_replaces_the_settled_one(store: HistoryStore) -> None:
    github, _ = world(store, 2)
    settle_issues(github, store, REPO, Budget(200))
    first = store.get(GATE_TABLE, {"repo": REPO, "issue": 2})
    assert first is not None
    assert first["outcome"] == "agree"
    # Reopened and judged again VALID; then a maintainer asks again and it is closed.
    newer = decide(store, 2, "VALID", T0 + timedelta(days=40))
    item = github.items[2]
    github.put(item, github.timelines[2], updated=T0 + timedelta(days=41))
    report = settle_issues(github, store, REPO, Budget(200))
    row = store.get(GATE_TABLE, {"repo": REPO, "issue": 2})
    assert row is not None
    assert int(row["decision_id"]) == newer
    assert (row["outcome"], row["verdict"]) == ("disagree", "VALID")
    assert report.settled == {"disagree": 1}


def test_an_open_issue_waits_unsettled_and_is_settled_once_closed(store: HistoryStore) -> None:
    github = SettleGitHub()
    start = T0 + timedelta(hours=1)
    item = issue_item(1, title=_title(1), body=SHORT_BODY, created=start)
    github.put(item, fixed(1, start)[:1], updated=start + timedelta(days=1), state="open")
    decide(store, 1, "VALID", start + timedelta(minutes=1))
    report = settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {1: "unsettled"}
    assert sum(report.unsettled.values()) == 1
    github.put(item, fixed(1, start), updated=start + timedelta(days=3))
    settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {1: "agree"}


def test_a_validator_error_is_counted_unsettled_by_reason(store: HistoryStore) -> None:
    github = SettleGitHub()
    item = issue_item(1, title=_title(1), body=SHORT_BODY, created=T0)
    github.put(item, fixed(1, T0), updated=T0 + timedelta(days=3))
    decide(store, 1, None, T0 + timedelta(minutes=1))
    report = settle_issues(github, store, REPO, Budget(200))
    assert list(report.unsettled) == ["the decision was a validator-error: no verdict to settle"]


def test_since_overrides_the_cursor(store: HistoryStore) -> None:
    github, want = world(store, 4)
    report = settle_issues(github, store, REPO, Budget(200), since=T0 + timedelta(hours=3, days=30))
    assert outcomes(store) == {n: want[n] for n in (3, 4)}
    assert report.requests == 4


def test_a_long_timeline_costs_its_pages(store: HistoryStore) -> None:
    github, _ = world(store, 1)
    start = T0 + timedelta(hours=1)
    noise = [labeled(start + timedelta(minutes=2), "bug", MAINTAINER)] * 250
    github.timelines[1] = [*noise, *fixed(1, start)]
    report = settle_issues(github, store, REPO, Budget(200))
    assert report.requests == 1 + 1 + 3 == github.total


class _Pulls:
    def __init__(self) -> None:
        self.left: int | None = None

    def __call__(self, budget: Budget) -> _Pulls:
        self.left = budget.left
        return self

    def lines(self) -> list[str]:
        return ["pulls:    2 defects settled"]


def test_the_pull_requests_settle_after_the_issues_with_what_is_left(
    store: HistoryStore,
) -> None:
    github, _ = world(store, 2)
    pulls = _Pulls()
    report = settle_repo(github, store, REPO, Budget(10), bot_login=BOT, pulls=pulls)
    assert pulls.left == 10 - 4
    assert report.lines()[-1] == "pulls:    2 defects settled"
    spent = _Pulls()
    settle_repo(github, store, REPO, Budget(0), pulls=spent)
    assert spent.left is None  # the issues spent the budget: nothing left to call it with
