"""What a comment command is: its spec, its parsed form, and what its handler is given.

The table of commands, :data:`bot.commands.handlers.COMMANDS`, sits beside the handlers it
names. This module is the bottom of the package (it imports none of its siblings), so the
handlers, the parser and the comment flow read it without a cycle. A handler gets the job's
context (:class:`~bot.context.JobContext`) with the command: the GitHub client, the store and
the models come from there, never from a factory of the handler's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from bot.clients.github_port import GitHubPort
from bot.config import Settings
from bot.context import JobContext
from bot.events import IssueCommentEvent
from bot.report import RunReport

__all__ = [
    "PLACES",
    "Answer",
    "ArgKind",
    "Command",
    "CommandContext",
    "CommandSpec",
    "Handler",
    "Where",
    "help_text",
    "usage_line",
]

ArgKind = Literal["none", "range", "count"]
Where = Literal["issue", "pr", "any"]

PLACES: dict[str, str] = {"issue": "issues", "pr": "pull requests"}
"""How a reply names the places a command applies to (``where`` → plural noun)."""

Answer = str | RunReport
"""What a handler returns: a reply (markdown, posted as a new comment, every untrusted value
already through its sink in :mod:`bot.neutralise`), or the report of a pipeline that made its
own writes (``/triage`` labels, ``/audit`` comment) and posts no reply."""


@dataclass(frozen=True)
class Command:
    """A well-formed command: ``name`` from the registry, ``count`` or ``range`` when given."""

    name: str
    count: int | None = None
    range: str | None = None


@dataclass(frozen=True)
class CommandContext:
    """Everything a handler is given for one accepted command.

    Attributes:
        command: the parsed command (its name is a key of ``commands``).
        event: the ``issue_comment`` event (the comment's author is authorised).
        job: the job's context: its settings (``dry_run``: the comment flow, not the handler,
            withholds the reply; a pipeline a handler starts honours it), the GitHub client
            the comment flow authorised with, the store and the models.
        commands: the registry the command was dispatched from (``/help`` lists it).
    """

    command: Command
    event: IssueCommentEvent
    job: JobContext
    commands: Mapping[str, CommandSpec]

    @property
    def settings(self) -> Settings:
        """The job's settings."""
        return self.job.settings

    @property
    def github(self) -> GitHubPort:
        """The job's GitHub client."""
        return self.job.github()

    @property
    def repo(self) -> str:
        """``owner/name`` of the repository the comment is in."""
        return self.event.repository.full_name


Handler = Callable[[CommandContext], Answer]
"""A command's behaviour: context in, reply or pipeline report out. Raises what its pipeline
raises (``GitHubError``, ``StoreError``); a user's mistake is a reply, not an exception."""


@dataclass(frozen=True)
class CommandSpec:
    """One comment command: how it is written, where it applies, and what runs it.

    Attributes:
        name: the command word without the slash, e.g. ``audit_history``.
        arg: ``none``; ``range`` (optional ``PATH:START-END``); ``count`` (optional integer).
        help: one line for ``/help`` and the README's command table.
        handler: what the command does (:mod:`bot.commands.handlers`).
        where: ``issue``, ``pr`` or ``any``: where the command applies.
        wrong_place: what the reply says after ``/name`` when the command is used where it does
            not apply; empty: ``runs on issues only`` (or ``pull requests``).
        arg_name: how usage shows the argument (e.g. ``N``).
        default: the count used when none is given.
        minimum / maximum: bounds of a count.
    """

    name: str
    arg: ArgKind
    help: str
    handler: Handler
    where: Where = "any"
    wrong_place: str = ""
    arg_name: str = ""
    default: int = 0
    minimum: int = 1
    maximum: int = 1


def usage_line(spec: CommandSpec) -> str:
    """``/name [ARG]`` as shown to users."""
    return f"/{spec.name}" + (f" [{spec.arg_name}]" if spec.arg_name else "")


def help_text(commands: Mapping[str, CommandSpec]) -> str:
    """The ``/help`` list: one markdown line per command, in table order."""
    return "\n".join(f"- `{usage_line(s)}`: {s.help}" for s in commands.values())
