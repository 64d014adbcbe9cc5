"""Verified defects as line comments: one ``COMMENT`` review per head SHA (docs/audit.md).

Only a defect on a RIGHT-side diff line gets one; GitHub answers 422 for any other line. What
was posted is read from GitHub, not the store: an ephemeral runner's store is empty.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from bot.audit.auditor import AuditResult, Outcome
from bot.audit.contract import MAX_DEFECTS
from bot.audit.evidence import Claim, normalise
from bot.clients.github_port import PostedReviewComment, ReviewComment
from bot.neutralise import neutralise, neutralise_block
from bot.run_report import MARKER_PREFIX

__all__ = [
    "FINDING_PREFIX",
    "REVIEW_BODY_MAX_CHARS",
    "finding_marker",
    "line_comments",
    "review_summary",
    "to_post",
]

FINDING_PREFIX = f"{MARKER_PREFIX}:finding="
"""How the hidden first line of each of the bot's review comments begins."""
_FINDING = re.compile(re.escape(FINDING_PREFIX) + r"([0-9a-f]{16}) -->")

REVIEW_BODY_MAX_CHARS = 2000
"""Longest defect text in one line comment (characters of markdown, escapes included)."""


def finding_marker(path: str, claim: Claim) -> str:
    """The hidden line naming a finding: a hash of path, category and quote, not line."""
    what = normalise(claim.quote) if claim.quote else normalise(claim.text)
    key = "\0".join((path, claim.category or "", what))
    return f"{FINDING_PREFIX}{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]} -->"


def _body(path: str, claim: Claim, model: str) -> str:
    kind = claim.category or "defect"
    return (
        f"{finding_marker(path, claim)}\n"
        f"**triage-bot: verified defect ({kind})** found by {neutralise(model, max_chars=80)}\n\n"
        f"{neutralise_block(claim.text, max_chars=REVIEW_BODY_MAX_CHARS)}"
    )


def line_comments(
    outcomes: Sequence[Outcome], diff_lines: Mapping[str, frozenset[int]]
) -> tuple[ReviewComment, ...]:
    """One comment per verified defect on a diff line, at most ``MAX_DEFECTS`` an audit.

    ``diff_lines`` maps a path to its RIGHT-side lines; a file without a patch is absent.
    """
    out: list[ReviewComment] = []
    seen: set[tuple[str, int, str]] = set()
    for result in outcomes:
        if not isinstance(result, AuditResult):
            continue
        path = result.segment.path
        posted = 0
        for claim in result.defects:
            line = claim.line
            if posted == MAX_DEFECTS:
                break
            if line is None or line not in diff_lines.get(path, frozenset()):
                continue
            body = _body(path, claim, result.model)
            if (path, line, body) not in seen:
                seen.add((path, line, body))
                out.append(ReviewComment(path, line, body))
                posted += 1
    return tuple(out)


def _finding(body: str) -> str | None:
    first = body.split("\n", 1)[0]
    found = _FINDING.fullmatch(first)
    return found.group(1) if found else None


def to_post(
    candidates: Sequence[ReviewComment], posted: Sequence[PostedReviewComment], head_sha: str
) -> tuple[ReviewComment, ...]:
    """To post at ``head_sha``: none if one was posted there, else the new findings."""
    if any(p.commit_id == head_sha for p in posted):
        return ()
    known = {_finding(p.body) for p in posted} - {None}
    return tuple(c for c in candidates if _finding(c.body) not in known)


def review_summary(count: int, head_sha: str) -> str:
    """The review's own body: how many line comments, at which head, and what they are."""
    return (
        f"triage-bot: {count} defect(s) claimed by the model at `{head_sha[:12]}`, each on the "
        "line whose code it quotes (line and quote checked by the bot, the claim is the model's). "
        "The summary comment has the whole audit; a defect a model did not find is not here."
    )
