"""The issue gate's one entry, :func:`run`: the whole sequence for an ``issues`` event, and the
same per-issue sequence for each issue of a backlog run.

For an event, cheapest first: the repository's skip rules (no request); the store's replay
check (no request: :func:`~bot.gate.plan.already_decided`); on an edited or reopened issue that
carries a gate label, one read of the issue's ``labeled`` events to learn whether a person set
that label (:func:`~bot.gate.plan.hand_set_gate_label`: GitHub, not the store, says who did, so
a lost decision row or an empty store on an ephemeral runner changes nothing); then the model
and the plan (:func:`~bot.gate.plan.plan_gate`), which removes only gate labels the bot added
(the same events, read then if not before: :class:`~bot.gate.plan.LabelHistory`); then, unless
the run is dry, the label writes and the author comment (:func:`~bot.gate.plan.apply_gate`) and
the decision row last, under the issue's lock. ``/triage`` (``force``) skips the three checks.

A backlog run (:class:`~bot.gate.backlog.Backlog`) judges the issues
:func:`~bot.gate.backlog.select_backlog` chooses, each with the same plan, writes and row, and
builds the model only when there is an issue to judge. Up to the job's model concurrency
(:meth:`~bot.context.JobContext.model_concurrency`: a server that batches) of the issues'
model calls run at once (:func:`bot.concurrency.iter_bounded`), while the plans, writes and
rows stay on this thread, one issue at a time and in the selection's order, each under its
issue's lock. A ``--retry-errors`` run stops at the first fault that says the model is still
out (:data:`~bot.gate.backlog.OUTAGE_KINDS`): the rest would only fail the same way, and the
next scheduled run tries again; no further call starts then (those already running end
unwritten).

Each run returns a :class:`~bot.report.RunReport`: the plan as log lines, the step summary, the
step outputs, and a warning per ``validator-error``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from bot.clients.github_port import GitHubPort
from bot.concurrency import Failed, iter_bounded
from bot.config import Settings
from bot.context import JobContext
from bot.events import IssuesEvent
from bot.gate.backlog import OUTAGE_KINDS, Backlog, BacklogItem, select_backlog
from bot.gate.labels import GateLabels, gate_labels
from bot.gate.plan import (
    AppliedGate,
    GatePlan,
    LabelHistory,
    already_decided,
    apply_gate,
    asks_who_labelled,
    gate_row,
    judge_issue,
    plan_gate,
)
from bot.gate.validator import GateDecision, Validator, make_validator
from bot.history.protocol import HistoryStore
from bot.neutralise import code_span, log_value, neutralise
from bot.report import (
    PUBLIC_WARNING,
    RunReport,
    calls_plan_lines,
    calls_summary,
    quoted_lines,
    skipped_report,
)

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


def _judge(
    gate: _Gate,
    event: IssuesEvent,
    history: LabelHistory,
    last_applied: str | None,
    decision: GateDecision | None = None,
) -> tuple[GatePlan, AppliedGate | None]:
    """One issue's plan (from ``decision`` when it was judged ahead); unless the run is dry,
    its writes and then its decision row, under the issue's lock (a second runner on the same
    issue waits, then edits)."""
    settings = gate.settings
    plan = plan_gate(
        event,
        gate.validator,
        owned=history.added_by_bot,
        last_applied=last_applied,
        author_comment=settings.author_comment,
        author_intro=settings.repo_file.author_comment.intro if settings.repo_file else None,
        gate_labels=gate.labels,
        comment_min_precision=settings.comment_min_precision,
        decision=decision,
    )
    if settings.dry_run:
        return plan, None
    with gate.store.exclusive(f"{plan.repo}#{plan.number}"):
        applied = apply_gate(plan, gate.github, store=gate.store)
        gate.store.record_gate(gate_row(plan))
    return plan, applied


def _skip_reason(event: IssuesEvent, settings: Settings) -> str | None:
    """Why the repository file's skip rules leave this issue alone, or ``None``."""
    if settings.repo_file is None:
        return None
    issue = event.issue
    return settings.repo_file.skip.reason(
        title=issue.title,
        labels=issue.label_names,
        author=issue.user.login if issue.user else None,
        author_type=issue.user.type if issue.user else None,
    )


def _event(ctx: JobContext, event: IssuesEvent, *, force: bool) -> RunReport:
    settings = ctx.settings
    if not force:
        skip = _skip_reason(event, settings)
        if skip is not None:
            return skipped_report(skip)
    github = ctx.github()
    repo, number = event.repository.full_name, event.issue.number
    history = LabelHistory(github, repo, number)
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
    plan, applied = _judge(gate, event, history, last["label"] if last else None)
    text = render_gate_plan(plan)
    if applied is None:
        text += "\ndry run:  nothing written to GitHub or the store"
    else:
        text += f"\napplied:  {applied.requests} GitHub write request(s)"
        if plan.author_comment is not None:
            text += f"; author comment {applied.comment}"
    warnings = []
    if plan.decision.error_kind:
        warnings.append(
            f"validator-error on #{plan.number} ({plan.decision.error_kind}): "
            f"{' '.join(plan.decision.reason.split())[:300]}"
        )
    return RunReport(
        text,
        render_gate_summary(
            plan, applied=applied is not None, comment=applied.comment if applied else None
        ),
        {"verdict": plan.decision.outcome, "label": plan.labels.target.name},
        warnings,
    )


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
        f"#{number}: skipped, a maintainer set {label!r} by hand"
        for number, label in selection.hand_set
    ]
    counts = {label.name: 0 for label in labels.all}
    stopped = ""
    if todo:  # the model only when there is an issue to judge
        validator = make_validator(settings, ctx.model("validator"))
        gate = _Gate(settings, github, store, validator, labels)
        decided = _decided(ctx, validator, repo, todo)
        with contextlib.closing(decided):
            for done, (item, event, decision) in enumerate(decided, start=1):
                history = LabelHistory(github, repo, item.issue["number"], item.events)
                plan, _ = _judge(gate, event, history, item.last_label, decision)
                counts[plan.labels.target.name] += 1
                kind = f", {plan.decision.error_kind}" if plan.decision.error_kind else ""
                lines.append(
                    f"#{plan.number}: {plan.labels.target.name} "
                    f"({plan.decision.model_ms:.0f} ms{kind})"
                )
                work.on_progress(done, len(todo))
                outage = plan.decision.error_kind in OUTAGE_KINDS
                if work.retry_errors and outage and done < len(todo):
                    stopped = (
                        f"stopped: the model is still out ({plan.decision.error_kind}); "
                        f"{len(todo) - done} issue(s) left for the next run"
                    )
                    break
    summary = ", ".join(f"{name}: {count}" for name, count in counts.items())
    state = " (dry run: nothing written)" if settings.dry_run else ""
    what = "backlog --retry-errors" if work.retry_errors else "backlog"
    text = "\n".join(
        [f"triage-bot: {what} of {repo}: {len(todo)} issue(s){state}", *lines, summary]
        + ([stopped] if stopped else [])
    )
    tail = f"; {stopped}" if stopped else ""
    return RunReport(
        text,
        f"triage-bot {what} of {repo}: {summary}{state}{tail}\n",
        warnings=[stopped] if stopped else [],
    )


def _decided(
    ctx: JobContext, validator: Validator, repo: str, todo: Sequence[BacklogItem]
) -> Generator[tuple[BacklogItem, IssuesEvent, GateDecision], None, None]:
    """Each backlog issue with its event and its decision, in the selection's order, up to
    the job's model concurrency judged at once; closing it starts no further call.

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
    judged = iter_bounded(
        lambda event: judge_issue(validator, event), events, limit=ctx.model_concurrency()
    )
    with contextlib.closing(judged):
        for item, event, decision in zip(todo, events, judged, strict=True):
            if isinstance(decision, Failed):
                raise decision.error
            yield item, event, decision


def _label_changes(plan: GatePlan) -> str:
    """Plain text; each sink escapes it for its place."""
    labels = plan.labels
    parts = [f"+{name}" for name in labels.add] + [f"-{name}" for name in labels.remove]
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
    return "\n".join(lines)


def render_gate_summary(plan: GatePlan, *, applied: bool, comment: str | None = None) -> str:
    """The step summary (GitHub-flavoured markdown) for one gate run; ``comment`` is what
    :func:`bot.gate.plan.apply_gate` did with the author comment (``AppliedGate.comment``)."""
    d = plan.decision
    verdict = d.verdict or f"validator error ({d.error_kind})"
    changes = _label_changes(plan) if applied else f"dry run, not applied: {_label_changes(plan)}"
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
        out.append(f"\n**Decision policy:** {neutralise(d.policy.describe())}")
    if plan.author_comment is not None:
        fate = comment if applied and comment else "not posted (dry run)"  # the bot's words
        out.append(f"\n**Author comment:** {fate}")
    elif plan.comment_withheld is not None:
        out.append(f"\n**Author comment:** not posted: {neutralise(plan.comment_withheld)}")
    if d.issue.truncated:
        out.append(
            f"\nThe body was cut to {d.issue.kept_chars} of {d.issue.original_chars} "
            "characters before judging."
        )
    out += ["", calls_summary([("", c) for c in d.calls])]
    if plan.public_repo:
        out.append(PUBLIC_WARNING)
    return "\n".join(out) + "\n"
