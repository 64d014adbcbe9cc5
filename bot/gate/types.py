"""The gate's data types: what judging one issue yields, and the author comment's marker.

The gate's behaviour modules import these from here, not from one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.chat import CallUsage
from bot.checklist import Element
from bot.gate.labels import GateLabel, label_for
from bot.gate.verdict import NO_VERDICT, VerdictValue
from bot.run_report import MARKER_PREFIX

if TYPE_CHECKING:
    from bot.gate.evidence import Evidence
    from bot.gate.facts import IssueFacts
    from bot.gate.issue_text import IssueText
    from bot.gate.policy import ChosenPolicy

__all__ = ["AUTHOR_MARKER", "GateDecision", "Ruling"]

AUTHOR_MARKER = f"{MARKER_PREFIX}:author -->"
"""Hidden marker at the start of the bot's comment to an issue's author."""


@dataclass(frozen=True)
class Ruling:
    """The decision and the reason people read (built from facts, never model prose).

    Attributes:
        rule: a guard, ``required``, ``model``, or ``guards`` (every guard passed).
        asks: the elements the model left empty, in checklist order; never a misquoted one.
        model_fault: the guard ruled only because the model's quotes were not found.
    """

    verdict: VerdictValue
    reason: str
    rule: str
    asks: tuple[Element, ...] = ()
    model_fault: bool = False


@dataclass(frozen=True)
class GateDecision:
    """The gate's outcome for one issue; on a fault the model's fields are empty.

    Attributes:
        verdict: as :func:`bot.gate.policy.decide` ruled; ``None`` on a fault.
        reason: the policy's reason, or the fault's message.
        error_kind: the fault's ``BotError.kind`` (``truncated`` …), else ``None``.
        prompt_tokens: 0 when the model was never reached.
        model_ms: the model's own time for the call (ms).
        wall_ms: the whole judgement, prompt build and parse included (ms).
        policy: ``None`` only for a decision built outside a validator.
        calls: empty when no call ran or a failed one reported no cost.
    """

    verdict: VerdictValue | None
    reason: str
    error_kind: str | None
    model: str
    prompt_version: str
    prompt_tokens: int
    output_tokens: int
    model_ms: float
    wall_ms: float
    issue: IssueText
    model_verdict: VerdictValue | None = None
    model_reason: str = ""
    rule: str = ""
    evidence: Evidence | None = field(default=None, repr=False)
    facts: IssueFacts | None = field(default=None, repr=False)
    calls: tuple[CallUsage, ...] = ()
    ruling: Ruling | None = field(default=None, repr=False)
    policy: ChosenPolicy | None = field(default=None, repr=False)

    @property
    def label(self) -> GateLabel:
        """The gate label; ``validator-error`` on a fault."""
        return label_for(self.verdict)

    @property
    def outcome(self) -> str:
        """:attr:`verdict`, or ``ERROR`` on a fault: the outcome outputs name."""
        return self.verdict or NO_VERDICT
