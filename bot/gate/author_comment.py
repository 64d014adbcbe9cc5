"""The comment that tells an issue's author what to add: one per issue, edited in place.

Its text is the bot's own, never model prose or the issue's; strings a repository sets pass a sink.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.checklist import Element
from bot.gate.policy import finding
from bot.gate.types import AUTHOR_MARKER, GateDecision
from bot.neutralise import code_span, neutralise

__all__ = [
    "duplicate_comment",
    "duplicate_section",
    "needs_refinement_comment",
    "ready_comment",
    "refinement_comment_for",
]

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


TITLE_MAX_CHARS = 80
"""Longest title of an earlier issue shown (characters, in a code span)."""


def duplicate_section(number: int, title: str) -> str:
    """The "possibly the same as #N (title)" section (markdown; the title in a code span)."""
    shown = code_span(" ".join(title.split()), max_chars=TITLE_MAX_CHARS)
    return (
        f"#### Possibly the same as #{number} ({shown})\n\n"
        "An earlier issue reads much like this one. If it is the same, the answer may already "
        "be there; if not, saying how this one differs helps. A maintainer decides: the bot "
        "closes nothing.\n"
    )


def duplicate_comment(number: int, title: str) -> str:
    """The comment when the possible duplicate is all it says (:data:`AUTHOR_MARKER` first)."""
    return (
        f"{AUTHOR_MARKER}\n### Thanks for the report: it may be known already\n\n"
        + duplicate_section(number, title)
    )
