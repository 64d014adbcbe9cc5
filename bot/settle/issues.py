"""The settling rules: the bot's latest gate decision on an issue and the issue's history → the
decision's outcome (:class:`~bot.history.record.GateOutcomeRow`).

The rules, in order (docs/live-record.md, "Settling gate decisions"):

1. a decision without a verdict (``validator-error``) stays unsettled;
2. a maintainer replacing the bot's gate label with the other one, or removing it, while the
   issue text is as it was judged, is an override (open or closed);
3. an open issue waits;
4. on a closed issue, the author answering the bot's author comment (a comment or a body edit)
   before any maintainer's request for information agrees with NEEDS_REFINEMENT;
5. else the ``dataset`` rules on the timeline, the bot's own labels and comments left out,
   give the expected verdict: agreement when it is the bot's, disagreement otherwise; an issue
   they leave out stays unsettled with their reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem
from bot.dataset.rules import (
    MAINTAINER_ASSOCIATIONS,
    Decision,
    LabelRules,
    asks_for_information,
    decide,
    early_skip,
    transferred,
)
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import DEFAULT_LABELS, GateLabels
from bot.gate.types import AUTHOR_MARKER
from bot.history.record import GateOutcome, GateOutcomeRow
from bot.run_report import MARKER_PREFIX

__all__ = [
    "NO_VERDICT",
    "OPEN",
    "TIMELINE_GONE",
    "TIMELINE_UNREADABLE",
    "settle_issue",
]

NO_VERDICT = "the decision was a validator-error: no verdict to settle"
OPEN = "the issue is open: settled once it is closed, or when a maintainer overrides the label"
TIMELINE_GONE = "the issue was deleted or transferred: its timeline is gone"
TIMELINE_UNREADABLE = (
    "GitHub's timeline of the issue cannot be read whole (too long, or its pages loop)"
)

_VERDICTS = ("VALID", "NEEDS_REFINEMENT")


def _other(verdict: str) -> str:
    return "NEEDS_REFINEMENT" if verdict == "VALID" else "VALID"


def _names(verdict: str, gate: GateLabels) -> frozenset[str]:
    # The repository's name for the verdict's label and the bot's default one, lower-cased.
    mine = gate.for_verdict("VALID" if verdict == "VALID" else "NEEDS_REFINEMENT").name
    default = DEFAULT_LABELS.for_verdict("VALID" if verdict == "VALID" else "NEEDS_REFINEMENT")
    return frozenset({mine.lower(), default.name.lower()})


def _when(text: object) -> datetime:
    return datetime.fromisoformat(str(text))


def _stamp(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


class _History:
    """One issue's timeline and edits as the rules read them."""

    def __init__(
        self,
        issue: ListedIssue,
        timeline: Sequence[TimelineItem],
        edits: EditHistory | None,
        rules: LabelRules,
    ) -> None:
        self.issue = issue
        self.rules = rules
        self.edits = edits
        self.items = [item for item in timeline if item.created_at is not None]
        self.author = (issue.author or "").lower()

    def by_author(self, login: str | None) -> bool:
        return bool(login) and (login or "").lower() == self.author

    def by_maintainer(self, item: TimelineItem) -> bool:
        """A person other than the author, or a triager bot; never the bot itself."""
        if self.rules.is_bot(item.actor) or self.by_author(item.actor) or not item.actor:
            return False
        return item.actor_type != "Bot" or self.rules.is_triager(item.actor)

    def request(self, item: TimelineItem) -> bool:
        """A maintainer's request for information: a needs-info label or a question."""
        if not self.by_maintainer(item):
            return False
        if item.event == "labeled" and item.label is not None:
            return not self.rules.is_gate(item.label) and self.rules.asks_for_info(item.label)
        if item.event != "commented" or (item.body or "").lstrip().startswith(MARKER_PREFIX):
            return False
        association_ok = (
            item.author_association in MAINTAINER_ASSOCIATIONS or self.rules.is_triager(item.actor)
        )
        return association_ok and asks_for_information(item.body or "")

    def edited_between(self, start: datetime, end: datetime) -> bool | None:
        """Whether the title or body changed in (start, end]; ``None``: the body's edits are
        unknown."""
        renamed = any(item.event == "renamed" and start < _at(item) <= end for item in self.items)
        if renamed:
            return True
        if self.edits is None:
            return None
        return any(start < r.edited_at <= end for r in self.edits.revisions)

    def author_edits(self, after: datetime) -> list[datetime]:
        revisions = self.edits.revisions if self.edits else ()
        return sorted(
            r.edited_at for r in revisions if self.by_author(r.editor) and r.edited_at > after
        )


def _at(item: TimelineItem) -> datetime:
    assert item.created_at is not None  # _History keeps only dated events
    return item.created_at


def settle_issue(
    repo: str,
    decision: Mapping[str, Any],
    issue: ListedIssue,
    timeline: Sequence[TimelineItem] | None,
    edits: EditHistory | None,
    *,
    rules: LabelRules,
    gate: GateLabels = DEFAULT_LABELS,
    max_body_chars: int,
    unreadable: bool = False,
) -> GateOutcomeRow:
    """The outcome of ``decision`` (the store's latest ``gate_decisions`` row of the issue).

    ``timeline`` ``None`` is an issue GitHub no longer has (``unreadable``: one whose timeline
    GitHub cannot give whole, the same every run); ``edits`` ``None`` an unknown edit
    history; ``rules`` name the bot's login and every gate label (renamed ones too), so the
    bot's own labels and comments never count; ``max_body_chars`` is the gate's setting, with
    which the issue's text is hashed as the gate hashed it.
    """
    verdict = decision.get("verdict")

    def row(
        outcome: GateOutcome, expected: str | None, reason: str, at: datetime | None = None
    ) -> GateOutcomeRow:
        return GateOutcomeRow(
            repo=repo,
            issue=issue.number,
            decision_id=int(decision["id"]),
            model=str(decision.get("model") or ""),
            prompt_version=str(decision.get("prompt_version") or ""),
            policy_version=str(decision.get("policy_version") or ""),
            verdict=str(verdict or ""),
            outcome=outcome,
            expected=expected,
            reason=reason,
            event_at=_stamp(at),
        )

    if verdict not in _VERDICTS:
        return row(GateOutcome.UNSETTLED, None, NO_VERDICT)
    if unreadable:
        return row(GateOutcome.UNSETTLED, None, TIMELINE_UNREADABLE)
    if timeline is None or transferred(issue, timeline, repo):
        return row(GateOutcome.UNSETTLED, None, TIMELINE_GONE)
    history = _History(issue, timeline, edits, rules)
    decided = _when(decision["created_at"])
    sha = prepare_issue(issue.title, issue.body, max_body_chars=max_body_chars).content_sha
    same_text = bool(decision.get("content_sha")) and sha == decision.get("content_sha")

    override = _override(history, str(verdict), decided, same_text, gate)
    if override is not None:
        expected, reason, at = override
        return row(GateOutcome.OVERRIDE, expected, reason, at)
    if issue.state != "closed":
        return row(GateOutcome.UNSETTLED, None, OPEN)
    if verdict == "NEEDS_REFINEMENT":
        answer = _answered(history, decided)
        if answer is not None:
            reason, at = answer
            return row(GateOutcome.AGREE, "NEEDS_REFINEMENT", reason, at)
    skip = early_skip(issue)
    found = skip if skip is not None else decide(issue, timeline, edits, rules)
    if not isinstance(found, Decision):
        return row(GateOutcome.UNSETTLED, None, str(found))
    closes = [_at(item) for item in history.items if item.event == "closed"]
    outcome = GateOutcome.AGREE if found.expected == verdict else GateOutcome.DISAGREE
    return row(outcome, found.expected, found.rationale, closes[-1] if closes else None)


def _override(
    history: _History, verdict: str, decided: datetime, same_text: bool, gate: GateLabels
) -> tuple[str | None, str, datetime] | None:
    """(expected, reason, when) of a maintainer's override, or ``None``.

    The first maintainer change to the gate labels after the decision decides: removing the
    bot's label or adding the other one. It is an override when the text is as judged at that
    moment: unchanged now, or (the edit history known) not edited between the decision and it.
    """
    own, other = _names(verdict, gate), _names(_other(verdict), gate)
    for item in history.items:
        if _at(item) < decided or not history.by_maintainer(item) or item.label is None:
            continue
        label = item.label.lower()
        removed = item.event == "unlabeled" and label in own
        replaced = item.event == "labeled" and label in other
        if not (removed or replaced):
            continue
        edited = history.edited_between(decided, _at(item))
        if not same_text and edited is not False:
            return None  # the author's edit came first: removing the label is the normal path
        added = item if replaced else _added(history, other, _at(item))
        if added is not None:
            why = f"a maintainer replaced the bot's label with {added.label}"
            return _other(verdict), why, _at(item)
        return None, f"a maintainer removed the bot's label {item.label}", _at(item)
    return None


def _added(history: _History, names: frozenset[str], since: datetime) -> TimelineItem | None:
    """A maintainer's later addition of one of ``names``: a removal then an addition is a
    replacement."""
    return next(
        (
            item
            for item in history.items
            if item.event == "labeled"
            and _at(item) >= since
            and (item.label or "").lower() in names
            and history.by_maintainer(item)
        ),
        None,
    )


def _answered(history: _History, decided: datetime) -> tuple[str, datetime] | None:
    """(reason, when) of the author answering the bot's author comment before any maintainer
    asked for information, or ``None``."""
    asked = next(
        (
            item
            for item in history.items
            if item.event == "commented"
            and history.rules.is_bot(item.actor)
            and (item.body or "").startswith(AUTHOR_MARKER)
        ),
        None,
    )
    if asked is None:
        return None
    after = max(_at(asked), decided)
    comment = next(
        (
            _at(item)
            for item in history.items
            if item.event == "commented" and history.by_author(item.actor) and _at(item) > after
        ),
        None,
    )
    edit = next(iter(history.author_edits(after)), None)
    answers: list[tuple[datetime, str]] = []
    if comment is not None:
        answers.append((comment, "a comment"))
    if edit is not None:
        answers.append((edit, "an edit"))
    if not answers:
        return None
    at, what = min(answers)
    request = next(
        (_at(item) for item in history.items if _at(item) > after and history.request(item)),
        None,
    )
    if request is not None and request <= at:
        return None
    return f"the author answered the bot's comment with {what}", at
