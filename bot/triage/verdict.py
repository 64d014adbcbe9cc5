"""The validator's verdict: one strict wire shape and the one parser that reads it.

Rule source: design.md, "Issue gate". The model is sent ``Verdict.model_json_schema()`` as its
structured-output schema (Ollama ``format`` / llama.cpp ``response_format``), but a schema
constrains syntax, not values, so every reply is validated here with the same pydantic model.

Accepted: the bare JSON object, optionally inside exactly one ```` ```json ```` fence, with
surrounding whitespace. Rejected: prose before or after, a second object, bold or other markdown,
wrong case, extra or duplicate keys, a reason without visible words or with control characters.
No prefix matching and no case folding: a reply
that is not exactly a verdict is a fault (``validator-error``), never a guess.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.chat import structured_output_schema
from bot.errors import ModelOutputError

__all__ = [
    "QUOTE_MAX_CHARS",
    "REASON_MAX_CHARS",
    "REASON_MIN_CHARS",
    "Verdict",
    "VerdictValue",
    "parse_verdict",
    "verdict_schema",
]

VerdictValue = Literal["VALID", "NEEDS_REFINEMENT"]

REASON_MIN_CHARS = 8
"""Shortest reason accepted (characters, after stripping): the contract asks for one or two
sentences, and a bare "ok", "clear" or "none" is no reason (it is also what an injected fake
assistant turn tends to carry)."""

REASON_MAX_CHARS = 600
"""Upper bound on ``reason`` (characters): one or two sentences, never an essay."""

_FENCE = re.compile(r"\A```json[ \t]*\r?\n(?P<body>.*?)\r?\n?```\Z", re.DOTALL)


QUOTE_MAX_CHARS = 400
"""Longest quote accepted per element (characters): the prompt asks for at most 12 words."""


class Verdict(BaseModel):
    """The validator agent's answer about one issue: a short verbatim quote (or ``""``) per
    checklist element (:data:`bot.triage.evidence.ELEMENTS`), then ``reason`` and ``verdict``.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # Field order is the order constrained decoding writes the keys in: the quotes first, so
    # the model reads the issue for each element before it commits to a verdict. The parser
    # accepts any order; the contract is the keys, not their order.
    problem: str = Field(max_length=QUOTE_MAX_CHARS)
    """Words copied from the issue saying what goes wrong or what is wanted, or ``""``."""

    trigger: str = Field(max_length=QUOTE_MAX_CHARS)
    """Words copied from the issue saying what the author did when it happens, or ``""``."""

    expected: str = Field(max_length=QUOTE_MAX_CHARS)
    """Words copied from the issue saying what should happen instead, or ``""``."""

    reason: str = Field(min_length=REASON_MIN_CHARS, max_length=REASON_MAX_CHARS)
    """One or two sentences that name what the issue has or lacks."""

    verdict: VerdictValue
    """``VALID``: a developer can start work. ``NEEDS_REFINEMENT``: the author must add detail."""

    @property
    def quotes(self) -> dict[str, str]:
        """Element key → quote, for :func:`bot.triage.evidence.gather_evidence`."""
        return {"problem": self.problem, "trigger": self.trigger, "expected": self.expected}

    @field_validator("reason")
    @classmethod
    def _reason_visible(cls, value: str) -> str:
        if not any(ch.isalnum() for ch in value):
            raise ValueError("reason has no visible words")
        if any(unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\n\t" for ch in value):
            raise ValueError("reason contains control or invisible characters")
        return value


def verdict_schema() -> dict[str, Any]:
    """JSON schema sent to the model as structured output (``format`` in Ollama's /api/chat);
    length bounds are left to the parser (see ``structured_output_schema``)."""
    return structured_output_schema(Verdict)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError(f"duplicate key in {keys}")
    return dict(pairs)


def parse_verdict(text: str) -> Verdict:
    """Parse the model's reply into a :class:`Verdict`.

    Args:
        text: the raw ``message.content`` the model returned.

    Returns:
        The validated verdict.

    Raises:
        ModelOutputError: empty text, text that is not exactly one JSON object (optionally in one
            ```` ```json ```` fence), or an object that fails the strict schema.
    """
    stripped = text.strip()
    if not stripped:
        raise ModelOutputError("the model returned empty output")
    fenced = _FENCE.match(stripped)
    body = fenced.group("body").strip() if fenced else stripped
    if not body.startswith("{"):
        raise ModelOutputError("the reply is not a JSON object (prose or markdown around it?)")
    try:
        data = json.loads(body, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError) as exc:
        raise ModelOutputError(f"the reply is not one valid JSON object: {exc}") from exc
    try:
        return Verdict.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        )
        raise ModelOutputError(f"the reply is not a valid verdict: {problems}") from exc
