"""Validator replies in the v13 reply shape, an issue that passes the bot's own checks, and an
accepted audit of a plain file.

The reply shape is :class:`bot.gate.verdict.Verdict`: three quotes (``problem``, ``trigger``,
``expected``), then ``reason`` and ``verdict``, all required, no other key. Under the shipped
guards policy (:data:`tests.support.GUARDS`, the fake model's) a VALID outcome needs more than
the model's word: the issue must pass the bot's own checks (no unfilled template, at least 20
words of description or code/a log/a reproduction link) and the reply must quote words that are
in the issue for ``problem`` or ``trigger``.
:data:`COMPLETE_BODY` is such an issue and :data:`VALID_REPLY` such a reply for it.
:data:`GOOD_AUDIT` is an auditor's reply that passes the contract for a pull request adding
:data:`SOURCE`.
"""

from __future__ import annotations

import json

from bot.audit.contract import render_sections
from bot.gate.verdict import VerdictValue

__all__ = [
    "COMPLETE_BODY",
    "COMPLETE_TITLE",
    "GOOD_AUDIT",
    "NEEDS_REPLY",
    "SOURCE",
    "VALID_REPLY",
    "reply",
]


def reply(
    verdict: VerdictValue | str,
    reason: str,
    problem: str = "",
    trigger: str = "",
    expected: str = "",
    **extra: str,
) -> str:
    """A model reply (JSON text) with every key of the reply schema, in the schema's order.

    ``verdict`` is typed loosely on purpose: tests of the parser build wrong values with it.
    ``extra``: the quotes of a repository's own elements (``version="2.3.1"``), after the
    bot's three.
    """
    return json.dumps(
        {
            "problem": problem,
            "trigger": trigger,
            "expected": expected,
            **extra,
            "reason": reason,
            "verdict": verdict,
        },
        ensure_ascii=False,
    )


COMPLETE_TITLE = "Spelling error in the README file"
"""The title of the real ``issues.opened`` payload (tests/data/webhooks/issues.opened.18.json)."""

COMPLETE_BODY = (
    "It looks like you accidently spelled 'commit' with two 't's. "
    "The Getting started section of README.md says to comitt your changes before pushing; "
    "it should say commit your changes before pushing."
)
"""The real payload's one sentence (10 words: too short for the rule), completed to 32 words
that say where the mistake is and what the text should be."""

VALID_REPLY = reply(
    "VALID",
    "The misspelled word, where it is and the right wording are given.",
    problem="README.md says to comitt your changes",
    expected="it should say commit your changes",
)
"""A VALID reply for :data:`COMPLETE_BODY`: its ``problem`` quote is in that body."""

NEEDS_REPLY = reply("NEEDS_REFINEMENT", "No steps to reproduce are given.")
"""A NEEDS_REFINEMENT reply that quotes nothing (fits any issue)."""

SOURCE = [f"value_{i} = {i}" for i in range(1, 41)]
"""The lines of a file of 40 plain assignments, added whole by the audit tests' pull request."""

GOOD_AUDIT = render_sections(
    {
        "bottom_line": "value_1 to value_40 are plain constant assignments.",
        "verified_defects": "None",
        "non_blocking_risks": "None",
        "assumptions": "The names are used elsewhere.",
        "future_improvements": "None",
        "verdict": "GO",
        "confidence": "Medium",
    }
)
"""An accepted GO audit of :data:`SOURCE`."""
