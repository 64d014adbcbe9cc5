"""What the bot knows of GitHub, so a gate run need not ask again.

So a gate event costs at most 3 GitHub requests when the verdict changes and none when it does
not (docs/requests.md). Three facts, each written only after GitHub confirmed it, each used only
where being wrong leaves nothing lasting:

- **The author comment** the bot last wrote on an issue: its id and the SHA-256 of its body.
  An edit PATCHes that id without listing the comments, and a body equal to the one written is
  not written again. A 404 (someone deleted the comment) falls back to finding it by its marker
  (:func:`bot.gate.plan.apply_gate`). No row (a new store, an ephemeral runner, a lost write):
  the comment is found by its marker, as without this module.
- **The gate labels it created** in a repository (``POST /repos/{o}/{r}/labels``): not created
  again. Should a maintainer delete one later, "Add labels to an issue" creates a missing label
  itself, in GitHub's default grey with no description; and a failed add forgets the row, so
  the next run creates it again with the bot's colour and description.
- **The repository file at a commit**: the text of ``.github/triage-bot.yml`` (or that it has
  none) as read at a default-branch commit (``GITHUB_SHA``). What a commit holds never changes,
  so every later event at that commit reuses it; one row per repository and path, replaced when
  the branch moves (:meth:`bot.context.JobContext.with_repository_file` says when a commit may
  be used).

A read-only store (a dry run) reads these and writes none. Writes raise
:class:`~bot.errors.StoreError` like every store write; a caller that has already written to
GitHub lets it pass (the next run asks GitHub again).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from bot.history.protocol import HistoryStore, KeyedTable, utc_now

__all__ = [
    "CachedFile",
    "KnownComment",
    "body_sha",
    "cached_repo_file",
    "created_label",
    "forget_comment",
    "forget_label",
    "known_comment",
    "remember_comment",
    "remember_label",
    "remember_repo_file",
]


def body_sha(body: str) -> str:
    """SHA-256 (hex) of a comment body as the bot sent it (UTF-8)."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _put(store: HistoryStore, table: str, row: dict[str, Any], pk: tuple[str, ...]) -> None:
    store.change(table, lambda t: t.upsert(row, pk))


def _forget(store: HistoryStore, table: str, key: dict[str, Any]) -> None:
    store.change(table, lambda t: t.delete(key))


@dataclass(frozen=True)
class KnownComment:
    """The author comment the bot last wrote on an issue.

    Attributes:
        comment_id: GitHub's id of the comment (``PATCH /repos/{o}/{r}/issues/comments/{id}``).
        body_sha: :func:`body_sha` of the body last written.
    """

    comment_id: int
    body_sha: str


def known_comment(store: HistoryStore, repo: str, issue: int) -> KnownComment | None:
    """The author comment the bot last wrote on ``repo#issue``, or ``None``."""
    row = store.get("author_comments", {"repo": repo, "issue": issue})
    return None if row is None else KnownComment(int(row["comment_id"]), str(row["body_sha"]))


def remember_comment(
    store: HistoryStore, repo: str, issue: int, comment_id: int, body: str
) -> bool:
    """Record that comment ``comment_id`` on ``repo#issue`` now holds ``body``, unless a row
    for the issue appeared since this run cleared it (:func:`forget_comment`): then another run
    wrote the comment at the same time and which text GitHub kept is unknown, so that row is
    deleted too, and the next run finds the comment by its marker. Returns whether it recorded.

    Raises:
        StoreError: the write failed.
    """
    key: dict[str, Any] = {"repo": repo, "issue": issue}
    row = {**key, "comment_id": comment_id, "body_sha": body_sha(body), "written_at": utc_now()}
    recorded: list[bool] = []

    def claim(table: KeyedTable) -> None:
        if table.count(key):
            table.delete(key)
        else:
            table.insert(row)
            recorded.append(True)

    store.change("author_comments", claim)
    return bool(recorded)


def forget_comment(store: HistoryStore, repo: str, issue: int) -> None:
    """Drop the row of ``repo#issue``'s comment: done before each write of the comment, so a
    write whose outcome is unknown leaves no body hash that GitHub may not hold.

    Raises:
        StoreError: the write failed.
    """
    _forget(store, "author_comments", {"repo": repo, "issue": issue})


def created_label(store: HistoryStore, repo: str, name: str) -> bool:
    """Whether the bot created (or found) the label ``name`` in ``repo`` before."""
    return store.get("created_labels", {"repo": repo, "name": name.lower()}) is not None


def remember_label(store: HistoryStore, repo: str, name: str) -> None:
    """Record that the label ``name`` exists in ``repo`` (GitHub compares names lower-cased).

    Raises:
        StoreError: the write failed.
    """
    row = {"repo": repo, "name": name.lower(), "created_at": utc_now()}
    _put(store, "created_labels", row, ("repo", "name"))


def forget_label(store: HistoryStore, repo: str, name: str) -> None:
    """Drop the record of label ``name`` in ``repo`` (the next run creates it again).

    Raises:
        StoreError: the write failed.
    """
    _forget(store, "created_labels", {"repo": repo, "name": name.lower()})


@dataclass(frozen=True)
class CachedFile:
    """The repository file as read at one commit: ``text`` ``None`` means it had none."""

    text: str | None


def cached_repo_file(store: HistoryStore, repo: str, path: str, sha: str) -> CachedFile | None:
    """The file at ``path`` in ``repo`` as read at commit ``sha``, or ``None`` (not read)."""
    row = store.get("repo_files", {"repo": repo, "path": path, "sha": sha})
    return None if row is None else CachedFile(row["text"])


def remember_repo_file(
    store: HistoryStore, repo: str, path: str, sha: str, text: str | None
) -> None:
    """Record the file at ``path`` in ``repo`` at commit ``sha`` (``None``: no such file),
    replacing what was kept for an earlier commit.

    Raises:
        StoreError: the write failed.
    """
    row = {"repo": repo, "path": path, "sha": sha, "text": text, "read_at": utc_now()}
    _put(store, "repo_files", row, ("repo", "path"))
