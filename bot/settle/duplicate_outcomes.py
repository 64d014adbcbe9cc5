"""Settling the duplicate statement: was an issue's top candidate, as the gate last ranked it,
the issue it was closed as a duplicate of?

Every ranked issue is settled, whether or not the bot said anything, so the record measures the
statement the bot would make. On a page of the settle walk, the closed issues with an unsettled
ranking cost one GraphQL request for their duplicate marks (the canonical issue is not in
GitHub's REST timeline). ``right``: the last standing mark names the top candidate; ``wrong``: it
names another issue, the issue was closed as completed, or a maintainer dismissed the
suggestions. Anything else (open, closed as not planned without a mark) waits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from bot.clients.github_port import DuplicateMark, ListedIssue, SettlePort
from bot.duplicates.suggestions import TABLE, Suggestion, settle_suggestion, suggestion
from bot.history.protocol import HistoryStore
from bot.settle.budget import Budget

__all__ = ["outcome_of", "settle_duplicates_page"]

_OPEN_SQL = (
    f"select issue from {TABLE} where repo = ? and top is not null "  # noqa: S608
    "and outcome is null and issue in ({marks})"
)


def outcome_of(
    repo: str, found: Suggestion, issue: ListedIssue, marks: Sequence[DuplicateMark]
) -> str | None:
    """``right``, ``wrong`` or ``None`` (not settled yet) for a closed issue's ranking."""
    if found.dismissed:
        return "wrong"
    standing = None
    for mark in marks:  # oldest first: the last one stands unless undone
        standing = None if mark.undone else mark
    if standing is not None and standing.canonical_number is not None:
        same_repo = (standing.canonical_repo or repo).lower() == repo.lower()
        right = same_repo and standing.canonical_number == found.top
        return "right" if right else "wrong"
    if issue.state_reason == "completed":
        return "wrong"
    return None


def settle_duplicates_page(
    github: SettlePort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    issues: Sequence[ListedIssue],
) -> Counter[str]:
    """Settle the rankings of a page's closed issues; returns the outcomes written.

    Raises:
        BudgetSpent: the budget does not pay for the marks' request (nothing written).
        GitHubError: the request failed.
        StoreError: a read or write of the store failed.
    """
    closed = [i.number for i in issues if i.state == "closed"]
    if not closed:
        return Counter()
    sql = _OPEN_SQL.format(marks=", ".join("?" for _ in closed))
    open_rows = {int(n) for (n,) in store.fetch(sql, [repo, *closed])}
    todo: dict[int, tuple[ListedIssue, Suggestion]] = {}
    for issue in issues:
        if issue.state != "closed" or issue.number not in open_rows:
            continue
        found = suggestion(store, repo, issue.number)
        if found is not None and found.top is not None:
            todo[issue.number] = (issue, found)
    written: Counter[str] = Counter()
    if not todo:
        return written
    asked = [i.node_id for i, found in todo.values() if not found.dismissed]
    marks: dict[str, tuple[DuplicateMark, ...]] = {}
    if asked:
        budget.spend(1)
        marks = github.duplicate_marks(asked)
    for number, (issue, found) in todo.items():
        outcome = outcome_of(repo, found, issue, marks.get(issue.node_id, ()))
        if outcome is not None:
            settle_suggestion(store, repo, number, outcome)
            written[outcome] += 1
    return written
