"""Run one job from settings: the glue between the CLI and the pipelines.

Each function builds its clients from the frozen settings, runs a pipeline's plan, applies it
unless ``dry_run``, and returns a :class:`~bot.report.RunReport` (text for the log, markdown for
the step summary, step outputs). Nothing here prints or exits: the CLI does. A comment event
goes to :func:`bot.commands.comment.run_comment`, which reaches the clients and the pipelines
here only through the :class:`~bot.commands.spec.Services` the runner hands it, so the
commands never import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.agents import make_auditor, make_validator
from bot.audit.auditor import AuditRejected
from bot.audit.run import apply_audit, plan_audit
from bot.audit.selection import DEFAULT_SKIP_GLOBS
from bot.clients.github_port import GitHubPort, PullRef
from bot.commands.comment import run_comment
from bot.config import Settings
from bot.context import (
    author_intro,
    gate_labels,
    skip_reason,
    with_repository_file,
)
from bot.errors import ConfigError, ModelNotFound, ModelUnavailable
from bot.events import (
    REPO_PATTERN,
    IssueCommentEvent,
    IssuesEvent,
    PullRequestEvent,
    Scheduled,
    Skip,
    load_payload,
    route_event,
)
from bot.factory import make_chat_model, make_github, make_store
from bot.gate.backlog import select_backlog
from bot.gate.plan import (
    LabelHistory,
    already_decided,
    apply_gate,
    asks_who_labelled,
    gate_row,
    plan_gate,
)
from bot.history.protocol import HistoryStore
from bot.report import (
    RunReport,
    render_audit_plan,
    render_audit_summary,
    render_gate_plan,
    render_gate_summary,
    skipped_report,
)

__all__ = [
    "BACKLOG_LIMIT",
    "OUTAGE_KINDS",
    "run_audit",
    "run_backlog",
    "run_event",
    "run_gate",
]


def run_event(settings: Settings) -> RunReport:
    """Handle the webhook event named in the settings (``GITHUB_EVENT_NAME``/``_PATH``).

    Raises:
        ConfigError: no event name or path, no token when writing, or (a ``schedule`` event)
            no ``GITHUB_REPOSITORY``.
        EventError: the payload is missing or malformed.
        GitHubError / StoreError: a write failed.
    """
    if not settings.event_name:
        raise ConfigError("no event name: set GITHUB_EVENT_NAME or pass --event-name")
    if settings.event_path is None:
        raise ConfigError("no event payload: set GITHUB_EVENT_PATH or pass --event-path")
    routed = route_event(settings.event_name, load_payload(settings.event_path))
    if isinstance(routed, Skip):
        return skipped_report(routed.reason)
    if isinstance(routed, IssueCommentEvent):
        # a command reads the file only if it runs a pipeline (Services), so a plain comment
        # costs no request
        return run_comment(routed, settings, _CommandServices(settings))
    if isinstance(routed, Scheduled):
        return _run_scheduled(settings)
    repo = routed.repository
    settings = _with_file(settings, repo.full_name, repo.default_branch)
    if isinstance(routed, IssuesEvent):
        skip = skip_reason(routed, settings)
        if skip is not None:
            return skipped_report(skip)
        return run_gate(routed, settings)
    return _run_audit_event(routed, settings)


def _with_file(
    settings: Settings, repo: str, branch: str | None, github: GitHubPort | None = None
) -> Settings:
    """:func:`~bot.context.with_repository_file` with this module's client factories."""
    return with_repository_file(
        settings, repo, branch, github, make_github=make_github, make_store=make_store
    )


def _run_scheduled(settings: Settings) -> RunReport:
    """The cron trigger: ``backlog --retry-errors`` on the workflow's repository."""
    repo = settings.repository or ""
    if not REPO_PATTERN.match(repo):
        raise ConfigError(f"a schedule event needs GITHUB_REPOSITORY as OWNER/NAME, got {repo!r}")
    github = make_github(settings, token_required=not settings.dry_run)
    return run_backlog(repo, settings, github, retry_errors=True)


def run_gate(event: IssuesEvent, settings: Settings, *, force: bool = False) -> RunReport:
    """Run the issue gate on one event; ``force`` (``/triage``) judges over a hand-set label.

    Order, cheapest first: the store's replay check (no request); then, on an edited or
    reopened issue that carries a gate label, one read of the issue's events to learn whether a
    person set that label (:func:`bot.gate.plan.hand_set_gate_label`: GitHub, not the store, says
    who did, so a lost decision row or an empty store on an ephemeral runner changes nothing);
    then the model, and the plan, which removes only gate labels the bot added (the same
    events, read then if not before: :class:`~bot.gate.plan.LabelHistory`); then the label
    writes; the decision row last. A dry run opens the store
    read-only and reads GitHub without a token when it has none.

    Raises:
        ConfigError: no token when writing.
        GitHubError: the events read or a label write failed.
        StoreError: the store cannot be opened, or the decision row cannot be written (the
            labels are on the issue then, and the next run carries on from them).
    """
    github = None if settings.dry_run else make_github(settings)
    history = LabelHistory(
        github or make_github(settings, token_required=False),
        event.repository.full_name,
        event.issue.number,
    )
    store = make_store(settings, read_only=settings.dry_run)
    repo, number = event.repository.full_name, event.issue.number
    try:
        last = store.last_gate(repo, number)
        model = make_chat_model(settings, "validator")
        validator = make_validator(settings, model)
        labels = gate_labels(settings)
        if not force and already_decided(
            event,
            last,
            model=model.name,
            max_body_chars=settings.max_body_chars,
            prompt_version=validator.prompt_version,
            policy_version=validator.policy.policy.version,
            gate=labels,
        ):
            label = last["label"] if last else ""
            return skipped_report(
                f"#{number} is unchanged since the bot's last decision "
                f"({label}); /triage re-runs the gate"
            )
        if not force and asks_who_labelled(event, labels):
            hand_set = history.hand_set(event, labels)
            if hand_set is not None:
                return skipped_report(
                    f"a maintainer set {hand_set!r} by hand; /triage re-runs the gate"
                )
        plan = plan_gate(
            event,
            validator,
            owned=history.added_by_bot,
            last_applied=last["label"] if last else None,
            author_comment=settings.author_comment,
            author_intro=author_intro(settings),
            gate_labels=labels,
            comment_min_precision=settings.comment_min_precision,
        )
        text = render_gate_plan(plan)
        comment: str | None = None
        if github is not None:
            with store.exclusive(f"{repo}#{number}"):  # a second runner waits, then edits
                applied = apply_gate(plan, github, store=store)
                store.record_gate(gate_row(plan))
            comment = applied.comment
            text += f"\napplied:  {applied.requests} GitHub write request(s)"
            if plan.author_comment is not None:
                text += f"; author comment {comment}"
        else:
            text += "\ndry run:  nothing written to GitHub or the store"
    finally:
        store.close()
    warnings = []
    if plan.decision.error_kind:
        warnings.append(
            f"validator-error on #{plan.number} ({plan.decision.error_kind}): "
            f"{' '.join(plan.decision.reason.split())[:300]}"
        )
    return RunReport(
        text,
        render_gate_summary(plan, applied=github is not None, comment=comment),
        {"verdict": plan.decision.outcome, "label": plan.labels.target.name},
        warnings,
    )


def _run_audit_event(event: PullRequestEvent, settings: Settings) -> RunReport:
    pr = event.pull_request
    pull = PullRef(
        repo=event.repository.full_name,
        number=pr.number,
        head_sha=pr.head.sha,
        draft=pr.draft,
        state=pr.state,
        public_repo=not event.repository.private,
    )
    github = make_github(settings, token_required=not settings.dry_run)
    return run_audit(pull, settings, github, skip_if_audited=True)


def run_audit(
    pull: PullRef,
    settings: Settings,
    github: GitHubPort,
    *,
    requested_range: str | None = None,
    skip_if_audited: bool = False,
) -> RunReport:
    """Audit one PR at its head SHA; store accepted rows and upsert the comment unless dry run.

    ``skip_if_audited`` (webhook events): when the bot's comment already audits this head SHA,
    report a skip with no model call and no write; ``/audit`` passes ``False`` to force.

    Raises:
        InvalidRange: ``requested_range`` breaks a rule.
        GitHubError / StoreError: a read or write failed.
    """
    auditor = make_auditor(settings, make_chat_model(settings, "auditor"))
    plan = plan_audit(
        pull,
        github,
        auditor,
        audit_format=settings.audit_format,
        requested_range=requested_range,
        max_segments=settings.max_segments,
        skip_globs=DEFAULT_SKIP_GLOBS + settings.skip_globs,
        skip_if_audited=skip_if_audited,
        review_comments=settings.review_comments,
    )
    if plan.already_audited:
        return skipped_report(
            f"already audited at {pull.head_sha[:12]} (the bot's comment says so); "
            "`/audit` re-runs it"
        )
    text = render_audit_plan(plan)
    if settings.dry_run:
        text += "\ndry run:  nothing stored or posted"
    else:
        store = make_store(settings)
        try:
            with store.exclusive(f"{pull.repo}#{pull.number}"):  # one comment per PR
                applied = apply_audit(plan, github, store)
        finally:
            store.close()
        text += (
            f"\napplied:  {applied.rows_written} row(s) stored; comment {applied.comment}; "
            f"review {applied.review}"
        )
    outputs = {"audits-accepted": str(plan.accepted), "audits-rejected": str(plan.rejected)}
    warnings = [
        f"{o.segment} could not be audited ({o.error_kind}; "
        f"{o.prompt_tokens} prompt / {o.output_tokens} output tokens)"
        for o in plan.outcomes
        if isinstance(o, AuditRejected) and o.error_kind
    ]
    return RunReport(
        text, render_audit_summary(plan, applied=not settings.dry_run), outputs, warnings
    )


@dataclass(frozen=True)
class _CommandServices:
    """The runner's side of :class:`bot.commands.spec.Services`: clients from the settings,
    and the gate and audit pipelines above, for the comment commands."""

    settings: Settings

    def github(self) -> GitHubPort:
        return make_github(self.settings, token_required=not self.settings.dry_run)

    def read_store(self) -> HistoryStore:
        return make_store(self.settings, read_only=True)

    def rerun_gate(self, event: IssuesEvent) -> RunReport:
        repo = event.repository
        settings = _with_file(self.settings, repo.full_name, repo.default_branch)
        return run_gate(event, settings, force=True)

    def audit(self, pull: PullRef, github: GitHubPort, requested_range: str | None) -> RunReport:
        settings = _with_file(self.settings, pull.repo, None)
        return run_audit(pull, settings, github, requested_range=requested_range)


BACKLOG_LIMIT = 50
"""Most issues one backlog run judges unless told otherwise (``--limit``; the scheduled run)."""

OUTAGE_KINDS = frozenset({ModelUnavailable.kind, ModelNotFound.kind})
"""Fault kinds that say the model is still out: a ``--retry-errors`` run stops at the first."""


def run_backlog(
    repo: str,
    settings: Settings,
    github: GitHubPort,
    *,
    limit: int = BACKLOG_LIMIT,
    retry_errors: bool = False,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> RunReport:
    """Run the gate over a selection of open issues, at most ``limit`` of them.

    The selection (:func:`bot.gate.backlog.select_backlog`): issues that carry no gate label and
    have no decision in the store; with ``retry_errors``, those whose last decision was
    ``validator-error`` (a hand-set label is left alone), oldest decision first. Both are
    resumable: each issue's labels are written, then its decision row, so after a crash or an
    interruption the next run carries on where this one stopped. A ``retry_errors`` run stops
    at the first fault that says the model is still out (:data:`OUTAGE_KINDS`): the rest would
    only fail the same way, and the next scheduled run tries again. ``on_progress(done,
    total)`` is called after each issue. No issue to judge: no model is built, nothing written.

    Raises:
        GitHubError: the issue list, an issue's events or a label write failed.
        StoreError: the store cannot be opened, read or written.
    """
    settings = _with_file(settings, repo, None, github)
    labels = gate_labels(settings)
    store = make_store(settings, read_only=settings.dry_run)
    stopped = ""
    try:
        selection = select_backlog(
            repo,
            github.open_issues(repo),
            store,
            github,
            limit=limit,
            retry_errors=retry_errors,
            gate=labels,
        )
        todo = selection.todo
        lines = [
            f"#{number}: skipped, a maintainer set {label!r} by hand"
            for number, label in selection.hand_set
        ]
        counts = {label.name: 0 for label in labels.all}
        validator = (
            make_validator(settings, make_chat_model(settings, "validator")) if todo else None
        )
        for done, item in enumerate(todo, start=1):
            assert validator is not None  # built above when there is work
            event = IssuesEvent.model_validate(
                {"action": "opened", "issue": item.issue, "repository": {"full_name": repo}}
            )
            history = LabelHistory(github, repo, item.issue["number"], item.events)
            plan = plan_gate(
                event,
                validator,
                owned=history.added_by_bot,
                last_applied=item.last_label,
                author_comment=settings.author_comment,
                author_intro=author_intro(settings),
                gate_labels=labels,
                comment_min_precision=settings.comment_min_precision,
            )
            if not settings.dry_run:
                with store.exclusive(f"{repo}#{plan.number}"):
                    apply_gate(plan, github, store=store)
                    store.record_gate(gate_row(plan))
            counts[plan.labels.target.name] += 1
            kind = f", {plan.decision.error_kind}" if plan.decision.error_kind else ""
            lines.append(
                f"#{plan.number}: {plan.labels.target.name} ({plan.decision.model_ms:.0f} ms{kind})"
            )
            on_progress(done, len(todo))
            if retry_errors and plan.decision.error_kind in OUTAGE_KINDS and done < len(todo):
                stopped = (
                    f"stopped: the model is still out ({plan.decision.error_kind}); "
                    f"{len(todo) - done} issue(s) left for the next run"
                )
                break
    finally:
        store.close()
    summary = ", ".join(f"{name}: {count}" for name, count in counts.items())
    state = " (dry run: nothing written)" if settings.dry_run else ""
    what = "backlog --retry-errors" if retry_errors else "backlog"
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
