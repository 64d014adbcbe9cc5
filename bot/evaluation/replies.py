"""Recorded replies: a model's answers to the gate's prompt, judged again without the model.

A replies file is JSONL, one object per issue: ``{"id": ..., "reply": ...}`` and, optionally,
``prompt_version`` (the validator prompt the reply answers), ``model`` (who wrote it) and
``error`` (the fault's kind when the recorded call returned no reply, with ``reply`` null).
``triage-bot eval --save-replies`` writes one; a model run elsewhere (a GPU box, another
server) can write the same shape. ``eval --replies`` and ``calibrate --replies`` feed each item's
reply through the same parsing, checks and policy as a live run (:class:`ReplayModel`), so a
policy can be chosen and a model measured without calling it again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.chat import ChatMessage, ChatResult, RoleOptions
from bot.errors import ConfigError, ModelError, ModelOutputError
from bot.evaluation.sets import jsonl_lines
from bot.gate_policy import ModelName, PromptVersion
from bot.regular_file import content_problems, field_names

__all__ = ["RecordedReply", "ReplayModel", "Replies", "load_replies", "replies_jsonl"]


class RecordedReply(BaseModel):
    """One line of a replies file."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    """The eval item's id."""
    reply: str | None
    """The reply's text as the model returned it; ``null`` when the call failed."""
    prompt_version: PromptVersion | None = None
    """The validator prompt version the reply answers (``validator@SHA8``)."""
    model: ModelName | None = None
    """The model that wrote it."""
    error: str | None = None
    """The fault's kind (:attr:`bot.errors.BotError.kind`) when the call returned no reply."""


@dataclass(frozen=True)
class Replies:
    """A loaded replies file.

    Attributes:
        path: where it was read from.
        by_id: item id → its recorded reply.
    """

    path: Path
    by_id: dict[str, RecordedReply]

    @property
    def prompt_versions(self) -> frozenset[str]:
        """The prompt versions the replies name (empty when none does)."""
        return frozenset(r.prompt_version for r in self.by_id.values() if r.prompt_version)

    @property
    def model(self) -> str:
        """The model the replies name when they all name the same one, else ``replies:STEM``
        after the file's name (for example ``replies:strong-model-replies``)."""
        names = {r.model for r in self.by_id.values()}
        if len(names) == 1 and None not in names:
            return str(next(iter(names)))
        return f"replies:{self.path.stem}"

    def require(self, ids: Iterable[str]) -> None:
        """Check every item has a reply.

        Raises:
            ConfigError: some do not; the message names them (the first ten).
        """
        missing = [i for i in ids if i not in self.by_id]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            )
            raise ConfigError(f"{self.path}: no recorded reply for {len(missing)} item(s): {shown}")


def load_replies(path: Path, *, what: str = "replies") -> Replies:
    """Read a replies file (see the module docstring; :func:`~bot.evaluation.sets.jsonl_lines`).

    Raises:
        ConfigError: the file cannot be read, a line is not a reply, or an id repeats
            (``what``, the file, the line and the field are named, not what the line holds).
    """
    by_id: dict[str, RecordedReply] = {}
    first_line: dict[str, int] = {}
    fields = field_names(RecordedReply)
    for number, line in jsonl_lines(path, what):
        try:
            reply = RecordedReply.model_validate_json(line)
        except ValidationError as exc:
            problem = content_problems(exc, fields, most=1)
            raise ConfigError(f"{what} {path}:{number}: not a recorded reply: {problem}") from None
        if reply.id in by_id:
            raise ConfigError(
                f"{what} {path}:{number}: the same id as line {first_line[reply.id]} "
                "(one reply an item)"
            )
        by_id[reply.id] = reply
        first_line[reply.id] = number
    return Replies(path, by_id)


def _fault_class(kind: str) -> type[ModelError]:
    """The :class:`ModelError` subclass whose ``kind`` this is (:class:`ModelOutputError` for a
    kind the tree does not know)."""
    pending: list[type[ModelError]] = [ModelError]
    while pending:
        cls = pending.pop()
        if cls.kind == kind:
            return cls
        pending += cls.__subclasses__()
    return ModelOutputError


class ReplayModel:
    """A :class:`~bot.chat.ChatModel` that answers with the recorded reply of the item
    :meth:`select` names: what a live call returned then, or the fault it raised."""

    def __init__(self, replies: Replies) -> None:
        self.replies = replies
        """The recorded replies."""
        self._current: str | None = None

    @property
    def name(self) -> str:
        """:attr:`Replies.model`."""
        return self.replies.model

    def select(self, item_id: str) -> None:
        """Answer the next calls with this item's reply.

        Raises:
            ConfigError: the item has no recorded reply.
        """
        self.replies.require([item_id])
        self._current = item_id

    def require(self, ids: Iterable[str]) -> None:
        """:meth:`Replies.require`."""
        self.replies.require(ids)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """The selected item's reply, with no tokens and no time spent.

        Raises:
            ModelError: the recorded call failed (the subclass of its recorded kind).
            ConfigError: no item is selected.
        """
        if self._current is None:
            raise ConfigError("a recorded reply was asked for before an item was selected")
        recorded = self.replies.by_id[self._current]
        if recorded.reply is None:
            kind = recorded.error or "unparseable"
            raise _fault_class(kind)(f"the recorded call failed ({kind})")
        return ChatResult(
            text=recorded.reply,
            done_reason="stop",
            model=self.name,
            prompt_tokens=0,
            output_tokens=0,
            duration_ms=0.0,
        )


def replies_jsonl(outcomes: Sequence[dict[str, Any]], *, prompt_version: str, model: str) -> str:
    """The replies of an eval's gate outcomes as a replies file (JSONL, one line per item)."""
    lines = []
    for o in outcomes:
        line = RecordedReply(
            id=o["id"],
            reply=o.get("reply"),
            prompt_version=prompt_version,
            model=model,
            error=None if o.get("reply") is not None else o.get("error_kind"),
        )
        lines.append(json.dumps(line.model_dump(), ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")
