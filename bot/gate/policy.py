"""The gate's decision under a policy, the shipped policies, and which one a run uses.

What each guard checks, and why one only lowers a verdict: docs/gate.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from bot.checklist import Element
from bot.gate.evidence import Evidence
from bot.gate.facts import IssueFacts
from bot.gate.types import Ruling
from bot.gate.verdict import VerdictValue
from bot.policy_file import GatePolicy, policy_from_text
from bot.prompts import current_name

__all__ = [
    "DEFAULT_POLICY",
    "ChosenPolicy",
    "choose_policy",
    "decide",
    "default_policy",
    "finding",
    "policy_json",
    "shipped_policies",
]

DEFAULT_POLICY = "model-verdict"
"""The name of the policy for a model no policy was measured for."""


def _has_evidence(facts: IssueFacts) -> bool:
    return bool(facts.code_blocks or facts.inline_code or facts.trace or facts.repro_link)


def _please(asks: tuple[Element, ...]) -> str:
    return ("Please add " + "; ".join(e.missing for e in asks) + ".") if asks else ""


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


def _unverified(evidence: Evidence) -> str:
    keys = [e.key for e in evidence.unverified]
    if not keys:
        return ""
    return f"The model's quote of {', '.join(keys)} was not found in the issue (not counted)."


def finding(step: str, facts: IssueFacts) -> str:
    """Why ``step`` ruled NEEDS_REFINEMENT, in one sentence that quotes nothing.

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
        return "The check found it incomplete."
    raise ValueError(f"{step!r} is not a NEEDS_REFINEMENT step of the gate")


def _refine(step: str, facts: IssueFacts, evidence: Evidence, fault: bool = False) -> Ruling:
    asks = evidence.absent
    parts = (finding(step, facts), _unverified(evidence), _please(asks))
    reason = " ".join(p for p in parts if p)
    return Ruling("NEEDS_REFINEMENT", reason, step, asks, fault)


def decide(
    facts: IssueFacts, evidence: Evidence, model_verdict: VerdictValue, policy: GatePolicy
) -> Ruling:
    """Decide one issue: guards in ``GUARDS`` order, then required elements; each only lowers."""
    guards = set(policy.guards)
    if "unfilled" in guards and (
        facts.empty_sections >= policy.unfilled_empty_sections
        or facts.placeholders >= policy.unfilled_placeholders
    ):
        return _refine("unfilled", facts, evidence)
    if "short" in guards and facts.prose_words < policy.short_words and not _has_evidence(facts):
        return _refine("short", facts, evidence)
    needs = set(policy.valid_needs_one_of)
    if "unbacked" in guards and not needs & evidence.found:
        claimed = any(evidence.quotes.get(key, "").strip() for key in needs)
        return _refine("unbacked", facts, evidence, fault=claimed)
    required = evidence.required_missing
    if required:
        claimed = any(evidence.quotes.get(e.key, "").strip() for e in required)
        return _refine("required", facts, evidence, fault=claimed)
    found = _found(evidence, facts)
    if policy.counts_model():
        if model_verdict == "NEEDS_REFINEMENT":
            parts = (
                finding("model", facts),
                found,
                _unverified(evidence),
                _please(evidence.absent),
            )
            reason = " ".join(p for p in parts if p)
            return Ruling("NEEDS_REFINEMENT", reason, "model", evidence.absent)
        return Ruling(
            "VALID", " ".join(p for p in ("The model found it ready.", found) if p), "model"
        )
    return Ruling("VALID", found or "Every check passed.", "guards")


@cache
def shipped_policies() -> tuple[GatePolicy, ...]:
    """The policies in ``bot/gate/policies/``, by name; ``ConfigError`` if one is invalid."""
    folder = resources.files("bot.gate").joinpath("policies")
    found = [
        policy_from_text(entry.read_text("utf-8"), source=f"bot/gate/policies/{entry.name}")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    ]
    return tuple(sorted(found, key=lambda p: p.name))


def default_policy() -> GatePolicy:
    """The policy for a model none was measured for (:data:`DEFAULT_POLICY`)."""
    return next(p for p in shipped_policies() if p.name == DEFAULT_POLICY)


@dataclass(frozen=True)
class ChosenPolicy:
    """The policy a run decides with, where it came from, and whether its figures hold.

    ``source`` is ``setting``, ``repository path``, ``repository file``, ``shipped`` or
    ``default``; ``alias_of`` is ``gate.model_aliases``' name for ``model``, or ``""``.
    """

    policy: GatePolicy
    source: str
    model: str
    prompt_version: str
    alias_of: str = ""

    @property
    def same_weights(self) -> bool:
        """Whether the run's model is the measured one, by name, ``same_model_as`` or alias."""
        m = self.policy.measured
        names = {m.model, *self.policy.same_model_as} if m is not None else set()
        return bool(names & {self.model, self.alias_of})

    @property
    def holds(self) -> bool:
        """Whether measured with this run's model and prompt: only then do its figures count."""
        m = self.policy.measured
        return (
            m is not None
            and self.same_weights
            and current_name(m.prompt_version) == current_name(self.prompt_version)
        )

    @property
    def nr_precision(self) -> float | None:
        """The check half's NEEDS_REFINEMENT precision; ``None`` unless :attr:`holds`."""
        m = self.policy.measured
        return m.check.nr_precision if m is not None and self.holds else None

    @property
    def mismatch(self) -> str:
        """Why the policy's figures do not hold for this run (one line), ``""`` when they do."""
        m = self.policy.measured
        if m is None:
            return "never measured"
        wrong = []
        if not self.same_weights:
            wrong.append(f"model {m.model}")
        if current_name(m.prompt_version) != current_name(self.prompt_version):
            wrong.append(f"prompt {m.prompt_version}")
        if not wrong:
            return ""
        return "measured with another " + " and ".join(wrong) + ": its figures do not hold here"

    @property
    def runtime_note(self) -> str:
        """Where the figures were measured, when under another name for the same weights."""
        m = self.policy.measured
        if m is None or not self.holds or m.model == self.model:
            return ""
        where = (
            f"the GGUF through llama.cpp ({m.model})"
            if m.model.lower().endswith(".gguf")
            else m.model
        )
        return f"measured on {where}, used here for {self.model}, the same base model"

    def status(self) -> str:
        """Whether its figures hold, in words, not yet passed through a sink."""
        if self.holds:
            precision = self.nr_precision
            shown = f"{precision:.0%}" if precision is not None else "none measured"
            where = self.runtime_note or "measured for this model"
            return f"{where}, needs-refinement precision {shown}"
        return self.mismatch

    def describe(self) -> str:
        """One line for plans and logs: name, version, source and :meth:`status`."""
        return f"{self.policy.name} ({self.policy.version}, {self.source}); {self.status()}"


def choose_policy(
    explicit: GatePolicy | None,
    source: str,
    *,
    model: str,
    prompt_version: str,
    aliases: Mapping[str, str] | None = None,
) -> ChosenPolicy:
    """``explicit``, else the shipped policy measured for ``model`` or its alias, else default."""
    alias_of = (aliases or {}).get(model, "")
    if explicit is not None:
        return ChosenPolicy(explicit, source, model, prompt_version, alias_of)
    for policy in shipped_policies():
        chosen = ChosenPolicy(policy, "shipped", model, prompt_version, alias_of)
        if policy.name != DEFAULT_POLICY and chosen.same_weights:
            return chosen
    return ChosenPolicy(default_policy(), "default", model, prompt_version, alias_of)


def policy_json(policy: GatePolicy) -> str:
    """A policy as the JSON file ``calibrate --out`` writes (indented, keys in field order)."""
    return json.dumps(policy.model_dump(mode="json", exclude_none=True), indent=2) + "\n"
