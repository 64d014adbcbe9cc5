"""``--audit-format json``: the seven sections as a JSON schema, rendered to the contract.

Small models fill a JSON object under constrained decoding where a long markdown format fails.
The field names are the sections' keys (a test keeps them equal).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.audit.contract import MAX_DEFECTS, NONE, Category, Confidence, Verdict
from bot.errors import ModelOutputError

__all__ = ["AuditJSON", "Defect", "parse_audit_json"]

_EMPTY_ITEMS = frozenset({"none", "n/a", "na", "nothing", "-", "—", "null", "nil"})
"""List items that mean "empty": ``["None"]`` is the markdown contract's ``None`` written as a
list (Qwen2.5-Coder 1.5B does this), so it renders as ``None``, not as one risk named "None"."""


class Defect(BaseModel):
    """One defect as evidence: its line, the code on it, its category and what goes wrong."""

    model_config = ConfigDict(extra="forbid", strict=True)

    line: int = Field(ge=1)
    """The 1-based file line the defect is on (must lie in the audited range)."""

    quote: str = Field(min_length=1, max_length=200)
    """The exact code on that line, or a part of it (compared with whitespace removed)."""

    category: Category
    """One of :data:`~bot.audit.contract.CATEGORIES`."""

    failure: str = Field(min_length=1, max_length=600)
    """What goes wrong, with which input, in one or two sentences."""

    def item(self) -> str:
        """The section-2 item :func:`bot.audit.evidence.parse_claim` reads back."""
        return (
            f"Line {self.line} ({self.category}): {_code_span(' '.join(self.quote.split()))} "
            f"— {' '.join(self.failure.split())}"
        )


def _code_span(code: str) -> str:
    """``code`` as a CommonMark code span no backtick run inside can close."""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", code)), default=0) + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{fence}{pad}{code}{pad}{fence}"


class AuditJSON(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    bottom_line: str = Field(min_length=1, max_length=1200)
    """One paragraph that names something in the code."""
    verified_defects: list[Defect] = Field(max_length=MAX_DEFECTS)
    """Concrete defects visible in the segment; empty when there are none."""
    non_blocking_risks: list[str] = Field(max_length=20)
    """Practical risks that do not block; empty when there are none."""
    assumptions: list[str] = Field(max_length=20)
    """What was inferred about code outside the segment; empty when nothing."""
    future_improvements: list[str] = Field(max_length=20)
    """Optional hardening; empty when nothing."""
    verdict: Verdict
    """One of :data:`~bot.audit.contract.VERDICTS` (when each is given: ``VERDICT_RULES``)."""
    confidence: Confidence
    """How sure the audit is (one of :data:`~bot.audit.contract.CONFIDENCES`)."""

    def bodies(self) -> dict[str, str]:
        def bullets(items: list[str]) -> str:
            kept = [" ".join(i.split()) for i in items if i.strip()]
            kept = [i for i in kept if i.strip(" .").casefold() not in _EMPTY_ITEMS]
            return "\n".join(f"- {i}" for i in kept) if kept else NONE

        defects = [d.item() for d in self.verified_defects]
        return {
            "bottom_line": " ".join(self.bottom_line.split()),
            "verified_defects": bullets(defects),
            "non_blocking_risks": bullets(self.non_blocking_risks),
            "assumptions": bullets(self.assumptions),
            "future_improvements": bullets(self.future_improvements),
            "verdict": self.verdict,
            "confidence": self.confidence,
        }


def parse_audit_json(text: str) -> AuditJSON:
    """Parse a JSON-mode reply; :class:`ModelOutputError` unless it is an :class:`AuditJSON`."""
    try:
        return AuditJSON.model_validate_json(text.strip() or "{}")
    except ValidationError as exc:
        first = exc.errors(include_url=False)[:3]
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in first)
        raise ModelOutputError(f"audit JSON does not match the schema: {problems}") from exc
