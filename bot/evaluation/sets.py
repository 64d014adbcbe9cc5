"""Labelled eval sets (``evals/*.jsonl``): their wire shapes and loader."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.errors import ConfigError
from bot.regular_file import content_problems, field_names, read_input

__all__ = [
    "DEV_SPLIT_SALT",
    "EvalIssue",
    "EvalSegment",
    "Half",
    "dev_half",
    "jsonl_lines",
    "load_jsonl",
]

T = TypeVar("T", bound=BaseModel)


class EvalIssue(BaseModel):
    """One labelled issue."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    kind: str
    """Free text, e.g. ``vague`` or ``injection``; reports group by it."""
    title: str
    body: str
    expected: Literal["VALID", "NEEDS_REFINEMENT"]
    rationale: str
    borderline: bool = False
    forced: Literal["VALID", "NEEDS_REFINEMENT"] | None = None
    """The verdict an injection item's planted text tries to force."""


Half = Literal["tune", "check"]

DEV_SPLIT_SALT = "triage-bot-dev-split:"
"""The development split's salt. Never change it: every reported per-half figure names these."""


def dev_half(item_id: str) -> Half:
    """The development-set half of an item, by a hash of its id: no item moves when added."""
    digest = hashlib.sha256(f"{DEV_SPLIT_SALT}{item_id}".encode()).digest()
    return "tune" if digest[0] % 2 == 0 else "check"


class EvalSegment(BaseModel):
    """One labelled code segment (≤ 200 lines)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9-]+$")
    language: str
    path: str
    start: int = Field(ge=1)
    code: str
    defect: bool
    defect_lines: list[int] = Field(default_factory=list)
    """File lines where the known defect shows; empty when clean."""
    category: str = ""
    """E.g. ``off-by-one`` or ``race``; ``clean`` for no defect."""
    twin_of: str | None = None
    """A fixed twin's defect segment: same path and start, differing only by the fix."""
    rationale: str

    @property
    def lines(self) -> list[str]:
        return self.code.split("\n")

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1


def jsonl_lines(path: Path, what: str) -> list[tuple[int, str]]:
    """A UTF-8 JSONL file's non-blank lines, numbered from 1; :exc:`ConfigError` if unreadable."""
    # LF only: U+2028 and kin stay raw inside JSON strings, where splitlines() would cut.
    text = read_input(path, what=what)
    return [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


def load_jsonl(path: Path, model: type[T], *, what: str = "eval set") -> list[T]:
    """One ``model`` per line; :exc:`ConfigError` names a bad line and field, not its text."""
    items = []
    fields = field_names(model)
    for number, line in jsonl_lines(path, what):
        try:
            items.append(model.model_validate_json(line))
        except ValidationError as exc:
            problems = content_problems(exc, fields)
            raise ConfigError(
                f"{what} {path}:{number}: not a valid {model.__name__}: {problems}"
            ) from None
    return items
