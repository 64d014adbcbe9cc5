"""Recorded replies: a model's answers to the gate's or the auditor's prompt, judged again
without the model.

A replies file is JSONL of :class:`RecordedReply`, written by ``eval --save-replies`` or any
other runner. ``eval`` and ``calibrate --replies`` judge the gate's as a live run would; an
audit's repair turn is a line of its own (``turn: repair``) beside the segment's first reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.chat import ChatMessage, ChatResult, RoleOptions, Turn
from bot.errors import ConfigError, ModelError, ModelOutputError
from bot.evaluation.sets import jsonl_lines
from bot.policy_file import ModelName
from bot.regular_file import content_problems, field_names

__all__ = [
    "RecordedReply",
    "ReplayModel",
    "Replies",
    "ReplyPromptVersion",
    "audit_replies_jsonl",
    "load_replies",
    "replies_jsonl",
]

ReplyPromptVersion = Annotated[
    str, Field(pattern=r"^(validator|audit-(json|markdown)|repair-(json|markdown))@[0-9a-f]{8}$")
]
"""The prompt a reply answers: the gate's ``validator@SHA8``, an audit's first turn
``audit-FORMAT@SHA8``, its repair turn ``repair-FORMAT@SHA8``."""


class RecordedReply(BaseModel):
    """One line of a replies file."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    reply: str | None
    """The model's text; ``None`` when the call failed."""
    prompt_version: ReplyPromptVersion | None = None
    model: ModelName | None = None
    error: str | None = None
    """The fault's :attr:`~bot.errors.BotError.kind` when the call returned no reply."""
    turn: Turn = "first"
    """Which call of the item: its first, or the audit's one repair."""


@dataclass(frozen=True)
class Replies:
    """A loaded replies file: first replies by item id, an audit's repair replies apart."""

    path: Path
    by_id: dict[str, RecordedReply]
    repairs: dict[str, RecordedReply] = field(default_factory=dict)

    @property
    def prompt_versions(self) -> frozenset[str]:
        """The versions the first replies answer."""
        return frozenset(r.prompt_version for r in self.by_id.values() if r.prompt_version)

    @property
    def repair_versions(self) -> frozenset[str]:
        """The versions the repair replies answer."""
        return frozenset(r.prompt_version for r in self.repairs.values() if r.prompt_version)

    @property
    def model(self) -> str:
        """The one model the replies name, else ``replies:STEM`` after the file's name."""
        names = {r.model for r in (*self.by_id.values(), *self.repairs.values())}
        if len(names) == 1 and None not in names:
            return str(next(iter(names)))
        return f"replies:{self.path.stem}"

    def answering(self, prompt: str) -> Replies:
        """Only the lines answering ``prompt`` (``validator``, ``audit-json`` …) or naming none:
        one set's replies out of a file ``eval --only both --save-replies`` wrote."""

        def kept(lines: dict[str, RecordedReply]) -> dict[str, RecordedReply]:
            return {
                i: r
                for i, r in lines.items()
                if r.prompt_version is None or r.prompt_version.startswith(f"{prompt}@")
            }

        return Replies(self.path, kept(self.by_id), kept(self.repairs))

    def require(self, ids: Iterable[str]) -> None:
        """Check every item has a reply; :exc:`ConfigError` names the first ten missing."""
        missing = [i for i in ids if i not in self.by_id]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            )
            raise ConfigError(f"{self.path}: no recorded reply for {len(missing)} item(s): {shown}")


def load_replies(path: Path, *, what: str = "replies") -> Replies:
    """Read a replies file; :exc:`ConfigError` for a bad line, a repeated id and turn, or a
    repair reply with no first reply."""
    turns: dict[Turn, dict[str, RecordedReply]] = {"first": {}, "repair": {}}
    first_line: dict[tuple[str, Turn], int] = {}
    fields = field_names(RecordedReply)
    for number, line in jsonl_lines(path, what):
        try:
            reply = RecordedReply.model_validate_json(line)
        except ValidationError as exc:
            problem = content_problems(exc, fields, most=1)
            raise ConfigError(f"{what} {path}:{number}: not a recorded reply: {problem}") from None
        key = (reply.id, reply.turn)
        if key in first_line:
            raise ConfigError(
                f"{what} {path}:{number}: the same id and turn as line {first_line[key]} "
                "(one reply an item and turn)"
            )
        turns[reply.turn][reply.id] = reply
        first_line[key] = number
    alone = [i for i in turns["repair"] if i not in turns["first"]]
    if alone:
        at = first_line[(alone[0], "repair")]
        raise ConfigError(f"{what} {path}:{at}: a repair reply with no first reply for its id")
    return Replies(path, turns["first"], turns["repair"])


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
    """A :class:`~bot.chat.ChatModel` answering with the selected item's recorded reply or fault.

    The first call after :meth:`select` gets the item's first reply, the second its repair
    reply; items are replayed one at a time.
    """

    def __init__(self, replies: Replies) -> None:
        self.replies = replies
        self._current: str | None = None
        self._calls = 0

    @property
    def name(self) -> str:
        return self.replies.model

    def select(self, item_id: str) -> None:
        """Answer the next calls with this item's reply; :exc:`ConfigError` if it has none."""
        self.replies.require([item_id])
        self._current = item_id
        self._calls = 0

    def require(self, ids: Iterable[str]) -> None:
        self.replies.require(ids)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """The selected item's reply for this turn, costing nothing; its recorded fault as a
        :exc:`ModelError`.

        Raises :exc:`ConfigError` when no item is selected, or for a repair turn (the second
        call) the item has no reply for, or a third call.
        """
        if self._current is None:
            raise ConfigError("a recorded reply was asked for before an item was selected")
        self._calls += 1
        if self._calls == 1:
            recorded = self.replies.by_id[self._current]
        elif self._calls == 2 and self._current in self.replies.repairs:
            recorded = self.replies.repairs[self._current]
        else:
            raise ConfigError(
                f"{self.replies.path}: no recorded reply for call {self._calls} of "
                f"{self._current} (the replies answer another prompt or checker: record them again)"
            )
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


def audit_replies_jsonl(
    outcomes: Sequence[dict[str, Any]], *, versions: dict[Turn, str], model: str
) -> str:
    """An audit eval's calls, each segment's first and repair turn, as a replies file (JSONL).

    ``versions`` names the prompt each turn answers.
    """
    turns: tuple[Turn, Turn] = ("first", "repair")
    lines = []
    for o in outcomes:
        for turn, call in zip(turns, o["turns"], strict=False):
            line = RecordedReply(
                id=o["id"],
                reply=call["reply"],
                prompt_version=versions[turn],
                model=model,
                error=None if call["reply"] is not None else call["error"],
                turn=turn,
            )
            lines.append(json.dumps(line.model_dump(), ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")
