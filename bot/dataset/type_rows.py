"""Type rows: a closed issue's type (bug, feature, question) from its maintainers' type label.

The rule, and why a label the reporter picked in an issue form must be confirmed, is written
out in docs/measure-your-model.md, "Type rows: what an issue is".
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem
from bot.dataset.rules import MAINTAINER_ASSOCIATIONS, LabelRules, SkipReason
from bot.dataset.text import body_at, title_at
from bot.repo_file import TypeLabels, TypeName
from bot.types.rows import TypeRow

__all__ = ["TypeRow", "decide_type", "early_type_skip", "issue_types", "type_text"]


def issue_types(labels: Sequence[str], mapping: TypeLabels) -> set[TypeName]:
    """The types the issue's labels name."""
    return {kind for label in labels if (kind := mapping.type_of(label)) is not None}


def early_type_skip(issue: ListedIssue, mapping: TypeLabels) -> SkipReason | None:
    """Why the issue gives no type row, known before its timeline is read, or ``None``.

    An issue a maintainer opened counts: its type label is a maintainer's.
    """
    if issue.pull_request:
        return SkipReason.PULL_REQUEST
    if issue.state != "closed":
        return SkipReason.OPEN
    if issue.author_type == "Bot":
        return SkipReason.BOT
    if issue.locked and issue.lock_reason != "resolved":
        return SkipReason.LOCKED
    kinds = issue_types(issue.labels, mapping)
    if not kinds:
        return SkipReason.NO_TYPE
    if len(kinds) > 1:
        return SkipReason.SEVERAL_TYPES
    return None


def _maintainer(issue: ListedIssue, item: TimelineItem, rules: LabelRules) -> bool:
    """Whether the event's actor acts as a maintainer: a person other than the reporter (only
    people who triage may label or close another's issue), the reporter when they maintain
    the repository, or a listed triager bot; never the bot itself or another app."""
    if item.actor is None or rules.is_bot(item.actor):
        return False
    if item.actor_type == "Bot":
        return rules.is_triager(item.actor)
    if item.actor.lower() == (issue.author or "").lower():
        return issue.author_association in MAINTAINER_ASSOCIATIONS
    return True


def _confirms(issue: ListedIssue, item: TimelineItem, rules: LabelRules) -> bool:
    """Whether the event is a maintainer's triage with the type label in place: another
    label (not a gate label), or a close as completed."""
    if not _maintainer(issue, item, rules):
        return False
    if item.event == "labeled":
        return item.label is not None and not rules.is_gate(item.label)
    return item.event == "closed" and item.state_reason in (None, "completed")


def decide_type(
    issue: ListedIssue,
    timeline: Sequence[TimelineItem],
    mapping: TypeLabels,
    rules: LabelRules,
) -> TypeName | SkipReason:
    """The issue's type, or why it gives no row; :func:`early_type_skip` first.

    The type is the one its final labels name, when the last event that labelled it with a
    name of that type was a maintainer's, or was the reporter's or an app's and a maintainer
    confirmed it afterwards (:func:`_confirms`); the bot's own type label never counts.
    """
    early = early_type_skip(issue, mapping)
    if early is not None:
        return early
    (kind,) = issue_types(issue.labels, mapping)
    added = [
        i
        for i, item in enumerate(timeline)
        if item.event == "labeled"
        and item.label is not None
        and mapping.type_of(item.label) == kind
    ]
    if not added:  # its labelling is not in the timeline: who chose it is unknown
        return SkipReason.TYPE_UNCONFIRMED
    last = timeline[added[-1]]
    if rules.is_bot(last.actor):
        return SkipReason.TYPE_BY_BOT
    if _maintainer(issue, last, rules):
        return kind
    if any(_confirms(issue, item, rules) for item in timeline[added[-1] + 1 :]):
        return kind
    return SkipReason.TYPE_UNCONFIRMED


def type_text(
    issue: ListedIssue, timeline: Sequence[TimelineItem], history: EditHistory | None
) -> tuple[str, str]:
    """The title and body as the issue was opened; the body as it is now when the edit
    history keeps no earlier text (an edit does not change what the issue is)."""
    body = body_at(issue, history, issue.created_at)
    return title_at(issue, timeline, -1), issue.body if body is None else body
