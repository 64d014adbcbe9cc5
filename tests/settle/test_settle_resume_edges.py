"""Settling's resume and race edges found by trying to break it: issues updated in the same
second as the last one handled when a run stops, a decision written while a settle run reads,
an issue GitHub no longer has."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from bot.config import Settings
from bot.errors import GitHubUnavailable, GitHubUnreadable
from bot.factory import make_store
from bot.history.protocol import HistoryStore
from bot.history.record import GATE_TABLE
from bot.settle.budget import Budget
from bot.settle.settling import settle_issues
from tests.settle.test_settle_run import _title, decide, fixed, outcomes
from tests.support.dataset_world import REPO, SHORT_BODY, T0, issue_item
from tests.support.settle_github import SettleGitHub


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _open_pair(store: HistoryStore) -> SettleGitHub:
    """Two open issues, decided VALID: settled as unsettled (open) by a first run."""
    github = SettleGitHub()
    for n in (1, 2):
        start = T0 + timedelta(hours=n)
        item = issue_item(n, title=_title(n), body=SHORT_BODY, created=start)
        github.put(item, fixed(n, start)[:1], updated=start + timedelta(days=1), state="open")
        decide(store, n, "VALID", start + timedelta(minutes=1))
    settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {1: "unsettled", 2: "unsettled"}
    return github


def test_a_run_stopped_between_issues_of_one_second_settles_the_rest_next_time(
    store: HistoryStore,
) -> None:
    # A stale bot (or a maintainer's script) closes both in the same second; the budget runs
    # out after the first one's timeline. The cursor names that second, yet the second issue,
    # unsettled from before, was not read since it closed: the next run must read it.
    github = _open_pair(store)
    closed_at = T0 + timedelta(days=10)
    for n in (1, 2):
        start = T0 + timedelta(hours=n)
        github.put(github.items[n], fixed(n, start), updated=closed_at)
    first = settle_issues(github, store, REPO, Budget(3))  # list, GraphQL, one timeline
    assert first.stopped is not None
    assert outcomes(store) == {1: "agree", 2: "unsettled"}
    settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {1: "agree", 2: "agree"}


def test_issues_of_one_second_across_a_page_break_all_settle(store: HistoryStore) -> None:
    # 102 open issues, all closed in one second: the list's first page ends in that second,
    # and the page listed again from it holds the two left; they were unsettled (open) before.
    github = SettleGitHub()
    count = 102
    for n in range(1, count + 1):
        start = T0 + timedelta(hours=n)
        item = issue_item(n, title=_title(n), body=SHORT_BODY, created=start)
        github.put(item, fixed(n, start)[:1], updated=start + timedelta(days=1), state="open")
        decide(store, n, "VALID", start + timedelta(minutes=1))
    settle_issues(github, store, REPO, Budget(1000))
    closed_at = T0 + timedelta(days=30)
    for n in range(1, count + 1):
        github.put(github.items[n], fixed(n, T0 + timedelta(hours=n)), updated=closed_at)
    report = settle_issues(github, store, REPO, Budget(1000))
    assert report.stopped is None
    assert set(outcomes(store).values()) == {"agree"}
    assert github.requests["timeline"] == 2 * count  # each read once a run


def test_a_run_stopped_at_a_page_break_of_one_second_settles_the_rest_next_time(
    store: HistoryStore,
) -> None:
    github = SettleGitHub()
    count = 101
    for n in range(1, count + 1):
        start = T0 + timedelta(hours=n)
        item = issue_item(n, title=_title(n), body=SHORT_BODY, created=start)
        github.put(item, fixed(n, start)[:1], updated=start + timedelta(days=1), state="open")
        decide(store, n, "VALID", start + timedelta(minutes=1))
    settle_issues(github, store, REPO, Budget(1000))
    closed_at = T0 + timedelta(days=30)
    for n in range(1, count + 1):
        github.put(github.items[n], fixed(n, T0 + timedelta(hours=n)), updated=closed_at)
    first = settle_issues(github, store, REPO, Budget(102))  # list, GraphQL, 100 timelines
    assert first.stopped is not None
    assert list(outcomes(store).values()).count("unsettled") == 1
    settle_issues(github, store, REPO, Budget(1000))
    assert set(outcomes(store).values()) == {"agree"}


def test_an_unsettled_issue_read_again_unchanged_is_not_read_on_every_run(
    store: HistoryStore,
) -> None:
    # The last issue listed is open (unsettled) and stays so: after one read, later runs pay
    # only the list.
    github = _open_pair(store)
    github.requests.clear()
    settle_issues(github, store, REPO, Budget(200))
    settle_issues(github, store, REPO, Budget(200))
    assert github.requests == {"list": 2}


def test_a_deleted_issue_settles_unsettled_with_its_reason(store: HistoryStore) -> None:
    github = SettleGitHub()
    item = issue_item(1, title=_title(1), body=SHORT_BODY, created=T0)
    github.put(item, None, updated=T0 + timedelta(days=2))
    decide(store, 1, "VALID", T0 + timedelta(minutes=1))
    report = settle_issues(github, store, REPO, Budget(200))
    row = store.get(GATE_TABLE, {"repo": REPO, "issue": 1})
    assert row is not None
    assert row["outcome"] == "unsettled"
    assert "deleted" in str(row["reason"])
    assert sum(report.unsettled.values()) == 1


def test_a_decision_written_while_settling_reads_is_settled_by_the_next_run(
    store: HistoryStore,
) -> None:
    # The gate judges the issue again (its author edited it) between settling's read of the
    # store and its read of the timeline: the outcome written is the older decision's, and the
    # next run, the issue listed again for the gate's label, settles the newer one.
    github = SettleGitHub()
    start = T0 + timedelta(hours=1)
    item = issue_item(1, title=_title(1), body=SHORT_BODY, created=start)
    github.put(item, fixed(1, start), updated=start + timedelta(days=2))
    older = decide(store, 1, "VALID", start + timedelta(minutes=1))
    original = github.issue_timeline
    newer: list[int] = []

    def racing(repo: str, number: int) -> Any:
        if not newer:
            newer.append(decide(store, 1, "NEEDS_REFINEMENT", start + timedelta(days=1)))
            github.put(github.items[1], github.timelines[1], updated=start + timedelta(days=3))
        return original(repo, number)

    github.issue_timeline = racing  # type: ignore[method-assign]
    settle_issues(github, store, REPO, Budget(200))
    row = store.get(GATE_TABLE, {"repo": REPO, "issue": 1})
    assert row is not None
    assert (int(row["decision_id"]), row["outcome"]) == (older, "agree")
    settle_issues(github, store, REPO, Budget(200))
    row = store.get(GATE_TABLE, {"repo": REPO, "issue": 1})
    assert row is not None
    assert (int(row["decision_id"]), row["verdict"], row["outcome"]) == (
        newer[0],
        "NEEDS_REFINEMENT",
        "disagree",
    )


def test_an_issue_whose_timeline_cannot_be_read_whole_does_not_block_the_rest(
    store: HistoryStore,
) -> None:
    # The client refuses a timeline past its page limit, or whose next page loops: the same
    # answer every run. Stopping there would stop every run there, settling nothing after it.
    github = SettleGitHub()
    for n in (1, 2, 3):
        start = T0 + timedelta(hours=n)
        item = issue_item(n, title=_title(n), body=SHORT_BODY, created=start)
        github.put(item, fixed(n, start), updated=start + timedelta(days=2))
        decide(store, n, "VALID", start + timedelta(minutes=1))
    original = github.issue_timeline

    def endless(repo: str, number: int) -> Any:
        if number == 2:
            raise GitHubUnreadable(
                f"read the timeline of {repo}#{number}: the timeline goes on past 100 pages "
                "(10,000 events); stopped there"
            )
        return original(repo, number)

    github.issue_timeline = endless  # type: ignore[method-assign]
    report = settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {1: "agree", 2: "unsettled", 3: "agree"}
    row = store.get(GATE_TABLE, {"repo": REPO, "issue": 2})
    assert row is not None
    assert "timeline" in str(row["reason"])
    assert sum(report.unsettled.values()) == 1


def test_a_passing_fault_still_stops_the_run(store: HistoryStore) -> None:
    # A 5xx or a refused token is not the issue's: the run stops, the next one reads it.
    github = SettleGitHub()
    start = T0 + timedelta(hours=1)
    item = issue_item(1, title=_title(1), body=SHORT_BODY, created=start)
    github.put(item, fixed(1, start), updated=start + timedelta(days=2))
    decide(store, 1, "VALID", start + timedelta(minutes=1))
    github.fail("timeline", GitHubUnavailable("read the timeline: GitHub answered 502", 502))
    with pytest.raises(GitHubUnavailable):
        settle_issues(github, store, REPO, Budget(200))
    assert outcomes(store) == {}
