"""Who may command the bot, and what each command does.

Rule source: design.md, "Maintainer commands", and the maintainer-commands issue.

Authorisation is decided in code, from the collaborator-permission endpoint: ``admin`` and
``write`` (GitHub's legacy ``permission`` field reports maintain as write) may command; ``read``
(also triage) and ``none`` may not, whatever their ``author_association`` says. Comments by bots
(``type == "Bot"``, which includes ``github-actions[bot]``) and the bot's own comments (they
start with its hidden marker) are ignored before any request is made. A refused command does
nothing on GitHub: no reaction, no reply; the step summary says why.

An accepted command gets a 👀 reaction first, then runs; its answer is a short new comment
(``/help``, ``/audit_history``, ``/audit_stats``, usage and wrong-place replies) or the
pipeline's own writes (``/triage`` labels, ``/audit`` comment).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.audit.report import shown_path
from bot.clients.github_client import GitHubPort
from bot.commands.parser import Command
from bot.events import IssueCommentEvent
from bot.history.stats import history_line, mermaid_fix_share, weekly_stats
from bot.history.store import Store
from bot.neutralise import code_block

__all__ = [
    "ALLOWED_PERMISSIONS",
    "HISTORY_MAX_CHARS",
    "Authorisation",
    "authorise",
    "history_reply",
    "stats_reply",
    "wrong_place_reply",
]

ALLOWED_PERMISSIONS = frozenset({"admin", "write"})
"""Collaborator permissions that may command the bot (maintain reads as write)."""

BOT_MARKER_PREFIX = "<!-- triage-bot"


@dataclass(frozen=True)
class Authorisation:
    """Whether the commenter may command the bot, and why (for the summary)."""

    allowed: bool
    reason: str
    permission: str | None = None


def authorise(event: IssueCommentEvent, github: GitHubPort) -> Authorisation:
    """Decide whether the comment's author may command the bot.

    Bots and the bot's own comments are refused without a request; everyone else costs one
    ``GET .../collaborators/{login}/permission``.

    Raises:
        GitHubError: the permission could not be read (a refusal is not an error).
    """
    author = event.comment.user
    if author.type == "Bot" or event.sender.type == "Bot":
        return Authorisation(False, f"comments by bots ({author.login}) are ignored")
    if (event.comment.body or "").startswith(BOT_MARKER_PREFIX):
        return Authorisation(False, "the bot's own comments are ignored")
    permission = github.collaborator_permission(event.repository.full_name, author.login)
    if permission in ALLOWED_PERMISSIONS:
        return Authorisation(True, f"{author.login} has {permission} permission", permission)
    return Authorisation(
        False,
        f"{author.login} has {permission} permission; commands need write, maintain or admin",
        permission,
    )


def wrong_place_reply(command: Command, event: IssueCommentEvent) -> str | None:
    """A short reply when a command is used where it does not apply, else ``None``."""
    if command.name == "triage" and event.on_pull_request:
        return "`/triage` runs the issue gate on issues; on a pull request use `/audit`."
    if command.name == "audit" and not event.on_pull_request:
        return "`/audit` runs on pull requests; on an issue use `/triage`."
    return None


HISTORY_MAX_CHARS = 60_000
"""Longest ``/audit_history`` listing (characters): under GitHub's 65,536-character comment
limit with room for the heading and the note."""


def history_reply(store: Store, repo: str, count: int) -> str:
    """The ``/audit_history`` reply: the last ``count`` accepted audits of ``repo``.

    Paths come from PR authors: each is shortened to its last characters
    (:func:`~bot.audit.report.shown_path`) and the list sits in a fence no path can close
    (:func:`~bot.neutralise.code_block`); rows that would pass :data:`HISTORY_MAX_CHARS` are
    counted, not listed.
    """
    rows = store.audits(repo, limit=count)
    if not rows:
        return "No accepted audits are recorded for this repository yet."
    lines: list[str] = []
    size = 0
    for row in rows:
        line = history_line({**row, "path": shown_path(row["path"])})
        size += len(line) + 1
        if size > HISTORY_MAX_CHARS:
            break
        lines.append(line)
    more = len(rows) - len(lines)
    note = f"\n{more} more not listed (GitHub's comment limit)." if more else ""
    return f"Last {len(rows)} accepted audit(s):\n{code_block(lines)}{note}"


def stats_reply(store: Store, repo: str, weeks: int) -> str:
    """The ``/audit_stats`` reply: a weekly table of accepted audits and a FIX-share chart."""
    stats = weekly_stats(store, repo, weeks)
    if not stats:
        return f"No accepted audits in the last {weeks} week(s)."
    table = [
        "| week | audits | GO | GO_WITH_NOTES | FIX | retried | High / Medium / Low |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in stats:
        table.append(
            f"| {s.week} | {s.audits} | {s.share(s.go):.0%} | {s.share(s.go_with_notes):.0%} | "
            f"{s.share(s.fix):.0%} | {s.share(s.retried):.0%} | {s.high} / {s.medium} / {s.low} |"
        )
    return (
        f"Accepted audits, last {weeks} week(s) (weeks start Monday, UTC):\n\n"
        + "\n".join(table)
        + "\n\n"
        + mermaid_fix_share(stats)
    )
