"""The updated-issues walk settling and the duplicate index share, and where its cursor moves.

The cursor names the last second whose issues are all handled, or the second before it when an
issue of that second may be left, so a stop loses nothing (GitHub's ``since`` keeps that second).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from bot.clients.github_port import ListedIssue, SettlePort
from bot.errors import GitHubRateLimited
from bot.settle.budget import Budget, BudgetSpent

__all__ = ["PageStep", "cursor_after", "stamp", "walk_updated", "walk_within"]

PageStep = Callable[[Sequence[ListedIssue], bool], datetime | None]
"""A page's issues (no pull requests), whether a page follows → the last handled update time."""


def stamp(at: datetime) -> str:
    """A cursor as the store keeps it."""
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def cursor_after(handled: datetime, left: Sequence[ListedIssue], more: bool) -> datetime:
    """``handled``, or the second before it when an issue ``left`` after it on the page (or on
    the next page, ``more``) may share its second."""
    nxt = left[0].updated_at if left else None
    shared = nxt == handled or (bool(left) and nxt is None) or (not left and more)
    return handled - timedelta(seconds=1) if shared else handled


def walk_updated(
    github: SettlePort, repo: str, budget: Budget, start: datetime | None, step: PageStep
) -> None:
    """Hand ``step`` each page of ``repo``'s issues updated at or after ``start``, one request
    a page on ``budget``; each next page asked from where the last one stopped.

    Raises:
        BudgetSpent: before a page the budget does not pay for.
        GitHubError: as the list or ``step`` raise them.
    """
    page = 1
    while True:
        budget.spend(1)
        listed = github.updated_issues_page(repo, page, since=start)
        issues = [i for i in listed.issues or () if not i.pull_request]
        moved = step(issues, listed.has_next)
        if not listed.has_next:
            return
        if moved is not None and (start is None or moved > start):
            start, page = moved, 1
        else:
            page += 1


def walk_within(
    github: SettlePort, repo: str, budget: Budget, start: datetime | None, step: PageStep
) -> str | None:
    """:func:`walk_updated` to the list's end (``None``), or why it stopped there: the budget
    spent, or GitHub's rate limit (no waits in a job).

    Raises:
        GitHubError: other than a rate limit, as the list or ``step`` raise them.
    """
    try:
        walk_updated(github, repo, budget, start, step)
    except BudgetSpent as exc:
        return f"the request budget is spent ({exc})"
    except GitHubRateLimited as exc:
        return f"GitHub's rate limit ({exc})"
    return None
