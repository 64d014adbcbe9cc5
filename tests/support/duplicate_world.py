"""A repository's issues of every state for ``dataset --duplicates`` and ``triage-bot index``:
open ones, closed ones, and issues closed as duplicates by each rule (the duplicate mark's
canonical, a maintainer's "Duplicate of #N") and by each way a pair is left out, as GitHub's wire
JSON (the shapes of :mod:`tests.support.dataset_world`) with the pair each must give.

Shapes: GitHub's GraphQL docs (``MarkedAsDuplicateEvent``, ``UnmarkedAsDuplicateEvent``:
``canonical`` an ``IssueOrPullRequest``; ``Issue.timelineItems(itemTypes:)``) and REST docs
("List repository issues": ``state=all``; "Issue event types": ``marked_as_duplicate`` carries the
common event fields only), with the objects of :mod:`tests.support.dataset_world`. Written to
those shapes here: no GitHub is reachable where this project is built.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tests.support.dataset_world import (
    API,
    MAINTAINER,
    OTHER_REPO,
    REPO,
    REPORTER,
    T0,
    Scenario,
    _event,
    closed,
    commented,
    issue_item,
    stamp,
)

__all__ = ["PAIRS", "PULL", "WORLD", "many", "marked", "unmarked", "world"]

PULL = 100_005
"""A pull request the loopback lists (its default ``pulls_every`` of 4 adds one for the fifth
scenario, numbered 100,000 past it)."""


def _canonical(number: int, repo: str = REPO, kind: str = "Issue") -> dict[str, Any]:
    return {"__typename": kind, "number": number, "repository": {"nameWithOwner": repo}}


def marked(at: datetime, number: int, repo: str = REPO, kind: str = "Issue") -> dict[str, Any]:
    """A GraphQL ``MarkedAsDuplicateEvent`` naming its canonical."""
    return {
        "__typename": "MarkedAsDuplicateEvent",
        "createdAt": stamp(at),
        "canonical": _canonical(number, repo, kind),
    }


def unmarked(at: datetime, number: int) -> dict[str, Any]:
    """A GraphQL ``UnmarkedAsDuplicateEvent``."""
    return {**marked(at, number), "__typename": "UnmarkedAsDuplicateEvent"}


def rest_marked(at: datetime) -> dict[str, Any]:
    """REST's ``marked_as_duplicate`` timeline event: no canonical in it."""
    return _event("marked_as_duplicate", at, MAINTAINER)


def _item(number: int, title: str, body: str, at: datetime, **fields: Any) -> dict[str, Any]:
    item = issue_item(number, title=title, body=body, created=at, **fields)
    if item["state_reason"] is None and not item.get("pull_request"):
        item.update(state="open", closed_at=None)
    return item


def _scenario(
    number: int,
    title: str,
    body: str,
    *,
    reason: str | None = None,
    timeline: list[dict[str, Any]] | None = None,
    marks: list[dict[str, Any]] | None = None,
    pair: tuple[int, str] | str | None = None,
    item: dict[str, Any] | None = None,
) -> Scenario:
    """Issue ``number``: open without ``reason``, else closed for it; ``pair`` is the
    (canonical, basis) it must give, or the name of why it gives none."""
    at = T0 + timedelta(hours=number)
    wire = item or _item(number, title, body, at, state_reason=reason)
    scenario = Scenario(f"issue {number}", number, wire, timeline or [], title=title, body=body)
    scenario.extra = {"marks": marks or [], "pair": pair}
    return scenario


def world() -> list[Scenario]:
    """Eleven issues: two canonicals (open), one fixed, and closed ones with their pairs."""
    t = T0
    return [
        _scenario(1, "Export drops the last row", "tool export --format csv loses a row"),
        _scenario(2, "Docs typo", "README says exprot", reason="completed"),
        _scenario(3, "Crash on start with an empty config", "segfault when config.yml is empty"),
        _scenario(
            4,
            "Segfault at launch",
            "empty config file crashes it",
            reason="duplicate",
            timeline=[
                commented(t + timedelta(hours=5), "Duplicate of #3"),
                rest_marked(t + timedelta(hours=5)),
                closed(t + timedelta(hours=5), reason="duplicate"),
            ],
            marks=[marked(t + timedelta(hours=5), 3)],
            pair=(3, "marked_as_duplicate"),
        ),
        _scenario(
            5,
            "CSV export misses rows",
            "the last line is missing",
            reason="not_planned",
            timeline=[
                commented(t + timedelta(hours=6), "duplicate of #1\n\nThanks for the report!"),
                closed(t + timedelta(hours=6), reason="not_planned"),
            ],
            pair=(1, "comment"),
        ),
        _scenario(
            6,
            "Crash again",
            "it crashes",
            reason="duplicate",
            timeline=[
                commented(t + timedelta(hours=7), "Duplicate of #3", REPORTER, "NONE"),
                commented(t + timedelta(hours=7), "Could this be a duplicate of #1?"),
                closed(t + timedelta(hours=8), reason="duplicate"),
            ],
            pair="NONE_NAMED",
        ),
        _scenario(
            7,
            "Upstream bug",
            "the parser library fails",
            reason="duplicate",
            timeline=[closed(t + timedelta(hours=8), reason="duplicate")],
            marks=[marked(t + timedelta(hours=8), 9, OTHER_REPO)],
            pair="OTHER_REPOSITORY",
        ),
        _scenario(
            8,
            "Fixed by the open pull request",
            "see the pull request",
            reason="duplicate",
            timeline=[
                commented(t + timedelta(hours=9), f"Duplicate of #{PULL}"),
                closed(t + timedelta(hours=9), reason="duplicate"),
            ],
            pair="PULL_REQUEST",
        ),
        _scenario(
            9,
            "Maybe the same crash",
            "crash on start",
            reason="not_planned",
            timeline=[
                commented(t + timedelta(hours=10), "Duplicate of #3"),
                closed(t + timedelta(hours=12), reason="not_planned"),
            ],
            marks=[
                marked(t + timedelta(hours=10), 3),
                unmarked(t + timedelta(hours=11), 3),
            ],
            pair="UNMARKED",
        ),
        _scenario(
            10,
            "Same as a deleted issue",
            "see the old one",
            reason="duplicate",
            timeline=[
                commented(t + timedelta(hours=11), f"Duplicate of {API}/repos/x/y#2"),
                commented(t + timedelta(hours=11), "Duplicate of #999"),
                closed(t + timedelta(hours=11), reason="duplicate"),
            ],
            pair="NOT_IN_POOL",
        ),
        _scenario(
            11,
            "Moved away",
            "now in the other repository",
            item={
                **_item(11, "Moved away", "now in the other repository", t + timedelta(hours=11)),
                "repository_url": f"{API}/repos/{OTHER_REPO}",
            },
            pair="TRANSFERRED",
        ),
    ]


def many(count: int, *, first: int = 1) -> list[Scenario]:
    """``count`` open issues numbered from ``first``, opened (and updated) an hour apart, each
    with words of its own (a backfill's load)."""
    return [
        _scenario(n, f"Report {n}: export fails on sheet {n % 97}", f"Steps {n}: run export {n}.")
        for n in range(first, first + count)
    ]


WORLD = world()

PAIRS: dict[int, tuple[int, str] | str | None] = {s.number: s.extra["pair"] for s in WORLD}
"""Issue → the pair it gives (canonical, basis), or why it gives none."""
