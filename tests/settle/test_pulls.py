"""Settling audits: each defect rule, the requests per pull request, the budget, resuming."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import (
    ChangedFile,
    Comparison,
    PullHistory,
    ReviewThread,
    ThreadComment,
)
from bot.config import Settings
from bot.errors import GitHubUnavailable, GitHubUnreadable, StoreError
from bot.factory import make_store
from bot.history.protocol import HistoryStore, KeyedTable
from bot.history.record import (
    DEFECT_TABLE,
    DefectOutcome,
    DefectRow,
    defect_records,
    pending_defects,
    put_defects,
)
from bot.settle.budget import Budget
from bot.settle.pulls import settle_pulls
from tests.support import cassette
from tests.support.fake_github import FakeGitHub
from tests.support.pull_world import CASES, pull_world

REPO = "Codertocat/Hello-World"
OLD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
NEW = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
PATH = "src/limits.py"
BOT = "github-actions[bot]"
MERGED_AT = "2026-11-30T06:00:00+00:00"

CHANGES_LINE_13 = (
    "@@ -11,5 +11,5 @@ def allowed(history: list[float], now: float | None = None) -> bool:\n"
    "     now = time.time() if now is None else now\n"
    "     recent = [t for t in history if now - t < WINDOW_S]\n"
    "-    return len(recent) <= MAX_UPLOADS\n"
    "+    return len(recent) < MAX_UPLOADS\n"
    " \n"
    " "
)
"""A later commit replacing line 13 (the hunk's old side: lines 11–15)."""

NEAR_LINE_13 = (
    "@@ -12,4 +12,5 @@ def allowed(history: list[float], now: float | None = None) -> bool:\n"
    "     recent = [t for t in history if now - t < WINDOW_S]\n"
    "     return len(recent) <= MAX_UPLOADS\n"
    "+\n"
    " \n"
    " "
)
"""A later commit adding a line below 13, whose hunk shows line 13 as context only."""


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _defect(pr: int = 2, *, line: int = 13, head: str = OLD, path: str = PATH) -> DefectRow:
    return DefectRow(REPO, pr, head, path, line, "logic", "fake-model", "p1")


def _comment(
    id_: int, author: str = BOT, *, line: int = 13, commit: str = OLD, path: str = PATH
) -> ThreadComment:
    return ThreadComment(id_, author, path, line, commit)


def _merged(
    pr: int = 2, *threads: ReviewThread, head: str = NEW, state: str = "MERGED"
) -> PullHistory:
    merged = MERGED_AT if state == "MERGED" else None
    return PullHistory(pr, state, head, merged, MERGED_AT, tuple(threads))


def _compare(*files: ChangedFile, status: str = "ahead") -> Comparison:
    return Comparison(status, files)


def _modified(patch: str | None, path: str = PATH) -> ChangedFile:
    return ChangedFile(path, "modified", patch)


def _outcomes(store: HistoryStore) -> dict[tuple[int, int], tuple[str, str]]:
    rows = store.fetch(f"select pr, line, outcome, reason from {DEFECT_TABLE}", [])
    return {(int(r[0]), int(r[1])): (str(r[2]), str(r[3])) for r in rows}


def _settle_one(
    store: HistoryStore,
    history: PullHistory,
    comparison: Comparison | None,
    defect: DefectRow | None = None,
) -> tuple[str, str]:
    github = FakeGitHub(bot_login=BOT)
    github.pull_histories[history.number] = history
    if comparison is not None:
        github.comparisons[(OLD, history.head_sha)] = comparison
    put_defects(store, [defect or _defect(history.number)])
    report = settle_pulls(github, store, REPO, Budget(10), since=None)
    assert report.stopped is None
    return _outcomes(store)[(history.number, (defect or _defect()).line)]


def test_a_later_commit_replacing_the_cited_line_is_acted_on(store: HistoryStore) -> None:
    outcome = _settle_one(store, _merged(), _compare(_modified(CHANGES_LINE_13)))
    assert outcome == ("acted_on", "a later commit changed line 13")


def test_a_hunk_that_only_shows_the_line_as_context_leaves_it_standing(
    store: HistoryStore,
) -> None:
    outcome = _settle_one(store, _merged(), _compare(_modified(NEAR_LINE_13)))
    assert outcome == ("not_acted_on", "line 13 stands unchanged at merge")


def test_a_resolved_thread_and_a_touched_file_is_acted_on(store: HistoryStore) -> None:
    thread = ReviewThread(True, (_comment(7001),))
    outcome = _settle_one(store, _merged(2, thread), _compare(_modified(NEAR_LINE_13)))
    assert outcome[0] == "acted_on"
    assert "resolved" in outcome[1]
    stored = store.get(DEFECT_TABLE, {"repo": REPO, "pr": 2, "head_sha": OLD})
    assert stored is not None
    assert stored["review_comment_id"] == 7001


def test_a_resolved_thread_on_an_untouched_file_is_not_acted_on(store: HistoryStore) -> None:
    thread = ReviewThread(True, (_comment(7001),))
    other = _modified("@@ -1,1 +1,1 @@\n-a\n+b", path="README.md")
    outcome = _settle_one(store, _merged(2, thread), _compare(other))
    assert outcome[0] == "not_acted_on"


def test_a_reply_and_nothing_else_is_answered(store: HistoryStore) -> None:
    thread = ReviewThread(False, (_comment(7001), _comment(7002, "octocat")))
    outcome = _settle_one(store, _merged(2, thread), _compare())
    assert outcome == ("answered", "its review thread got a reply; line 13 stands")


def test_the_bots_own_reply_is_no_answer(store: HistoryStore) -> None:
    # GraphQL names an app by its bare login, REST with "[bot]": both are the bot.
    thread = ReviewThread(False, (_comment(7001, "github-actions"), _comment(7002, BOT)))
    outcome = _settle_one(store, _merged(2, thread), _compare())
    assert outcome[0] == "not_acted_on"


def test_a_persons_thread_on_the_same_line_is_not_the_bots(store: HistoryStore) -> None:
    thread = ReviewThread(True, (_comment(7001, "octocat"), _comment(7002, "hubot")))
    outcome = _settle_one(store, _merged(2, thread), _compare(_modified(NEAR_LINE_13)))
    assert outcome[0] == "not_acted_on"


def test_a_thread_at_another_head_or_line_is_not_the_defects(store: HistoryStore) -> None:
    threads = (
        ReviewThread(False, (_comment(7001, commit=NEW), _comment(7002, "octocat"))),
        ReviewThread(False, (_comment(7003, line=12), _comment(7004, "octocat"))),
    )
    outcome = _settle_one(store, _merged(2, *threads), _compare())
    assert outcome[0] == "not_acted_on"


def test_a_defect_at_the_merged_head_had_no_later_commit(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    github.pull_histories[2] = _merged(2, head=OLD)
    put_defects(store, [_defect()])
    report = settle_pulls(github, store, REPO, Budget(10), since=None)
    assert _outcomes(store)[(2, 13)][0] == "not_acted_on"
    assert github.requests == ["pull_history"]  # nothing to compare
    assert report.requests == 1


def test_a_pull_request_closed_unmerged_is_counted_apart(store: HistoryStore) -> None:
    outcome = _settle_one(store, _merged(2, state="CLOSED"), None)
    assert outcome == ("unmerged", "closed unmerged")


def test_a_pull_request_gone_from_github_is_counted_apart(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    put_defects(store, [_defect()])
    settle_pulls(github, store, REPO, Budget(10), since=None)
    assert _outcomes(store)[(2, 13)] == ("unmerged", "the pull request is gone")


@pytest.mark.parametrize(
    ("changed", "reason"),
    [
        (ChangedFile(PATH, "removed", "@@ -1,18 +0,0 @@\n-x"), "the file was removed"),
        (ChangedFile("src/rates.py", "renamed", None, PATH), "the file was renamed"),
    ],
)
def test_a_file_removed_or_renamed_away_is_counted_apart(
    store: HistoryStore, changed: ChangedFile, reason: str
) -> None:
    assert _settle_one(store, _merged(), _compare(changed)) == ("file_gone", reason)


def test_a_rewritten_history_is_untraceable(store: HistoryStore) -> None:
    diverged = _compare(_modified(CHANGES_LINE_13), status="diverged")
    outcome = _settle_one(store, _merged(), diverged)
    assert outcome[0] == "untraceable"
    assert "diverged" in outcome[1]


def test_a_head_github_no_longer_knows_is_untraceable(store: HistoryStore) -> None:
    assert _settle_one(store, _merged(), None)[0] == "untraceable"


def test_a_file_without_a_patch_is_untraceable(store: HistoryStore) -> None:
    assert _settle_one(store, _merged(), _compare(_modified(None)))[0] == "untraceable"


def test_a_file_past_the_comparisons_300_is_untraceable(store: HistoryStore) -> None:
    files = tuple(_modified("@@ -1 +1 @@\n-a\n+b", f"f{i}") for i in range(300))
    truncated = Comparison("ahead", files, truncated=True)
    assert _settle_one(store, _merged(), truncated)[0] == "untraceable"


def test_an_open_pull_request_stays_pending(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    github.pull_histories[2] = _merged(2, state="OPEN")
    put_defects(store, [_defect()])
    report = settle_pulls(github, store, REPO, Budget(10), since=None)
    assert (report.still_open, report.settled) == (1, 0)
    assert [r.line for r in pending_defects(store, REPO)] == [13]


def _world(store: HistoryStore, pulls: int) -> FakeGitHub:
    """``pulls`` merged pull requests, each with a changed defect line and one left standing,
    reported at the same earlier head."""
    github = FakeGitHub(bot_login=BOT)
    github.comparisons[(OLD, NEW)] = _compare(_modified(CHANGES_LINE_13))
    for pr in range(1, pulls + 1):
        github.pull_histories[pr] = _merged(pr)
        put_defects(store, [_defect(pr, line=13), _defect(pr, line=3)])
    return github


def test_each_pull_request_costs_its_read_and_one_comparison_per_earlier_head(
    store: HistoryStore,
) -> None:
    github = _world(store, 3)
    report = settle_pulls(github, store, REPO, Budget(50), since=None)
    assert github.requests == ["pull_history", "compare"] * 3
    assert report.requests == 6
    assert dict(report.outcomes) == {"acted_on": 3, "not_acted_on": 3}
    (record,) = defect_records(store, REPO)
    assert (record.acted_on.k, record.acted_on.n, record.pending) == (3, 6, 0)


def test_two_earlier_heads_cost_two_comparisons_and_the_login_once(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    third = "2f3ee6e4d5b8a3b7f1c0a9e8d7c6b5a4f3e2d1c0"
    thread = ReviewThread(False, (_comment(7001), _comment(7002, "octocat")))
    github.pull_histories[2] = _merged(2, thread)
    github.comparisons[(OLD, NEW)] = _compare()
    github.comparisons[(third, NEW)] = _compare(_modified(CHANGES_LINE_13))
    put_defects(store, [_defect(), _defect(head=third)])
    settle_pulls(github, store, REPO, Budget(10), since=None)
    assert github.requests == ["pull_history", "compare", "compare", "login"]
    rows = store.fetch(f"select head_sha, outcome from {DEFECT_TABLE}", [])
    assert dict(rows) == {third: "acted_on", OLD: "answered"}


def test_the_budget_stops_between_pull_requests_and_the_next_run_resumes(
    store: HistoryStore,
) -> None:
    github = _world(store, 3)
    first = settle_pulls(github, store, REPO, Budget(3), since=None)
    assert first.stopped is not None
    assert "budget" in first.stopped
    assert first.settled == 2  # pull request 1; 2 was read but not compared
    assert first.requests == 3
    assert sorted({d.pr for d in pending_defects(store, REPO)}) == [2, 3]
    second = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert (second.stopped, second.settled) == (None, 4)
    again = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert (again.requests, again.settled) == (0, 0)  # idempotent: nothing pending
    assert [o for o, _ in _outcomes(store).values()].count("acted_on") == 3


def test_a_github_fault_mid_run_loses_nothing(store: HistoryStore) -> None:
    github = _world(store, 3)
    github.fail("compare", GitHubUnavailable("compare: GitHub answered 502", 502), times=1)
    first = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert first.stopped is not None
    assert "502" in first.stopped
    assert first.settled == 0  # pull request 1's comparison failed: nothing of it is written
    second = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert (second.stopped, second.settled) == (None, 6)
    assert pending_defects(store, REPO) == []


def test_open_pull_requests_do_not_take_every_runs_budget(store: HistoryStore) -> None:
    github = _world(store, 3)
    github.pull_histories[1] = _merged(1, state="OPEN")
    settle_pulls(github, store, REPO, Budget(1), since=None)  # reads 1: still open
    settle_pulls(github, store, REPO, Budget(2), since=None)  # starts after 1: settles 2
    assert sorted({d.pr for d in pending_defects(store, REPO)}) == [1, 3]


def test_since_settles_only_defects_recorded_from_then(store: HistoryStore) -> None:
    github = _world(store, 0)
    github.pull_histories[1] = _merged(1)
    old = DefectRow(REPO, 1, OLD, PATH, 13, "logic", "m", "p", created_at="2026-01-01T00:00:00")
    new = DefectRow(REPO, 1, OLD, PATH, 3, "logic", "m", "p", created_at="2026-11-01T00:00:00")
    put_defects(store, [old, new])
    settle_pulls(github, store, REPO, Budget(10), since="2026-06-01")
    assert [d.line for d in pending_defects(store, REPO)] == [13]


def test_a_settled_defect_keeps_its_outcome_when_reported_again(store: HistoryStore) -> None:
    github = _world(store, 1)
    settle_pulls(github, store, REPO, Budget(10), since=None)
    put_defects(store, [_defect(1, line=13)])  # a replayed audit of the same head
    assert pending_defects(store, REPO) == []
    assert _outcomes(store)[(1, 13)][0] == DefectOutcome.ACTED_ON


def test_every_case_of_a_world_settles_to_what_its_history_implies(store: HistoryStore) -> None:
    github, expected = pull_world(store, 2 * len(CASES))
    report = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert report.stopped is None
    assert _outcomes_by_line(store) == expected
    # each pull request: its read, and one comparison when merged past the defect's head;
    # the bot's login once a run
    compared = sum(2 for c in CASES if c.state == "MERGED" and not c.at_final_head)
    assert Counter(github.requests) == {
        "pull_history": 2 * len(CASES),
        "compare": compared,
        "login": 1,
    }
    assert report.requests == 2 * len(CASES) + compared + 1
    (record,) = defect_records(store, REPO)
    settled = Counter(expected.values())
    assert record.reported == len(expected)
    assert (record.acted_on.k, record.acted_on.n) == (
        settled["acted_on"],
        settled["acted_on"] + settled["not_acted_on"],
    )
    assert record.answered == settled["answered"]
    assert record.apart == {o: settled[o] for o in ("unmerged", "file_gone", "untraceable")}


def _outcomes_by_line(store: HistoryStore) -> dict[tuple[int, int], str]:
    return {key: outcome for key, (outcome, _) in _outcomes(store).items()}


ABOVE_13 = "@@ -10,3 +10,4 @@\n a\n+inserted\n b\n c"
"""A later commit inserting a line above 13: line 13 is 14 at merge."""


def _at(head: str, line: int, when: str, category: str = "logic") -> DefectRow:
    return DefectRow(REPO, 2, head, PATH, line, category, "fake-model", "p1", created_at=when)


def _by_head(store: HistoryStore) -> dict[tuple[str, int, str], str]:
    rows = store.fetch(f"select head_sha, line, category, outcome from {DEFECT_TABLE}", [])
    return {(str(h), int(n), str(c)): str(o) for h, n, c, o in rows}


def test_a_defect_reported_again_at_a_later_head_counts_once(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    github.pull_histories[2] = _merged(2)  # merged at NEW
    github.comparisons[(OLD, NEW)] = _compare(_modified(ABOVE_13))
    put_defects(
        store,
        [
            _at(OLD, 13, "2026-11-30T05:00:00+00:00"),
            _at(NEW, 14, "2026-11-30T05:30:00+00:00"),  # the same line, moved by the push
            _at(NEW, 20, "2026-11-30T05:30:00+00:00"),  # another line
        ],
    )
    settle_pulls(github, store, REPO, Budget(10), since=None)
    assert _by_head(store) == {
        (OLD, 13, "logic"): "not_acted_on",
        (NEW, 14, "logic"): "repeated",
        (NEW, 20, "logic"): "not_acted_on",
    }
    (record,) = defect_records(store, REPO)
    assert (record.reported, record.acted_on.n, record.apart) == (2, 2, {})


def test_another_category_on_the_same_line_is_another_defect(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    github.pull_histories[2] = _merged(2)
    github.comparisons[(OLD, NEW)] = _compare()
    put_defects(
        store,
        [_at(OLD, 13, "2026-11-30T05:00:00+00:00"), _at(NEW, 13, "2026-11-30T05:30:00", "race")],
    )
    settle_pulls(github, store, REPO, Budget(10), since=None)
    assert set(_by_head(store).values()) == {"not_acted_on"}


def test_a_changed_line_flagged_again_is_a_new_defect(store: HistoryStore) -> None:
    github = FakeGitHub(bot_login=BOT)
    github.pull_histories[2] = _merged(2)
    github.comparisons[(OLD, NEW)] = _compare(_modified(CHANGES_LINE_13))
    put_defects(
        store, [_at(OLD, 13, "2026-11-30T05:00:00+00:00"), _at(NEW, 13, "2026-11-30T05:30:00")]
    )
    settle_pulls(github, store, REPO, Budget(10), since=None)
    assert _by_head(store) == {
        (OLD, 13, "logic"): "acted_on",  # the fix the author pushed
        (NEW, 13, "logic"): "not_acted_on",  # which the audit of that push still flagged
    }


class _FailingSecondWrite:
    """The store, whose second write to the defects table fails (a disk full mid-run)."""

    def __init__(self, store: HistoryStore) -> None:
        self._store = store
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def change(self, table: str, change: Callable[[KeyedTable], object]) -> None:
        if table == DEFECT_TABLE:
            self.writes += 1
            if self.writes == 2:
                raise StoreError("could not write: disk full")
        self._store.change(table, change)


def test_a_store_fault_mid_run_keeps_whole_pull_requests(store: HistoryStore) -> None:
    github = _world(store, 3)
    failing = _FailingSecondWrite(store)
    with pytest.raises(StoreError, match="disk full"):
        settle_pulls(github, cast(HistoryStore, failing), REPO, Budget(200), since=None)
    assert sorted({d.pr for d in pending_defects(store, REPO)}) == [2, 3]  # 1 whole, 2 none
    report = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert (report.stopped, report.settled) == (None, 4)
    assert pending_defects(store, REPO) == []


def test_settling_on_recorded_traffic_costs_two_requests(store: HistoryStore) -> None:
    """The PyGithub client on cassettes/github_settle_merged_pull.yaml: the bot's thread on
    line 13 (GraphQL names the app without "[bot]"), a person's reply, line 13 replaced."""
    put_defects(store, [_defect(), _defect(line=3)])
    with cassette("github_settle_merged_pull") as cass:
        github = PyGithubClient(token="test-token-not-real", retries=0, login=BOT)
        report = settle_pulls(github, store, REPO, Budget(10), since=None)
    assert cass.all_played
    assert (cass.play_count, report.requests) == (2, 3)  # the login is known: counted, not sent
    assert _outcomes(store) == {
        (2, 13): ("acted_on", "a later commit changed line 13"),
        (2, 3): ("not_acted_on", "line 3 stands unchanged at merge"),
    }
    stored = store.get(DEFECT_TABLE, {"repo": REPO, "pr": 2, "line": 13})
    assert stored is not None
    assert (stored["review_comment_id"], stored["event_at"]) == (2179001, MERGED_AT)


def test_a_pull_request_github_cannot_answer_for_does_not_stop_every_run(
    store: HistoryStore,
) -> None:
    # GitHub's answer for the first pull request is one the client cannot read, twice: had
    # that stopped the run, the next would start there again and never reach the others.
    github = _world(store, 3)
    original = github.pull_history
    faults = [1, 1]

    def unreadable(repo: str, number: int) -> Any:
        if faults and number == faults[0]:
            faults.pop(0)
            raise GitHubUnreadable("read the review threads: GitHub's answer is not a pull request")
        return original(repo, number)

    github.pull_history = unreadable  # type: ignore[method-assign]
    first = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert (first.settled, first.unreadable, first.stopped) == (4, 1, None)
    assert any("passed over 1" in line for line in first.lines())
    assert sorted({d.pr for d in pending_defects(store, REPO)}) == [1]  # read again later
    second = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert (second.settled, second.unreadable) == (0, 1)
    third = settle_pulls(github, store, REPO, Budget(200), since=None)
    assert third.settled == 2
    assert pending_defects(store, REPO) == []
