"""The gate's GitHub writes that the store can spare: the label's creation and the author
comment's lookup, so a gate event costs at most 3 GitHub requests when the verdict changes and
none when it does not (docs/requests.md).

:func:`bot.gate.plan.apply_gate` calls these with the store when it has one; without a store
(or with an empty one: an ephemeral runner, a lost file) they ask GitHub. What the store
remembers, and why each use is safe, is in
:mod:`bot.history.github_memory`.

Remembering is best effort after a GitHub write succeeded: a failed memory write only costs the
next run a request, so it is not an error. The one exception is the author comment's body
hash, which could otherwise claim a text GitHub no longer holds: its row is deleted before
the comment is written and written again after, so a write whose outcome is unknown leaves no
row, and a row another run wrote in between is deleted rather than overwritten (two runs wrote
at once: :func:`~bot.history.github_memory.remember_comment`). No row: the next run finds the
comment by its marker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from bot.clients.github_port import GitHubPort
from bot.errors import GitHubError, GitHubNotFound, StoreError
from bot.gate.author_comment import AUTHOR_MARKER
from bot.gate.labels import GateLabel
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

__all__ = ["CommentWrite", "add_gate_label", "write_author_comment"]


def _remember(write: Callable[..., object], *args: object) -> None:
    # best effort: without the row the next run asks GitHub again (module docstring)
    with contextlib.suppress(StoreError):
        write(*args)


def add_gate_label(
    github: GitHubPort,
    store: HistoryStore | None,
    repo: str,
    number: int,
    target: GateLabel,
    names: tuple[str, ...],
) -> int:
    """Add ``names`` (the plan's adds, ``target`` among them) to ``repo#number``, creating
    ``target`` in the repository first unless the store says the bot created it there before.
    Returns the requests made (1 or 2).

    A failed add forgets the label's row, so the next run creates it again (a maintainer may
    have deleted it; GitHub also creates a missing label itself on "Add labels to an issue").

    Raises:
        GitHubError: the label could not be created or added (after the client's retries).
    """
    requests = 0
    known = store is not None and created_label(store, repo, target.name)
    if not known:
        github.ensure_label(repo, target.name, color=target.color, description=target.description)
        requests += 1
        if store is not None:
            _remember(remember_label, store, repo, target.name)
    try:
        github.add_labels(repo, number, names)
    except GitHubError:
        if store is not None and known:
            _remember(forget_label, store, repo, target.name)
        raise
    return requests + 1


@dataclass(frozen=True)
class CommentWrite:
    """What :func:`write_author_comment` did.

    Attributes:
        fate: ``created``, ``edited``, ``unchanged`` or ``absent`` (only an edit was wanted and
            the issue has no comment of the bot's).
        reads: GitHub reads made (the comments list: 0 or 1).
        writes: GitHub writes made (0 to 2: a PATCH that met a 404, then the post, count both).
    """

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
    """Make the bot's author comment on ``repo#number`` read ``body``: one comment, found
    again, edited in place, never posted twice, never posted when ``create`` is false.

    With the store's row for the issue (:func:`~bot.history.github_memory.known_comment`): the
    same body writes nothing; another body PATCHes the known id, no lookup. Without a row, or
    when the PATCH meets a 404 (the comment was deleted): the comments are listed once
    (``GitHubPort.find_bot_comment``: the marker among the bot's own comments)
    and the comment found is edited, or one is posted. Every write is remembered.

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
