"""The issue's text as the maintainers first saw it (docs/measure-your-model.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem

__all__ = ["body_at", "title_at"]


def body_at(issue: ListedIssue, history: EditHistory | None, when: datetime) -> str | None:
    """The body as it stood at ``when``; ``None`` when the history lacks that revision."""
    if history is None:
        return None
    if history.last_edited_at is None or history.last_edited_at <= when:
        return issue.body
    if len(history.revisions) < history.total:
        return None
    earlier = [r for r in history.revisions if r.edited_at <= when]
    if not earlier:
        return None
    return max(earlier, key=lambda r: r.edited_at).text


def title_at(issue: ListedIssue, timeline: Sequence[TimelineItem], after: int) -> str:
    """The title after timeline position ``after`` (``-1``: at opening); GitHub's order."""
    for item in timeline[after + 1 :]:
        if item.event == "renamed" and item.rename_from is not None:
            return item.rename_from
    return issue.title
