"""The comment that tells an issue's author what to add: one per issue, edited in place.

On NEEDS_REFINEMENT the bot posts one comment on the issue: why the gate asks for more
(:func:`bot.gate.policy.finding`, the start of the reason the policy builds), each checklist
element the model said the issue does not give, with its plain-words definition
(:attr:`bot.checklist.Element.missing`; never one the model quoted, even when the bot
could not find the quote), and a line inviting the author to edit the issue
(an edit runs the gate again). When a later run says VALID, the same comment is edited to say
the issue is ready, not deleted, so replies to it still read. Nothing here is model prose: the
text is the bot's, from the element definitions and the facts, and every string that can come
from elsewhere (definitions and label names, which a repository may set) passes a sink of
:mod:`bot.neutralise`. No text of the issue is quoted back.

The comment starts with :data:`AUTHOR_MARKER`, a hidden marker the bot finds it by
(``GitHubPort.find_bot_comment``, only among the bot's own comments).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.checklist import Element
from bot.gate.policy import finding
from bot.gate.validator import GateDecision
from bot.neutralise import code_span, neutralise
from bot.report import MARKER_PREFIX

__all__ = ["AUTHOR_MARKER", "needs_refinement_comment", "ready_comment", "refinement_comment_for"]

AUTHOR_MARKER = f"{MARKER_PREFIX}:author -->"
"""Hidden marker at the start of the bot's comment to an issue's author."""

DEFINITION_MAX_CHARS = 300
"""Longest element name or definition shown (characters of markdown, escapes included)."""


INTRO_MAX_CHARS = 300
"""Longest intro line a repository may set (characters of markdown, escapes included)."""


def needs_refinement_comment(
    why: str, missing: Sequence[Element], *, label: str, intro: str | None = None
) -> str:
    """The comment for a NEEDS_REFINEMENT decision (markdown, :data:`AUTHOR_MARKER` first).

    Args:
        why: one sentence saying why the gate asks for more (:func:`bot.gate.policy.finding`).
        missing: the elements not found in the issue, in checklist order (may be empty: an
            unfilled template or a too-short post with every element found).
        label: the gate label the issue carries until it is ready.
        intro: the repository's own line under the heading (``author_comment.intro`` of
            ``.github/triage-bot.yml``), neutralised like the rest, or ``None``.
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
    """The same comment once a later run says VALID (markdown, :data:`AUTHOR_MARKER` first).

    Args:
        label: the gate label of a VALID issue.
    """
    return (
        f"{AUTHOR_MARKER}\n"
        "### Thanks: this issue is ready for work\n\n"
        "The check found what it looks for, and the issue is labelled "
        f"{code_span(label, max_chars=60)}. This comment listed what was missing before the "
        "last edit.\n"
    )


def refinement_comment_for(decision: GateDecision, *, label: str, intro: str | None = None) -> str:
    """:func:`needs_refinement_comment` for a NEEDS_REFINEMENT decision of the validator: the
    finding of the step that ruled, and what the model said the issue does not give
    (:attr:`bot.gate.policy.Ruling.asks`).

    Raises:
        ValueError: the decision is not a NEEDS_REFINEMENT with its facts and ruling.
    """
    if decision.verdict != "NEEDS_REFINEMENT" or decision.facts is None or decision.ruling is None:
        raise ValueError("the author comment is for NEEDS_REFINEMENT decisions only")
    why = finding(decision.rule, decision.facts)
    return needs_refinement_comment(why, decision.ruling.asks, label=label, intro=intro)
