"""The PR audit's one entry, :func:`run`, for an event, ``/audit`` and ``triage-bot audit`` alike.

The plan first, then, unless the run is dry, the writes under the PR's lock, so two runners
never post two comments.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bot.audit.auditor import Auditor, AuditRejected, AuditResult, Outcome, make_auditor
from bot.audit.earned import LineRule, line_rule
from bot.audit.plan import AuditPlan, apply_audit, plan_audit, superseded
from bot.audit.pr_comment import MARKER, coverage_line
from bot.audit.selection import DEFAULT_SKIP_GLOBS
from bot.clients.github_port import GitHubPort, PullRef
from bot.context import JobContext
from bot.errors import StoreError
from bot.history.protocol import HistoryStore
from bot.neutralise import code_span, log_value, neutralise
from bot.run_report import (
    PUBLIC_WARNING,
    CallRow,
    RunReport,
    calls_plan_lines,
    calls_summary,
    quoted_lines,
    skipped_report,
)

__all__ = ["render_audit_plan", "render_audit_summary", "run"]


def run(
    ctx: JobContext,
    pull: PullRef,
    *,
    requested_range: str | None = None,
    skip_if_audited: bool = False,
) -> RunReport:
    """Audit one PR at its head SHA; store accepted rows and upsert the comment unless dry.

    ``skip_if_audited`` (webhook events): a comment already auditing this head is a skip, with
    no model call and no write.

    Raises:
        ConfigError: no token when writing.
        InvalidRange: ``requested_range`` breaks a rule.
        GitHubError, StoreError: a read or write failed.
    """
    settings = ctx.settings
    github = ctx.github()
    store = None if settings.dry_run else ctx.store()
    seen = store.last_audit(pull.repo, pull.number) if store is not None else None
    auditor = make_auditor(settings, ctx.model("auditor"))
    lines = _line_rule(ctx, pull.repo, auditor) if settings.review_comments else None
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
        concurrency=ctx.model_concurrency(),
        lines=lines,
    )
    if plan.already_audited:
        return skipped_report(
            f"already audited at {pull.head_sha[:12]} (the bot's comment says so); "
            "`/audit` re-runs it"
        )
    text = render_audit_plan(plan)
    notes = ""
    if store is None:
        text += "\ndry run:  nothing stored or posted"
    else:
        asked = time.monotonic()
        with store.exclusive(f"{pull.repo}#{pull.number}"):
            waited = time.monotonic() - asked
            why, plan = _checked(plan, store, github, seen, webhook=skip_if_audited)
            applied = None if why else apply_audit(plan, github, store)
        if waited >= LOCK_WAIT_SHOWN_S:
            text += f"\nlock:     waited {waited:.1f} s for another run on this pull request"
            notes += f"\nWaited {waited:.1f} s for another run on this pull request.\n"
        if applied is None:
            text += f"\nsuperseded: {log_value(why or '')}; nothing stored or posted"
            notes += f"\n**Superseded:** {neutralise(why or '')}; nothing stored or posted.\n"
        else:
            text += (
                f"\napplied:  {applied.rows_written} row(s) stored, "
                f"{applied.defects_recorded} defect(s) recorded; comment {applied.comment}; "
                f"review {applied.review}"
            )
    outputs = {"audits-accepted": str(plan.accepted), "audits-rejected": str(plan.rejected)}
    warnings = [
        f"{o.segment} could not be audited ({o.error_kind}; "
        f"{o.prompt_tokens} prompt / {o.output_tokens} output tokens)"
        for o in plan.outcomes
        if isinstance(o, AuditRejected) and o.error_kind
    ]
    summary = render_audit_summary(plan, applied=not settings.dry_run) + notes
    return RunReport(text, summary, outputs, warnings)


LOCK_WAIT_SHOWN_S = 0.1
"""A wait for a pull request's lock this long or longer is shown (s)."""


def _line_rule(ctx: JobContext, repo: str, auditor: Auditor) -> LineRule:
    """The line comments' stop rule from the job's store (read-only on a dry run)."""
    settings = ctx.settings
    try:
        store = ctx.store()
    except StoreError as exc:
        why = f"the live record could not be read ({exc}); the summary comment lists every defect"
        return LineRule(why, "the live record, unreadable")
    return line_rule(
        store,
        repo,
        model=auditor.model_name,
        prompt_version=auditor.prompt_version,
        min_acted=settings.line_comments_min_acted,
        aliases=settings.repo_file.gate.model_aliases if settings.repo_file else None,
    )


def _checked(
    plan: AuditPlan,
    store: HistoryStore,
    github: GitHubPort,
    seen: Mapping[str, Any] | None,
    *,
    webhook: bool,
) -> tuple[str | None, AuditPlan]:
    """Under the PR's lock: why the plan is dropped, or the plan to write.

    GitHub is read again only when another run wrote a row since ``seen``.
    """
    pull = plan.pull
    now = store.last_audit(pull.repo, pull.number)
    if (now or {}).get("id") == (seen or {}).get("id"):
        return None, plan
    if webhook:
        why = superseded(pull, now, lambda: github.pull(pull.repo, pull.number).head_sha)
        if why is not None:
            return why, plan
    existing = github.find_bot_comment(pull.repo, pull.number, MARKER)
    return None, replace(plan, existing=existing)


def _audit_calls(plan: AuditPlan) -> list[CallRow]:
    return [(str(o.segment), c) for o in plan.outcomes for c in o.calls]


def _outcome_line(outcome: Outcome) -> str:
    where = log_value(str(outcome.segment), max_chars=300)
    if isinstance(outcome, AuditResult):
        return (
            f"  segment {where:40s} ACCEPTED  {outcome.verdict} / {outcome.confidence}  "
            f"retried: {'yes' if outcome.retried else 'no'}  "
            f"({outcome.prompt_tokens}+{outcome.output_tokens} tokens, "
            f"{outcome.duration_ms:.0f} ms)"
        )
    why = outcome.error_kind or ", ".join(sorted({v.rule for v in outcome.violations}))
    retried = "yes" if outcome.retried else "no"
    return f"  segment {where:40s} REJECTED  {log_value(why)}  (retried: {retried})"


def render_audit_plan(plan: AuditPlan) -> str:
    """The audit plan as plain text: selection, per-segment outcome, and the comment."""
    pull = plan.pull
    lines = [
        f"triage-bot: audit {log_value(pull.repo)}#{pull.number} at "
        f"{log_value(pull.head_sha[:12])} ({plan.audit_format} format)",
        f"selection: {len(plan.selection.segments)} segment(s), "
        f"{len(plan.selection.skipped)} skipped",
    ]
    lines += [_outcome_line(o) for o in plan.outcomes]
    lines += [
        f"  skipped {log_value(str(s.segment or s.path), max_chars=300)}: {log_value(s.reason)}"
        for s in plan.selection.skipped
    ]
    lines.append(f"accepted: {plan.accepted}  rejected: {plan.rejected}")
    lines += calls_plan_lines(_audit_calls(plan))
    lines += [
        f"review comment (unless posted before): {log_value(c.path, max_chars=300)}:{c.line}"
        for c in plan.review
    ]
    if plan.lines is not None:
        state = f"stopped: {plan.lines.stopped}" if plan.lines.stopped else "posted"
        lines.append(f"line comments: {log_value(state)} ({log_value(plan.lines.basis)})")
    lines.append("comment (as it would be posted):")
    lines += quoted_lines(plan.comment)
    return "\n".join(lines)


def render_audit_summary(plan: AuditPlan, *, applied: bool) -> str:
    """The step summary of an audit run: the coverage line, never rejected text."""
    pull = plan.pull
    state = "" if applied else " (dry run: nothing stored or posted)"
    out = [
        f"### triage-bot: audit of #{pull.number} at {code_span(pull.head_sha[:12])}{state}",
        "",
        coverage_line(plan.selection, plan.outcomes),
    ]
    faults = [o for o in plan.outcomes if isinstance(o, AuditRejected) and o.error_kind]
    if faults:  # what each failed call cost: a prompt over num_ctx shows its token count here
        costs = [
            f"{code_span(str(o.segment))} {code_span(o.error_kind or '')}, "
            f"{o.prompt_tokens} prompt / {o.output_tokens} output tokens"
            for o in faults
        ]
        out += ["", f"**Model errors:** {'; '.join(costs)}."]
    if plan.lines is not None:
        state = f"stopped: {plan.lines.stopped}" if plan.lines.stopped else "posted"
        out += ["", f"**Line comments:** {neutralise(state)} ({neutralise(plan.lines.basis)})."]
    out += ["", calls_summary(_audit_calls(plan))]
    if pull.public_repo:
        out.append(PUBLIC_WARNING)
    return "\n".join(out) + "\n"
