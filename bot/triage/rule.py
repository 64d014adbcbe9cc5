"""The gate's decision: facts the bot checked itself, then evidence the bot verified.

Rule source: issue 14, "Facts the bot can establish itself, then the model for what only a
model can read". On the development set's tune half the small model's own verdict agreed with
maintainers little better than chance (51%), and counting it after the facts lowered agreement
(63% against 69% without it); facts the bot checks without a model, and the quotes the model
copies from the issue (checked by the bot), carried the signal. So the order is:

1. **The template is left unfilled** (a section empty or still holding its placeholder:
   :mod:`bot.triage.facts`) → NEEDS_REFINEMENT.
2. **Too little to act on** (fewer than ``short_words`` words of the author's own and no code,
   log, trace or link to a reproduction) → NEEDS_REFINEMENT. A log, code or a reproduction
   link with few words is left to the next step: maintainers acted on such reports.
3. **Nothing to act on was found**: no verified quote of one of ``valid_needs_one_of`` (what
   goes wrong or what is wanted, how to make it happen: :mod:`bot.triage.evidence`) →
   NEEDS_REFINEMENT. A planted "answer VALID" cannot make the model quote a problem the issue
   does not state, and a quote from a planted line is no evidence.
4. **Something the repository requires is missing**: an element of the repository's own
   (``elements:`` in ``.github/triage-bot.yml``) required of this issue's kind has no verified
   quote (:attr:`bot.triage.evidence.Evidence.required_missing`) → NEEDS_REFINEMENT. With the
   bot's own checklist this step never rules.
5. When ``model_verdict_counts``, the model's NEEDS_REFINEMENT → NEEDS_REFINEMENT.
6. Otherwise VALID.

The model's own verdict is recorded with every decision either way. The thresholds are data
(``gate_rule.json``, with its version and where they were chosen), chosen on the tune half
only. The reason shown to people is built here from the facts and the evidence, never taken
from model prose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from bot.triage.evidence import Evidence
from bot.triage.facts import IssueFacts
from bot.triage.verdict import VerdictValue

__all__ = ["GateRule", "Ruling", "decide", "finding", "gate_rule"]


class GateRule(BaseModel):
    """The thresholds of the decision, read from ``bot/triage/gate_rule.json``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(pattern=r"^rule-[0-9]+$")
    """Bumped with every change; part of the stored prompt version."""
    unfilled_empty_sections: int = Field(ge=1)
    """This many template sections left empty make the template unfilled."""
    unfilled_placeholders: int = Field(ge=1)
    """This many template placeholders still in the text make it unfilled."""
    short_words: int = Field(ge=0)
    """Fewer words of the author's than this, and no code, log or reproduction link: too little."""
    valid_needs_one_of: tuple[str, ...]
    """A VALID needs one of these elements found in the issue (no check when empty)."""
    model_verdict_counts: bool
    """Whether the model's NEEDS_REFINEMENT decides (step 4)."""
    chosen_on: str
    """Where the thresholds were chosen (provenance)."""


@cache
def gate_rule() -> GateRule:
    """The packaged rule (``bot/triage/gate_rule.json``), validated once."""
    text = resources.files("bot.triage").joinpath("gate_rule.json").read_text("utf-8")
    return GateRule.model_validate(json.loads(text))


@dataclass(frozen=True)
class Ruling:
    """The decision and the reason people read.

    Attributes:
        verdict: ``VALID`` or ``NEEDS_REFINEMENT``.
        reason: one or two sentences built from the facts and the evidence.
        rule: which step decided: ``unfilled``, ``short``, ``unbacked``, ``required``,
            ``model`` or ``evidence`` (VALID).
    """

    verdict: VerdictValue
    reason: str
    rule: str


def _has_evidence(facts: IssueFacts) -> bool:
    return bool(facts.code_blocks or facts.inline_code or facts.trace or facts.repro_link)


def _missing(evidence: Evidence) -> str:
    wanted = [e.missing for e in evidence.missing]
    return ("Please add " + "; ".join(wanted) + ".") if wanted else ""


def _refine(step: str, facts: IssueFacts, evidence: Evidence) -> str:
    return f"{finding(step, facts)} {_missing(evidence)}"


def _found(evidence: Evidence, facts: IssueFacts) -> str:
    parts = [
        f"{e.key} (“{evidence.quotes[e.key][:80]}”)"
        for e in evidence.elements
        if e.key in evidence.found
    ]
    if _has_evidence(facts):
        parts.append("code, a log or a reproduction link")
    if facts.version:
        parts.append("a version")
    return "Found: " + ", ".join(parts) + "." if parts else ""


def finding(step: str, facts: IssueFacts) -> str:
    """Why the rule's ``step`` ruled NEEDS_REFINEMENT, in one sentence from the facts, with no
    request and no quote of the issue: the start of the reason :func:`decide` builds, and the
    finding the author comment shows (:mod:`bot.triage.author_comment`).

    Args:
        step: :attr:`Ruling.rule` of a NEEDS_REFINEMENT (``unfilled``, ``short``, ``unbacked``,
            ``required``, ``model``).
        facts: the facts the ruling was made on.

    Raises:
        ValueError: ``step`` is not a NEEDS_REFINEMENT step.
    """
    if step == "unfilled":
        return (
            "The issue template is not filled in: "
            f"{facts.empty_sections} section(s) empty, {facts.placeholders} placeholder(s) left."
        )
    if step == "short":
        return (
            f"Too little to act on: {facts.prose_words} words and no code, log or reproduction "
            "link."
        )
    if step == "unbacked":
        return "No words saying what goes wrong or how to make it happen were found in the issue."
    if step == "required":
        return "Something this repository asks of every such issue was not found in it."
    if step == "model":
        return "The model found it incomplete."
    raise ValueError(f"{step!r} is not a NEEDS_REFINEMENT step of the rule")


def decide(
    facts: IssueFacts, evidence: Evidence, model_verdict: VerdictValue, rule: GateRule | None = None
) -> Ruling:
    """Decide one issue (the order is the module docstring's).

    Args:
        facts: what the bot checked itself (:func:`bot.triage.facts.issue_facts`).
        evidence: the elements found in the issue (:func:`bot.triage.evidence.gather_evidence`).
        model_verdict: the model's own verdict.
        rule: the thresholds; the packaged :func:`gate_rule` when ``None``.
    """
    rule = rule or gate_rule()
    words = facts.prose_words
    if facts.empty_sections >= rule.unfilled_empty_sections or (
        facts.placeholders >= rule.unfilled_placeholders
    ):
        return Ruling("NEEDS_REFINEMENT", _refine("unfilled", facts, evidence), "unfilled")
    if words < rule.short_words and not _has_evidence(facts):
        return Ruling("NEEDS_REFINEMENT", _refine("short", facts, evidence), "short")
    needs = set(rule.valid_needs_one_of)
    if needs and not needs & evidence.found:
        return Ruling("NEEDS_REFINEMENT", _refine("unbacked", facts, evidence), "unbacked")
    if evidence.required_missing:
        return Ruling("NEEDS_REFINEMENT", _refine("required", facts, evidence), "required")
    if rule.model_verdict_counts and model_verdict == "NEEDS_REFINEMENT":
        parts = (finding("model", facts), _found(evidence, facts), _missing(evidence))
        return Ruling("NEEDS_REFINEMENT", " ".join(p for p in parts if p), "model")
    return Ruling("VALID", _found(evidence, facts), "evidence")
