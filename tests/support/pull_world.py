"""Audited pull requests whose histories imply each defect's outcome: the settle tests'
scenarios and ``benchmarks/settle.py``'s.

:func:`audited_pulls` builds pull requests cycling through :data:`CASES` (one per settling rule,
the bot's own reply and a thread that is a person's among them), with their defects and what
each should settle to; :func:`pull_world` puts them on a :class:`FakeGitHub` and the defects in
a store, and the loopback GitHub (``tests/support/dataset_server.py``) serves them over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.clients.github_port import (
    ChangedFile,
    Comparison,
    PullHistory,
    ReviewThread,
    ThreadComment,
)
from bot.history.protocol import HistoryStore
from bot.history.record import DefectRow, put_defects
from tests.support.fake_github import FakeGitHub

__all__ = ["BOT", "CASES", "REPO", "AuditedPull", "PullCase", "audited_pulls", "pull_world"]

REPO = "Codertocat/Hello-World"
BOT = "github-actions[bot]"
PATH = "src/limits.py"
MERGED_AT = "2026-11-30T06:00:00+00:00"

REPLACES_13 = "@@ -12,3 +12,3 @@\n a\n-b\n+c\n d"  # old side: 12 context, 13 replaced, 14 context
"""A later commit replacing line 13."""
BESIDE_13 = "@@ -13,2 +13,3 @@\n b\n+x\n c"
"""A later commit adding a line below 13 (13 is context)."""


@dataclass(frozen=True)
class PullCase:
    """One pull request's history and what its defect on line 13 settles to."""

    name: str
    expected: str
    state: str = "MERGED"
    changed: ChangedFile | None = None
    status: str = "ahead"
    at_final_head: bool = False
    resolved: bool = False
    reply_by: str | None = None
    thread_by: str = BOT


def _modified(patch: str | None) -> ChangedFile:
    return ChangedFile(PATH, "modified", patch)


_REMOVED = ChangedFile(PATH, "removed", "@@ -1,2 +0,0 @@\n-a\n-b")
_RENAMED = ChangedFile("src/rates.py", "renamed", None, PATH)

CASES: tuple[PullCase, ...] = (
    PullCase("line replaced", "acted_on", changed=_modified(REPLACES_13)),
    PullCase("resolved, touched", "acted_on", changed=_modified(BESIDE_13), resolved=True),
    PullCase("line left, file touched", "not_acted_on", changed=_modified(BESIDE_13)),
    PullCase("nothing changed after", "not_acted_on"),
    PullCase("resolved, file untouched", "not_acted_on", resolved=True),
    PullCase("author replied", "answered", reply_by="octocat"),
    PullCase("the bot replied to itself", "not_acted_on", reply_by="github-actions"),
    PullCase("a person's thread", "not_acted_on", reply_by="hubot", thread_by="octocat"),
    PullCase("defect at the merged head", "not_acted_on", at_final_head=True),
    PullCase("closed unmerged", "unmerged", state="CLOSED"),
    PullCase("file removed", "file_gone", changed=_REMOVED),
    PullCase("file renamed away", "file_gone", changed=_RENAMED),
    PullCase("force-pushed", "untraceable", changed=_modified(REPLACES_13), status="diverged"),
)
"""Each settling rule once; a world of N pull requests cycles through them."""


def _sha(number: int, which: str) -> str:
    return f"{which}{number:039x}"[:40]


@dataclass(frozen=True)
class AuditedPull:
    """One audited pull request: what GitHub holds of it, its defects and their outcomes."""

    history: PullHistory
    comparisons: dict[tuple[str, str], Comparison]
    """``(base, head)`` → the files changed between them."""
    defects: list[DefectRow]
    expected: dict[tuple[int, int], str]
    """``(pr, line)`` → the outcome its history implies."""


def audited_pulls(
    pulls: int, *, first: int = 1, case_of: Callable[[int], PullCase] | None = None
) -> list[AuditedPull]:
    """``pulls`` audited pull requests numbered from ``first``, the ``n``-th of them of
    ``case_of(n)`` (default: cycling through :data:`CASES`), with two defects each, on lines
    13 and 3 of the same head (line 3 is never changed, so it is not acted on wherever 13 is
    counted)."""
    out = []
    for i in range(1, pulls + 1):
        number = first + i - 1
        case = (case_of or (lambda n: CASES[(n - 1) % len(CASES)]))(i)
        old, new = _sha(number, "a"), _sha(number, "b")
        final = old if case.at_final_head else new
        threads: tuple[ReviewThread, ...] = ()
        if case.reply_by is not None or case.resolved:
            root = ThreadComment(9000 + number, case.thread_by, PATH, 13, old)
            replies = (
                (ThreadComment(9500 + number, case.reply_by, PATH, 13, old),)
                if case.reply_by
                else ()
            )
            threads = (ReviewThread(case.resolved, (root, *replies)),)
        merged = MERGED_AT if case.state == "MERGED" else None
        history = PullHistory(number, case.state, final, merged, MERGED_AT, threads)
        files = (case.changed,) if case.changed is not None else ()
        defects = [
            DefectRow(REPO, number, old, PATH, line, "logic", "fake-model", "p1")
            for line in (13, 3)
        ]
        apart = case.expected in ("unmerged", "file_gone", "untraceable")
        expected = {
            (number, 13): case.expected,
            (number, 3): case.expected if apart else "not_acted_on",
        }
        comparisons = {(old, new): Comparison(case.status, files)}
        out.append(AuditedPull(history, comparisons, defects, expected))
    return out


def pull_world(
    store: HistoryStore, pulls: int, *, case_of: Callable[[int], PullCase] | None = None
) -> tuple[FakeGitHub, dict[tuple[int, int], str]]:
    """:func:`audited_pulls` (numbers 1…) on a :class:`FakeGitHub`, their defects recorded in
    ``store``; returns the GitHub and each ``(pr, line)``'s expected outcome."""
    github = FakeGitHub(bot_login=BOT)
    expected: dict[tuple[int, int], str] = {}
    for pull in audited_pulls(pulls, case_of=case_of):
        github.pull_histories[pull.history.number] = pull.history
        github.comparisons.update(pull.comparisons)
        put_defects(store, pull.defects)
        expected.update(pull.expected)
    return github, expected
