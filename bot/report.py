"""Text for people: the dry-run plan (stdout), the step summary (markdown), and the
:class:`RunReport` that carries both with the step outputs.

Only strings are built here; the CLI and the Action entry decide where they go. Every
untrusted value passes the sink for its place (:mod:`bot.neutralise`): :func:`log_value` in
the plan, whose every line starts with the bot's own label (the runner reads workflow commands
at a line's start), and the markdown sinks in the summary.

Both pipelines end their plan and summary with what each model call cost (issue 19, "say where
the time went"): the model's time, the prompt tokens evaluated and those reused from the prompt
cache, the output tokens, and a total (:func:`calls_plan_lines`, :func:`calls_summary`). A
backend that does not report what it evaluated (Ollama) shows "not reported", never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.audit.auditor import AuditRejected, AuditResult, Outcome
from bot.audit.report import coverage_line
from bot.audit.run import AuditPlan
from bot.chat import CallUsage
from bot.gate.plan import GatePlan
from bot.neutralise import code_span, log_value, neutralise

__all__ = [
    "PUBLIC_WARNING",
    "SKIPPED_OUTPUTS",
    "RunReport",
    "calls_plan_lines",
    "calls_summary",
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
    """The report of a run that did nothing on purpose. ``reason`` may hold untrusted text (a
    label name from the issue or from the repository's file, a title pattern, a stored
    label): the log line passes it through :func:`log_value`, the step summary through
    :func:`neutralise`."""
    return RunReport(
        f"triage-bot: skipped: {log_value(reason)}",
        f"triage-bot skipped: {neutralise(reason)}\n",
        dict(SKIPPED_OUTPUTS),
    )


def quoted_lines(text: str) -> list[str]:
    """``text`` (markdown the bot posts, e.g. a comment or a command reply) as log lines, each
    ``"  | "`` and the line through :func:`log_value`: a line break or ``##[`` in a path or
    model text cannot start or hold a workflow command (issue 13, finding 4)."""
    return [f"  | {log_value(line)}" for line in text.rstrip().split("\n")]


NOT_REPORTED = "not reported"
"""What a count the backend did not give shows (Ollama does not split evaluated from reused)."""

_NO_CALLS = "none (no model call ran, or a failed one reported no cost)"

CallRow = tuple[str, CallUsage]
"""A call and where it was made (a segment's ``PATH:START-END``; ``""`` for the gate),
still raw: each renderer passes it through its sink."""


def _split(calls: Sequence[CallUsage]) -> tuple[str, str, str]:
    """Evaluated and reused prompt tokens over ``calls`` as text, and a note: the sums when
    every call reported them (note ``""``), :data:`NOT_REPORTED` when none did, else the sums
    over those that did and a note saying how many that is."""
    known = [c for c in calls if c.prompt_eval_tokens is not None]
    if not known:
        return NOT_REPORTED, NOT_REPORTED, ""
    evaluated = sum(c.prompt_eval_tokens or 0 for c in known)
    reused = sum(c.reused_tokens or 0 for c in known)
    note = "" if len(known) == len(calls) else f" ({len(known)} of {len(calls)} calls reported)"
    return str(evaluated), str(reused), note


def _seconds(calls: Sequence[CallUsage]) -> str:
    return f"{sum(c.duration_ms for c in calls) / 1000:.2f}"


def _cost(calls: Sequence[CallUsage]) -> str:
    """One plan line's figures for one call or a total: seconds, prompt split, output."""
    evaluated, reused, note = _split(calls)
    prompt = sum(c.prompt_tokens for c in calls)
    if evaluated == NOT_REPORTED:
        split = f"{prompt} prompt tokens, evaluated / reused {NOT_REPORTED}"
    else:
        split = f"{evaluated} evaluated / {reused} reused of {prompt} prompt tokens{note}"
    output = sum(c.output_tokens for c in calls)
    return f"{_seconds(calls)} s; {split}; {output} output tokens"


def calls_plan_lines(rows: Sequence[CallRow]) -> list[str]:
    """The plan's lines for the model calls of a run: a head line, one ``  call`` line per call
    (role, turn, where, model time in s, prompt tokens evaluated / reused, output tokens) and
    a ``  total``; one line saying so when there were none. Untrusted ``where`` passes
    :func:`~bot.neutralise.log_value`."""
    if not rows:
        return [f"calls:    {_NO_CALLS}"]
    lines = [
        f"calls:    {len(rows)} model call(s): model time; prompt tokens evaluated / reused "
        "from the prompt cache; output tokens"
    ]
    for where, c in rows:
        at = f" {log_value(where, max_chars=300)}" if where else ""
        lines.append(f"  call {c.role} {c.turn}{at}: {_cost([c])}")
    lines.append(f"  total: {_cost([c for _, c in rows])}")
    return lines


def calls_summary(rows: Sequence[CallRow]) -> str:
    """The step summary's model-call table (markdown): one row per call (role and turn, the
    segment when any row has one, model s, prompt tokens, evaluated, reused, output tokens),
    then a total row; a sentence when there were none. ``where`` goes through
    :func:`~bot.neutralise.code_span`; the numbers are the bot's."""
    if not rows:
        return f"**Model calls:** {_NO_CALLS}."
    wide = any(where for where, _ in rows)
    cols = ["call", *(["segment"] if wide else []), "model s", "prompt tokens", "evaluated",
            "reused", "output tokens"]  # fmt: skip

    def row(name: str, where: str, calls: Sequence[CallUsage]) -> str:
        evaluated, reused, note = _split(calls)
        prompt, output = sum(c.prompt_tokens for c in calls), sum(c.output_tokens for c in calls)
        cells = [name, *([where] if wide else []), _seconds(calls), str(prompt),
                 evaluated + note, reused + note, str(output)]  # fmt: skip
        return f"| {' | '.join(cells)} |"

    out = [
        "**Model calls** (the model's own time; reused prompt tokens came from the prompt cache)",
        "",
        f"| {' | '.join(cols)} |",
        "|" + "---|" * len(cols),
    ]
    out += [
        row(f"{c.role} {c.turn}", code_span(where, table=True) if where else "", [c])
        for where, c in rows
    ]
    out.append(row(f"**total** ({len(rows)} call(s))", "", [c for _, c in rows]))
    return "\n".join(out)


def _audit_calls(plan: AuditPlan) -> list[CallRow]:
    return [(str(o.segment), c) for o in plan.outcomes for c in o.calls]


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
    out += ["", calls_summary(_audit_calls(plan))]
    if pull.public_repo:
        out.append(PUBLIC_WARNING)
    return "\n".join(out) + "\n"
