"""What a comment command is: its spec, its parsed form, and what its handler is given.

The bottom of the package: it imports none of its siblings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from bot.clients.github_port import GitHubPort
from bot.config import Settings
from bot.context import JobContext
from bot.events import IssueCommentEvent
from bot.run_report import RunReport

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

ArgKind = Literal["none", "range", "count", "choice"]
Where = Literal["issue", "pr", "any"]

PLACES: dict[str, str] = {"issue": "issues", "pr": "pull requests"}
"""``where`` → the plural noun a reply uses."""

Answer = str | RunReport
"""A handler's answer: reply markdown, already neutralised, or a pipeline's report (no reply)."""


@dataclass(frozen=True)
class Command:
    """A well-formed command from the registry, with its argument."""

    name: str
    count: int | None = None
    range: str | None = None
    choice: str | None = None


@dataclass(frozen=True)
class CommandContext:
    """Everything a handler is given for one authorised command.

    On a dry run the comment flow withholds the reply; a pipeline a handler starts honours it.
    """

    command: Command
    event: IssueCommentEvent
    job: JobContext
    commands: Mapping[str, CommandSpec]

    @property
    def settings(self) -> Settings:
        return self.job.settings

    @property
    def github(self) -> GitHubPort:
        return self.job.github()

    @property
    def repo(self) -> str:
        return self.event.repository.full_name


Handler = Callable[[CommandContext], Answer]
"""A command's behaviour; a user's mistake is a reply, never an exception."""


@dataclass(frozen=True)
class CommandSpec:
    """One comment command: how it is written, where it applies, and what runs it."""

    name: str
    """The command word without the slash, e.g. ``audit_history``."""
    arg: ArgKind
    """``range`` is an optional ``PATH:START-END``; ``count`` an optional integer; ``choice``
    an optional word of ``choices``."""
    help: str
    """One line for ``/help`` and the README's command table."""
    handler: Handler
    where: Where = "any"
    wrong_place: str = ""
    """The reply after ``/name`` where it does not apply; empty: "runs on issues only"."""
    arg_name: str = ""
    default: int = 0
    minimum: int = 1
    maximum: int = 1
    choices: tuple[str, ...] = ()


def usage_line(spec: CommandSpec) -> str:
    """``/name [ARG]`` as shown to users."""
    return f"/{spec.name}" + (f" [{spec.arg_name}]" if spec.arg_name else "")


def help_text(commands: Mapping[str, CommandSpec]) -> str:
    """The ``/help`` list: one markdown line per command, in table order."""
    return "\n".join(f"- `{usage_line(s)}`: {s.help}" for s in commands.values())
