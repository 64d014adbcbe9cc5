"""The issue gate as a straight-line function: compute a plan, then apply it.

The gate first computes a plan (which labels to add and remove, and why) with its dependencies
passed in; :func:`apply_gate` then performs the
plan's writes through the :class:`~bot.clients.github_port.GitHubPort`. ``--dry-run`` prints the
plan instead of applying it, and tests assert on plans. The PR audit's plan and apply are
:mod:`bot.audit.plan`.

A gate label a maintainer set by hand wins over a later automatic run. Who set it is asked of
GitHub, not of the store: on an ``edited`` or ``reopened`` event whose issue carries a gate label
(:func:`asks_who_labelled`), the issue's ``labeled`` events are read and
:func:`hand_set_gate_label` finds a gate label whose newest ``labeled`` event was performed by
a person. The store cannot be the source of truth for this: a decision row that failed to be
written after its labels were (a held lock, a full disk) would make the bot's own label look
hand-set, and an ephemeral runner starts every job with an empty store, where a hand-set label
would look like nothing at all. Only an explicit ``/triage`` judges an issue over a hand-set
label (which stays: see below). The store keeps what it is right about: the replay skip
(:func:`already_decided`) and the label the bot last applied, for exclusivity on stale payloads.

The bot's labels are its own: a gate label is removed only when its newest ``labeled`` or
``unlabeled`` event is the bot's own ``labeled`` (:func:`label_owner`). A label a
person or another app added stays, even when ``.github/triage-bot.yml`` maps a gate label onto
it (``ready: {name: security}`` cannot take ``security`` off an issue), and the plan says so
(``LabelPlan.kept``). The events are read once per run, only when a removal is planned (the
hand-set check's read is reused: :class:`LabelHistory`).

On NEEDS_REFINEMENT the gate also tells the author what to add, in one comment found again by
its hidden marker (:mod:`bot.gate.author_comment`); :func:`plan_gate` builds its text and
:func:`apply_gate` writes it after the labels, by the id the store remembers when it can
(:mod:`bot.gate.writes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.clients.github_port import GitHubPort, LabelEvent
from bot.events import IssuesEvent
from bot.gate.author_comment import ready_comment, refinement_comment_for
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import DEFAULT_LABELS, GateLabels, LabelPlan, plan_labels
from bot.gate.validator import GateDecision, Validator
from bot.gate.writes import add_gate_label, write_author_comment
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
    """The author comment a gate plan writes (:mod:`bot.gate.author_comment`).

    Attributes:
        body: the comment's full text, :data:`~bot.gate.author_comment.AUTHOR_MARKER` first.
        create: post it when the issue has none (NEEDS_REFINEMENT); ``False``: only edit the
            bot's existing comment (VALID: the issue is ready), never post one.
    """

    body: str
    create: bool


@dataclass(frozen=True)
class GatePlan:
    """The gate's plan for one ``issues`` event.

    Attributes:
        event: ``issues.<action>``.
        repo: ``owner/name``.
        number: issue number.
        public_repo: whether the repository is public (self-hosted runner warning).
        decision: the validator's decision.
        labels: the label writes that leave exactly one gate label; ``labels.target`` is
            the decision's label (:attr:`GateDecision.label`, derived from its verdict).
        author_comment: the author comment to write, or ``None`` (see :func:`plan_gate`).
        comment_withheld: why a NEEDS_REFINEMENT posts no author comment
            (:func:`comment_withheld`), ``None`` when it does or none was due.
    """

    event: str
    repo: str
    number: int
    public_repo: bool
    decision: GateDecision
    labels: LabelPlan
    author_comment: AuthorCommentPlan | None = None
    comment_withheld: str | None = None


@dataclass(frozen=True)
class AppliedGate:
    """What :func:`apply_gate` did.

    Attributes:
        plan: the plan applied.
        requests: the GitHub write calls made (labels and the author comment).
        reads: the GitHub reads made (the author comment's lookup: 0 or 1).
        comment: the author comment's fate: ``created``, ``edited``, ``unchanged``, ``absent``
            (VALID and the issue has none) or ``none`` (the plan has none).
    """

    plan: GatePlan
    requests: int
    reads: int = 0
    comment: str = "none"


def comment_withheld(decision: GateDecision, min_precision: float) -> str | None:
    """Why a NEEDS_REFINEMENT decision posts no author comment (one line), or ``None``.

    A wrong request for more sends a good reporter away, so the bot asks an author only when
    the policy that decided was measured, with this model and prompt version, to be right at
    least ``min_precision`` of the time when it says NEEDS_REFINEMENT (the ``check`` half's
    precision: :attr:`bot.gate.policy.ChosenPolicy.nr_precision`); and never when the step
    that ruled did so only because the model's own quotes could not be found in the issue
    (:attr:`bot.gate.policy.Ruling.model_fault`: the model's error, not the author's). A bound
    of 0 asks authors whatever was measured (the maintainer's choice, made knowingly).
    """
    if decision.ruling is not None and decision.ruling.model_fault:
        return "the model's quotes could not be found in the issue: its error, not the author's"
    if min_precision <= 0:
        return None
    chosen = decision.policy
    if chosen is None:
        return "no policy decided"
    precision = chosen.nr_precision
    if precision is None:
        return (
            f"the policy {chosen.policy.name} is not measured for this model and prompt "
            f"({chosen.mismatch}); calibrate one to ask authors"
        )
    if precision < min_precision:
        return (
            f"the policy's measured needs-refinement precision, {precision:.0%}, is below "
            f"{min_precision:.0%}"
        )
    return None


def _author_comment(
    event: IssuesEvent,
    decision: GateDecision,
    labels: LabelPlan,
    intro: str | None,
    gate: GateLabels,
) -> AuthorCommentPlan | None:
    """The author comment for a decision; ``None`` when no comment can be due.

    NEEDS_REFINEMENT: the comment listing what is missing, posted or edited (unless
    :func:`comment_withheld`; the caller checks first). VALID: the "ready"
    text, only ever an edit, planned only when a comment of the bot's can exist, so a new valid
    issue costs no lookup: the bot's needs-refinement label is being removed (the payload's or
    the store's last label), or an issue that was not just opened changes its gate label (a
    maintainer may have removed needs-refinement by hand). A VALID with no label change
    follows a VALID run, which already edited the comment. A validator error writes nothing:
    the fault is the bot's (the run's warning tells the maintainers).
    """
    if decision.verdict == "NEEDS_REFINEMENT":
        body = refinement_comment_for(decision, label=labels.target.name, intro=intro)
        return AuthorCommentPlan(body, True)
    if decision.verdict != "VALID":
        return None
    removes_refinement = gate.needs_refinement.name.lower() in {n.lower() for n in labels.remove}
    changes = bool(labels.add or labels.remove)
    if removes_refinement or (changes and event.action != "opened"):
        return AuthorCommentPlan(ready_comment(label=labels.target.name), False)
    return None


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
) -> GatePlan:
    """Judge the event's issue and plan its labels. Never raises for model faults.

    The labels come from the payload (no extra GET). A stale payload may not show the label
    the bot last applied (``last_applied``, from the store), so that one is planned for
    removal too when the verdict changes. Every removal is asked of ``owner`` first: only a
    label whose newest event is the bot's own ``labeled`` is removed; a person's or another
    app's stays (``LabelPlan.kept``), and one already gone costs no request. The store's label
    is never taken as proof that a label is on the issue.

    Args:
        event: a routed ``issues`` event (see :func:`bot.events.route_event`).
        validator: the validator agent with its model.
        owner: who put a gate label on this issue (:meth:`LabelHistory.owner`), given whether
            the payload shows it; asked only for the labels the plan would remove.
        last_applied: the label of the bot's last decision on this issue, or ``None``.
        author_comment: plan the author comment (``Settings.author_comment``).
        author_intro: the repository's intro line for that comment, or ``None``.
        gate_labels: the repository's three gate labels.
        comment_min_precision: the bound of :func:`comment_withheld`.
        decision: the issue's decision when judged ahead (:func:`judge_issue`); ``None``
            judges it here.
    """
    if decision is None:
        decision = judge_issue(validator, event)
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
    withheld = None
    if author_comment and decision.verdict == "NEEDS_REFINEMENT":
        withheld = comment_withheld(decision, comment_min_precision)
    return GatePlan(
        event=f"issues.{event.action}",
        repo=event.repository.full_name,
        number=event.issue.number,
        public_repo=not event.repository.private,
        decision=decision,
        labels=labels,
        author_comment=(
            _author_comment(event, decision, labels, author_intro, gate_labels)
            if author_comment and withheld is None
            else None
        ),
        comment_withheld=withheld,
    )


def judge_issue(validator: Validator, event: IssuesEvent) -> GateDecision:
    """The validator's decision on the event's issue (its title, body and labels as the payload
    has them). Never raises for model faults; safe to call for several issues at once."""
    return validator.judge(event.issue.title, event.issue.body, labels=event.issue.label_names)


def apply_gate(
    plan: GatePlan,
    github: GitHubPort,
    *,
    store: HistoryStore | None = None,
) -> AppliedGate:
    """Apply the label plan: ensure + add the target label, then remove stale gate labels;
    then the author comment, if the plan has one.

    Adding before removing means a crash between the two leaves two gate labels, never none;
    the next run's plan (from the payload) removes the extra one. The author comment is found
    by its hidden marker among the bot's own comments (``GitHubPort.find_bot_comment``) and
    edited in place, never posted twice; an identical text is not written again, and a VALID plan
    never posts one. A failed comment write raises after the labels are on the issue: the
    caller records no decision then, so the next event judges again and writes the comment.

    With ``store`` (a run that writes), what the bot already knows of GitHub spares requests
    (:mod:`bot.gate.writes`): a label it created in the repository is not created again, and
    its comment on the issue is edited by id, with no lookup, or not written when its text is
    the same. Without one, GitHub is asked (``backlog`` passes its store too).

    Raises:
        GitHubError: a read or write failed after the client's retries.
        StoreError: the comment's row could not be cleared before its write.
    """
    requests = 0
    if plan.labels.add:
        requests += add_gate_label(
            github, store, plan.repo, plan.number, plan.labels.target, plan.labels.add
        )
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
    """Whether the gate must ask GitHub who added the issue's gate label before judging.

    Only when it matters, so the read is spent only there: the action is ``edited`` or
    ``reopened`` and the payload's issue carries a gate label.
    """
    return event.action in HAND_SET_ACTIONS and bool(_gate_labels_on(event, gate))


def hand_set_gate_label(
    event: IssuesEvent,
    events: Sequence[LabelEvent],
    *,
    login: Callable[[], str | None],
    gate: GateLabels = DEFAULT_LABELS,
) -> str | None:
    """The gate label on the issue that a person added by hand, or ``None``.

    A gate label present on the issue is hand-set when the newest ``labeled`` event that added
    it (GitHub's "List issue events", oldest first) was performed by a person: actor type
    ``User`` and a login other than the bot's. The Actions token writes as
    ``github-actions[bot]`` and a GitHub App as ``NAME[bot]`` (type ``Bot``); with a personal
    access token the bot's writes appear as that user, hence ``login``, asked only when a
    ``User`` event must be told apart. A label with no ``labeled`` event, or one whose actor
    GitHub does not name, is not shown to be a person's and so is not hand-set. Names and
    logins compare case-insensitively (GitHub's rule).

    Args:
        event: the routed ``issues`` event (its labels are the issue's current labels).
        events: the issue's ``labeled`` events, oldest first (``GitHubPort.label_events``).
        login: the bot's own login (``GitHubPort.login``); ``None``: unknown.
    """
    if event.action not in HAND_SET_ACTIONS:
        return None
    return hand_set_label(_gate_labels_on(event, gate), events, login=login)


def _newest(name: str, events: Sequence[LabelEvent]) -> LabelEvent | None:
    """The newest ``labeled`` event that added ``name`` (case-insensitively), or ``None``."""
    added = [e for e in events if e.label.lower() == name.lower() and not e.removed]
    return added[-1] if added else None


def _same_login(login: str | None, own: str | None) -> bool:
    return login is not None and own is not None and login.lower() == own.lower()


def hand_set_label(
    names: Sequence[str], events: Sequence[LabelEvent], *, login: Callable[[], str | None]
) -> str | None:
    """The first of ``names`` (gate labels on an issue) whose newest ``labeled`` event a person
    performed, or ``None``: the rule of :func:`hand_set_gate_label`, for any caller that has
    decided it must ask (``backlog --retry-errors`` asks on every issue it would re-judge)."""
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

    ``bot`` when that event added it and its actor is ``login()``; ``gone`` when it removed
    it; ``other`` for anyone else. A label with no event is ``other`` when the payload shows
    it (``shown``) and ``gone`` when it does not.
    """
    newest = next((e for e in reversed(events) if e.label.lower() == name.lower()), None)
    if newest is None:
        return "other" if shown else "gone"
    if newest.removed:
        return "gone"
    return "bot" if _same_login(newest.actor_login, login()) else "other"


class LabelHistory:
    """Who added one issue's labels, asked of GitHub at most once and only when a rule needs
    it: the issue's ``labeled`` events (``GitHubPort.label_events``, one request) and the bot's
    own login (``GitHubPort.login``). The hand-set check and the removal rule of
    :func:`plan_gate` share the one read.

    Args:
        github: the client to read with.
        repo: ``owner/name``.
        number: the issue.
        events: the events when the caller has read them already (``backlog``).
    """

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
        """The issue's ``labeled`` events, oldest first (read on the first call).

        Raises:
            GitHubError: the events cannot be read.
        """
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

    True when the last stored decision (written only after its labels were applied) has the
    same judged-text hash, model, validator prompt version and decision policy version, and was
    not a fault. A replayed
    or repeated event is then skipped with no model call and no write; ``/triage`` forces.

    Args:
        event: the routed ``issues`` event.
        last: the store's last gate row for the issue (see ``HistoryStore.last_gate``), or ``None``.
        model: the validator model's name.
        max_body_chars: the validator's body cut (the hash is of the text as judged).
        prompt_version: the validator's (:attr:`bot.gate.validator.Validator.prompt_version`:
            prompt and the repository's checklist; a changed checklist judges again).
        policy_version: the decision policy's (:attr:`bot.gate_policy.GatePolicy.version`):
            a new policy judges again.
        gate: the repository's three gate labels.
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

    Asked under the lock once GitHub was read again: when the store's last decision is not
    the one read before planning, and on every ``/triage`` (``force``). ``now`` is that last
    decision, ``current_sha`` the content hash of the issue's text now. The run that judged
    the current text wins; on the same text, the first one written wins, unless it was a
    validator error and this one is not.
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
