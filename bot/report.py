"""What both pipelines and the comment commands say to people, defined once: the
:class:`RunReport` (log text, step summary, step outputs, warnings), the report of a skipped
event, a posted text quoted in the log, what each model call cost, the public-repository
warning, the prefix of every hidden marker of the bot's, and how a long list is cut to a size.

Only strings are built here; the CLI and the Action entry decide where they go. Every
untrusted value passes the sink for its place (:mod:`bot.neutralise`): :func:`log_value` in
the log, whose every line starts with the bot's own label (the runner reads workflow commands
at a line's start), and the markdown sinks in the summary.

A plan and a summary end with what each model call cost, so a maintainer sees where the time
went: the model's time, the prompt tokens evaluated and those reused from the prompt cache, the
output tokens, and a total (:func:`calls_plan_lines`, :func:`calls_summary`). A backend that
does not report what it evaluated (Ollama) shows "not reported", never 0.
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
"""How every hidden marker of the bot's begins (the audit comment's, the author comment's, a
review comment's): a comment starting with it is the bot's own, and the comment commands
ignore it."""

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
    model text cannot start or hold a workflow command."""
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


def fit(items: Sequence[str], max_chars: int, *, separator: int) -> tuple[list[str], int]:
    """The first ``items`` whose lengths, each with ``separator`` characters for what joins
    it to the next, add up to at most ``max_chars``, and how many are left out: a list a
    comment shows stays under GitHub's comment limit, and the rest is counted, not named."""
    shown: list[str] = []
    size = 0
    for item in items:
        size += len(item) + separator
        if size > max_chars:
            break
        shown.append(item)
    return shown, len(items) - len(shown)
