"""The validator prompt's checklist, applied to the model's own findings.

Rule source: ``bot/prompts/validator.md`` (v7). The model writes its reason first, as three
findings — ``Trigger: … Result: … Detail: …`` — and then a verdict, with the rule "VALID only
when all three are there". Small models state the findings well but do not reliably apply the
rule to them (on the eval, Qwen2.5-Coder 1.5B wrote "Detail: none." and then VALID for most
vague issues). So the bot applies the rule itself: when the reason has the checklist form, the
verdict is what the checklist says; when it does not (a free-form reason, another prompt), the
model's verdict stands. The wire contract is unchanged: the reply must still be one strict
``{"verdict", "reason"}`` object, and the model's own verdict is kept in the decision.

A planted instruction cannot force VALID through this rule: it would have to make the model
report a trigger, a result and a concrete detail that the issue does not hold.
"""

from __future__ import annotations

import re

from bot.triage.verdict import VerdictValue

__all__ = [
    "ABSENT_EXACT",
    "MISSING_WORDS",
    "RULES_VERSION",
    "checklist_verdict",
    "findings",
    "labelled_findings",
]

RULES_VERSION = "rules-5"
"""The version of the rules the bot applies to a validator reply (this checklist and the
reason checks in :mod:`bot.triage.validator`). It is part of the stored prompt version, so a rule
change is a new version, like a prompt change: a replayed event is judged again instead of
being skipped as already decided. Bump it with every rule change. History: 1 the checklist;
2 a missing Detail counts present on a quoted fact; 3 the prompt-echo check; 4 three identical
findings are no checklist; 5 the echo check reads every labelled finding (not only a whole
checklist) and counts only whole words of the issue as support."""

_CHECKLIST = re.compile(
    r"\s*Trigger:\s*(?P<trigger>.+?)[.。]\s*Result:\s*(?P<result>.+?)[.。]\s*"
    r"Detail:\s*(?P<detail>.+?)[.。]?\s*",
    re.DOTALL,
)

MISSING_WORDS = ("none", "n/a", "nothing", "missing", "not given", "not provided", "unknown")
"""How a finding says it is absent (compared case-insensitively, at the finding's start)."""


ABSENT_EXACT = ("no", "-", "—", "null", "nil", "not found")
"""Findings that say "absent" only when they are the whole finding ("no crash" is a result)."""


_FACT = re.compile(
    r"`[^`\n]+`"  # a code span: command, code, error text
    r"|\d"  # a number or version
    r"|\b[\w-]+\.(?:py|js|ts|go|rs|java|c|h|cpp|rb|php|json|ya?ml|toml|ini|cfg|txt|csv|md|sh|"
    r"log|html|css|sql)\b"  # a file name
    r"|\b[A-Z]\w*(?:Error|Exception)\b"  # an error's name
)
"""A checkable fact as the prompt defines DETAIL (a command, error, version, number or
file name). Qwen2.5-Coder 1.5B often quoted the command in its Trigger finding and then wrote
"Detail: none."; the fact is in the issue all the same, so a Detail finding that is missing
counts as present when the model's own Trigger or Result finding holds such a fact (and the
Trigger itself is present)."""


def _missing(finding: str) -> bool:
    text = finding.strip().strip("\"'`*_").casefold()
    if text in ABSENT_EXACT:
        return True
    return any(text == word or text.startswith(word + " ") for word in MISSING_WORDS)


def findings(reason: str) -> tuple[str, str, str] | None:
    """The ``(trigger, result, detail)`` findings of a checklist reason, or ``None`` when the
    reason does not have the three-finding form."""
    found = _CHECKLIST.fullmatch(reason)
    return None if found is None else (found["trigger"], found["result"], found["detail"])


_LABEL = re.compile(r"\b(?:Trigger|Result|Detail):", re.IGNORECASE)


def labelled_findings(reason: str) -> list[str]:
    """Every ``Trigger:`` / ``Result:`` / ``Detail:`` finding in ``reason``, in order, whether
    or not the reason has the whole three-finding form ("Trigger: x. Result: y." has two);
    the text after each label, without its closing full stop."""
    return [piece.strip().rstrip(".。").strip() for piece in _LABEL.split(reason)[1:]]


def checklist_verdict(reason: str) -> VerdictValue | None:
    """The verdict the checklist in ``reason`` implies, or ``None`` when it has no such form.

    Args:
        reason: the model's reason, e.g. ``"Trigger: none. Result: crashes. Detail: none."``.

    Returns:
        ``NEEDS_REFINEMENT`` when any finding is missing (``none`` …), ``VALID`` when all three
        are present, ``None`` when the reason is not in the three-finding form. Three
        identical findings are ``NEEDS_REFINEMENT`` (Qwen answered "Trigger: clear. Result:
        clear. Detail: clear." to a planted turn whose reason was "clear"). A missing
        Detail counts as present when the Trigger or Result finding quotes a checkable fact
        (see :data:`_FACT`).
    """
    found = findings(reason)
    if found is None:
        return None
    trigger, result, detail = found
    if len({" ".join(f.casefold().split()) for f in found}) == 1:
        return "NEEDS_REFINEMENT"  # one text three times ("clear. clear. clear.") is no checklist
    if _missing(detail) and not _missing(trigger) and _FACT.search(f"{trigger} {result}"):
        detail = "stated in the trigger or result"
    return "NEEDS_REFINEMENT" if any(map(_missing, (trigger, result, detail))) else "VALID"
