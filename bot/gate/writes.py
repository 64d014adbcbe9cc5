"""The gate's GitHub writes the store can spare: the label's creation, the comment's lookup."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.clients.github_port import GitHubPort
from bot.errors import GitHubError, GitHubNotFound, StoreError
from bot.gate.labels import GateLabel
from bot.gate.types import AUTHOR_MARKER
from bot.history.github_memory import (
    body_sha,
    created_label,
    forget_comment,
    forget_label,
    known_comment,
    remember_comment,
    remember_label,
)
from bot.history.protocol import HistoryStore

__all__ = ["CommentWrite", "add_labels", "write_author_comment"]


def _remember(write: Callable[..., object], *args: object) -> None:
    # best effort: without the row the next run asks GitHub again
    with contextlib.suppress(StoreError):
        write(*args)


def add_labels(
    github: GitHubPort,
    store: HistoryStore | None,
    repo: str,
    number: int,
    created: Sequence[GateLabel],
    names: Sequence[str],
) -> int:
    """Add ``names`` to ``repo#number`` in one request, creating each of ``created`` first
    unless the bot did before. Returns the requests made (1 + the labels created).

    Raises:
        GitHubError: a label could not be created or added (after the client's retries).
    """
    requests = 0
    known = []
    for label in created:
        if store is not None and created_label(store, repo, label.name):
            known.append(label.name)
            continue
        github.ensure_label(repo, label.name, color=label.color, description=label.description)
        requests += 1
        if store is not None:
            _remember(remember_label, store, repo, label.name)
    try:
        github.add_labels(repo, number, names)
    except GitHubError:  # a maintainer may have deleted one: the next run creates it again
        if store is not None:
            for name in known:
                _remember(forget_label, store, repo, name)
        raise
    return requests + 1


@dataclass(frozen=True)
class CommentWrite:
    """What :func:`write_author_comment` did: GitHub reads and writes, and ``fate``: ``created``,
    ``edited``, ``unchanged`` or ``absent`` (only an edit was wanted, and there is none)."""

    fate: str
    reads: int
    writes: int


def write_author_comment(
    github: GitHubPort,
    store: HistoryStore | None,
    repo: str,
    number: int,
    body: str,
    *,
    create: bool,
) -> CommentWrite:
    """Make the bot's one author comment on ``repo#number`` read ``body``; ``create=False`` only
    edits. The store's row spares the lookup; without it the comment is found by its marker.

    Raises:
        GitHubError: a read or write failed after the client's retries.
        StoreError: the store's row could not be cleared before a write (nothing is written).
    """
    known = known_comment(store, repo, number) if store is not None else None
    writes = 0
    if store is not None and known is not None:
        if known.body_sha == body_sha(body):
            return CommentWrite("unchanged", 0, 0)
        forget_comment(store, repo, number)
        writes += 1
        try:
            github.edit_comment(repo, number, known.comment_id, body)
        except GitHubNotFound:
            pass  # deleted since: find it by its marker below, or post again
        else:
            _remember(remember_comment, store, repo, number, known.comment_id, body)
            return CommentWrite("edited", 0, writes)
    existing = github.find_bot_comment(repo, number, AUTHOR_MARKER)
    if existing is None and not create:
        return CommentWrite("absent", 1, writes)
    if existing is not None and existing.body == body:
        if store is not None:
            _remember(remember_comment, store, repo, number, existing.id, body)
        return CommentWrite("unchanged", 1, writes)
    if existing is not None:
        github.edit_comment(repo, number, existing.id, body)
        comment_id, fate = existing.id, "edited"
    else:
        comment_id, fate = github.post_comment(repo, number, body), "created"
    if store is not None:
        _remember(remember_comment, store, repo, number, comment_id, body)
    return CommentWrite(fate, 1, writes + 1)
