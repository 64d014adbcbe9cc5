"""What the pipelines and commands say to people, as strings: the CLI decides where they go.

Every untrusted value passes its sink (:mod:`bot.neutralise`). A count a backend did not
report (Ollama's evaluated prompt tokens) shows "not reported", never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.chat import CallUsage
from bot.neutralise import code_span, log_value, neutralise

__all__ = [
    "MARKER_PREFIX",
    "PUBLIC_WARNING",
    "SKIPPED_OUTPUTS",
    "CallRow",
    "RunReport",
    "calls_plan_lines",
    "calls_summary",
    "fit",
    "quoted_lines",
    "skipped_report",
]

MARKER_PREFIX = "<!-- triage-bot"
"""How every hidden marker of the bot's begins; the comment commands ignore such comments."""

PUBLIC_WARNING = (
    "\n> [!WARNING]\n> This repository is public. GitHub advises self-hosted runners "
    "for private repositories only: a public repository's workflows can run untrusted code."
)


@dataclass
class RunReport:
    """What a run says: log text, markdown summary, step outputs, one-line warnings."""

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
"""Outputs of a skipped event: all defined, so later steps can test them."""


def skipped_report(reason: str) -> RunReport:
    """The report of a run that did nothing on purpose; ``reason`` may be untrusted."""
    return RunReport(
        f"triage-bot: skipped: {log_value(reason)}",
        f"triage-bot skipped: {neutralise(reason)}\n",
        dict(SKIPPED_OUTPUTS),
    )


def quoted_lines(text: str) -> list[str]:
    """Posted markdown as ``"  | "`` log lines, safe from workflow commands."""
    return [f"  | {log_value(line)}" for line in text.rstrip().split("\n")]


NOT_REPORTED = "not reported"


_NO_CALLS = "none (no model call ran, or a failed one reported no cost)"

CallRow = tuple[str, CallUsage]
"""A call and where it was made (``PATH:START-END``; ``""`` for the gate), not yet neutralised."""


def _split(calls: Sequence[CallUsage]) -> tuple[str, str, str]:
    # Sums over the calls that reported, and a note when only some did.
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
    evaluated, reused, note = _split(calls)
    prompt = sum(c.prompt_tokens for c in calls)
    if evaluated == NOT_REPORTED:
        split = f"{prompt} prompt tokens, evaluated / reused {NOT_REPORTED}"
    else:
        split = f"{evaluated} evaluated / {reused} reused of {prompt} prompt tokens{note}"
    output = sum(c.output_tokens for c in calls)
    return f"{_seconds(calls)} s; {split}; {output} output tokens"


def calls_plan_lines(rows: Sequence[CallRow]) -> list[str]:
    """The plan's lines for a run's model calls: one per call, then a total."""
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
    """The step summary's markdown table of model calls: one row per call, then a total."""
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


def fit(items: Sequence[str], max_chars: int, *, separator: int) -> tuple[list[str], int]:
    """The first ``items`` that fit in ``max_chars``, each plus ``separator``; and how many not."""
    shown: list[str] = []
    size = 0
    for item in items:
        size += len(item) + separator
        if size > max_chars:
            break
        shown.append(item)
    return shown, len(items) - len(shown)
