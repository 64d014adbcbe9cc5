"""The PR comment: one per PR, found again by its hidden marker and edited in place.

It never holds rejected text; every untrusted string goes through the sink for its place
(:mod:`bot.neutralise`). Detail blocks are dropped from the end, with a note, to stay under
GitHub's 65,536 characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.audit.auditor import AuditRejected, AuditResult, Outcome
from bot.audit.contract import SECTIONS
from bot.audit.selection import Segment, Selection
from bot.neutralise import code_span, html_text, neutralise, neutralise_block
from bot.run_report import MARKER_PREFIX, fit

__all__ = [
    "COMMENT_LIMIT",
    "MARKER",
    "audited_head",
    "coverage_line",
    "finding",
    "footer",
    "head_marker",
    "render_audit_comment",
]

MARKER = f"{MARKER_PREFIX}:audit -->"
"""Hidden marker at the start of the bot's PR comment."""

_HEAD_MARKER = re.compile(re.escape(MARKER_PREFIX) + r":head=([0-9a-f]{7,64}) -->")


def head_marker(head_sha: str) -> str:
    """The hidden second line naming the head SHA the comment audits."""
    return f"{MARKER_PREFIX}:head={head_sha} -->"


def audited_head(body: str) -> str | None:
    """The head SHA a bot comment says it audited, or ``None``.

    Only the second line is read: model text below cannot forge it (``<`` is escaped).
    """
    lines = body.split("\n", 2)
    if len(lines) < 2 or lines[0] != MARKER:
        return None
    found = _HEAD_MARKER.fullmatch(lines[1])
    return found.group(1) if found else None


COMMENT_LIMIT = 65_536
"""GitHub's maximum comment body (characters)."""

SECTION_MAX_CHARS = 2000
"""Longest section body in the comment (characters of markdown, escapes included): one audit's
block stays under ~15,000 characters, so one oversized audit cannot push the others out."""

PATH_MAX_CHARS = 120
"""Longest path shown in the table or a summary line (characters); longer ones keep their
end (the file name) after a ``…``."""


def _why_rejected(rejected: AuditRejected) -> str:
    if rejected.error_kind:
        return f"model error: {rejected.error_kind}"
    rules = sorted({v.rule for v in rejected.violations})
    return "contract not met after one repair (" + ", ".join(rules) + ")"


LIST_MAX_CHARS = 16_000
"""Longest list of rejected or of skipped segments in the coverage line (characters); the rest
are counted, not named, so a PR of thousands of files still fits GitHub's comment limit."""


def _listing(items: Sequence[str]) -> str:
    shown, more = fit(items, LIST_MAX_CHARS, separator=2)  # ", " between items
    note = f" and {more} more (not listed to stay under GitHub's comment limit)" if more else ""
    return ", ".join(shown) + note


def coverage_line(selection: Selection, outcomes: Sequence[Outcome]) -> str:
    """One line: segments audited, accepted, rejected and skipped, with reasons."""
    accepted = [o for o in outcomes if isinstance(o, AuditResult)]
    rejected = [o for o in outcomes if isinstance(o, AuditRejected)]
    parts = [
        f"**Coverage:** {len(outcomes)} segment(s) audited, {len(accepted)} accepted, "
        f"{len(rejected)} rejected"
    ]
    if rejected:
        parts.append(
            "rejected (could not be audited): "
            + _listing([f"{code_span(_where(r.segment))} ({_why_rejected(r)})" for r in rejected])
        )
    if selection.skipped:
        parts.append(
            "skipped: "
            + _listing(
                [
                    f"{code_span(_where(s.segment) if s.segment else shown_path(s.path))} "
                    f"({neutralise(s.reason, max_chars=300)})"
                    for s in selection.skipped
                ]
            )
        )
    return "; ".join(parts) + "."


def shown_path(path: str) -> str:
    """``path`` as a table shows it: its last :data:`PATH_MAX_CHARS` characters."""
    return path if len(path) <= PATH_MAX_CHARS else "…" + path[-(PATH_MAX_CHARS - 1) :]


def _where(segment: Segment) -> str:
    return f"{shown_path(segment.path)}:{segment.start}-{segment.end}"


def finding(result: AuditResult) -> str:
    """What the verdict means for this model, as plain text for the caller's sink.

    ``no defect found in lines 7–18 by MODEL``, or how many defects it claims and dropped.
    """
    count = len(result.defects)
    found = f"{count} defect(s) claimed" if count else "no defect found"
    where = f"in lines {result.segment.start}–{result.segment.end} by {result.model}"
    dropped = f"; {result.dropped} unverifiable claim(s) dropped" if result.dropped else ""
    return f"{found} {where}{dropped}"


MEANING = (
    "_A verdict is one model's reading of the audited lines: GO means that model found no "
    "defect there, not that the change is safe to merge. Every defect listed quotes code the bot "
    "found on its line; that the code is wrong is the model's claim._"
)
"""The line under the table saying what a verdict is (and is not)."""


def footer(outcomes: Sequence[Outcome], model: str) -> str:
    """The model and prompt versions whose judgement the comment holds."""
    versions = list(dict.fromkeys(o.prompt_version for o in outcomes)) or ["none"]
    prompts = ", ".join(code_span(v, max_chars=80) for v in versions)
    return f"_Model: {code_span(model, max_chars=80)} · prompt: {prompts}_"


def _details(result: AuditResult) -> str:
    """One collapsible block: the bot's summary and headings around inert section bodies."""
    parts = [
        f"#### {s.number}. {s.title}\n\n"
        f"{neutralise_block(result.sections.get(s.key, ''), max_chars=SECTION_MAX_CHARS)}"
        for s in SECTIONS
    ]
    summary = f"{html_text(_where(result.segment))} ({result.verdict})"
    body = "\n\n".join(parts)
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def render_audit_comment(
    *,
    head_sha: str,
    selection: Selection,
    outcomes: Sequence[Outcome],
    model: str,
    lines_stopped: str | None = None,
) -> str:
    """The full comment body, starting with :data:`MARKER`, at most ``COMMENT_LIMIT`` long.

    ``lines_stopped`` is why no line review comments were posted (plain text), said under the
    coverage line.
    """
    accepted = [o for o in outcomes if isinstance(o, AuditResult)]
    title = (
        f"### triage-bot audit of {code_span(head_sha[:12])} ({neutralise(model, max_chars=80)})"
    )
    top = f"{MARKER}\n{head_marker(head_sha)}\n{title}"
    coverage = coverage_line(selection, outcomes)
    foot = footer(outcomes, model)
    if not accepted:
        return f"{top}\n\n{coverage}\n\n{foot}\n"
    table = [
        "| file | lines | verdict | meaning | confidence | retried |",
        "|---|---|---|---|---|---|",
    ]
    for r in accepted:
        table.append(
            f"| {code_span(shown_path(r.segment.path), table=True)} | "
            f"{r.segment.start}-{r.segment.end} | "
            f"{r.verdict} | {neutralise(finding(r), max_chars=300, table=True)} | "
            f"{r.confidence} | {'yes' if r.retried else 'no'} |"
        )
    head = f"{top}\n\n" + "\n".join(table) + f"\n\n{MEANING}\n\n"
    stopped = (
        f"\n\n**Line comments stopped:** {neutralise(lines_stopped, max_chars=500)}."
        if lines_stopped
        else ""
    )
    details = [_details(r) for r in accepted]
    omitted = 0
    while True:
        note = (
            f"\n\n_{omitted} audit(s) not shown to stay under GitHub's comment limit; "
            "`triage-bot history` lists them._"
            if omitted
            else ""
        )
        body = head + "\n\n".join(details) + "\n\n" + coverage + stopped + note
        body += f"\n\n{foot}\n"
        if len(body) <= COMMENT_LIMIT or not details:
            return body[:COMMENT_LIMIT]
        details.pop()
        omitted += 1
