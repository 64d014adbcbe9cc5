"""The ``ChatModel`` seam: the protocol every model backend implements and the values it passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from bot.errors import ModelError, ModelPromptTooLong

__all__ = [
    "CallUsage",
    "ChatMessage",
    "ChatModel",
    "ChatResult",
    "ModelRole",
    "Role",
    "RoleOptions",
    "Turn",
    "check_prompt_fits",
    "structured_output_schema",
]

Role = Literal["system", "user", "assistant"]

ModelRole = Literal["validator", "auditor"]
"""The agent a model serves (its :class:`RoleOptions`, its backend settings)."""

Turn = Literal["first", "repair"]
"""Which call of an agent's conversation: the first, or the auditor's one repair turn."""


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn."""

    role: Role
    content: str


@dataclass(frozen=True)
class RoleOptions:
    """Per-role generation options; ``num_predict`` (reaching it is an error) and ``num_ctx`` are
    tokens. Keep ``num_ctx`` constant per role: changing it reloads the model in Ollama."""

    temperature: float
    num_predict: int
    num_ctx: int
    seed: int = 42


@dataclass(frozen=True)
class ChatResult:
    """What one chat call produced; ``text`` may be empty, ``duration_ms`` is the model's time.

    ``prompt_eval_tokens``: the prompt tokens not taken from its cache, ``None`` if unreported.
    """

    text: str
    done_reason: str
    model: str
    prompt_tokens: int
    output_tokens: int
    duration_ms: float
    prompt_eval_tokens: int | None = None


@dataclass(frozen=True)
class CallUsage:
    """What one model call cost, as in :class:`ChatResult`; numbers only, so trusted."""

    role: ModelRole
    turn: Turn
    duration_ms: float
    prompt_tokens: int
    output_tokens: int
    prompt_eval_tokens: int | None = None

    @property
    def reused_tokens(self) -> int | None:
        """Prompt tokens taken from the prompt cache (≥ 0), or ``None`` when unreported."""
        if self.prompt_eval_tokens is None:
            return None
        return max(0, self.prompt_tokens - self.prompt_eval_tokens)

    @classmethod
    def of(cls, result: ChatResult, role: ModelRole, turn: Turn) -> CallUsage:
        """The usage of a call that returned."""
        return cls(
            role,
            turn,
            result.duration_ms,
            result.prompt_tokens,
            result.output_tokens,
            result.prompt_eval_tokens,
        )

    @classmethod
    def of_error(cls, exc: ModelError, role: ModelRole, turn: Turn) -> CallUsage | None:
        """The usage of a call that ran, then failed; ``None`` when the error carries no cost."""
        if not (exc.prompt_tokens or exc.output_tokens or exc.duration_ms):
            return None
        return cls(
            role,
            turn,
            exc.duration_ms,
            exc.prompt_tokens,
            exc.output_tokens,
            exc.prompt_eval_tokens,
        )


def check_prompt_fits(
    options: RoleOptions,
    *,
    prompt_tokens: int,
    output_tokens: int,
    duration_ms: float,
    detail: str = "",
    prompt_eval_tokens: int | None = None,
) -> None:
    """Raise ``ModelPromptTooLong``, with the call's cost, unless
    ``prompt_tokens + options.num_predict <= options.num_ctx`` (docs/design.md)."""
    if prompt_tokens + options.num_predict <= options.num_ctx:
        return
    message = (
        f"prompt of {prompt_tokens} tokens + num_predict {options.num_predict} exceeds "
        f"num_ctx {options.num_ctx}"
    )
    raise ModelPromptTooLong(
        f"{message}{'; ' + detail if detail else ''}",
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        duration_ms=duration_ms,
        prompt_eval_tokens=prompt_eval_tokens,
    )


@runtime_checkable
class ChatModel(Protocol):
    """A chat model the pipeline can call; implemented by every backend in :mod:`bot.clients`."""

    @property
    def name(self) -> str:
        """The model's name as stored with every decision."""
        ...

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """Run one non-streaming call; put stable text first in ``messages`` (prompt cache).

        Raises:
            ModelError: ``ModelTruncated`` at ``num_predict``, ``ModelPromptTooLong`` when the
                prompt does not fit (:func:`check_prompt_fits`).
        """
        ...


_DROPPED = ("maxLength", "minLength", "maxItems", "minItems", "description", "title")


def structured_output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s structured-output schema without length bounds, titles or descriptions.

    Check the reply with ``model`` itself, which holds the bounds (docs/design.md).
    """

    def strip(node: Any, *, is_map: bool = False) -> Any:
        # is_map: a "properties"/"$defs" mapping, whose keys are names, not schema keywords
        if isinstance(node, dict):
            return {
                k: strip(v, is_map=not is_map and k in ("properties", "$defs"))
                for k, v in node.items()
                if is_map or k not in _DROPPED
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    schema: dict[str, Any] = strip(model.model_json_schema())
    return schema
