"""Parse a comment into a command. Never raises on user text.

A command is the first word of the comment's first
line, starting with ``/``. A first line inside a code block (fenced or indented by 4+ spaces or a
tab) or a quote (``>``) is not a command. Only the first line is read (at most
``MAX_LINE_CHARS`` of it), so a 64 KB comment costs no more than a short one.

Results: ``None`` (not a command: ordinary discussion), :class:`Command` (well-formed), or
:class:`Malformed` (starts like a command but is unknown or has bad arguments: the bot replies
with one line of usage).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.commands.handlers import COMMANDS
from bot.commands.spec import Command, usage_line

__all__ = ["MAX_LINE_CHARS", "Command", "Malformed", "parse_command"]

MAX_LINE_CHARS = 1000
"""Longest first line read (characters); longer ones are malformed."""

_WORD = re.compile(r"^/([A-Za-z_][A-Za-z0-9_-]{0,39})(?=\s|$)")
_COUNT = re.compile(r"^[0-9]{1,6}$")


@dataclass(frozen=True)
class Malformed:
    """A command-looking first line that cannot run; ``reply`` is the one-line usage answer."""

    reply: str


def _first_line(body: str) -> str | None:
    text = body.lstrip("\r\n")
    end = text.find("\n", 0, MAX_LINE_CHARS + 1)
    line = text[: end if end >= 0 else MAX_LINE_CHARS + 1].rstrip("\r")
    if line.startswith(("    ", "\t")):
        return None
    line = line.strip()
    if line.startswith((">", "```", "~~~")):
        return None
    return line


def parse_command(body: str | None) -> Command | Malformed | None:
    """Read the command in a comment body, if any. Never raises."""
    if not body:
        return None
    line = _first_line(body)
    if line is None or not line.startswith("/"):
        return None
    if len(line) > MAX_LINE_CHARS:
        return Malformed("The command line is too long.")
    match = _WORD.match(line)
    if match is None:  # "/ x", "//x", "/etc/passwd …": a slash, not a command word
        return None
    spec = COMMANDS.get(match.group(1).lower())
    if spec is None:
        known = ", ".join(f"`/{n}`" for n in COMMANDS)
        return Malformed(f"Unknown command. Commands: {known}.")
    args = line[match.end() :].split()
    usage = f"Usage: `{usage_line(spec)}`."
    if spec.arg == "none":
        return Command(spec.name) if not args else Malformed(usage)
    if len(args) > 1:
        return Malformed(usage)
    if spec.arg == "range":
        return Command(spec.name, range=args[0] if args else None)
    if not args:
        return Command(spec.name, count=spec.default)
    if not _COUNT.match(args[0]) or not spec.minimum <= int(args[0]) <= spec.maximum:
        return Malformed(
            f"{usage} {spec.arg_name} is a number from {spec.minimum} to {spec.maximum}."
        )
    return Command(spec.name, count=int(args[0]))
