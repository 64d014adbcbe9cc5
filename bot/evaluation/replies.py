"""Recorded replies: a model's answers to the gate's prompt, judged again without the model.

A replies file is JSONL of :class:`RecordedReply`, written by ``eval --save-replies`` or any
other runner. ``eval`` and ``calibrate --replies`` judge them as a live run would.
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
from bot.policy_file import ModelName, PromptVersion
from bot.regular_file import content_problems, field_names

__all__ = ["RecordedReply", "ReplayModel", "Replies", "load_replies", "replies_jsonl"]


class RecordedReply(BaseModel):
    """One line of a replies file."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    reply: str | None
    """The model's text; ``None`` when the call failed."""
    prompt_version: PromptVersion | None = None
    """The validator prompt version answered, ``validator@SHA8``."""
    model: ModelName | None = None
    error: str | None = None
    """The fault's :attr:`~bot.errors.BotError.kind` when the call returned no reply."""


@dataclass(frozen=True)
class Replies:
    """A loaded replies file, by item id."""

    path: Path
    by_id: dict[str, RecordedReply]

    @property
    def prompt_versions(self) -> frozenset[str]:
        return frozenset(r.prompt_version for r in self.by_id.values() if r.prompt_version)

    @property
    def model(self) -> str:
        """The one model the replies name, else ``replies:STEM`` after the file's name."""
        names = {r.model for r in self.by_id.values()}
        if len(names) == 1 and None not in names:
            return str(next(iter(names)))
        return f"replies:{self.path.stem}"

    def require(self, ids: Iterable[str]) -> None:
        """Check every item has a reply; :exc:`ConfigError` names the first ten missing."""
        missing = [i for i in ids if i not in self.by_id]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            )
            raise ConfigError(f"{self.path}: no recorded reply for {len(missing)} item(s): {shown}")


def load_replies(path: Path, *, what: str = "replies") -> Replies:
    """Read a replies file; :exc:`ConfigError` for a bad line or a repeated id."""
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
    # ModelOutputError for a kind the tree does not know.
    pending: list[type[ModelError]] = [ModelError]
    while pending:
        cls = pending.pop()
        if cls.kind == kind:
            return cls
        pending += cls.__subclasses__()
    return ModelOutputError


class ReplayModel:
    """A :class:`~bot.chat.ChatModel` answering with the selected item's recorded reply or fault."""

    def __init__(self, replies: Replies) -> None:
        self.replies = replies
        self._current: str | None = None

    @property
    def name(self) -> str:
        return self.replies.model

    def select(self, item_id: str) -> None:
        """Answer the next calls with this item's reply; :exc:`ConfigError` if it has none."""
        self.replies.require([item_id])
        self._current = item_id

    def require(self, ids: Iterable[str]) -> None:
        self.replies.require(ids)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """The selected item's reply, costing nothing; its recorded fault as a :exc:`ModelError`.

        Raises :exc:`ConfigError` when no item is selected.
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
    """An eval's gate outcomes as a replies file (JSONL)."""
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
