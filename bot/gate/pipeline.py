"""The issue gate's one entry, :func:`run`: one ``issues`` event, or each issue of a backlog.

Cheapest first: the skip rules, the store's replay check, who set a gate label, then the model
and the plan (:mod:`bot.gate.plan`). Unless the run is dry, the plan is checked and written
under the issue's lock (:func:`_judge`). ``/triage`` (``force``) skips the three checks. A
backlog judges up to the job's model concurrency of issues at once and writes them one at a
time, in order; ``--retry-errors`` stops at the first fault that says the model is still out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot.clients.github_port import GitHubPort
from bot.concurrency import Failed, iter_bounded
from bot.config import Settings
from bot.context import JobContext, JobTypeModel, store_outlives_job
from bot.duplicates.suggestions import record_suggestion, settled_record
from bot.errors import GitHubError, StoreError
from bot.events import Issue, IssuesEvent
from bot.gate.backlog import OUTAGE_KINDS, Backlog, BacklogItem, select_backlog
from bot.gate.earned import LIVE_MIN_SETTLED, LiveRecords, read_live_records
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import GateLabels, gate_labels
from bot.gate.plan import (
    HAND_SET_ACTIONS,
    AppliedGate,
    GatePlan,
    LabelHistory,
    already_decided,
    apply_gate,
    asks_who_labelled,
    gate_row,
    hand_set_label,
    judge_issue,
    plan_gate,
    superseded,
)
from bot.gate.possible_duplicates import (
    NO_INDEX,
    DuplicatesPlan,
    SaidDuplicate,
    dismissal,
    earned,
    index_backlog,
    index_row,
    plan_duplicates,
    render_duplicates_summary,
    statement_record,
    still_there,
)
from bot.gate.type_label import TypePlan, bot_type_labels, plan_type
from bot.gate.types import GateDecision
from bot.gate.validator import Validator, make_validator
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.neutralise import code_span, log_value, neutralise
from bot.repo_file import TypeLabels
from bot.run_report import (
    PUBLIC_WARNING,
    RunReport,
    calls_plan_lines,
    calls_summary,
    quoted_lines,
    skipped_report,
)
from bot.type_guess import TypeGuess

__all__ = ["render_gate_plan", "render_gate_summary", "run"]


def run(ctx: JobContext, work: IssuesEvent | Backlog, *, force: bool = False) -> RunReport:
    """Run the issue gate on one ``issues`` event, or over a backlog (module doc).

    Args:
        ctx: the job's context, its settings carrying the repository file.
        work: a routed ``issues`` event (:func:`bot.events.route_event`), or a backlog run.
        force: ``/triage``: judge the event's issue even when a skip rule, an unchanged text
            or a hand-set gate label would leave it alone (a hand-set label stays: the bot
            removes only labels it added).

    Raises:
        ConfigError: no token when writing, or two gate labels share a name.
        GitHubError: the issue list, an issue's events or a label write failed.
        StoreError: the store cannot be opened, read or written (the labels are on the issue
            then, and the next run carries on from them).
    """
    if isinstance(work, Backlog):
        return _backlog(ctx, work)
    return _event(ctx, work, force=force)


@dataclass(frozen=True)
class _Gate:
    """What every issue of one run is judged and written with."""

    settings: Settings
    github: GitHubPort
    store: HistoryStore
    validator: Validator
    labels: GateLabels
    live: LiveRecords | None = None
    """The repository's live record, read once per run when the author comment is bounded."""
    types: JobTypeModel | None = None
    """The job's type model; ``None`` when none is configured."""
    backlog: bool = False
    """A backlog run: its issues' label events are there to read, whatever their action."""
    failed: list[str] = field(default_factory=list)
    """Why the classifier failed on an issue of this run, one line per failure."""

    @property
    def type_labels(self) -> TypeLabels:
        """The repository's type labels."""
        file = self.settings.repo_file
        return file.types.labels if file is not None else TypeLabels()

    def guess(self, event: IssuesEvent) -> TypeGuess | None:
        """The classifier's guess on the event's issue (``None`` without a classifier)."""
        if self.types is None or self.types.classifier is None:
            return None
        issue = event.issue
        try:
            return self.types.classifier.guess(issue.title or "", issue.body or "")
        except Exception as exc:  # a repository's model file must not stop the gate
            self.failed.append(
                f"{self.types.source}: failed on #{issue.number} ({type(exc).__name__})"
            )
            return None

    def type_plan(
        self, event: IssuesEvent, history: LabelHistory, guess: TypeGuess | None
    ) -> TypePlan | None:
        """The type plan for the event's issue; ``None`` when no type model is configured."""
        if self.types is None:
            return None
        fresh = event.action == "opened" and not self.backlog
        model = self.types
        if guess is None and self.failed:
            model = replace(model, classifier=None, problem=self.failed[-1])
        return plan_type(
            model,
            self.type_labels,
            guess,
            event.issue.label_names,
            events=None if fresh else history.events,
            login=self.github.login,
        )


@dataclass(frozen=True)
class _Judged:
    """One issue's plan as last made, and what became of it (``applied`` is ``None`` unwritten).

    ``hand_set``: a person's gate label the payload did not show, found by the removal rule.
    """

    plan: GatePlan
    applied: AppliedGate | None = None
    lock_wait_s: float = 0.0
    superseded: str | None = None
    hand_set: str | None = None


def _row_id(row: Mapping[str, Any] | None) -> int | None:
    return None if row is None else int(row["id"])


def _judge(
    gate: _Gate,
    event: IssuesEvent,
    history: LabelHistory,
    seen: Mapping[str, Any] | None,
    decision: GateDecision | None = None,
    *,
    force: bool = False,
    guess: TypeGuess | None = None,
    duplicate: SaidDuplicate | None = None,
) -> _Judged:
    """Plan one issue (from ``decision`` when judged ahead); unless the run is dry, check the
    plan under the issue's lock and write it, then its decision row.

    ``seen`` is the store's last decision read before planning. Under the lock the issue is
    read from GitHub again only when that row changed, or on ``/triage`` (``force``); the plan
    is then dropped (:func:`~bot.gate.plan.superseded`) or made again from the issue's current
    labels with the same decision.
    """
    settings = gate.settings
    if decision is None:  # guessed here, before the validator
        guess = gate.guess(event)
    plan = _plan(gate, event, history, seen, decision, guess, duplicate)
    if not force and event.action in HAND_SET_ACTIONS and plan.labels.kept:
        person = hand_set_label(plan.labels.kept, history.events(), login=gate.github.login)
        if person is not None:
            return _Judged(plan, hand_set=person)
    if settings.dry_run:
        return _Judged(plan)
    repo, number = plan.repo, plan.number
    asked = time.monotonic()
    with gate.store.exclusive(f"{repo}#{number}"):
        waited = time.monotonic() - asked
        now = gate.store.last_gate(repo, number)
        changed = _row_id(now) != _row_id(seen)
        if force or changed:
            issue = Issue.model_validate(gate.github.issue(repo, number))
            text = prepare_issue(issue.title, issue.body, max_body_chars=settings.max_body_chars)
            why = superseded(plan.decision, now, text.content_sha, force=force)
            if why is not None:
                return _Judged(plan, None, waited, why)
            current = event.model_copy(update={"issue": issue})
            if changed:  # another run wrote labels since the events were read
                history = LabelHistory(gate.github, repo, number)
            plan = _plan(gate, current, history, now, plan.decision, guess, duplicate)
        applied = apply_gate(plan, gate.github, store=gate.store)
        if plan.duplicate is not None:
            record_suggestion(gate.store, repo, number, [plan.duplicate.number])
        gate.store.record_gate(gate_row(plan))
    return _Judged(plan, applied, waited)


def _plan(
    gate: _Gate,
    event: IssuesEvent,
    history: LabelHistory,
    last: Mapping[str, Any] | None,
    decision: GateDecision | None,
    guess: TypeGuess | None,
    duplicate: SaidDuplicate | None = None,
) -> GatePlan:
    settings = gate.settings
    return plan_gate(
        event,
        gate.validator,
        owner=history.owner,
        last_applied=str(last["label"]) if last else None,
        author_comment=settings.author_comment,
        author_intro=settings.repo_file.author_comment.intro if settings.repo_file else None,
        gate_labels=gate.labels,
        comment_min_precision=settings.comment_min_precision,
        decision=decision,
        live=gate.live,
        types=gate.type_plan(event, history, guess),
        duplicate=duplicate,
    )


def _live(settings: Settings, store: HistoryStore, repo: str) -> LiveRecords | None:
    """The live record for the author comment's bound: read only when that bound applies."""
    if not settings.author_comment or settings.comment_min_precision <= 0:
        return None
    aliases = settings.repo_file.gate.model_aliases if settings.repo_file else {}
    return read_live_records(store, repo, aliases)


def _skip_reason(
    event: IssuesEvent, settings: Settings, ignored: frozenset[str] = frozenset()
) -> str | None:
    """Why the repository file's skip rules leave this issue alone, or ``None``; the
    lower-cased label names ``ignored`` do not count."""
    if settings.repo_file is None:
        return None
    issue = event.issue
    return settings.repo_file.skip.reason(
        title=issue.title,
        labels=[name for name in issue.label_names if name.lower() not in ignored],
        author=issue.user.login if issue.user else None,
        author_type=issue.user.type if issue.user else None,
    )


def _skips_a_type_label(event: IssuesEvent, settings: Settings) -> bool:
    """Whether a skip label on the issue is a type label, which the bot may have added (never
    before the issue's first event)."""
    file = settings.repo_file
    if file is None or event.action == "opened":
        return False
    skipped = {name.lower() for name in file.skip.labels}
    return any(
        name.lower() in skipped and file.types.labels.type_of(name) is not None
        for name in event.issue.label_names
    )


def _event(ctx: JobContext, event: IssuesEvent, *, force: bool) -> RunReport:
    settings = ctx.settings
    repo, number = event.repository.full_name, event.issue.number
    history: LabelHistory | None = None
    if not force:
        skip = _skip_reason(event, settings)
        if skip is not None and _skips_a_type_label(event, settings):
            history = LabelHistory(ctx.github(), repo, number)
            types = settings.repo_file.types.labels if settings.repo_file else TypeLabels()
            mine = bot_type_labels(history.events(), types, login=ctx.github().login)
            skip = _skip_reason(event, settings, mine)
        if skip is not None:
            return skipped_report(skip)
    github = ctx.github()
    history = history or LabelHistory(github, repo, number)
    store = ctx.store()
    last = store.last_gate(repo, number)
    model = ctx.model("validator")
    validator = make_validator(settings, model)
    gate = _Gate(settings, github, store, validator, gate_labels(settings))
    if not force and already_decided(
        event,
        last,
        model=model.name,
        max_body_chars=settings.max_body_chars,
        prompt_version=validator.prompt_version,
        policy_version=validator.policy.policy.version,
        gate=gate.labels,
    ):
        label = last["label"] if last else ""
        return skipped_report(
            f"#{number} is unchanged since the bot's last decision ({label}); "
            "/triage re-runs the gate"
        )
    if not force and asks_who_labelled(event, gate.labels):
        hand_set = history.hand_set(event, gate.labels)
        if hand_set is not None:
            return skipped_report(
                f"a maintainer set {hand_set!r} by hand; /triage re-runs the gate"
            )
    gate = replace(gate, live=_live(settings, store, repo), types=ctx.type_model())
    duplicates, said = _said(gate, event, history, _duplicates(ctx, event, store))
    judged = _judge(gate, event, history, last, force=force, duplicate=said)
    if judged.hand_set is not None:
        return skipped_report(
            f"a maintainer set {judged.hand_set!r} by hand; /triage re-runs the gate"
        )
    plan, applied = judged.plan, judged.applied
    if said is not None and plan.duplicate is None:
        duplicates = replace(duplicates, said="not said: the gate's decision is a fault")
    text = render_gate_plan(plan)
    text += f"\nduplicates: {log_value(duplicates.describe())}"
    text += "".join(f"\n{line}" for line in _write_lines(judged, settings.dry_run))
    if applied is not None and plan.author_comment is not None:
        text += f"; author comment {applied.comment}"
    warnings = _type_warnings(gate)
    if plan.decision.error_kind:
        warnings.append(
            f"validator-error on #{plan.number} ({plan.decision.error_kind}): "
            f"{' '.join(plan.decision.reason.split())[:300]}"
        )
    summary = render_gate_summary(
        plan,
        applied=applied is not None,
        comment=applied.comment if applied else None,
        unwritten="superseded" if judged.superseded is not None else "dry run",
    )
    if duplicates.problem is not None and duplicates.problem != NO_INDEX:
        warnings.append(f"duplicates: {duplicates.problem}")
    summary += "\n".join(render_duplicates_summary(duplicates)) + "\n"
    return RunReport(
        text,
        summary + _summary_notes(judged),
        {"verdict": plan.decision.outcome, "label": plan.labels.target.name},
        warnings,
    )


def _index_row(issue: Issue) -> IndexedIssue | None:
    created = issue.created()
    if created is None:
        return None
    return index_row(issue.number, issue.title or "", issue.body, created)


def _duplicates(ctx: JobContext, event: IssuesEvent, store: HistoryStore) -> DuplicatesPlan:
    """The listing, its candidates' state read first (one request): a deleted or transferred
    issue's title is not shown, and leaves the index."""
    row = _index_row(event.issue)
    if row is None:
        return DuplicatesPlan(problem="not ranked: the payload gives no creation time")
    repo, write = event.repository.full_name, not ctx.settings.dry_run
    kept = store_outlives_job(ctx.settings)
    encoder, why = ctx.title_encoder() if kept else (None, None)
    plan = plan_duplicates(
        store, repo, row, write=write, kept=kept, encoder=encoder, no_encoder=why or ""
    )
    plan = still_there(plan, repo, ctx.github().issue_states)
    if plan.gone and write:
        with contextlib.suppress(StoreError):  # a later run drops them
            store.drop_indexed(repo, plan.gone)
    return plan


_NOWHERE = "author-comment is off and the repository file sets no duplicates.label"


def _said(
    gate: _Gate, event: IssuesEvent, history: LabelHistory, plan: DuplicatesPlan
) -> tuple[DuplicatesPlan, SaidDuplicate | None]:
    """Whether the gate says "possibly the same as #N" (:func:`earned`), with the candidates
    GitHub no longer has dropped first; the plan carries why in ``said``."""
    if plan.problem is not None or not plan.candidates:
        return plan, None  # the listing says why already
    settings = gate.settings
    config = settings.repo_file.duplicates if settings.repo_file is not None else None
    repo, number = event.repository.full_name, event.issue.number
    bound = settings.comment_min_precision
    label = config.label if config is not None else None
    events = None if event.action == "opened" else history.events

    def dismissed() -> str | None:
        try:
            return dismissal(
                gate.store,
                repo,
                number,
                label,
                events,
                login=gate.github.login,
                write=not settings.dry_run,
            )
        except StoreError as exc:
            return f"the store's dismissals could not be read ({exc})"
        except GitHubError as exc:
            return f"the issue's label events could not be read ({exc})"

    try:
        settled = settled_record(gate.store, repo)
    except StoreError as exc:
        return replace(plan, said=f"not said: the live record could not be read ({exc})"), None
    record = statement_record(config, settled, bound)
    top, why = earned(plan, config, bound, record=record, dismissed=dismissed)
    if record is None:
        why += (
            f", and the live record holds {len(settled)} of the {LIVE_MIN_SETTLED} settled "
            "rankings it decides from"
        )
    if top is None:
        return replace(plan, said=why), None
    if not settings.author_comment and label is None:
        return replace(plan, said=f"not said: {_NOWHERE}"), None
    if plan.unchecked:
        return replace(plan, said="not said: the candidates' state could not be read"), None
    return replace(plan, said=why), SaidDuplicate(top.number, top.title, label)


def _type_warnings(gate: _Gate) -> list[str]:
    types = gate.types
    if types is None:
        return []
    problems = [types.problem] if types.classifier is None else gate.failed
    return [f"type model not applied: {problem}" for problem in problems]


LOCK_WAIT_SHOWN_S = 0.1
"""A wait for an issue's or pull request's lock this long or longer is shown (s)."""


def _write_lines(judged: _Judged, dry_run: bool) -> list[str]:
    lines = []
    if judged.lock_wait_s >= LOCK_WAIT_SHOWN_S:
        lines.append(f"lock:     waited {judged.lock_wait_s:.1f} s for another run on this issue")
    if dry_run:
        lines.append("dry run:  nothing written to GitHub or the store")
    elif judged.superseded is not None:
        lines.append(f"superseded: {log_value(judged.superseded)}; nothing written")
    elif judged.applied is not None:
        lines.append(f"applied:  {judged.applied.requests} GitHub write request(s)")
    return lines


def _summary_notes(judged: _Judged) -> str:
    notes = []
    if judged.lock_wait_s >= LOCK_WAIT_SHOWN_S:
        notes.append(f"Waited {judged.lock_wait_s:.1f} s for another run on this issue.")
    if judged.superseded is not None:
        notes.append(f"**Superseded:** {neutralise(judged.superseded)}; nothing written.")
    return "".join(f"\n{note}\n" for note in notes)


def _backlog(ctx: JobContext, work: Backlog) -> RunReport:
    settings, repo = ctx.settings, work.repo
    github = ctx.github()
    labels = gate_labels(settings)
    store = ctx.store()
    selection = select_backlog(
        repo,
        github.open_issues(repo),
        store,
        github,
        limit=work.limit,
        retry_errors=work.retry_errors,
        gate=labels,
    )
    todo = selection.todo
    lines = [
        f"#{number}: skipped, a maintainer set {log_value(repr(label))} by hand"
        for number, label in selection.hand_set
    ]
    counts = {label.name: 0 for label in labels.all}
    superseded_count = 0
    stopped = ""
    warnings: list[str] = []
    indexing = not settings.dry_run and store_outlives_job(settings)
    indexed: list[IndexedIssue] = []
    if todo:  # the model only when there is an issue to judge
        validator = make_validator(settings, ctx.model("validator"))
        gate = _Gate(
            settings,
            github,
            store,
            validator,
            labels,
            _live(settings, store, repo),
            types=ctx.type_model(),
            backlog=True,
        )
        decided = _decided(ctx, gate, repo, todo)
        with contextlib.closing(decided):
            for done, (item, event, history, guess, decision) in enumerate(decided, start=1):
                judged = _judge(gate, event, history, item.last, decision, guess=guess)
                row = _index_row(event.issue) if indexing else None
                indexed += [row] if row is not None else []
                plan = judged.plan
                kind = f", {plan.decision.error_kind}" if plan.decision.error_kind else ""
                guessed = plan.types is not None and plan.types.guess is not None
                typed = f"; type: {plan.types.describe()}" if plan.types and guessed else ""
                if judged.superseded is not None:
                    superseded_count += 1
                    lines.append(f"#{plan.number}: {log_value(judged.superseded)}")
                else:
                    counts[plan.labels.target.name] += 1
                    lines.append(
                        f"#{plan.number}: {log_value(plan.labels.target.name)} "
                        f"({plan.decision.model_ms:.0f} ms{kind}){log_value(typed)}"
                    )
                work.on_progress(done, len(todo))
                outage = plan.decision.error_kind in OUTAGE_KINDS
                if work.retry_errors and outage and done < len(todo):
                    stopped = (
                        f"stopped: the model is still out ({plan.decision.error_kind}); "
                        f"{len(todo) - done} issue(s) left for the next run"
                    )
                    break
        warnings += _type_warnings(gate)
        unindexed = index_backlog(store, repo, indexed)
        warnings += [unindexed] if unindexed else []
    extra = f", superseded by another run: {superseded_count}" if superseded_count else ""
    state = " (dry run: nothing written)" if settings.dry_run else ""
    what = "backlog --retry-errors" if work.retry_errors else "backlog"
    plain = ", ".join(f"{log_value(name)}: {count}" for name, count in counts.items()) + extra
    text = "\n".join(
        [f"triage-bot: {what} of {log_value(repo)}: {len(todo)} issue(s){state}", *lines, plain]
        + [f"warning: {log_value(w)}" for w in warnings]
        + ([stopped] if stopped else [])
    )
    shown = ", ".join(f"{code_span(name)}: {count}" for name, count in counts.items()) + extra
    tail = f"; {stopped}" if stopped else ""
    notes = "".join(f"\n**Warning:** {neutralise(w)}\n" for w in warnings)
    return RunReport(
        text,
        f"triage-bot {what} of {code_span(repo)}: {shown}{state}{tail}\n{notes}",
        warnings=warnings + ([stopped] if stopped else []),
    )


_Decided = tuple[BacklogItem, IssuesEvent, LabelHistory, TypeGuess | None, GateDecision]


def _decided(
    ctx: JobContext, gate: _Gate, repo: str, todo: Sequence[BacklogItem]
) -> Generator[_Decided, None, None]:
    """Each backlog issue with its event, label history, type guess and decision, in the
    selection's order, up to the job's model concurrency judged at once; closing it starts no
    further call. The types are guessed first, on this thread (the label each adds counts for
    its validator).

    Raises:
        Whatever judging an issue raised beyond a model fault (a model fault is a decision),
        at that issue's turn.
    """
    events = [
        IssuesEvent.model_validate(
            {"action": "opened", "issue": item.issue, "repository": {"full_name": repo}}
        )
        for item in todo
    ]
    histories = [
        LabelHistory(gate.github, repo, item.issue["number"], item.events) for item in todo
    ]
    guesses = [gate.guess(event) for event in events]
    added = []
    for event, history, guess in zip(events, histories, guesses, strict=True):
        types = gate.type_plan(event, history, guess)
        added.append((types.label,) if types is not None and types.label is not None else ())
    validator = gate.validator
    judged = iter_bounded(
        lambda pair: judge_issue(validator, pair[0], extra_labels=pair[1]),
        list(zip(events, added, strict=True)),
        limit=ctx.model_concurrency(),
    )
    with contextlib.closing(judged):
        for item, event, history, guess, decision in zip(
            todo, events, histories, guesses, judged, strict=True
        ):
            if isinstance(decision, Failed):
                raise decision.error
            yield item, event, history, guess, decision


def _label_changes(plan: GatePlan) -> str:
    # plain text: each sink escapes it for its place
    labels = plan.labels
    parts = [f"+{name}" for name in labels.add] + [f"-{name}" for name in labels.remove]
    if plan.types is not None and plan.types.label is not None:
        parts.append(f"+{plan.types.label}")
    if plan.duplicate_label is not None:
        parts.append(f"+{plan.duplicate_label}")
    kept = [f"kept {name} (not added by the bot)" for name in labels.kept]
    if not parts:
        parts = [f"no change ({labels.target.name} already set)"]
    return "  ".join(parts + kept)


def render_gate_plan(plan: GatePlan) -> str:
    """The plan as plain text lines (dry-run output and the run log)."""
    d = plan.decision
    lines = [
        f"triage-bot: {plan.event} {log_value(plan.repo)}#{plan.number}",
        f"verdict:  {d.outcome}" + ("" if d.verdict else f" ({d.error_kind or 'unknown'})"),
        f"reason:   {log_value(' '.join(d.reason.split()))}",
        f"label:    {log_value(plan.labels.target.name)}",
        f"changes:  {log_value(_label_changes(plan))}",
        f"model:    {log_value(d.model)} ({d.prompt_version})",
        *([f"policy:   {log_value(d.policy.describe())}"] if d.policy is not None else []),
        f"tokens:   {d.prompt_tokens} prompt / {d.output_tokens} output",
        f"time:     {d.model_ms:.0f} ms model / {d.wall_ms:.0f} ms total",
    ]
    if d.issue.truncated:
        lines.append(
            f"body:     cut to {d.issue.kept_chars} of {d.issue.original_chars} characters"
        )
    lines += calls_plan_lines([("", c) for c in d.calls])
    wanted = plan.author_comment
    if wanted is not None:
        how = "posted or edited" if wanted.create else "edited, if the issue has one"
        lines.append(f"comment:  the author comment ({how}):")
        lines += quoted_lines(wanted.body)
    elif plan.comment_withheld is not None:
        lines.append(f"comment:  not posted: {log_value(plan.comment_withheld)}")
    if plan.comment_basis is not None:
        lines.append(f"record:   {log_value(plan.comment_basis)}")
    if plan.types is not None:
        lines.append(f"type:     {log_value(plan.types.describe())}")
    return "\n".join(lines)


def render_gate_summary(
    plan: GatePlan, *, applied: bool, comment: str | None = None, unwritten: str = "dry run"
) -> str:
    """The step summary (GitHub-flavoured markdown) for one gate run; ``comment`` is what
    :func:`bot.gate.plan.apply_gate` did with the author comment (``AppliedGate.comment``),
    ``unwritten`` why nothing was written when ``applied`` is false."""
    d = plan.decision
    verdict = d.verdict or f"validator error ({d.error_kind})"
    changes = (
        _label_changes(plan) if applied else f"{unwritten}, not applied: {_label_changes(plan)}"
    )
    out = [
        f"### triage-bot: issue gate for #{plan.number}",
        "",
        "| verdict | label | changes | model | tokens (prompt/output) | model ms |",
        "|---|---|---|---|---|---|",
        f"| {neutralise(verdict, table=True)} | "
        f"{code_span(plan.labels.target.name, table=True)} | {neutralise(changes, table=True)} | "
        f"{neutralise(d.model, max_chars=80, table=True)} | "
        f"{d.prompt_tokens}/{d.output_tokens} | {d.model_ms:.0f} |",
        "",
        f"**Reason:** {neutralise(d.reason)}",
    ]
    if d.policy is not None:
        chosen = d.policy
        out.append(
            f"\n**Decision policy:** {code_span(chosen.policy.name)} "
            f"({code_span(chosen.policy.version)}, {neutralise(chosen.source)}); "
            f"{neutralise(chosen.status())}"
        )
    if plan.author_comment is not None:
        fate = comment if applied and comment else f"not posted ({unwritten})"  # the bot's words
        out.append(f"\n**Author comment:** {fate}")
    elif plan.comment_withheld is not None:
        out.append(f"\n**Author comment:** not posted: {neutralise(plan.comment_withheld)}")
    if plan.comment_basis is not None:
        out.append(f"\n**Decided by:** {neutralise(plan.comment_basis)}")
    if plan.types is not None:
        out.append(f"\n**Type:** {neutralise(plan.types.describe())}")
    if d.issue.truncated:
        out.append(
            f"\nThe body was cut to {d.issue.kept_chars} of {d.issue.original_chars} "
            "characters before judging."
        )
    out += ["", calls_summary([("", c) for c in d.calls])]
    if plan.public_repo:
        out.append(PUBLIC_WARNING)
    return "\n".join(out) + "\n"
