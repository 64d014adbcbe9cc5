"""The labelling rules: what maintainers did on a closed issue → its expected verdict, the
event that decided it, or the reason the issue is left out.

A maintainer is a comment author whose association is ``OWNER``, ``MEMBER`` or
``COLLABORATOR``, or a Bot account (only an app installed on the repository, or its Actions
token, can act there); a label is added, or an issue closed, by someone with triage rights,
so any actor but the reporter counts for those (an issue form's labels come from the
reporter at opening and count for nothing). The bot's own comments (its hidden marker) and
gate labels are never a maintainer's judgment.

Requests for information count only before any fix (a commit or a merged pull request of the
repository that referenced the issue), and the first signal decides:

- NEEDS_REFINEMENT: a needs-info label was added; or a maintainer's comment asked a question
  (a ``?`` ending a sentence of prose, code and quotes left out) and the reporter answered (a
  comment, or an edit of the body) before the issue was next closed; or the issue was closed as
  not planned after such a question went unanswered.
- VALID: the issue was closed by a commit, a merged pull request of the repository referenced
  it (and it was not closed as not planned), or an accepted label was added, with no request
  for information before that.
- borderline when the signals disagree: a NEEDS_REFINEMENT whose request got no answer before a
  fix or an accepted label came anyway, or one decided after an accepted label; a VALID after
  which a maintainer still asked for more.

Everything else is left out, with its :class:`SkipReason`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from markdown_it import MarkdownIt

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem
from bot.gate.labels import is_gate_label
from bot.repo_file import DatasetConfig
from bot.report import MARKER_PREFIX

__all__ = [
    "DEFAULT_ACCEPTED_LABELS",
    "DEFAULT_NEEDS_INFO_LABELS",
    "MAINTAINER_ASSOCIATIONS",
    "Decision",
    "LabelRules",
    "SkipReason",
    "asks_question",
    "decide",
    "early_skip",
    "first_response",
    "kind_of",
]

MAINTAINER_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""Author associations of the people who maintain a repository (GitHub's names)."""

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
"""The common names of a needs-information label; ``dataset.needs_info_labels`` adds more."""

DEFAULT_ACCEPTED_LABELS = ("confirmed", "accepted", "reproduced", "confirmed-bug")
"""The common names of a label that accepts a report; ``dataset.accepted_labels`` adds more."""

Expected = Literal["VALID", "NEEDS_REFINEMENT"]


class SkipReason(StrEnum):
    """Why a closed issue is not in the set (counted per run and kept in the skip file)."""

    BOT = "opened by a bot"
    MAINTAINER = "opened by a maintainer (nobody judged the report)"
    LOCKED = "locked as off-topic, too heated or spam"
    GONE = "deleted or moved since it was listed"
    UNANSWERED = "a maintainer's question went unanswered"
    NOT_PLANNED = "closed as not planned, with no request for information"
    DUPLICATE = "closed as a duplicate, with no other decision"
    NO_DECISION = "closed with no fix, label or question from a maintainer"
    TEXT_UNKNOWN = "edited after the first maintainer response, and GitHub keeps no earlier text"


def _normal(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.strip().lower()).strip()


def _forms(name: str) -> set[str]:
    """A label's name compared: whole, and without a prefix up to its last ``:`` or ``/``."""
    return {_normal(name), _normal(re.split(r"[:/]", name)[-1])} - {""}


@dataclass(frozen=True)
class LabelRules:
    """Which labels ask for information and which accept a report (normalised names)."""

    needs_info: frozenset[str]
    accepted: frozenset[str]

    @classmethod
    def from_config(cls, config: DatasetConfig | None = None) -> LabelRules:
        """The default lists plus the repository file's ``dataset:`` names."""
        extra = config or DatasetConfig()
        return cls(
            needs_info=frozenset(
                _normal(n) for n in (*DEFAULT_NEEDS_INFO_LABELS, *extra.needs_info_labels)
            ),
            accepted=frozenset(
                _normal(n) for n in (*DEFAULT_ACCEPTED_LABELS, *extra.accepted_labels)
            ),
        )

    def asks_for_info(self, label: str) -> bool:
        """Whether ``label`` is a needs-information label."""
        return bool(_forms(label) & self.needs_info)

    def accepts(self, label: str) -> bool:
        """Whether ``label`` accepts the report as written."""
        return bool(_forms(label) & self.accepted)


_MARKDOWN = MarkdownIt("commonmark")

_QUESTION_END = re.compile(r"\?+(?=[\s)\]\"'”’*_~]|$)")
"""A question mark that ends a sentence (not one inside a URL's query)."""


def _prose(body: str) -> Iterable[str]:
    """The text of a comment a reader takes as its own words: code (blocks and spans) and
    quoted text (block quotes) are left out."""
    quoted = 0
    for token in _MARKDOWN.parse(body):
        if token.type == "blockquote_open":
            quoted += 1
        elif token.type == "blockquote_close":
            quoted -= 1
        elif token.type == "inline" and not quoted:
            for child in token.children or []:
                if child.type == "text":
                    yield child.content


def asks_question(body: str) -> bool:
    """Whether a comment asks a question: a ``?`` ends a sentence of its prose (CommonMark,
    markdown-it-py; code and block quotes left out)."""
    return any(_QUESTION_END.search(text) for text in _prose(body))


@dataclass(frozen=True)
class Decision:
    """A labelled issue.

    Attributes:
        expected: the verdict the maintainers' actions give.
        rationale: which event decided, by whom and how long after opening (no repository or
            number: the row adds them).
        borderline: the signals disagree (module docstring).
    """

    expected: Expected
    rationale: str
    borderline: bool


@dataclass(frozen=True)
class _Signal:
    index: int
    at: datetime
    what: str
    kind: Literal["label", "question", "commit", "pull", "accepted"]


def _ago(start: datetime, end: datetime) -> str:
    """A duration in the largest whole unit that reads well: ``12 min``, ``5 h``, ``3 d``."""
    minutes = max(0, int((end - start).total_seconds() // 60))
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h"
    return f"{minutes // (24 * 60)} d"


_ROLE = {"OWNER": "the owner", "MEMBER": "a member", "COLLABORATOR": "a collaborator"}


class _Reader:
    """One issue's timeline, read once: who is who, and the signals in order."""

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
        """The actor's role in words (a label's actor by the association of its comments)."""
        if item.actor_type == "Bot":
            return "the repository's bot"
        association = item.author_association or self.association.get((item.actor or "").lower())
        return _ROLE.get(association or "", "a maintainer")

    def maintainer_comment(self, item: TimelineItem) -> bool:
        return (
            item.event == "commented"
            and not self.is_reporter(item.actor)
            and (item.author_association in MAINTAINER_ASSOCIATIONS or item.actor_type == "Bot")
            and not (item.body or "").lstrip().startswith(MARKER_PREFIX)
        )

    def maintainer_label(self, item: TimelineItem) -> bool:
        return (
            item.event == "labeled"
            and item.label is not None
            and not self.is_reporter(item.actor)
            and not is_gate_label(item.label)
        )

    def at(self, item: TimelineItem) -> datetime:
        assert item.created_at is not None  # self.items holds only dated events
        return item.created_at

    def since_opening(self, item: TimelineItem) -> str:
        return _ago(self.issue.created_at, self.at(item))

    def fix_index(self) -> int:
        """Where the first fix is (a commit closing or referencing the issue, a merged pull
        request referencing it); past the end when there is none."""
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
            elif self.maintainer_comment(item) and asks_question(item.body or ""):
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

    def answer(self, request: _Signal, until: int) -> datetime | None:
        """When the reporter first answered ``request`` before timeline position ``until``
        (a comment, or an edit of the body dated before that position's event)."""
        limit = next((self.at(item) for i, item in self.items if i >= until), None)
        comment = next(
            (
                self.at(item)
                for i, item in self.items
                if request.index < i < until
                and item.event == "commented"
                and self.is_reporter(item.actor)
            ),
            None,
        )
        edits = [t for t in self.reporter_edits if t > request.at and (limit is None or t < limit)]
        return min([*edits, *([comment] if comment else [])], default=None)


def early_skip(issue: ListedIssue) -> SkipReason | None:
    """What leaves an issue out before its timeline is read (no request spent on it): a
    bot's or a maintainer's issue, or a conversation locked as off-topic, too heated or spam.
    A lock as ``resolved`` (what lock bots set on closed issues) keeps the issue."""
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
    """The issue's label from its timeline (module docstring), or why it has none.

    Args:
        edits: the body's edit history (the reporter's edits answer a question too);
            ``None`` when unknown.
    """
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
                f"{_ago(request.at, answered)} later"
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
    reader: _Reader, request: _Signal, valid: list[_Signal], answered: datetime | None
) -> str:
    """Why a NEEDS_REFINEMENT is borderline, or ``""``: an accepted label or a fix before the
    request, or one after it that no answer of the reporter's came before."""
    if any(v.index < request.index for v in valid):
        return "the report was accepted before this request"
    unanswered = [
        v for v in valid if v.index > request.index and (answered is None or v.at < answered)
    ]
    if unanswered:
        return f"{unanswered[0].what} with no answer from the reporter first"
    return ""


def first_response(
    issue: ListedIssue, timeline: Sequence[TimelineItem], rules: LabelRules
) -> datetime:
    """When a maintainer first acted on the issue (a comment, a label, a close or a fix): the
    text as it stood then is what they judged. The opening time when nobody acted."""
    reader = _Reader(issue, timeline, None, rules)
    for _, item in reader.items:
        acted = (
            reader.maintainer_comment(item)
            or reader.maintainer_label(item)
            or item.event == "closed"
            or (item.event == "referenced" and bool(item.commit_id))
            or (item.event == "cross-referenced" and item.source_merged)
        )
        if acted and reader.at(item) >= issue.created_at:
            return reader.at(item)
    return issue.created_at


_KINDS = (
    ("bug", {"bug", "defect", "regression", "crash"}),
    ("feature", {"feature", "enhancement", "proposal"}),
    ("question", {"question", "support"}),
    ("docs", {"docs", "documentation"}),
)


def kind_of(labels: Iterable[str]) -> str:
    """The row's ``kind`` from the issue's labels: ``bug``, ``feature``, ``question``,
    ``docs`` (the first that a label's words name, in that order) or ``other``."""
    words = {word for label in labels for form in _forms(label) for word in form.split()}
    return next((kind for kind, names in _KINDS if words & names), "other")
