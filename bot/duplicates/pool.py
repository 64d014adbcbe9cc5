"""The duplicate sets' rows: a pool of reports and the pairs its maintainers resolved."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["DuplicatePair", "PoolReport"]


class PoolReport(BaseModel):
    """One report of a pool: ``{id, title, body, created_at}``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    title: str
    body: str | None = None
    created_at: datetime

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @field_validator("created_at")
    @classmethod
    def _zoned(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class DuplicatePair(BaseModel):
    """``id`` was resolved as a duplicate of ``dup_of``; ``direction_basis`` says how."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    dup_of: str = Field(min_length=1)
    direction_basis: str | None = None

    @field_validator("id", "dup_of", mode="before")
    @classmethod
    def _id_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value
