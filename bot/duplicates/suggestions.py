"""An issue's possible duplicates in the store: as last ranked, as said, and dismissed.

One ``duplicate_suggestions`` row per issue: its top candidate and score at the gate's last
ranking (kept whether or not anything was said, so the statement can be settled against what
maintainers did later), the candidates last suggested on the issue (numbers, best first) and
when; a maintainer's dismissal (``/duplicates dismiss`` or removing the ``possible-duplicate``
label) and who made it. A dismissed issue is never suggested again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from bot.history.protocol import HistoryStore, KeyedTable, utc_now

__all__ = [
    "TABLE",
    "Suggestion",
    "dismiss",
    "record_ranking",
    "record_suggestion",
    "settle_suggestion",
    "suggestion",
]

TABLE = "duplicate_suggestions"


@dataclass(frozen=True)
class Suggestion:
    """An issue's row: candidates suggested (best first), when, and its dismissal if any."""

    candidates: tuple[int, ...]
    top: int | None
    top_score: float | None
    suggested_at: str | None
    dismissed_at: str | None
    dismissed_by: str | None
    outcome: str | None = None
    """``right``: the issue was closed as a duplicate of ``top``; ``wrong``: closed otherwise,
    as a duplicate of another issue, or dismissed; ``None``: not settled."""

    @property
    def dismissed(self) -> bool:
        return self.dismissed_at is not None


def suggestion(store: HistoryStore, repo: str, issue: int) -> Suggestion | None:
    """The issue's row, or ``None``.

    Raises:
        StoreError: the read failed.
    """
    row = store.get(TABLE, {"repo": repo, "issue": issue})
    if row is None:
        return None
    return Suggestion(
        tuple(int(n) for n in json.loads(row["candidates"])),
        None if row["top"] is None else int(row["top"]),
        None if row["top_score"] is None else float(row["top_score"]),
        row["suggested_at"],
        row["dismissed_at"],
        row["dismissed_by"],
        row["outcome"],
    )


def _upsert(store: HistoryStore, repo: str, issue: int, **values: object) -> None:
    key = {"repo": repo, "issue": issue}

    def change(table: KeyedTable) -> None:
        if table.count(key):
            table.update(key, values)
        else:
            table.insert({**key, "candidates": "[]", **values})

    store.change(TABLE, change)


def record_ranking(
    store: HistoryStore, repo: str, issue: int, top: int | None, score: float
) -> None:
    """Record the issue's top candidate and its score at this ranking (now); ``None``: none.

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    _upsert(
        store,
        repo,
        issue,
        top=top,
        top_score=score if top is not None else None,
        ranked_at=utc_now(),
        outcome=None,
        settled_at=None,
    )


def record_suggestion(
    store: HistoryStore, repo: str, issue: int, candidates: Sequence[int]
) -> None:
    """Record that the bot suggested ``candidates`` on the issue (now).

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    _upsert(store, repo, issue, candidates=json.dumps(list(candidates)), suggested_at=utc_now())


def settle_suggestion(store: HistoryStore, repo: str, issue: int, outcome: str) -> None:
    """Record what became of the issue's top candidate (``right`` or ``wrong``; now).

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    _upsert(store, repo, issue, outcome=outcome, settled_at=utc_now())


def dismiss(store: HistoryStore, repo: str, issue: int, by: str) -> None:
    """Record a maintainer's dismissal of the issue's suggestions (now); ``by`` is their login.

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    _upsert(store, repo, issue, dismissed_at=utc_now(), dismissed_by=by)


_SETTLED_SQL = (
    f"select top_score, outcome from {TABLE} where repo = ? "  # noqa: S608
    "and top is not null and outcome is not null"
)


def settled_record(store: HistoryStore, repo: str) -> list[tuple[float, bool]]:
    """The repository's settled rankings: each top candidate's score and whether it was right.

    Raises:
        StoreError: the read failed.
    """
    rows = store.fetch(_SETTLED_SQL, [repo])
    return [(float(score), outcome == "right") for score, outcome in rows]
