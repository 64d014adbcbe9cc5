"""Labelled eval sets (``evals/*.jsonl``): their wire shapes and loader.

Every item is written by this project (no third-party text) with an expected outcome and a
one-line rationale. Issues: the verdict a careful maintainer would give; injection items also
carry the verdict their text tries to force. Segments: whether the code has a known defect and
on which lines; a defect segment's fixed twin is the same code with only the defect
repaired, linked by ``twin_of``.
"""

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
    """complete-bug, feature, question, vague, unfilled-template, long-log, non-english,
    injection, … (free text; reports group by it)."""
    title: str
    body: str
    expected: Literal["VALID", "NEEDS_REFINEMENT"]
    rationale: str
    borderline: bool = False
    forced: Literal["VALID", "NEEDS_REFINEMENT"] | None = None
    """For injection items: the verdict the planted text tries to force."""


Half = Literal["tune", "check"]

DEV_SPLIT_SALT = "triage-bot-dev-split:"
"""The fixed salt of the development split. Never change it: every figure reported
per half since the split was made names these halves."""


def dev_half(item_id: str) -> Half:
    """The half of the development set an item belongs to, fixed once for all runs.

    ``tune`` when the first byte of ``sha256(DEV_SPLIT_SALT + id)`` is even, else ``check``:
    no item moves when items are added, and nobody chose which item goes where. On the
    development set (82 real issues, named in ``evals/README.md``) this gives 41 / 41, each
    20-21 VALID.
    Prompts and rules are tuned on ``tune`` only; ``check`` is reported every time beside it.
    """
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
    """File lines where the known defect shows (empty for clean segments)."""
    category: str = ""
    """off-by-one, injection, resource-leak, wrong-condition, unchecked-error, race, … or clean."""
    twin_of: str | None = None
    """For a fixed twin: the id of the defect segment it repairs. A twin has the same
    path and start, ``defect`` false, and differs from its defect segment only by the fix, so a
    model that tells the two apart judged the defect, not the file or the shape of the code."""
    rationale: str

    @property
    def lines(self) -> list[str]:
        """The code's lines."""
        return self.code.split("\n")

    @property
    def end(self) -> int:
        """The last file line of the segment."""
        return self.start + len(self.lines) - 1


def jsonl_lines(path: Path, what: str) -> list[tuple[int, str]]:
    """The lines of a JSONL file (UTF-8) with their numbers from 1, blank lines skipped.

    Lines end at LF only (CRLF read as LF): JSON escapes every other line break it must, and
    the writers here (``json.dumps(ensure_ascii=False)``, pydantic) leave U+2028, U+2029 and
    U+0085 raw inside strings, where ``str.splitlines`` would cut a line.

    Raises:
        ConfigError: the file cannot be read, is not a regular file, is larger than
            :data:`~bot.regular_file.MAX_INPUT_BYTES` or is not UTF-8 (``what`` names it;
            :func:`~bot.regular_file.read_input`).
    """
    text = read_input(path, what=what)
    return [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


def load_jsonl(path: Path, model: type[T], *, what: str = "eval set") -> list[T]:
    """Read one JSON object per line (:func:`jsonl_lines`) into ``model``.

    Raises:
        ConfigError: the file cannot be read (:func:`jsonl_lines`), or a line is not a valid
            item (``what``, the file, the line and the field are named, not what the line
            holds).
    """
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
