"""The issue's text as the maintainers first saw it.

An author who answered a request often edited the body: the current body then holds the
answer, and a row with it would teach that a complete report needed refinement. So a row
keeps the title and body as they stood at the first maintainer response
(:func:`bot.dataset.rules.first_response`): the first-posted text unless the author edited
before anyone responded. The body comes from its edit history (GraphQL ``userContentEdits``:
each revision holds the whole body, placed by its time), the title from the timeline's
``renamed`` events (placed by their place in the timeline).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem

__all__ = ["body_at", "title_at"]


def body_at(issue: ListedIssue, history: EditHistory | None, when: datetime) -> str | None:
    """The body as it stood at ``when``; ``None`` when GitHub keeps no such text: the body was
    edited after ``when`` and the revision current then is not in the history (never kept:
    ``includesCreatedEdit`` false; deleted from it; or past the 100 revisions read).

    Args:
        history: the body's edit history; ``None`` when it could not be read (then only a
            body never edited after ``when`` is known, which the caller cannot tell: ``None``).
    """
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
    """The title as it stood after timeline position ``after`` (``-1``: at opening): the
    ``from`` of the first rename past it, else the title now. Positions, not times: a rename
    in the same second as the maintainer's action is before or after it as GitHub lists it."""
    for item in timeline[after + 1 :]:
        if item.event == "renamed" and item.rename_from is not None:
            return item.rename_from
    return issue.title
