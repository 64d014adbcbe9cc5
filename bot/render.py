"""Text for people: the dry-run plan (stdout), the step summary (markdown), and the
:class:`RunReport` that carries both with the step outputs.

Only strings are built here; the CLI and the Action entry decide where they go. Every
untrusted value passes the sink for its place (:mod:`bot.neutralise`): :func:`log_value` in
the plan, whose every line starts with the bot's own label (the runner reads workflow commands
at a line's start), and the markdown sinks in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.audit.auditor import AuditRejected, AuditResult, Outcome
from bot.audit.report import coverage_line
from bot.flows import AuditPlan, GatePlan
from bot.neutralise import code_span, log_value, neutralise

__all__ = [
    "PUBLIC_WARNING",
    "SKIPPED_OUTPUTS",
    "RunReport",
    "quoted_lines",
    "render_audit_plan",
    "render_audit_summary",
    "render_gate_plan",
    "render_gate_summary",
    "skipped_report",
]

PUBLIC_WARNING = (
    "\n> [!WARNING]\n> This repository is public. GitHub advises self-hosted runners "
    "for private repositories only: a public repository's workflows can run untrusted code."
)


@dataclass
class RunReport:
    """What a run has to say: ``text`` (log lines), ``summary`` (markdown), ``outputs`` (step
    outputs, name → value), ``warnings`` (one line each: annotations in Actions, else stderr)."""

    text: str
    summary: str
    outputs: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


SKIPPED_OUTPUTS = {
    "verdict": "",
    "label": "",
    "audits-accepted": "0",
    "audits-rejected": "0",
    "skipped": "true",
}
"""Outputs of a skipped event: every output is defined, so later steps can test them."""


def skipped_report(reason: str) -> RunReport:
    """The report of a run that did nothing on purpose; ``reason`` is one line for the log."""
    return RunReport(
        f"triage-bot: skipped: {reason}", f"triage-bot skipped: {reason}\n", dict(SKIPPED_OUTPUTS)
    )


def quoted_lines(text: str) -> list[str]:
    """``text`` (markdown the bot posts, e.g. a comment or a command reply) as log lines, each
    ``"  | "`` and the line through :func:`log_value`: a line break or ``##[`` in a path or
    model text cannot start or hold a workflow command (issue 13, finding 4)."""
    return [f"  | {log_value(line)}" for line in text.rstrip().split("\n")]


def _label_changes(plan: GatePlan) -> str:
    """Plain text; each sink escapes it for its place."""
    parts = [f"+{name}" for name in plan.labels.add] + [f"-{name}" for name in plan.labels.remove]
    return "  ".join(parts) if parts else f"no change ({plan.labels.target.name} already set)"


def render_gate_plan(plan: GatePlan) -> str:
    """The plan as plain text lines (dry-run output and the run log)."""
    d = plan.decision
    lines = [
        f"triage-bot: {plan.event} {log_value(plan.repo)}#{plan.number}",
        f"verdict:  {d.verdict or 'ERROR (' + (d.error_kind or 'unknown') + ')'}",
        f"reason:   {log_value(' '.join(d.reason.split()))}",
        f"label:    {log_value(plan.labels.target.name)}",
        f"changes:  {log_value(_label_changes(plan))}",
        f"model:    {log_value(d.model)} ({d.prompt_version})",
        f"tokens:   {d.prompt_tokens} prompt / {d.output_tokens} output",
        f"time:     {d.model_ms:.0f} ms model / {d.wall_ms:.0f} ms total",
    ]
    if d.issue.truncated:
        lines.append(
            f"body:     cut to {d.issue.kept_chars} of {d.issue.original_chars} characters"
        )
    wanted = plan.author_comment
    if wanted is not None:
        how = "posted or edited" if wanted.create else "edited, if the issue has one"
        lines.append(f"comment:  the author comment ({how}):")
        lines += quoted_lines(wanted.body)
    return "\n".join(lines)


def render_gate_summary(plan: GatePlan, *, applied: bool, comment: str | None = None) -> str:
    """The step summary (GitHub-flavoured markdown) for one gate run; ``comment`` is what
    :func:`bot.flows.apply_gate` did with the author comment (``AppliedGate.comment``)."""
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
    if plan.author_comment is not None:
        fate = comment if applied and comment else "not posted (dry run)"  # the bot's words
        out.append(f"\n**Author comment:** {fate}")
    if d.issue.truncated:
        out.append(
            f"\nThe body was cut to {d.issue.kept_chars} of {d.issue.original_chars} "
            "characters before judging."
        )
    if plan.public_repo:
        out.append(PUBLIC_WARNING)
    return "\n".join(out) + "\n"


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
    lines += [
        f"review comment (unless posted before): {log_value(c.path, max_chars=300)}:{c.line}"
        for c in plan.review
    ]
    lines.append("comment (as it would be posted):")
    lines += quoted_lines(plan.comment)
    return "\n".join(lines)


def render_audit_summary(plan: AuditPlan, *, applied: bool) -> str:
    """The step summary for one audit run (the coverage line, never rejected text)."""
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
    if pull.public_repo:
        out.append(PUBLIC_WARNING)
    return "\n".join(out) + "\n"
