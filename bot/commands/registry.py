"""The comment commands, as data: name → arguments, place, help and handler.

Rule source: design.md, "Maintainer commands", and the maintainer-commands issue. The parser,
the dispatch (``COMMANDS[name].handler(ctx)``, no default branch), the wrong-place reply,
``/help``, the README table (``tests/test_docs.py``) and the tests all read :data:`COMMANDS`.
A new command is one entry here, its handler in :mod:`bot.commands.handlers`, and its README
row.
"""

from __future__ import annotations

from bot.commands import handlers
from bot.commands.spec import CommandSpec

__all__ = ["COMMANDS"]

COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        CommandSpec("triage", "none", "re-run the issue gate (overrides a hand-set gate label)",
                    handlers.rerun_gate, where="issue",
                    wrong_place="runs the issue gate on issues; on a pull request use `/audit`"),
        CommandSpec("audit", "range", "re-run the PR audit, or audit one range of a changed file",
                    handlers.rerun_audit, where="pr",
                    wrong_place="runs on pull requests; on an issue use `/triage`",
                    arg_name="PATH:START-END"),
        CommandSpec("audit_history", "count", "list the last N accepted audits of this repository",
                    handlers.list_history, arg_name="N", default=10, maximum=50),
        CommandSpec("audit_stats", "count", "weekly audit statistics for the last WEEKS weeks",
                    handlers.show_stats, arg_name="WEEKS", default=8, maximum=52),
        CommandSpec("help", "none", "list the commands", handlers.list_commands),
    )
}  # fmt: skip
"""Every command, in ``/help`` and README order; keys are the command words (lower case)."""
