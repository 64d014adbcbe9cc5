"""Text for people: the dry-run plan, the step summary, and neutralised model text.

Only strings are built here; the CLI and the Action entry decide where they go.
"""

from __future__ import annotations

import re

from bot.flows import GatePlan

__all__ = ["neutralise", "render_gate_plan", "render_gate_summary"]

_MENTION = re.compile(r"@(?=[A-Za-z0-9_-])")


def neutralise(text: str, *, max_chars: int = 1000) -> str:
    """Make model text safe to show in GitHub markdown.

    No @mentions (a zero-width space follows each ``@``), no images (``![`` → ``!\\[``), no
    raw HTML (``&``, ``<``, ``>`` escaped), one line, at most ``max_chars`` characters (``…``
    marks a cut).
    """
    text = " ".join(text.split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MENTION.sub("@\u200b", text).replace("![", "!\\[")
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def _label_changes(plan: GatePlan) -> str:
    parts = [f"+{name}" for name in plan.labels.add] + [f"-{name}" for name in plan.labels.remove]
    return "  ".join(parts) if parts else f"no change ({plan.labels.target.name} already set)"


def render_gate_plan(plan: GatePlan) -> str:
    """The plan as plain text lines (dry-run output and the run log)."""
    d = plan.decision
    lines = [
        f"triage-bot: {plan.event} {plan.repo}#{plan.number}",
        f"verdict:  {d.verdict or 'ERROR (' + (d.error_kind or 'unknown') + ')'}",
        f"reason:   {' '.join(d.reason.split())}",
        f"label:    {plan.labels.target.name}",
        f"changes:  {_label_changes(plan)}",
        f"model:    {d.model} ({d.prompt_version})",
        f"tokens:   {d.prompt_tokens} prompt / {d.output_tokens} output",
        f"time:     {d.model_ms:.0f} ms model / {d.wall_ms:.0f} ms total",
    ]
    if d.issue.truncated:
        lines.append(
            f"body:     cut to {d.issue.kept_chars} of {d.issue.original_chars} characters"
        )
    return "\n".join(lines)


def render_gate_summary(plan: GatePlan, *, applied: bool) -> str:
    """The step summary (GitHub-flavoured markdown) for one gate run."""
    d = plan.decision
    verdict = d.verdict or f"validator error ({d.error_kind})"
    changes = _label_changes(plan) if applied else f"dry run, not applied: {_label_changes(plan)}"
    out = [
        f"### triage-bot: issue gate for #{plan.number}",
        "",
        "| verdict | label | changes | model | tokens (prompt/output) | model ms |",
        "|---|---|---|---|---|---|",
        f"| {verdict} | `{plan.labels.target.name}` | {changes} | {d.model} | "
        f"{d.prompt_tokens}/{d.output_tokens} | {d.model_ms:.0f} |",
        "",
        f"**Reason:** {neutralise(d.reason)}",
    ]
    if d.issue.truncated:
        out.append(
            f"\nThe body was cut to {d.issue.kept_chars} of {d.issue.original_chars} "
            "characters before judging."
        )
    if plan.public_repo:
        out.append(
            "\n> [!WARNING]\n> This repository is public. GitHub advises self-hosted runners "
            "for private repositories only: a public repository's workflows can run untrusted code."
        )
    return "\n".join(out) + "\n"
