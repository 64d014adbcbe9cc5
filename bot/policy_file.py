"""The gate's decision policy as data: which signals decide, and the model it was chosen for.

A JSON file, a ``gate.policy`` block or a shipped policy; docs/models-and-policies.md has
the fields. This is the format alone, so the repository file can validate and publish it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from bot.errors import ConfigError
from bot.regular_file import content_problems, field_names, read_input

__all__ = [
    "GUARDS",
    "MAX_POLICY_BYTES",
    "NOT_DECIDING",
    "GatePolicy",
    "Guard",
    "HalfFigures",
    "Measurement",
    "ModelName",
    "PromptVersion",
    "load_policy",
    "policy_from_text",
    "policy_name",
    "validation_problems",
]

Guard = Literal["unfilled", "short", "unbacked"]
"""A check that may lower a verdict to NEEDS_REFINEMENT:

- ``unfilled``: the issue template is left unfilled (a section empty or a placeholder left);
- ``short``: fewer than ``short_words`` words of the author's and no code, log, trace or link
  to a reproduction;
- ``unbacked``: no quote of ``valid_needs_one_of`` that the bot found in the issue.
"""

GUARDS: tuple[Guard, ...] = ("unfilled", "short", "unbacked")
"""Every guard, in the order they are applied."""


ModelName = Annotated[str, Field(min_length=1, max_length=200)]
"""A model's name as runs report it (GGUF file name, Ollama tag, served model name)."""

PromptVersion = Annotated[str, Field(pattern=r"^validator@[0-9a-f]{8}$")]
"""A validator prompt's version (``validator@SHA8``)."""


MAX_POLICY_BYTES = 2**20
"""The most a policy file may hold (1 MiB; ``calibrate`` writes about 2 KB)."""

_NAME_CHARS = "A-Za-z0-9._:+-"
"""The characters of a policy's name (it starts with a letter or digit)."""

_NAME_MAX = 80
"""The longest policy name."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HalfFigures(_Strict):
    """A policy's figures on one half of its labelled set (shares from 0 to 1; ``None`` when no
    item is under the ratio)."""

    items: int = Field(ge=0)
    agreement: float = Field(ge=0, le=1)
    """Share of items where the decision is the maintainers' (a validator-error never agrees)."""
    agreement_non_borderline: float | None = Field(default=None, ge=0, le=1)
    """The same over the items not marked borderline."""
    nr_precision: float | None = Field(default=None, ge=0, le=1)
    """Share of the policy's NEEDS_REFINEMENT decisions the maintainers also asked more of."""
    nr_recall: float | None = Field(default=None, ge=0, le=1)
    """Share of the maintainers' NEEDS_REFINEMENT the policy also gave."""


class Measurement(_Strict):
    """What a policy was chosen on and how it did."""

    model: ModelName
    """The model's name as runs report it (GGUF file name, Ollama tag, served model name)."""
    prompt_version: PromptVersion
    """The validator prompt the model answered."""
    labelled_set: str = Field(min_length=1, max_length=300)
    """Which labelled issues (a name, not a path outside the project)."""
    tune: HalfFigures
    """Figures on the half the policy was chosen on."""
    check: HalfFigures
    """Figures on the other half, never used to choose: the ones to trust."""


NOT_DECIDING: tuple[str, ...] = ("name", "measured", "same_model_as", "chosen_on")
"""The :class:`GatePolicy` fields left out of its version: what it is called, how it was
measured and chosen; every other field decides."""


class GatePolicy(_Strict):
    """One decision policy (see the module docstring)."""

    name: str = Field(pattern=rf"^[A-Za-z0-9][{_NAME_CHARS}]{{0,{_NAME_MAX - 1}}}$")
    """A short name shown in plans and step summaries."""
    verdict_from: Literal["model", "guards"]
    """``model``: the model's verdict unless a guard lowers it; ``guards``: VALID unless a
    guard lowers it (the model's verdict recorded, not counted)."""
    guards: tuple[Guard, ...] = Field(default=())
    """The guards that may lower the verdict (applied in :data:`GUARDS` order)."""
    unfilled_empty_sections: int = Field(default=1, ge=1)
    """``unfilled``: this many template sections left empty make the template unfilled."""
    unfilled_placeholders: int = Field(default=1, ge=1)
    """``unfilled``: this many template placeholders still in the text make it unfilled."""
    short_words: int = Field(default=20, ge=0)
    """``short``: fewer words of the author's than this, and no code, log or reproduction link."""
    valid_needs_one_of: tuple[str, ...] = Field(default=("problem", "trigger"), min_length=1)
    """``unbacked``: the checklist elements of which at least one quote must be found."""
    measured: Measurement | None = None
    """The model, prompt version and figures it was chosen with; ``None``: never measured."""
    same_model_as: tuple[str, ...] = Field(default=(), max_length=20)
    """Other names of the measured model (the same weights served elsewhere, e.g. an Ollama
    tag): a run of one of them gets this policy by default, but its figures were measured
    with ``measured.model`` and do not hold for it."""
    chosen_on: str = Field(default="", max_length=2000)
    """Provenance in words (how it was chosen); not part of the decision."""

    @property
    def version(self) -> str:
        """``policy@SHA8`` of the fields that decide, with the guards in :data:`GUARDS` order."""
        decision = self.model_dump(mode="json", exclude=set(NOT_DECIDING))
        decision["guards"] = [g for g in GUARDS if g in self.guards]
        text = json.dumps(decision, sort_keys=True, separators=(",", ":"))
        return f"policy@{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"

    def counts_model(self) -> bool:
        """Whether the model's own verdict decides."""
        return self.verdict_from == "model"

    def can_refuse(self) -> bool:
        """Whether the policy can ever decide NEEDS_REFINEMENT."""
        live = [g for g in self.guards if g != "short" or self.short_words > 0]
        return self.counts_model() or bool(live)

    @model_validator(mode="after")
    def _refuses_sometimes(self) -> GatePolicy:
        if not self.can_refuse():  # a type of its own: its message quotes no input
            raise PydanticCustomError(
                "never_refuses",
                "this policy can never decide NEEDS_REFINEMENT (verdict_from: guards with no "
                "guard that can fire): it would label every issue ready, planted ones too",
            )
        return self


def policy_name(text: str) -> str:
    """A valid policy name from free text (``-`` for what a name may not hold) or ``calibrated``."""
    kept = re.sub(rf"[^{_NAME_CHARS}]+", "-", text)
    kept = re.sub(r"^[^A-Za-z0-9]+", "", kept)[:_NAME_MAX]
    return kept or "calibrated"


def validation_problems(exc: ValidationError) -> str:
    """A policy's pydantic error in one line, naming keys but never quoting the file."""
    return content_problems(exc, field_names(GatePolicy))


def policy_from_text(text: str, *, source: str) -> GatePolicy:
    """A policy from its JSON text.

    Raises:
        ConfigError: not JSON, or not a valid policy; the message names ``source`` and the key.
    """
    try:
        return GatePolicy.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(
            f"{source}: not a valid gate policy: {validation_problems(exc)}"
        ) from None


def load_policy(path: Path) -> GatePolicy:
    """The policy in a JSON file.

    Raises:
        ConfigError: not a regular UTF-8 file of at most 1 MiB, or no valid policy.
    """
    text = read_input(path, what="the gate policy", limit=MAX_POLICY_BYTES)
    return policy_from_text(text, source=str(path))
