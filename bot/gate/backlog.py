"""A ``triage-bot backlog`` run: which open issues it judges, and in what order. It writes nothing.

Both selections resume from what the last run left (labels, stored decisions), not a cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.clients.github_port import GitHubPort, LabelEvent
from bot.errors import ModelNotFound, ModelUnavailable
from bot.gate.labels import DEFAULT_LABELS, GateLabels
from bot.gate.plan import hand_set_label
from bot.history.protocol import HistoryStore

__all__ = [
    "BACKLOG_LIMIT",
    "OUTAGE_KINDS",
    "Backlog",
    "BacklogItem",
    "BacklogSelection",
    "select_backlog",
]

BACKLOG_LIMIT = 50
"""Most issues one backlog run judges unless told otherwise (``--limit``; the scheduled run)."""

OUTAGE_KINDS = frozenset({ModelUnavailable.kind, ModelNotFound.kind})
"""Fault kinds that say the model is still out: a ``--retry-errors`` run stops at the first."""


def _no_progress(done: int, total: int) -> None:
    pass


@dataclass(frozen=True)
class Backlog:
    """A backlog run for :func:`bot.gate.run`; ``on_progress(done, total)`` follows each issue."""

    repo: str
    limit: int = BACKLOG_LIMIT
    retry_errors: bool = False
    on_progress: Callable[[int, int], None] = _no_progress


@dataclass(frozen=True)
class BacklogItem:
    """One issue to judge (payload shape), its stored last decision, its events if read."""

    issue: dict[str, Any]
    last: Mapping[str, Any] | None
    events: tuple[LabelEvent, ...] | None = None


@dataclass(frozen=True)
class BacklogSelection:
    """The issues to judge, in order, and ``(number, label)`` of those with a hand-set label."""

    todo: tuple[BacklogItem, ...]
    hand_set: tuple[tuple[int, str], ...] = ()


def _gate_labels(issue: dict[str, Any], gate: GateLabels) -> list[str]:
    return [lab["name"] for lab in issue["labels"] if gate.is_gate(lab["name"])]


def _last_was_error(last: dict[str, Any] | None, error: str) -> bool:
    return last is not None and (
        bool(last.get("error_kind")) or str(last.get("label", "")).lower() == error
    )


def select_backlog(
    repo: str,
    issues: Iterable[dict[str, Any]],
    store: HistoryStore,
    github: GitHubPort,
    *,
    limit: int,
    retry_errors: bool = False,
    gate: GateLabels = DEFAULT_LABELS,
) -> BacklogSelection:
    """The open issues (no pull requests) a backlog run judges, at most ``limit``.

    Plain: no gate label and no stored decision. ``retry_errors``: the only gate label, or the
    last decision of an unlabelled issue, is ``validator-error``; oldest decision first, and a
    hand-set ``validator-error`` is left alone.

    Raises:
        GitHubError: an issue's events could not be read.
        StoreError: the store could not be read.
    """
    if not retry_errors:
        plain = [
            BacklogItem(issue, None)
            for issue in issues
            if not _gate_labels(issue, gate) and store.last_gate(repo, issue["number"]) is None
        ]
        return BacklogSelection(tuple(plain[:limit]))
    candidates: list[tuple[int, BacklogItem, bool]] = []
    for issue in issues:
        labels = _gate_labels(issue, gate)
        last = store.last_gate(repo, issue["number"])
        error = gate.validator_error.name.lower()
        if [name.lower() for name in labels] == [error] or (
            not labels and _last_was_error(last, error)
        ):
            item = BacklogItem(issue, last)
            candidates.append((int(last["id"]) if last else 0, item, bool(labels)))
    candidates.sort(key=lambda entry: entry[0])  # oldest decision first; stable otherwise
    todo: list[BacklogItem] = []
    hand_set: list[tuple[int, str]] = []
    for _, item, labelled in candidates:
        if len(todo) == limit:
            break
        number = item.issue["number"]
        if labelled:
            events = github.label_events(repo, number)
            person = hand_set_label(_gate_labels(item.issue, gate), events, login=github.login)
            if person is not None:
                hand_set.append((number, person))
                continue
            item = BacklogItem(item.issue, item.last, tuple(events))
        todo.append(item)
    return BacklogSelection(tuple(todo), tuple(hand_set))
