"""An in-memory GitHub for settling (implements ``SettlePort``): issues, timelines and edit
histories kept as GitHub's wire JSON (built with :mod:`tests.support.dataset_world`, whose
shapes follow GitHub's docs and real recordings) and parsed by the client's own parsers, so a
test reads what the PyGithub adapter would.

``requests`` counts each port call by kind (``list``, ``timeline``, ``graphql``): one HTTP
request each, as the adapter makes them (a timeline of more than 100 events costs more pages,
counted as such). ``fail`` queues an exception for the next call of a kind.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.clients.github_port import (
    DuplicateMark,
    EditHistory,
    IssuePage,
    RateLimit,
    TimelineItem,
)
from bot.clients.issue_history import (
    parse_duplicate_marks,
    parse_edit_histories,
    parse_issue_page,
    parse_timeline_item,
)
from tests.support.dataset_world import REPO, node_id, stamp

__all__ = ["SettleGitHub"]

PER_PAGE = 100


@dataclass
class SettleGitHub:
    """Issues by number (``GET /issues`` items), their timelines and GraphQL edit nodes."""

    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    timelines: dict[int, list[dict[str, Any]] | None] = field(default_factory=dict)
    edit_nodes: dict[int, dict[str, Any]] = field(default_factory=dict)
    marks: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """GraphQL ``MarkedAsDuplicateEvent`` / ``UnmarkedAsDuplicateEvent`` nodes by issue."""
    requests: Counter[str] = field(default_factory=Counter)
    faults: dict[str, list[BaseException]] = field(default_factory=lambda: defaultdict(list))

    def put(
        self,
        item: dict[str, Any],
        timeline: list[dict[str, Any]] | None,
        edits: dict[str, Any] | None = None,
        *,
        updated: datetime,
        state: str = "closed",
    ) -> None:
        """Keep an issue as GitHub would list it, updated at ``updated``."""
        number = int(item["number"])
        self.items[number] = {**item, "updated_at": stamp(updated), "state": state}
        self.timelines[number] = timeline
        if edits is not None:
            self.edit_nodes[number] = edits

    def fail(self, kind: str, exc: BaseException, times: int = 1) -> None:
        """Make the next ``times`` calls of ``kind`` raise ``exc`` (before any effect)."""
        self.faults[kind].extend([exc] * times)

    def _enter(self, kind: str, pages: int = 1) -> None:
        if self.faults[kind]:
            self.requests[kind] += 1
            raise self.faults[kind].pop(0)
        self.requests[kind] += pages

    def updated_issues_page(self, repo: str, page: int, *, since: datetime | None) -> IssuePage:
        self._enter("list")
        ordered = sorted(self.items.values(), key=lambda i: (i["updated_at"], i["number"]))
        if since is not None:
            ordered = [i for i in ordered if i["updated_at"] >= stamp(since)]
        chunk = ordered[(page - 1) * PER_PAGE : page * PER_PAGE]
        issues = parse_issue_page(chunk, what="list")
        return IssuePage(issues, None, has_next=len(ordered) > page * PER_PAGE)

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        raw = self.timelines.get(number)
        self._enter("timeline", max(1, -(-len(raw or ()) // PER_PAGE)))
        if raw is None:
            return None
        return [item for event in raw if (item := parse_timeline_item(event, REPO))]

    def edit_histories(self, node_ids: Sequence[str]) -> dict[str, EditHistory]:
        self._enter("graphql")
        by_node = {node_id(n): node for n, node in self.edit_nodes.items()}
        nodes = [by_node.get(i, {"id": i, "userContentEdits": {"nodes": []}}) for i in node_ids]
        return parse_edit_histories({"data": {"nodes": nodes}}, what="edits")

    def duplicate_marks(self, node_ids: Sequence[str]) -> dict[str, tuple[DuplicateMark, ...]]:
        self._enter("graphql")
        by_node = {node_id(n): n for n in self.items}
        nodes = [
            {"id": i, "timelineItems": {"nodes": self.marks.get(by_node[i], [])}}
            if i in by_node
            else None
            for i in node_ids
        ]
        return parse_duplicate_marks({"data": {"nodes": nodes}}, what="marks")

    def rate_limit(self) -> RateLimit | None:
        return None

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        return None

    @property
    def total(self) -> int:
        return sum(self.requests.values())
