"""The labelling rules: a closed issue's timeline → its expected verdict, or why it is left out.

The rules are written out in docs/measure-your-model.md, "How dataset labels an issue".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem
from bot.dataset.questions import asks_for_information, asks_question
from bot.gate.labels import DEFAULT_LABELS, GATE_LABELS, GateLabels
from bot.repo_file import DatasetConfig
from bot.run_report import MARKER_PREFIX

__all__ = [
    "ACTIONS_BOT_LOGIN",
    "DEFAULT_ACCEPTED_LABELS",
    "DEFAULT_NEEDS_INFO_LABELS",
    "MAINTAINER_ASSOCIATIONS",
    "Decision",
    "FirstResponse",
    "LabelRules",
    "SkipReason",
    "asks_for_information",
    "asks_question",
    "decide",
    "early_skip",
    "first_response",
    "kind_of",
    "transferred",
]

MAINTAINER_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""GitHub's author associations of the people who maintain a repository."""

DEFAULT_NEEDS_INFO_LABELS = (
    "needs-info",
    "needs-more-info",
    "needs-information",
    "need-info",
    "more-info-needed",
    "info-needed",
    "information-needed",
    "needs-details",
    "needs-repro",
    "needs-reproduction",
    "repro-needed",
    "needs-feedback",
    "needs-author-feedback",
    "author-feedback",
    "awaiting-response",
    "awaiting-reply",
    "waiting-for-response",
    "waiting-for-author",
    "waiting-for-reporter",
    "waiting-for-info",
    "incomplete",
)
"""Common needs-information labels; ``dataset.needs_info_labels`` adds more."""

DEFAULT_ACCEPTED_LABELS = ("confirmed", "accepted", "reproduced", "confirmed-bug")
"""Common labels accepting a report; ``dataset.accepted_labels`` adds more."""

ACTIONS_BOT_LOGIN = "github-actions[bot]"
"""The bot's login when ``bot-login`` is not set: the Actions token's."""

Expected = Literal["VALID", "NEEDS_REFINEMENT"]


class SkipReason(StrEnum):
    """Why a closed issue is not in the set; counted, and kept in the state file.

    The last six are the type rows' (:mod:`bot.dataset.type_rows`).
    """

    BOT = "opened by a bot"
    MAINTAINER = "opened by a maintainer (nobody judged the report)"
    LOCKED = "locked as off-topic, too heated or spam"
    GONE = "deleted or moved since it was listed"
    TRANSFERRED = "transferred to another repository since it was listed"
    UNANSWERED = "a maintainer's question went unanswered"
    NOT_PLANNED = "closed as not planned, with no request for information"
    DUPLICATE = "closed as a duplicate, with no other decision"
    NO_DECISION = "closed with no fix, label or question from a maintainer"
    TEXT_UNKNOWN = "edited after the first maintainer response, and GitHub keeps no earlier text"
    PULL_REQUEST = "a pull request"
    OPEN = "open"
    NO_TYPE = "no type label"
    SEVERAL_TYPES = "type labels of more than one type"
    TYPE_BY_BOT = "its type label is the bot's own"
    TYPE_UNCONFIRMED = (
        "its type label is the reporter's (an issue form's) or an app's, and no maintainer "
        "confirmed it"
    )


def _normal(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.strip().lower()).strip()


def _forms(name: str) -> set[str]:
    # Whole, and without a prefix up to its last ":" or "/".
    return {_normal(name), _normal(re.split(r"[:/]", name)[-1])} - {""}


@dataclass(frozen=True)
class LabelRules:
    """Which labels ask for information or accept a report, and whose actions count.

    Label names are normalised; gate labels and logins are lower-cased.
    """

    needs_info: frozenset[str]
    accepted: frozenset[str]
    gate: frozenset[str] = frozenset(label.name.lower() for label in GATE_LABELS)
    bot_login: str = ACTIONS_BOT_LOGIN
    triager_bots: frozenset[str] = frozenset()

    @classmethod
    def from_config(
        cls,
        config: DatasetConfig | None = None,
        *,
        gate: GateLabels = DEFAULT_LABELS,
        bot_login: str | None = None,
    ) -> LabelRules:
        """The default lists plus the repository file's ``dataset:`` names and bots.

        The bot's default label names stay gate labels beside the repository's ``gate``.
        """
        extra = config or DatasetConfig()
        return cls(
            needs_info=frozenset(
                _normal(n) for n in (*DEFAULT_NEEDS_INFO_LABELS, *extra.needs_info_labels)
            ),
            accepted=frozenset(
                _normal(n) for n in (*DEFAULT_ACCEPTED_LABELS, *extra.accepted_labels)
            ),
            gate=frozenset(label.name.lower() for label in (*GATE_LABELS, *gate.all)),
            bot_login=(bot_login or ACTIONS_BOT_LOGIN).lower(),
            triager_bots=frozenset(login.lower() for login in extra.triager_bots),
        )

    def asks_for_info(self, label: str) -> bool:
        return bool(_forms(label) & self.needs_info)

    def accepts(self, label: str) -> bool:
        return bool(_forms(label) & self.accepted)

    def is_gate(self, label: str) -> bool:
        return label.lower() in self.gate

    def is_bot(self, login: str | None) -> bool:
        return (login or "").lower() == self.bot_login

    def is_triager(self, login: str | None) -> bool:
        return (login or "").lower() in self.triager_bots


@dataclass(frozen=True)
class Decision:
    """A labelled issue."""

    expected: Expected
    rationale: str
    """Which event decided, by whom, how long after opening; no repository or number."""
    borderline: bool


@dataclass(frozen=True)
class _Signal:
    index: int
    at: datetime
    what: str
    kind: Literal["label", "question", "commit", "pull", "accepted"]


@dataclass(frozen=True)
class _Answer:
    at: datetime
    index: int | None

    def after(self, signal: _Signal) -> bool:
        # An edit is not in the timeline: placed by its time.
        return self.index > signal.index if self.index is not None else self.at > signal.at


def _ago(start: datetime, end: datetime) -> str:
    minutes = max(0, int((end - start).total_seconds() // 60))
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h"
    return f"{minutes // (24 * 60)} d"


_ROLE = {"OWNER": "the owner", "MEMBER": "a member", "COLLABORATOR": "a collaborator"}


class _Reader:
    def __init__(
        self,
        issue: ListedIssue,
        timeline: Sequence[TimelineItem],
        edits: EditHistory | None,
        rules: LabelRules,
    ) -> None:
        self.issue = issue
        self.rules = rules
        self.end = len(timeline)
        self.items = [(i, item) for i, item in enumerate(timeline) if item.created_at is not None]
        self.reporter = (issue.author or "").lower()
        self.association: dict[str, str] = {}
        for _, item in self.items:
            if item.event == "commented" and item.actor and item.author_association:
                self.association.setdefault(item.actor.lower(), item.author_association)
        self.reporter_edits = [
            revision.edited_at
            for revision in (edits.revisions if edits else ())
            if (revision.editor or "").lower() == self.reporter
            and revision.edited_at > issue.created_at
        ]

    def is_reporter(self, login: str | None) -> bool:
        return bool(login) and (login or "").lower() == self.reporter

    def who(self, item: TimelineItem) -> str:
        if item.actor_type == "Bot":
            return "a triager bot" if self.rules.is_triager(item.actor) else "an app"
        association = item.author_association or self.association.get((item.actor or "").lower())
        return _ROLE.get(association or "", "a maintainer")

    def maintainer_comment(self, item: TimelineItem) -> bool:
        if item.event != "commented" or self.is_reporter(item.actor):
            return False
        if self.rules.is_bot(item.actor) or (item.body or "").lstrip().startswith(MARKER_PREFIX):
            return False
        if self.rules.is_triager(item.actor):
            return True
        return item.actor_type != "Bot" and item.author_association in MAINTAINER_ASSOCIATIONS

    def maintainer_label(self, item: TimelineItem) -> bool:
        return (
            item.event == "labeled"
            and item.label is not None
            and not self.is_reporter(item.actor)
            and not self.rules.is_bot(item.actor)
            and not self.rules.is_gate(item.label)
        )

    def at(self, item: TimelineItem) -> datetime:
        assert item.created_at is not None  # self.items holds only dated events
        return item.created_at

    def since_opening(self, item: TimelineItem) -> str:
        return _ago(self.issue.created_at, self.at(item))

    def fix_index(self) -> int:
        # Past the end when there is no fix.
        for i, item in self.items:
            if item.event in ("closed", "referenced") and item.commit_id:
                return i
            if item.event == "cross-referenced" and item.source_merged:
                return i
        return self.end

    def requests(self, before: int) -> list[_Signal]:
        found = []
        for i, item in self.items:
            if i >= before:
                break
            if self.maintainer_label(item) and self.rules.asks_for_info(item.label or ""):
                what = f"label {item.label} added by {self.who(item)}"
                found.append(_Signal(i, self.at(item), what, "label"))
            elif self.maintainer_comment(item) and asks_for_information(item.body or ""):
                what = f"{self.who(item)} asked a question"
                found.append(_Signal(i, self.at(item), what, "question"))
        return found

    def valid_signals(self) -> list[_Signal]:
        not_planned = self.issue.state_reason == "not_planned"
        found = []
        for i, item in self.items:
            if item.event == "closed" and item.commit_id:
                found.append(
                    _Signal(i, self.at(item), f"closed by commit {item.commit_id[:7]}", "commit")
                )
            elif item.event == "cross-referenced" and item.source_merged and not not_planned:
                what = f"merged pull request #{item.source_pull} references it"
                found.append(_Signal(i, self.at(item), what, "pull"))
            elif self.maintainer_label(item) and self.rules.accepts(item.label or ""):
                what = f"label {item.label} added by {self.who(item)}"
                found.append(_Signal(i, self.at(item), what, "accepted"))
        return found

    def next_close(self, after: int) -> tuple[int, TimelineItem] | None:
        return next(((i, it) for i, it in self.items if i > after and it.event == "closed"), None)

    def answer(self, request: _Signal, until: int) -> _Answer | None:
        # An edit in the same second as either end is not placed.
        limit = next((self.at(item) for i, item in self.items if i >= until), None)
        comment = next(
            (
                _Answer(self.at(item), i)
                for i, item in self.items
                if request.index < i < until
                and item.event == "commented"
                and self.is_reporter(item.actor)
            ),
            None,
        )
        edits = [t for t in self.reporter_edits if t > request.at and (limit is None or t < limit)]
        edit = _Answer(min(edits), None) if edits else None
        if comment is None or (edit is not None and edit.at < comment.at):
            return edit
        return comment


def early_skip(issue: ListedIssue) -> SkipReason | None:
    """Why the issue is left out before its timeline is read, or ``None``.

    A lock as ``resolved`` (what lock bots set) keeps the issue.
    """
    if issue.author_type == "Bot":
        return SkipReason.BOT
    if issue.author_association in MAINTAINER_ASSOCIATIONS:
        return SkipReason.MAINTAINER
    if issue.locked and issue.lock_reason != "resolved":
        return SkipReason.LOCKED
    return None


def decide(
    issue: ListedIssue,
    timeline: Sequence[TimelineItem],
    edits: EditHistory | None,
    rules: LabelRules,
) -> Decision | SkipReason:
    """The issue's label from its timeline, or why it has none; ``edits`` may be unknown."""
    reader = _Reader(issue, timeline, edits, rules)
    fix = reader.fix_index()
    requests = reader.requests(before=fix)
    valid = reader.valid_signals()
    first_valid = valid[0] if valid else None
    if requests and (first_valid is None or requests[0].index < first_valid.index):
        return _needs_refinement(reader, requests, valid, fix)
    if first_valid is not None:
        later = [r for r in requests if r.index > first_valid.index]
        note = "; borderline: a maintainer asked for more after it" if later else ""
        return Decision(
            "VALID",
            f"{first_valid.what} {_ago(issue.created_at, first_valid.at)} after opening, "
            f"with no request for information before{note}",
            borderline=bool(later),
        )
    if issue.state_reason == "not_planned":
        return SkipReason.NOT_PLANNED
    if issue.state_reason == "duplicate":
        return SkipReason.DUPLICATE
    return SkipReason.NO_DECISION


def _needs_refinement(
    reader: _Reader, requests: list[_Signal], valid: list[_Signal], fix: int
) -> Decision | SkipReason:
    opened = reader.issue.created_at
    for request in requests:
        closing = reader.next_close(request.index)
        until = min(fix, closing[0]) if closing else fix
        answered = reader.answer(request, until)
        after = _ago(opened, request.at)
        if request.kind == "label":
            rationale = f"{request.what} {after} after opening"
        elif answered is not None:
            rationale = (
                f"{request.what} {after} after opening; the reporter answered "
                f"{_ago(request.at, answered.at)} later"
            )
        elif closing is not None and closing[1].state_reason == "not_planned":
            closed_at = reader.at(closing[1])
            rationale = (
                f"{request.what} {after} after opening, got no answer, and the issue was "
                f"closed as not planned {_ago(request.at, closed_at)} later"
            )
        else:
            continue
        disagree = _disagreeing(reader, request, valid, answered)
        note = f"; borderline: {disagree}" if disagree else ""
        return Decision("NEEDS_REFINEMENT", rationale + note, borderline=bool(disagree))
    return SkipReason.UNANSWERED


def _disagreeing(
    reader: _Reader, request: _Signal, valid: list[_Signal], answered: _Answer | None
) -> str:
    if any(v.index < request.index for v in valid):
        return "the report was accepted before this request"
    unanswered = [
        v for v in valid if v.index > request.index and (answered is None or answered.after(v))
    ]
    if unanswered:
        return f"{unanswered[0].what} with no answer from the reporter first"
    return ""


@dataclass(frozen=True)
class FirstResponse:
    """When a maintainer first acted: ``index`` -1 and the opening time when nobody did."""

    index: int
    at: datetime


def first_response(
    issue: ListedIssue, timeline: Sequence[TimelineItem], rules: LabelRules
) -> FirstResponse:
    """The first maintainer action on the issue: a comment, a label, a close or a fix."""
    reader = _Reader(issue, timeline, None, rules)
    for i, item in reader.items:
        acted = (
            reader.maintainer_comment(item)
            or reader.maintainer_label(item)
            or item.event == "closed"
            or (item.event == "referenced" and bool(item.commit_id))
            or (item.event == "cross-referenced" and item.source_merged)
        )
        if acted and reader.at(item) >= issue.created_at:
            return FirstResponse(i, reader.at(item))
    return FirstResponse(-1, issue.created_at)


def transferred(issue: ListedIssue, timeline: Sequence[TimelineItem], repo: str) -> bool:
    """Whether the timeline is another repository's: GitHub redirects a transferred issue's.

    The list's own repository is compared, not ``repo``: a renamed one redirects too.
    """
    home = (issue.repository or repo).lower()
    return any(item.repository is not None and item.repository.lower() != home for item in timeline)


_KINDS = (
    ("bug", {"bug", "defect", "regression", "crash"}),
    ("feature", {"feature", "enhancement", "proposal"}),
    ("question", {"question", "support"}),
    ("docs", {"docs", "documentation"}),
)


def kind_of(labels: Iterable[str]) -> str:
    """The row's kind from the labels: ``bug``, ``feature``, ``question``, ``docs`` or ``other``."""
    words = {word for label in labels for form in _forms(label) for word in form.split()}
    return next((kind for kind, names in _KINDS if words & names), "other")
