"""The PR comment: one per PR, found again by its hidden marker and edited in place.

Rule source: design.md, "PR audit" → Accepted, and the PR-audit issue's "Post" item. The comment
holds a summary table (file, lines, verdict, confidence, retried), each accepted audit's seven
sections in a collapsible block, and a coverage line naming rejected and skipped segments. It
never holds rejected text. When nothing was accepted, the comment is the coverage line alone.
Model text and file paths are neutralised (:mod:`bot.neutralise`); the whole comment stays under
GitHub's 65,536-character limit by dropping detail blocks from the end, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.audit.auditor import AuditRejected, AuditResult
from bot.audit.selection import Selection
from bot.neutralise import code_span, neutralise, neutralise_block

__all__ = [
    "COMMENT_LIMIT",
    "MARKER",
    "audited_head",
    "coverage_line",
    "head_marker",
    "render_audit_comment",
]

MARKER = "<!-- triage-bot:audit -->"
"""Hidden marker at the start of the bot's PR comment."""

_HEAD_MARKER = re.compile(r"<!-- triage-bot:head=([0-9a-f]{7,64}) -->")


def head_marker(head_sha: str) -> str:
    """The hidden second line naming the head SHA the comment audits."""
    return f"<!-- triage-bot:head={head_sha} -->"


def audited_head(body: str) -> str | None:
    """The head SHA a comment of the bot's says it audited, or ``None``.

    Only the second line is read: model text further down is neutralised (``<`` escaped) and
    cannot forge it, and a comment without the line (an older bot version) audits nothing.
    """
    lines = body.split("\n", 2)
    if len(lines) < 2 or lines[0] != MARKER:
        return None
    found = _HEAD_MARKER.fullmatch(lines[1])
    return found.group(1) if found else None


COMMENT_LIMIT = 65_536
"""GitHub's maximum comment body (characters)."""

_HEADING = re.compile(r"^## (\d\. .+)$", re.MULTILINE)

Outcome = AuditResult | AuditRejected


def _why_rejected(rejected: AuditRejected) -> str:
    if rejected.error_kind:
        return f"model error: {rejected.error_kind}"
    rules = sorted({v.rule for v in rejected.violations})
    return "contract not met after one repair (" + ", ".join(rules) + ")"


LIST_MAX_CHARS = 16_000
"""Longest list of rejected or of skipped segments in the coverage line (characters); the rest
are counted, not named, so a PR of thousands of files still fits GitHub's comment limit."""


def _listing(items: Sequence[str]) -> str:
    shown: list[str] = []
    size = 0
    for item in items:
        size += len(item) + 2
        if size > LIST_MAX_CHARS:
            break
        shown.append(item)
    more = len(items) - len(shown)
    note = f" and {more} more (not listed to stay under GitHub's comment limit)" if more else ""
    return ", ".join(shown) + note


def coverage_line(selection: Selection, outcomes: Sequence[Outcome]) -> str:
    """One line: how many segments were audited, accepted, rejected (why) and skipped (why)."""
    accepted = [o for o in outcomes if isinstance(o, AuditResult)]
    rejected = [o for o in outcomes if isinstance(o, AuditRejected)]
    parts = [
        f"**Coverage:** {len(outcomes)} segment(s) audited, {len(accepted)} accepted, "
        f"{len(rejected)} rejected"
    ]
    if rejected:
        parts.append(
            "rejected (could not be audited): "
            + _listing([f"{code_span(str(r.segment))} ({_why_rejected(r)})" for r in rejected])
        )
    if selection.skipped:
        parts.append(
            "skipped: "
            + _listing(
                [
                    f"{code_span(str(s.segment) if s.segment else s.path)} ({neutralise(s.reason)})"
                    for s in selection.skipped
                ]
            )
        )
    return "; ".join(parts) + "."


def _details(result: AuditResult) -> str:
    body = neutralise_block(result.markdown)
    body = _HEADING.sub(r"#### \1", body)
    summary = f"{code_span(str(result.segment))}: {result.verdict}"
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def render_audit_comment(
    *, head_sha: str, selection: Selection, outcomes: Sequence[Outcome], model: str
) -> str:
    """The full comment body, starting with :data:`MARKER` and at most ``COMMENT_LIMIT`` long."""
    accepted = [o for o in outcomes if isinstance(o, AuditResult)]
    title = f"### triage-bot audit of `{head_sha[:12]}` ({neutralise(model, max_chars=80)})"
    top = f"{MARKER}\n{head_marker(head_sha)}\n{title}"
    coverage = coverage_line(selection, outcomes)
    if not accepted:
        return f"{top}\n\n{coverage}\n"
    table = ["| file | lines | verdict | confidence | retried |", "|---|---|---|---|---|"]
    for r in accepted:
        table.append(
            f"| {code_span(r.segment.path)} | {r.segment.start}-{r.segment.end} | "
            f"{r.verdict} | {r.confidence} | {'yes' if r.retried else 'no'} |"
        )
    head = f"{top}\n\n" + "\n".join(table) + "\n\n"
    details = [_details(r) for r in accepted]
    omitted = 0
    while True:
        note = (
            f"\n\n_{omitted} audit(s) not shown to stay under GitHub's comment limit; "
            "`triage-bot history` lists them._"
            if omitted
            else ""
        )
        body = head + "\n\n".join(details) + "\n\n" + coverage + note + "\n"
        if len(body) <= COMMENT_LIMIT or not details:
            return body[:COMMENT_LIMIT]
        details.pop()
        omitted += 1
