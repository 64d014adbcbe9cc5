"""A repository's own duplicate pairs and the pool they are ranked in (``dataset --duplicates``).

The rows have the shapes of a duplicate set (``pool.jsonl``: ``{id, title, body, created_at}``;
``pairs.jsonl``: ``{id, dup_of, direction_basis}``), which ``triage-bot eval --only duplicates``
reads. An issue closed as a duplicate (or as not planned) names the issue it duplicates by
GitHub's mark, the canonical issue of its last ``marked_as_duplicate`` event (GraphQL: REST's
event does not name it), or else by a maintainer's comment whose first line is "Duplicate of
#N", GitHub's own convention for marking one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bot.clients.github_port import DuplicateMark, ListedIssue, TimelineItem
from bot.dataset.rules import MAINTAINER_ASSOCIATIONS

__all__ = [
    "CANDIDATE_REASONS",
    "PAIRS_FILE",
    "POOL_FILE",
    "Basis",
    "FoundPair",
    "NoPair",
    "PairRow",
    "PoolRow",
    "canonical_of",
    "duplicate_of",
    "is_candidate",
    "stamp",
]

POOL_FILE = "pool.jsonl"
PAIRS_FILE = "pairs.jsonl"

CANDIDATE_REASONS = frozenset({"duplicate", "not_planned"})
"""The close reasons whose issues are read for a pair (GitHub's "close as duplicate" gives
``duplicate``; issues closed before it existed often say ``not_planned``)."""

Basis = Literal["marked_as_duplicate", "comment"]


class PoolRow(BaseModel):
    """One issue of the pool, its title and body as they are now."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    title: str
    body: str
    created_at: str
    """UTC, ``YYYY-MM-DDTHH:MM:SSZ``."""


class PairRow(BaseModel):
    """``id`` was closed as a duplicate of ``dup_of``; both are in the pool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    dup_of: str
    direction_basis: Basis


class FoundPair(BaseModel):
    """A pair as read, kept until the pool is complete: its canonical issue's number, and its
    repository when another (``None``: this one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dup_of: int
    repo: str | None = None
    basis: Basis
    pull: bool = False
    """GitHub names the canonical as a pull request."""


class NoPair(StrEnum):
    """Why a candidate issue, or a pair found, gives no pair row."""

    NONE_NAMED = "closed as a duplicate or not planned, naming no issue it duplicates"
    UNMARKED = "a maintainer took the duplicate mark back"
    ITSELF = "names itself as its canonical issue"
    OTHER_REPOSITORY = "its canonical issue is in another repository"
    PULL_REQUEST = "its canonical is a pull request"
    NOT_IN_POOL = "its canonical issue is not in the pool (deleted, transferred, or not read yet)"


_REF = re.compile(
    r"duplicate of\s+(?:https://github\.com/(?P<url_repo>[\w.-]+/[\w.-]+)/issues/"
    r"|(?P<repo>[\w.-]+/[\w.-]+)?#)(?P<number>[0-9]{1,10})",
    re.IGNORECASE,
)


def duplicate_of(body: str | None) -> tuple[str | None, int] | None:
    """The issue a comment marks its issue a duplicate of: its whole first line is "Duplicate
    of #N" (or ``OWNER/NAME#N``, or the issue's URL), in any case; (repository named, or
    ``None``; number), else ``None``."""
    first = (body or "").lstrip("\r\n").split("\n", 1)[0].strip()
    found = _REF.fullmatch(first)
    if found is None:
        return None
    return found["url_repo"] or found["repo"], int(found["number"])


def is_candidate(issue: ListedIssue) -> bool:
    """Whether ``issue`` is read for a pair: an issue closed as a duplicate or not planned."""
    return (
        not issue.pull_request
        and issue.state == "closed"
        and issue.state_reason in CANDIDATE_REASONS
    )


def _standing_mark(marks: Sequence[DuplicateMark]) -> DuplicateMark | None:
    """The last mark when it stands (not taken back); ``None`` when none stands."""
    return marks[-1] if marks and not marks[-1].undone else None


def canonical_of(
    repo: str, number: int, timeline: Sequence[TimelineItem], marks: Sequence[DuplicateMark]
) -> FoundPair | NoPair:
    """The issue ``number`` of ``repo`` duplicates: its standing duplicate mark's canonical,
    else the last maintainer comment (OWNER, MEMBER or COLLABORATOR) reading "Duplicate of
    #N". A mark taken back (the last one undone) gives none, whatever the comments say."""
    if marks and marks[-1].undone:
        return NoPair.UNMARKED
    mark = _standing_mark(marks)
    found: FoundPair | None = None
    if mark is not None and mark.canonical_number is not None:
        found = FoundPair(
            dup_of=mark.canonical_number,
            repo=mark.canonical_repo,
            basis="marked_as_duplicate",
            pull=mark.canonical_is_pull,
        )
    else:
        for item in reversed(timeline):
            if item.event != "commented" or item.author_association not in MAINTAINER_ASSOCIATIONS:
                continue
            named = duplicate_of(item.body)
            if named is not None:
                found = FoundPair(dup_of=named[1], repo=named[0], basis="comment")
                break
    if found is None:
        return NoPair.NONE_NAMED
    if found.repo is not None and found.repo.lower() == repo.lower():
        found = found.model_copy(update={"repo": None})
    if found.repo is None and found.dup_of == number:
        return NoPair.ITSELF
    return found


def stamp(issue: ListedIssue) -> str:
    """An issue's opening time as a pool row keeps it."""
    return issue.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
