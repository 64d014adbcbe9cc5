"""One issue comment, start to end: parse, authorise, react, dispatch, reply.

Authorisation is decided in code, from the collaborator-permission endpoint: ``admin`` and
``write`` (GitHub's legacy ``permission`` field reports maintain as write) may command; ``read``
(also triage) and ``none`` may not, whatever their ``author_association`` says. Comments by bots
(``type == "Bot"``, which includes ``github-actions[bot]``) and the bot's own comments (they
start with its hidden marker) are ignored before any request is made. A refused command does
nothing on GitHub: no reaction, no reply; the step summary says why.

An accepted command gets a 👀 reaction first, then runs: :func:`dispatch` is
``COMMANDS[name].handler(ctx)`` with no default branch, so a name that is not in the registry
reaches no handler. Its answer is a short new comment (``/help``, ``/audit_history``,
``/audit_stats``, ``/triage_stats``, usage and wrong-place replies) or the pipeline's own
writes (``/triage`` labels, ``/audit`` comment).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.clients.github_port import GitHubPort
from bot.commands.handlers import COMMANDS
from bot.commands.parser import Command, Malformed, parse_command
from bot.commands.spec import PLACES, Answer, CommandContext, CommandSpec
from bot.context import JobContext
from bot.events import IssueCommentEvent
from bot.neutralise import log_value
from bot.report import (
    MARKER_PREFIX,
    PUBLIC_WARNING,
    SKIPPED_OUTPUTS,
    RunReport,
    quoted_lines,
    skipped_report,
)

__all__ = [
    "ALLOWED_PERMISSIONS",
    "Authorisation",
    "authorise",
    "dispatch",
    "run_comment",
    "wrong_place_reply",
]

ALLOWED_PERMISSIONS = frozenset({"admin", "write"})
"""Collaborator permissions that may command the bot (maintain reads as write)."""


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
    if (event.comment.body or "").startswith(MARKER_PREFIX):
        return Authorisation(False, "the bot's own comments are ignored")
    permission = github.collaborator_permission(event.repository.full_name, author.login)
    if permission in ALLOWED_PERMISSIONS:
        return Authorisation(True, f"{author.login} has {permission} permission", permission)
    return Authorisation(
        False,
        f"{author.login} has {permission} permission; commands need write, maintain or admin",
        permission,
    )


def wrong_place_reply(spec: CommandSpec, event: IssueCommentEvent) -> str | None:
    """A short reply when ``spec.where`` excludes the comment's place (issue or PR), else
    ``None``. The text is ``/name`` and ``spec.wrong_place`` (default: where it runs)."""
    here = "pr" if event.on_pull_request else "issue"
    if spec.where in ("any", here):
        return None
    advice = spec.wrong_place or f"runs on {PLACES[spec.where]} only"
    return f"`/{spec.name}` {advice}."


def dispatch(ctx: CommandContext) -> Answer:
    """Run the command in ``ctx``: its wrong-place reply, else its registry entry's handler.

    Raises:
        KeyError: ``ctx.command.name`` is not in ``ctx.commands`` (the parser never makes one;
            there is no fallback handler).
        GitHubError / StoreError / ConfigError: what the handler's pipeline raises.
    """
    spec = ctx.commands[ctx.command.name]
    return wrong_place_reply(spec, ctx.event) or spec.handler(ctx)


def run_comment(event: IssueCommentEvent, job: JobContext) -> RunReport:
    """Handle an ``issue_comment.created`` event: parse, authorise, react, run, reply.

    A comment that is not a command costs nothing (no client is built). With ``dry_run`` the
    permission is still read (it decides what would happen) but nothing is written: no
    reaction, no reply, no labels, no audit comment.

    Args:
        event: the routed ``issue_comment`` event.
        job: the job's context (its settings' ``dry_run``; the GitHub client, the store, the
            models): the repository file is read only by a command that runs a pipeline, so a
            plain comment costs no request.

    Raises:
        ConfigError: no token when writing.
        GitHubError / StoreError: the permission read, a reaction, a reply or a pipeline failed.
    """
    parsed = parse_command(event.comment.body)
    if parsed is None:
        return skipped_report("the comment is not a command")
    settings = job.settings
    repo, number = event.repository.full_name, event.issue.number
    github = job.github()
    auth = authorise(event, github)
    if not auth.allowed:
        report = skipped_report(f"command refused: {auth.reason}")
        report.text = f"triage-bot: refused: {log_value(auth.reason)}"
        return report
    if not settings.dry_run:
        github.add_reaction(repo, number, event.comment.id, "eyes")
    name = parsed.name if isinstance(parsed, Command) else "malformed"
    head = (
        f"triage-bot: /{name} by {log_value(event.comment.user.login)} ({log_value(auth.reason)})"
    )
    if isinstance(parsed, Malformed):
        answer: Answer = parsed.reply
    else:
        answer = dispatch(CommandContext(parsed, event, job, COMMANDS))
    if isinstance(answer, RunReport):
        answer.text = f"{head}\n{answer.text}"
        return answer
    if not settings.dry_run:
        github.upsert_comment(repo, number, None, answer)
    outputs = dict(SKIPPED_OUTPUTS, skipped="false")
    summary = f"triage-bot: /{name}: replied\n"
    if not event.repository.private:
        summary += PUBLIC_WARNING + "\n"
    # The reply quotes stored paths (``/audit_history``) and the commenter's range: on stdout
    # each of its lines goes through log_value, like the plans' comment lines.
    text = "\n".join([head, "reply:", *quoted_lines(answer)])
    return RunReport(text, summary, outputs)
