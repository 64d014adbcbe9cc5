"""A ``triage-bot backlog`` run: what it is asked (:class:`Backlog`), which open issues it
judges, and in what order (:func:`select_backlog`).

Two selections over the repository's open issues (``GitHubPort.open_issues``, in payload
shape), both resumable because they read what the last run left behind (the issue's labels,
the store's last decision) rather than a cursor:

- **plain** (``backlog``): issues that carry no gate label and that the store holds no decision
  for. After a crash the next run carries on: every issue judged has a row.
- **retry errors** (``backlog --retry-errors``, and the scheduled run of the example workflow):
  issues whose last decision was ``validator-error`` (an Ollama outage, a model not pulled, a
  prompt over ``num_ctx``): the issue's only gate label is ``validator-error``, or it carries
  no gate label and the store's last decision is ``validator-error``. An issue with another gate
  label is not one: a person or a later run gave it a verdict, whatever the store says. A
  ``validator-error`` label a maintainer added by hand is never touched (the hand-set rule of
  :func:`bot.gate.plan.hand_set_label`, asked of GitHub: one read per issue about to be re-judged,
  the cost :func:`bot.gate.plan.asks_who_labelled` pays on an edit). Issues go oldest decision
  first (an issue the store has no row for before any that has one), so after an interruption
  the next run starts with the issues not yet retried, and one that failed again waits behind
  them.

Nothing here writes; :func:`bot.gate.run` judges the selection and writes labels, then rows.
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
    """The default ``on_progress``: nothing to show."""


@dataclass(frozen=True)
class Backlog:
    """A backlog run, as :func:`bot.gate.run` is asked for one.

    Attributes:
        repo: ``owner/name``.
        limit: the most issues judged (≥ 1).
        retry_errors: the ``--retry-errors`` selection instead of the plain one (module doc).
        on_progress: called as ``(done, total)`` after each issue judged.
    """

    repo: str
    limit: int = BACKLOG_LIMIT
    retry_errors: bool = False
    on_progress: Callable[[int, int], None] = _no_progress


@dataclass(frozen=True)
class BacklogItem:
    """One issue to judge.

    Attributes:
        issue: the issue as ``open_issues`` gives it (a webhook payload's ``issue`` shape).
        last: the bot's last decision on it (the store's row), or ``None``.
        events: its ``labeled`` events when the selection read them (the hand-set check), so
            the plan's removal rule reads them no second time; ``None`` otherwise.
    """

    issue: dict[str, Any]
    last: Mapping[str, Any] | None
    events: tuple[LabelEvent, ...] | None = None


@dataclass(frozen=True)
class BacklogSelection:
    """What a backlog run will do.

    Attributes:
        todo: the issues to judge, in order, at most the run's limit.
        hand_set: ``(issue number, label)`` of issues left alone because a maintainer set their
            gate label by hand (``--retry-errors`` only; only those met before the limit).
    """

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
    """The issues a backlog run judges (module doc: the two selections and their order).

    Args:
        repo: ``owner/name``.
        issues: the open issues (``GitHubPort.open_issues``), pull requests already left out.
        store: the decision store (read only here).
        github: reads the ``labeled`` events of issues that carry ``validator-error``, and
            the bot's own login when one of them is a person's (``GitHubPort.login``).
        limit: the most issues returned in ``todo`` (≥ 1).
        retry_errors: the ``--retry-errors`` selection instead of the plain one.
        gate: the repository's three gate labels (``.github/triage-bot.yml``).

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
