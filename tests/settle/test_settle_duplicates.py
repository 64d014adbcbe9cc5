"""Settling the duplicate statement on both stores: an issue's top candidate against the
duplicate mark GitHub shows once it is closed, in the settle walk, one GraphQL request a page."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.config import Settings
from bot.duplicates.suggestions import dismiss, record_ranking, suggestion
from bot.factory import make_store
from bot.history.protocol import HistoryStore
from bot.history.record import cursor
from bot.settle.budget import Budget
from bot.settle.settling import ISSUES, settle_issues
from tests.support.dataset_world import REPO, SHORT_BODY, T0, issue_item
from tests.support.duplicate_world import marked, unmarked
from tests.support.settle_github import SettleGitHub


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _put(
    github: SettleGitHub, n: int, *, state: str = "closed", reason: str | None = "completed"
) -> None:
    at = T0 + timedelta(hours=n)
    item = issue_item(n, title=f"Crash ({n})", body=SHORT_BODY, created=at, state_reason=reason)
    github.put(item, [], updated=at + timedelta(days=1), state=state)


def _outcomes(store: HistoryStore, numbers: range) -> dict[int, str | None]:
    found = {n: suggestion(store, REPO, n) for n in numbers}
    return {n: s.outcome for n, s in found.items() if s is not None}


def test_each_ranking_is_settled_by_what_the_issue_became(store: HistoryStore) -> None:
    github = SettleGitHub()
    for n in range(1, 8):
        _put(github, n, reason="duplicate" if n in (1, 2, 3) else "completed")
        record_ranking(store, REPO, n, 100 + n, 0.5)
    github.marks[1] = [marked(T0, 101)]  # the top candidate: right
    github.marks[2] = [marked(T0, 999)]  # another issue: wrong
    github.marks[3] = [marked(T0, 103), unmarked(T0 + timedelta(hours=1), 103)]  # taken back
    _put(github, 4, reason="not_planned")  # no mark, not completed: waits
    _put(github, 5, state="open", reason=None)  # open: waits
    # 6 and 7: closed as completed (a fix): wrong
    report = settle_issues(github, store, REPO, Budget(100))
    assert _outcomes(store, range(1, 8)) == {
        1: "right", 2: "wrong", 3: None, 4: None, 5: None, 6: "wrong", 7: "wrong"
    }  # fmt: skip
    assert report.duplicates == {"right": 1, "wrong": 3}
    assert github.requests["graphql"] == 1  # one marks request for the page, no edit histories
    assert "duplicate rankings settled: 1 right, 3 wrong" in "\n".join(report.lines())


def test_a_mark_in_another_repository_is_wrong(store: HistoryStore) -> None:
    github = SettleGitHub()
    _put(github, 1, reason="duplicate")
    record_ranking(store, REPO, 1, 5, 0.4)
    github.marks[1] = [marked(T0, 5, repo="someone/else")]
    settle_issues(github, store, REPO, Budget(100))
    assert _outcomes(store, range(1, 2)) == {1: "wrong"}


def test_a_dismissal_settles_wrong_without_a_request(store: HistoryStore) -> None:
    github = SettleGitHub()
    _put(github, 1, reason="duplicate")
    record_ranking(store, REPO, 1, 5, 0.9)
    dismiss(store, REPO, 1, "maintainer")
    github.marks[1] = [marked(T0, 5)]
    settle_issues(github, store, REPO, Budget(100))
    assert _outcomes(store, range(1, 2)) == {1: "wrong"}
    assert github.requests["graphql"] == 0


def test_issues_without_a_ranking_cost_no_request_and_a_settled_one_is_left(
    store: HistoryStore,
) -> None:
    github = SettleGitHub()
    _put(github, 1, reason="duplicate")
    _put(github, 2, reason="duplicate")
    record_ranking(store, REPO, 2, 1, 0.7)
    github.marks[2] = [marked(T0, 1)]
    settle_issues(github, store, REPO, Budget(100))
    assert github.requests["graphql"] == 1
    settle_issues(github, store, REPO, Budget(100), since=T0)
    assert github.requests["graphql"] == 1  # already settled: not asked again
    assert _outcomes(store, range(1, 3)) == {2: "right"}


def test_a_new_ranking_after_an_edit_is_settled_again(store: HistoryStore) -> None:
    github = SettleGitHub()
    _put(github, 1, reason="duplicate")
    record_ranking(store, REPO, 1, 7, 0.3)
    github.marks[1] = [marked(T0, 8)]
    settle_issues(github, store, REPO, Budget(100))
    assert _outcomes(store, range(1, 2)) == {1: "wrong"}
    record_ranking(store, REPO, 1, 8, 0.6)  # the issue was edited and ranked again
    assert _outcomes(store, range(1, 2)) == {1: None}
    settle_issues(github, store, REPO, Budget(100), since=T0)
    assert _outcomes(store, range(1, 2)) == {1: "right"}


def test_a_budget_spent_on_the_marks_moves_no_cursor(store: HistoryStore) -> None:
    github = SettleGitHub()
    _put(github, 1, reason="duplicate")
    record_ranking(store, REPO, 1, 5, 0.5)
    github.marks[1] = [marked(T0, 5)]
    report = settle_issues(github, store, REPO, Budget(1))  # the list only
    assert report.stopped is not None
    assert cursor(store, REPO, ISSUES) is None
    assert _outcomes(store, range(1, 2)) == {1: None}
    settle_issues(github, store, REPO, Budget(100))
    assert _outcomes(store, range(1, 2)) == {1: "right"}


def test_the_settled_record_earns_a_threshold_only_when_precise_enough(
    store: HistoryStore,
) -> None:
    from bot.duplicates.statement import choose_threshold
    from bot.duplicates.suggestions import settle_suggestion, settled_record

    for n in range(1, 41):  # 40 settled: high scores right, low scores mostly wrong
        score = n / 40
        record_ranking(store, REPO, n, 1000 + n, score)
        settle_suggestion(store, REPO, n, "right" if score > 0.5 or n % 5 == 0 else "wrong")
    record_ranking(store, REPO, 99, 5, 0.99)  # not settled: not in the record
    record = settled_record(store, REPO)
    assert len(record) == 40
    earned = choose_threshold(record, 0.9)
    assert earned is not None
    assert earned.threshold >= 0.5  # below it the wrong ones pull the lower limit under 0.9
    assert earned.right == earned.made  # above 0.5 every one was right
    assert choose_threshold(record, 0.999) is None
