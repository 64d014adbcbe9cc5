"""The issue gate's plan (labels, author comment, decision row) and its writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from bot.clients.github_port import GitHubPort, LabelEvent
from bot.events import IssuesEvent
from bot.gate.author_comment import (
    duplicate_comment,
    duplicate_section,
    ready_comment,
    refinement_comment_for,
)
from bot.gate.earned import LiveRecords, comment_bound
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import DEFAULT_LABELS, GateLabel, GateLabels, LabelPlan, plan_labels
from bot.gate.possible_duplicates import SaidDuplicate, duplicate_label
from bot.gate.type_label import TypePlan, type_label
from bot.gate.types import GateDecision
from bot.gate.validator import Validator
from bot.gate.writes import add_labels, write_author_comment
from bot.history.protocol import GateRow, HistoryStore

__all__ = [
    "HAND_SET_ACTIONS",
    "AppliedGate",
    "AuthorCommentPlan",
    "GatePlan",
    "LabelHistory",
    "LabelOwner",
    "already_decided",
    "apply_gate",
    "asks_who_labelled",
    "comment_withheld",
    "gate_row",
    "hand_set_gate_label",
    "hand_set_label",
    "judge_issue",
    "label_owner",
    "plan_gate",
    "superseded",
]


LabelOwner = Literal["bot", "other", "gone"]
"""Who put a label on an issue: the bot, someone else, or nobody now (it was removed)."""


@dataclass(frozen=True)
class AuthorCommentPlan:
    """The author comment a gate plan writes; ``create=False`` only edits an existing one."""

    body: str
    create: bool


@dataclass(frozen=True)
class GatePlan:
    """The gate's plan for one ``issues`` event; ``labels`` leaves exactly one gate label."""

    event: str
    repo: str
    number: int
    public_repo: bool
    decision: GateDecision
    labels: LabelPlan
    author_comment: AuthorCommentPlan | None = None
    comment_withheld: str | None = None
    comment_basis: str | None = None
    """Which record decided the author comment, and its figure (NEEDS_REFINEMENT only)."""
    types: TypePlan | None = None
    """The type label's plan; ``None`` when no type model is configured."""
    duplicate: SaidDuplicate | None = None
    """The earlier issue this one is said to be possibly the same as; ``None``: none."""

    @property
    def duplicate_label(self) -> str | None:
        """The possible-duplicate label to add, unless the issue has it."""
        return self.duplicate.label if self.duplicate is not None else None


@dataclass(frozen=True)
class AppliedGate:
    """What :func:`apply_gate` did: GitHub requests, reads, and the author comment's fate
    (:attr:`bot.gate.writes.CommentWrite.fate`, or ``none`` when none was planned)."""

    plan: GatePlan
    requests: int
    reads: int = 0
    comment: str = "none"


def comment_withheld(
    decision: GateDecision, min_precision: float, live: LiveRecords | None = None
) -> str | None:
    """Why a NEEDS_REFINEMENT decision posts no author comment (one line), or ``None``.

    Withheld when the model's quotes were not found in the issue, or when the deciding record's
    needs-refinement precision (:func:`bot.gate.earned.comment_bound`) is unknown or below
    ``min_precision`` (0: no bound).
    """
    return comment_bound(decision, min_precision, live).withheld


def _author_comment(
    event: IssuesEvent,
    decision: GateDecision,
    labels: LabelPlan,
    intro: str | None,
    gate: GateLabels,
) -> AuthorCommentPlan | None:
    if decision.verdict == "NEEDS_REFINEMENT":
        body = refinement_comment_for(decision, label=labels.target.name, intro=intro)
        return AuthorCommentPlan(body, True)
    if decision.verdict != "VALID":
        return None
    # VALID only edits, and only when a comment of the bot's can exist (a new valid issue costs
    # no lookup): its needs-refinement label goes, or a later event changes the gate label.
    removes_refinement = gate.needs_refinement.name.lower() in {n.lower() for n in labels.remove}
    changes = bool(labels.add or labels.remove)
    if removes_refinement or (changes and event.action != "opened"):
        return AuthorCommentPlan(ready_comment(label=labels.target.name), False)
    return None


def _with_duplicate(
    comment: AuthorCommentPlan | None, said: SaidDuplicate, verdict: str | None
) -> AuthorCommentPlan:
    """A section of the needs-refinement comment, else the whole comment (docs/gate.md)."""
    if comment is not None and verdict == "NEEDS_REFINEMENT":
        return AuthorCommentPlan(
            comment.body + "\n" + duplicate_section(said.number, said.title), True
        )
    return AuthorCommentPlan(duplicate_comment(said.number, said.title), True)


def plan_gate(
    event: IssuesEvent,
    validator: Validator,
    *,
    owner: Callable[[str, bool], LabelOwner],
    last_applied: str | None = None,
    author_comment: bool = False,
    author_intro: str | None = None,
    gate_labels: GateLabels = DEFAULT_LABELS,
    comment_min_precision: float = 0.8,
    decision: GateDecision | None = None,
    live: LiveRecords | None = None,
    types: TypePlan | None = None,
    duplicate: SaidDuplicate | None = None,
) -> GatePlan:
    """Judge the event's issue (unless ``decision`` is given) and plan its writes.

    ``duplicate`` (earned) goes in the author comment and beside the gate label, unless a fault.

    The type label ``types`` adds counts as one of the issue's labels for the validator.

    The author comment's bound is checked against ``live`` (the repository's live record)
    once it holds enough settled decisions, else the policy's calibrated figure.

    Never raises for model faults. Labels come from the payload; ``last_applied`` (the store's
    last label) is removed too, as a stale payload may not show it. ``owner(name, shown)`` is
    asked for each label to remove: only the bot's go, others are ``LabelPlan.kept``.
    """
    if decision is None:
        decision = judge_issue(validator, event, extra_labels=_type_added(types))
    target = gate_labels.for_verdict(decision.verdict)
    labels = plan_labels(event.issue.label_names, target, gate_labels)
    if (
        last_applied
        and gate_labels.is_gate(last_applied)
        and last_applied.lower() != labels.target.name.lower()
        and last_applied.lower() not in {name.lower() for name in labels.remove}
    ):
        labels = LabelPlan(labels.target, labels.add, (*labels.remove, last_applied))
    if labels.remove:
        shown = {name.lower() for name in event.issue.label_names}
        owners = {name: owner(name, name.lower() in shown) for name in labels.remove}
        mine = tuple(name for name, who in owners.items() if who == "bot")
        kept = tuple(name for name, who in owners.items() if who == "other")
        labels = LabelPlan(labels.target, labels.add, mine, kept)
    withheld = basis = None
    if author_comment and decision.verdict == "NEEDS_REFINEMENT":
        bound = comment_bound(decision, comment_min_precision, live)
        withheld, basis = bound.withheld, bound.basis
    comment = (
        _author_comment(event, decision, labels, author_intro, gate_labels)
        if author_comment and withheld is None
        else None
    )
    if decision.verdict is None:
        duplicate = None
    if duplicate is not None:
        if author_comment:
            comment = _with_duplicate(comment, duplicate, decision.verdict)
        on_issue = {name.lower() for name in event.issue.label_names}
        if duplicate.label is not None and duplicate.label.lower() in on_issue:
            duplicate = replace(duplicate, label=None)
    return GatePlan(
        event=f"issues.{event.action}",
        repo=event.repository.full_name,
        number=event.issue.number,
        public_repo=not event.repository.private,
        decision=decision,
        labels=labels,
        author_comment=comment,
        comment_withheld=withheld,
        comment_basis=basis,
        types=types,
        duplicate=duplicate,
    )


def _type_added(types: TypePlan | None) -> tuple[str, ...]:
    return (types.label,) if types is not None and types.label is not None else ()


def judge_issue(
    validator: Validator, event: IssuesEvent, *, extra_labels: Sequence[str] = ()
) -> GateDecision:
    """The validator's decision on the event's issue, as if it also had ``extra_labels``.
    Never raises for model faults; thread-safe."""
    labels = [*event.issue.label_names, *extra_labels]
    return validator.judge(event.issue.title, event.issue.body, labels=labels)


def apply_gate(
    plan: GatePlan,
    github: GitHubPort,
    *,
    store: HistoryStore | None = None,
) -> AppliedGate:
    """Add the target label, the type label and the possible-duplicate label (one request),
    remove stale ones, then write the author comment.

    A failed comment write raises after the labels are on: record no decision then.

    Raises:
        GitHubError: a read or write failed after the client's retries.
        StoreError: the comment's row could not be cleared before its write.
    """
    requests = 0
    # add before removing: a crash in between leaves two gate labels, never none
    created: list[GateLabel] = [plan.labels.target] if plan.labels.add else []
    names = list(plan.labels.add)
    if plan.types is not None and plan.types.label is not None:
        created.append(type_label(plan.types.label))
        names.append(plan.types.label)
    if plan.duplicate_label is not None:
        created.append(duplicate_label(plan.duplicate_label))
        names.append(plan.duplicate_label)
    if names:
        requests += add_labels(github, store, plan.repo, plan.number, created, names)
    for name in plan.labels.remove:
        github.remove_label(plan.repo, plan.number, name)
        requests += 1
    wanted = plan.author_comment
    if wanted is None:
        return AppliedGate(plan=plan, requests=requests)
    done = write_author_comment(
        github,
        store,
        plan.repo,
        plan.number,
        wanted.body,
        create=wanted.create,
    )
    return AppliedGate(plan, requests + done.writes, reads=done.reads, comment=done.fate)


HAND_SET_ACTIONS = frozenset({"edited", "reopened"})
"""``issues`` actions on which a hand-set gate label wins (``opened`` is always judged)."""


def _gate_labels_on(event: IssuesEvent, gate: GateLabels) -> list[str]:
    return [name for name in event.issue.label_names if gate.is_gate(name)]


def asks_who_labelled(event: IssuesEvent, gate: GateLabels = DEFAULT_LABELS) -> bool:
    """Whether to read who added the issue's gate label: an edit or reopen that carries one."""
    return event.action in HAND_SET_ACTIONS and bool(_gate_labels_on(event, gate))


def hand_set_gate_label(
    event: IssuesEvent,
    events: Sequence[LabelEvent],
    *,
    login: Callable[[], str | None],
    gate: GateLabels = DEFAULT_LABELS,
) -> str | None:
    """The gate label on the issue that a person added by hand, or ``None``.

    Hand-set: the newest ``labeled`` event adding it has a ``User`` actor other than
    ``login()`` (the bot, with a personal token). Names and logins compare case-insensitively.
    """
    if event.action not in HAND_SET_ACTIONS:
        return None
    return hand_set_label(_gate_labels_on(event, gate), events, login=login)


def _newest(name: str, events: Sequence[LabelEvent]) -> LabelEvent | None:
    added = [e for e in events if e.label.lower() == name.lower() and not e.removed]
    return added[-1] if added else None


def _same_login(login: str | None, own: str | None) -> bool:
    return login is not None and own is not None and login.lower() == own.lower()


def hand_set_label(
    names: Sequence[str], events: Sequence[LabelEvent], *, login: Callable[[], str | None]
) -> str | None:
    """The first of ``names`` a person added (:func:`hand_set_gate_label`'s rule), or ``None``."""
    for name in names:
        newest = _newest(name, events)
        if (
            newest is not None
            and newest.actor_type == "User"
            and not _same_login(newest.actor_login, login())
        ):
            return name
    return None


def label_owner(
    name: str, events: Sequence[LabelEvent], *, login: Callable[[], str | None], shown: bool
) -> LabelOwner:
    """Who put ``name`` on the issue, by its newest ``labeled`` or ``unlabeled`` event.

    With no event: ``other`` when the payload shows it (``shown``), else ``gone``.
    """
    newest = next((e for e in reversed(events) if e.label.lower() == name.lower()), None)
    if newest is None:
        return "other" if shown else "gone"
    if newest.removed:
        return "gone"
    return "bot" if _same_login(newest.actor_login, login()) else "other"


class LabelHistory:
    """One issue's label events, read from GitHub at most once (unless given as ``events``)."""

    def __init__(
        self,
        github: GitHubPort,
        repo: str,
        number: int,
        events: Sequence[LabelEvent] | None = None,
    ) -> None:
        self._github = github
        self._repo = repo
        self._number = number
        self._events = None if events is None else list(events)

    def events(self) -> list[LabelEvent]:
        """The issue's label events, oldest first. Raises ``GitHubError`` if unreadable."""
        if self._events is None:
            self._events = self._github.label_events(self._repo, self._number)
        return self._events

    def hand_set(self, event: IssuesEvent, gate: GateLabels) -> str | None:
        """:func:`hand_set_gate_label` on these events."""
        return hand_set_gate_label(event, self.events(), login=self._github.login, gate=gate)

    def owner(self, name: str, shown: bool) -> LabelOwner:
        """:func:`label_owner` on these events (the ``owner`` of :func:`plan_gate`)."""
        return label_owner(name, self.events(), login=self._github.login, shown=shown)


def already_decided(
    event: IssuesEvent,
    last: Mapping[str, Any] | None,
    *,
    model: str,
    max_body_chars: int,
    prompt_version: str,
    policy_version: str | None = None,
    gate: GateLabels = DEFAULT_LABELS,
) -> bool:
    """Whether the bot's last decision already judged this exact issue text.

    True when ``last`` (the store's last gate row) is no fault and matches the text's hash
    (cut at ``max_body_chars``, as judged), the model, prompt version and policy version.
    """
    if last is None or last.get("error_kind") or last.get("label") == gate.validator_error.name:
        return False
    issue = prepare_issue(event.issue.title, event.issue.body, max_body_chars=max_body_chars)
    return (
        last.get("content_sha") == issue.content_sha
        and last.get("prompt_version") == prompt_version
        and last.get("model") == model
        and last.get("policy_version") == policy_version
    )


def superseded(
    decision: GateDecision, now: Mapping[str, Any] | None, current_sha: str, *, force: bool
) -> str | None:
    """Why a plan made before the issue's lock must not be written, or ``None``.

    ``now`` is the store's last decision under the lock, ``current_sha`` the issue's text hash
    now. The run that judged the current text wins; on the same text, the first written, unless
    it was a validator error and this one is not (``force`` writes anyway).
    """
    if current_sha != decision.issue.content_sha:
        return "the issue was edited while it was judged; the run for that edit judges it"
    if force or now is None or now.get("content_sha") != current_sha:
        return None
    if now.get("error_kind") and not decision.error_kind:
        return None
    return (
        f"superseded by the decision written at {now.get('created_at', '?')} "
        f"({now.get('label', '?')}) on the same text"
    )


def gate_row(plan: GatePlan) -> GateRow:
    """The store row for a gate plan."""
    d = plan.decision
    return GateRow(
        repo=plan.repo,
        issue=plan.number,
        event=plan.event,
        verdict=d.verdict,
        label=plan.labels.target.name,
        reason=d.reason,
        error_kind=d.error_kind,
        model=d.model,
        prompt_version=d.prompt_version,
        prompt_tokens=d.prompt_tokens,
        output_tokens=d.output_tokens,
        duration_ms=d.model_ms,
        content_sha=d.issue.content_sha,
        policy_version=d.policy.policy.version if d.policy is not None else "",
    )
