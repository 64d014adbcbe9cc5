"""What a comment command is: its spec, its parsed form, and what its handler is given.

Rule source: design.md, "Maintainer commands", and the maintainer-commands issue. The table of
commands, :data:`bot.commands.handlers.COMMANDS`, sits beside the handlers it names. This
module is the bottom of the package (it imports none of its siblings), so the handlers, the
parser and the comment flow read it without a cycle. The pipelines a command may start
(``/triage``, ``/audit``) are lent by the runner through :class:`Services`: commands never
import :mod:`bot.runner`, which calls into them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.clients.github_port import GitHubPort, PullRef
from bot.config import Settings
from bot.events import IssueCommentEvent, IssuesEvent
from bot.history.protocol import HistoryStore
from bot.report import RunReport

__all__ = [
    "PLACES",
    "Answer",
    "ArgKind",
    "Command",
    "CommandContext",
    "CommandSpec",
    "Handler",
    "Services",
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


class Services(Protocol):
    """What the runner lends to commands; :mod:`bot.runner` implements it.

    Each method builds its client or runs its pipeline from the run's settings, so a handler
    needs no factory and no import above its layer.
    """

    def github(self) -> GitHubPort:
        """The GitHub client (a token is required unless the run is a dry run).

        Raises:
            ConfigError: no token when writing.
        """
        ...

    def read_store(self) -> HistoryStore:
        """The store opened read-only (the caller closes it).

        Raises:
            StoreError: the file cannot be opened, or a newer triage-bot wrote it.
        """
        ...

    def rerun_gate(self, event: IssuesEvent) -> RunReport:
        """Run the issue gate on ``event``, overriding a hand-set gate label (``/triage``)."""
        ...

    def audit(self, pull: PullRef, github: GitHubPort, requested_range: str | None) -> RunReport:
        """Audit ``pull`` now, even if its head SHA was audited (``/audit``).

        Raises:
            InvalidRange: ``requested_range`` (``PATH:START-END``) breaks a rule.
        """
        ...


@dataclass(frozen=True)
class CommandContext:
    """Everything a handler is given for one accepted command.

    Attributes:
        command: the parsed command (its name is a key of ``commands``).
        event: the ``issue_comment`` event (the comment's author is authorised).
        settings: the run's frozen settings (``dry_run``: the comment flow, not the handler,
            withholds the reply; pipelines started through ``services`` honour it).
        github: the GitHub client the comment flow authorised with.
        services: the runner's store and pipelines.
        commands: the registry the command was dispatched from (``/help`` lists it).
    """

    command: Command
    event: IssueCommentEvent
    settings: Settings
    github: GitHubPort
    services: Services
    commands: Mapping[str, CommandSpec]

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
