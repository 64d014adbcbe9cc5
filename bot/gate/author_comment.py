"""The comment that tells an issue's author what to add: one per issue, edited in place.

Its text is the bot's own, never model prose or the issue's; strings a repository sets pass a sink.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.checklist import Element
from bot.gate.policy import finding
from bot.gate.types import AUTHOR_MARKER, GateDecision
from bot.neutralise import code_span, neutralise

__all__ = ["needs_refinement_comment", "ready_comment", "refinement_comment_for"]

DEFINITION_MAX_CHARS = 300
"""Longest element name or definition shown (characters of markdown, escapes included)."""


INTRO_MAX_CHARS = 300
"""Longest intro line a repository may set (characters of markdown, escapes included)."""


def needs_refinement_comment(
    why: str, missing: Sequence[Element], *, label: str, intro: str | None = None
) -> str:
    """The comment for a NEEDS_REFINEMENT decision (markdown, :data:`AUTHOR_MARKER` first).

    ``missing`` may be empty (an unfilled template); ``intro`` is the repository's own line.
    """
    lines = [
        AUTHOR_MARKER,
        "### Thanks for the report: it needs a little more before work can start",
        "",
    ]
    if intro and intro.strip():
        lines += [neutralise(intro, max_chars=INTRO_MAX_CHARS), ""]
    lines += [neutralise(why)]
    if missing:
        lines += ["", "Please add:", ""]
        lines += [
            f"- **{neutralise(e.key, max_chars=60)}** — "
            f"{neutralise(e.missing, max_chars=DEFINITION_MAX_CHARS)}"
            for e in missing
        ]
        invite = "Edit the issue to add them"
    else:
        invite = "Edit the issue to add more detail"
    lines += [
        "",
        f"{invite}: every edit runs the check again, and this comment is updated. Until then "
        f"the issue is labelled {code_span(label, max_chars=60)}.",
    ]
    return "\n".join(lines) + "\n"


def ready_comment(*, label: str) -> str:
    """The same comment once a later run says VALID (markdown, :data:`AUTHOR_MARKER` first)."""
    return (
        f"{AUTHOR_MARKER}\n"
        "### Thanks: this issue is ready for work\n\n"
        "The check found what it looks for, and the issue is labelled "
        f"{code_span(label, max_chars=60)}. This comment listed what was missing before the "
        "last edit.\n"
    )


def refinement_comment_for(decision: GateDecision, *, label: str, intro: str | None = None) -> str:
    """:func:`needs_refinement_comment` for a validator decision; raises ``ValueError`` unless
    it is a NEEDS_REFINEMENT with its facts and ruling."""
    if decision.verdict != "NEEDS_REFINEMENT" or decision.facts is None or decision.ruling is None:
        raise ValueError("the author comment is for NEEDS_REFINEMENT decisions only")
    why = finding(decision.rule, decision.facts)
    return needs_refinement_comment(why, decision.ruling.asks, label=label, intro=intro)
