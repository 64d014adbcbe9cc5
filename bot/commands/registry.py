"""The comment commands, as data: name → arguments, usage and help.

Rule source: design.md, "Maintainer commands", and the maintainer-commands issue. The parser,
``/help``, the README table and the tests all read :data:`COMMANDS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["COMMANDS", "CommandSpec", "help_text", "usage_line"]

ArgKind = Literal["none", "range", "count"]


@dataclass(frozen=True)
class CommandSpec:
    """One comment command.

    Attributes:
        name: the command word without the slash, e.g. ``audit_history``.
        arg: ``none``; ``range`` (optional ``PATH:START-END``); ``count`` (optional integer).
        arg_name: how usage shows the argument (e.g. ``N``).
        default: the count used when none is given.
        minimum / maximum: bounds of a count.
        where: ``issue``, ``pr`` or ``any``: where the command applies.
        help: one line for ``/help`` and the README.
    """

    name: str
    arg: ArgKind
    help: str
    where: Literal["issue", "pr", "any"] = "any"
    arg_name: str = ""
    default: int = 0
    minimum: int = 1
    maximum: int = 1


COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        CommandSpec("triage", "none", "re-run the issue gate (overrides a hand-set gate label)",
                    where="issue"),
        CommandSpec("audit", "range", "re-run the PR audit, or audit one range of a changed file",
                    where="pr", arg_name="PATH:START-END"),
        CommandSpec("audit_history", "count", "list the last N accepted audits of this repository",
                    arg_name="N", default=10, maximum=50),
        CommandSpec("audit_stats", "count", "weekly audit statistics for the last WEEKS weeks",
                    arg_name="WEEKS", default=8, maximum=52),
        CommandSpec("help", "none", "list the commands"),
    )
}  # fmt: skip


def usage_line(spec: CommandSpec) -> str:
    """``/name [ARG]`` as shown to users."""
    return f"/{spec.name}" + (f" [{spec.arg_name}]" if spec.arg_name else "")


def help_text() -> str:
    """The ``/help`` reply: one line per command."""
    return "\n".join(f"- `{usage_line(s)}`: {s.help}" for s in COMMANDS.values())
