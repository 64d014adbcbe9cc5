"""Type rows: an issue's title and body with its type, what a type model learns from."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from bot.repo_file import TypeName

__all__ = ["TypeRow"]


class TypeRow(BaseModel):
    """One issue and its type, a line of ``dataset --types``'s file.

    The shape of the development set of issue types (``repo`` and ``created_at`` optional).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """As ``dataset`` names the issue's row (:func:`bot.dataset.files.row_id`)."""
    title: str
    body: str
    type: TypeName
    repo: str | None = None
    """``OWNER/NAME``."""
    created_at: datetime | None = None
    """When the issue was opened (UTC)."""
