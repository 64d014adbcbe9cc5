"""The validator's verdict: one strict wire shape and the one parser that reads it.

A schema constrains syntax, not values, so every reply is validated here. A reply that is not
exactly a verdict is a fault (``validator-error``), never a guess.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
)

from bot.chat import structured_output_schema
from bot.checklist import ELEMENTS, REPLY_KEYS
from bot.errors import ModelOutputError

__all__ = [
    "GATE_OUTCOMES",
    "NO_VERDICT",
    "QUOTE_MAX_CHARS",
    "REASON_MAX_CHARS",
    "REASON_MIN_CHARS",
    "Verdict",
    "VerdictValue",
    "parse_verdict",
    "verdict_model",
    "verdict_schema",
]

VerdictValue = Literal["VALID", "NEEDS_REFINEMENT"]

NO_VERDICT = "ERROR"
"""How a gate decision without a verdict (a fault; its label is ``validator-error``) is named
where a verdict is shown: the step output ``verdict`` (action.yml), the run's text and the eval's
outcomes (:attr:`bot.gate.types.GateDecision.outcome`)."""

GATE_OUTCOMES: tuple[str, ...] = (*get_args(VerdictValue), NO_VERDICT)
"""Every gate outcome as shown (the eval's confusion columns): the verdicts, then
:data:`NO_VERDICT`."""

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
    """The validator's answer: a verbatim quote (or ``""``) per checklist element, then
    ``reason`` and ``verdict``. :func:`verdict_model` makes the fields per checklist."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    if TYPE_CHECKING:  # the fields themselves come from verdict_model, in decoding order
        reason: str
        verdict: VerdictValue

    @property
    def quotes(self) -> dict[str, str]:
        """Element key → quote, for :func:`bot.gate.evidence.gather_evidence`."""
        return {key: getattr(self, key) for key in type(self).model_fields if key not in REPLY_KEYS}

    @field_validator("reason", check_fields=False)
    @classmethod
    def _reason_visible(cls, value: str) -> str:
        if not any(ch.isalnum() for ch in value):
            raise ValueError("reason has no visible words")
        if any(unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\n\t" for ch in value):
            raise ValueError("reason contains control or invisible characters")
        return value


@cache
def verdict_model(keys: tuple[str, ...] | None = None) -> type[Verdict]:
    """The reply shape for a checklist's element ``keys`` (``None``: the bot's own).

    Raises:
        ValueError: a key that is not an identifier, repeats, or is ``reason``/``verdict``.
    """
    if keys is None:
        keys = tuple(e.key for e in ELEMENTS)
    if len(set(keys)) != len(keys) or any(
        not key.isidentifier() or key in REPLY_KEYS for key in keys
    ):
        raise ValueError(f"{keys!r} cannot be the quote fields of the validator's reply")
    # quotes first: constrained decoding writes the keys in this order, so the model reads the
    # issue for each element before it commits to a verdict (the parser accepts any order)
    fields: dict[str, Any] = {key: (str, Field(max_length=QUOTE_MAX_CHARS)) for key in keys}
    fields["reason"] = (str, Field(min_length=REASON_MIN_CHARS, max_length=REASON_MAX_CHARS))
    fields["verdict"] = (VerdictValue, ...)
    return create_model("Verdict", __base__=Verdict, **fields)


def verdict_schema(model: type[Verdict] | None = None) -> dict[str, Any]:
    """The structured-output schema of ``model`` (the bot's own checklist when ``None``)."""
    return structured_output_schema(model or verdict_model())


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError(f"duplicate key in {keys}")
    return dict(pairs)


def parse_verdict(text: str, model: type[Verdict] | None = None) -> Verdict:
    """Parse the model's raw reply as ``model`` (the bot's own checklist when ``None``).

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
        return (model or verdict_model()).model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        )
        raise ModelOutputError(f"the reply is not a valid verdict: {problems}") from exc
