"""The ``ChatModel`` seam: the protocol every model backend implements and the values it passes.

The pipeline (validator, auditor, eval) only ever sees
:class:`ChatModel`; the backends live in :mod:`bot.clients` (Ollama, embedded llama.cpp) and are
chosen in one table, :data:`bot.factory.BACKENDS`. This module imports no backend, so a
backend, the settings and the pipeline all depend on it and never on each other.

Every call is non-streaming and takes the role's :class:`RoleOptions` and, when given, a JSON
schema for structured output (:func:`structured_output_schema`). A reply cut at ``num_predict``
raises :class:`~bot.errors.ModelTruncated`: a truncated reply is an error, never a result; a
prompt that does not fit the role's context raises :class:`~bot.errors.ModelPromptTooLong`
(:func:`check_prompt_fits`, one rule for every backend).

What each call cost travels with the outcome as a :class:`CallUsage`, so a run says where the
time went: the step summary and the dry-run plan show one per call.
"""

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
    """One chat turn: ``role`` is ``system``, ``user`` or ``assistant``; ``content`` is text."""

    role: Role
    content: str


@dataclass(frozen=True)
class RoleOptions:
    """Per-role generation options (each role gets the effort its task needs; Ollama's
    ``options``).

    Attributes:
        temperature: sampling temperature (0 = greedy).
        num_predict: maximum output tokens; reaching it is truncation (an error).
        num_ctx: context window in tokens; constant per role (changing it reloads the model in
            Ollama and drops its prompt cache).
        seed: sampling seed, for reproducible runs.
    """

    temperature: float
    num_predict: int
    num_ctx: int
    seed: int = 42


@dataclass(frozen=True)
class ChatResult:
    """What one chat call produced.

    Attributes:
        text: the assistant message content (may be empty: the caller's parser decides).
        done_reason: ``stop`` normally (``length`` never gets here: it raises).
        model: the model name (Ollama tag or GGUF file name).
        prompt_tokens: the prompt's tokens (embedded: the whole prompt, llama.cpp's
            ``usage.prompt_tokens``; Ollama: ``prompt_eval_count``, which some Ollama versions
            count without the tokens reused from its cache).
        output_tokens: tokens generated (Ollama ``eval_count``).
        duration_ms: the model's own time for the call in ms (Ollama ``total_duration``; the
            embedded backend times the llama.cpp call).
        prompt_eval_tokens: prompt tokens actually run through the model, the rest having come
            from the prompt cache (embedded: llama.cpp's ``n_p_eval`` perf counter); ``None``
            when the backend does not report it separately.
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
    """What one model call cost: a line of the step summary and the dry-run plan.

    Numbers only (trusted); whatever names the call (a segment's path) is the caller's to pass
    through a sink.

    Attributes:
        role: ``validator`` or ``auditor``.
        turn: ``first``, or ``repair`` (the auditor's one repair turn).
        duration_ms: the model's own time for the call (ms; :attr:`ChatResult.duration_ms`).
        prompt_tokens: the whole prompt (tokens).
        output_tokens: tokens generated.
        prompt_eval_tokens: prompt tokens actually evaluated, the rest reused from the prompt
            cache; ``None`` when the backend does not say (Ollama).
    """

    role: ModelRole
    turn: Turn
    duration_ms: float
    prompt_tokens: int
    output_tokens: int
    prompt_eval_tokens: int | None = None

    @property
    def reused_tokens(self) -> int | None:
        """Prompt tokens taken from the prompt cache: ``prompt_tokens - prompt_eval_tokens``
        (never below 0), or ``None`` when the backend did not report what it evaluated."""
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
        """The usage of a call that ran and then failed (a reply cut at ``num_predict``, a
        prompt over ``num_ctx``), or ``None`` when the error carries no cost: no call ran, or
        the backend failed before saying (:class:`~bot.errors.ModelError`'s figures are 0)."""
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
    """Fail closed when a call's prompt plus the role's ``num_predict`` exceeds its ``num_ctx``.

    The rule, for every backend: ``prompt_tokens + options.num_predict <= options.num_ctx``,
    where ``prompt_tokens`` is what the backend reports it evaluated (Ollama's
    ``prompt_eval_count``, llama.cpp's ``usage.prompt_tokens``). Why this rule:

    - Ollama truncates silently. A prompt longer than ``num_ctx`` is cut by its runner to
      exactly ``num_ctx`` tokens (the first ``num_keep`` and the tail; a ``truncating input
      prompt`` line in the server's log, nothing in the reply), and ``prompt_eval_count`` is
      the length after the cut. So a count equal to ``num_ctx`` is the sign of truncation; the
      client cannot count tokens before sending (the API has no tokenizer endpoint), so the
      check comes after the call. A prompt that really is ``num_ctx`` tokens long leaves no
      room for a reply, so nothing valid is refused by taking the count as the sign.
    - A prompt that fits but leaves less than ``num_predict`` tokens makes Ollama shift the
      context during the reply (it drops half of the prompt after ``num_keep``), again without
      saying so; the embedded backend already refused exactly that case. One rule for both
      backends keeps the eval's figures (measured embedded) true on Ollama.
    - Failing closed is the project's rule for any reply the bot cannot vouch for (as for a
      reply cut at ``num_predict``): the gate labels ``validator-error``, the audit rejects the
      segment; the message carries the token counts for the summary.

    What it cannot see: a server that reports fewer prompt tokens than it kept (some Ollama
    versions count only the tokens not taken from the prompt cache) hides a cut; the check
    then passes, as it does on a prompt that fits.

    Args:
        options: the role's options (``num_ctx``, ``num_predict``).
        prompt_tokens / output_tokens / duration_ms: what the call reported (its cost).
        prompt_eval_tokens: of ``prompt_tokens``, those evaluated (not from the prompt cache);
            ``None`` when the backend does not say. Only carried into the error.
        detail: a backend's words appended to the message (e.g. Ollama's silent cut).

    Raises:
        ModelPromptTooLong: the prompt does not fit, with the call's cost.
    """
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
        """Run one non-streaming chat call.

        Args:
            messages: system turn first (stable text), variable text last (prompt-cache order).
            options: the role's options.
            schema: a JSON schema for structured output, or ``None`` for free text.

        Raises:
            ModelError: any subclass; ``ModelTruncated`` when ``num_predict`` was reached,
                ``ModelPromptTooLong`` when the prompt did not fit (:func:`check_prompt_fits`).
        """
        ...


_DROPPED = ("maxLength", "minLength", "maxItems", "minItems", "description", "title")


def structured_output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema sent as structured output for a pydantic model: no length bounds, no
    titles or descriptions.

    Both backends compile the schema to a grammar; a bounded repetition such as
    ``maxLength: 1200`` becomes 1200 nested grammar rules, and llama.cpp's sampler crashes
    (SIGSEGV in ``llama_sampler_sample``) on such grammars. Lengths are enforced where they
    belong anyway: by ``model.model_validate_json`` on the reply (a schema constrains syntax,
    not values). Docstring descriptions are dropped too: small models copy
    them into their answers, and they are not part of the wire shape.
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
