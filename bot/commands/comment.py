"""One issue comment, start to end: parse, authorise, react, dispatch, reply."""

from __future__ import annotations

from dataclasses import dataclass

from bot.clients.github_port import GitHubPort
from bot.commands.handlers import COMMANDS
from bot.commands.parser import Command, Malformed, parse_command
from bot.commands.spec import PLACES, Answer, CommandContext, CommandSpec
from bot.context import JobContext
from bot.events import IssueCommentEvent
from bot.neutralise import log_value
from bot.run_report import (
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
"""Collaborator permissions that may command the bot; GitHub reports maintain as write."""


@dataclass(frozen=True)
class Authorisation:
    """Whether the commenter may command the bot, and why."""

    allowed: bool
    reason: str
    permission: str | None = None


def authorise(event: IssueCommentEvent, github: GitHubPort) -> Authorisation:
    """Whether the comment's author may command the bot; bots are refused without a request.

    Raises :exc:`GitHubError` if the permission cannot be read; a refusal is no error.
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
    """A short reply when the command does not apply where the comment is, else ``None``."""
    here = "pr" if event.on_pull_request else "issue"
    if spec.where in ("any", here):
        return None
    advice = spec.wrong_place or f"runs on {PLACES[spec.where]} only"
    return f"`/{spec.name}` {advice}."


def dispatch(call: CommandContext) -> Answer:
    """Run the command's handler, or give its wrong-place reply.

    Raises :exc:`KeyError` for a name not in ``call.commands``: there is no fallback handler.
    """
    spec = call.commands[call.command.name]
    return wrong_place_reply(spec, call.event) or spec.handler(call)


def run_comment(event: IssueCommentEvent, job: JobContext) -> RunReport:
    """Handle a new comment: parse, authorise, react 👀, run, reply.

    A comment that is not a command costs no request. A dry run reads the permission but
    writes nothing. Raises :exc:`ConfigError` with no token to write.
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
