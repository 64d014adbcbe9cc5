"""A repository's issues updated since a cursor, least recently updated first, a page at a
time: the paging and the cursor's next place, which settling and the duplicate index share.

The cursor names the last second whose issues are all handled: the last one's update time,
or the second before it when an issue of that same second may be left (the run stopped in the
middle of them, or at a page's end), so a stop loses nothing: the next run resumes there
(GitHub's ``since`` keeps that second, whose handled issues the next run then skips).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from bot.clients.github_port import ListedIssue, SettlePort
from bot.settle.budget import Budget

__all__ = ["PageStep", "cursor_after", "stamp", "walk_updated"]

PageStep = Callable[[Sequence[ListedIssue], bool], datetime | None]
"""Handles a page's issues (pull requests left out) given whether a page follows; returns
the update time of the last issue it handled (``None``: none)."""


def stamp(at: datetime) -> str:
    """A cursor as the store keeps it."""
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def cursor_after(handled: datetime, left: Sequence[ListedIssue], more: bool) -> datetime:
    """Where the cursor moves once the issues up to one updated at ``handled`` are handled,
    ``left`` being the page's issues after it and ``more`` whether a page follows: ``handled``,
    or the second before it when a left issue (or one on the next page) may share its second."""
    nxt = left[0].updated_at if left else None
    shared = nxt == handled or (bool(left) and nxt is None) or (not left and more)
    return handled - timedelta(seconds=1) if shared else handled


def walk_updated(
    github: SettlePort, repo: str, budget: Budget, start: datetime | None, step: PageStep
) -> None:
    """Hand ``step`` each page of ``repo``'s issues updated at or after ``start``, one request
    a page on ``budget``, until the list ends.

    Each next page is asked from where the last one handled stopped (page 1 again), so issues
    updated meanwhile are not skipped; a page of one second's issues alone needs the page after.

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
