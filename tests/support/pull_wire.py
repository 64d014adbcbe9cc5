"""GitHub's wire JSON for what settling reads of a pull request, from the port's data: the
loopback GitHub's answers (``tests/support/dataset_server.py``).

Shapes as in ``cassettes/github_settle_merged_pull.yaml``: the GraphQL ``PullRequest`` with its
``reviewThreads`` (an app's comment authored by its bare login, as GraphQL names a ``Bot``
actor; times with a ``Z``), and REST "Compare two commits" (``status``, ``ahead_by``,
``base_commit``, ``merge_base_commit``, ``commits``, ``files`` with ``patch`` and
``previous_filename``; no ``patch`` for a binary file).
"""

from __future__ import annotations

from typing import Any

from bot.clients.github_port import ChangedFile, Comparison, PullHistory, ThreadComment

__all__ = ["comparison_answer", "pull_history_answer"]

_AUTHOR = {"name": "Codertocat", "email": "21031067+Codertocat@users.noreply.github.com",
           "date": "2026-11-30T05:30:00Z"}  # fmt: skip


def _zulu(moment: str | None) -> str | None:
    return moment.replace("+00:00", "Z") if moment is not None else None


def _comment(comment: ThreadComment) -> dict[str, Any]:
    login = comment.author.removesuffix("[bot]") if comment.author else None
    return {
        "databaseId": comment.id,
        "author": {"login": login} if login else None,
        "path": comment.path,
        "originalLine": comment.line,
        "originalCommit": {"oid": comment.commit_id} if comment.commit_id else None,
    }


def pull_history_answer(history: PullHistory | None) -> dict[str, Any]:
    """The answer to ``PULL_HISTORY_QUERY``; for ``None``, GitHub's ``NOT_FOUND``."""
    if history is None:
        return {
            "data": {"repository": {"pullRequest": None}},
            "errors": [
                {
                    "type": "NOT_FOUND",
                    "path": ["repository", "pullRequest"],
                    "message": "Could not resolve to a PullRequest with the number of 0.",
                }
            ],
        }
    threads = [
        {
            "isResolved": thread.resolved,
            "comments": {
                "pageInfo": {"hasNextPage": False},
                "nodes": [_comment(c) for c in thread.comments],
            },
        }
        for thread in history.threads
    ]
    pull = {
        "number": history.number,
        "state": history.state,
        "headRefOid": history.head_sha,
        "mergedAt": _zulu(history.merged_at),
        "closedAt": _zulu(history.closed_at),
        "reviewThreads": {"pageInfo": {"hasNextPage": not history.complete}, "nodes": threads},
    }
    return {"data": {"repository": {"pullRequest": pull}}}


def _commit(api: str, html: str, sha: str, parent: str, message: str) -> dict[str, Any]:
    return {
        "sha": sha,
        "node_id": "C_kwDOABCDEF",
        "commit": {"author": _AUTHOR, "committer": _AUTHOR, "message": message,
                   "url": f"{api}/git/commits/{sha}", "comment_count": 0},
        "url": f"{api}/commits/{sha}",
        "html_url": f"{html}/commit/{sha}",
        "parents": [{"sha": parent, "url": f"{api}/commits/{parent}"}],
    }  # fmt: skip


def _file(api: str, head: str, changed: ChangedFile) -> dict[str, Any]:
    lines = (changed.patch or "").splitlines()
    added = sum(1 for line in lines if line.startswith("+"))
    deleted = sum(1 for line in lines if line.startswith("-"))
    out: dict[str, Any] = {
        "sha": "bbcd538c8e72b8c175046e27cc8f907076331401",
        "filename": changed.path,
        "status": changed.status,
        "additions": added,
        "deletions": deleted,
        "changes": added + deleted,
        "contents_url": f"{api}/contents/{changed.path}?ref={head}",
    }
    if changed.patch is not None:
        out["patch"] = changed.patch
    if changed.previous_path is not None:
        out["previous_filename"] = changed.previous_path
    return out


def comparison_answer(
    base_url: str, repo: str, base: str, head: str, comparison: Comparison
) -> dict[str, Any]:
    """GitHub's answer to ``GET /repos/{repo}/compare/{base}...{head}?per_page=1``: the
    first commit of the comparison and every file."""
    api = f"{base_url}/repos/{repo}"
    html = f"https://github.com/{repo}"
    ahead = comparison.status in ("ahead", "diverged")
    return {
        "url": f"{api}/compare/{base}...{head}",
        "html_url": f"{html}/compare/{base}...{head}",
        "base_commit": _commit(api, html, base, "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
                               "Add the upload rate limit"),
        "merge_base_commit": _commit(api, html, base, "6113728f27ae82c7b1a177c8d03f9e96e0adf246",
                                     "Add the upload rate limit"),
        "status": comparison.status,
        "ahead_by": 1 if ahead else 0,
        "behind_by": 1 if comparison.status in ("behind", "diverged") else 0,
        "total_commits": 1 if ahead else 0,
        "commits": [_commit(api, html, head, base, "Address the review")] if ahead else [],
        "files": [_file(api, head, f) for f in comparison.files],
    }  # fmt: skip
