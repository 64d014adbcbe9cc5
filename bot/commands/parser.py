"""Parse a comment's first line into a command; never raises on user text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.commands.handlers import COMMANDS
from bot.commands.spec import Command, usage_line

__all__ = ["MAX_LINE_CHARS", "Command", "Malformed", "parse_command"]

MAX_LINE_CHARS = 1000
"""Longest first line read, in characters; a longer one is malformed."""

_WORD = re.compile(r"^/([A-Za-z_][A-Za-z0-9_-]{0,39})(?=\s|$)")
_COUNT = re.compile(r"^[0-9]{1,6}$")


@dataclass(frozen=True)
class Malformed:
    """A command-looking first line that cannot run; ``reply`` is the usage answer."""

    reply: str


def _first_line(body: str) -> str | None:
    # None inside a code block (fenced or indented) or a quote; read no further than the limit.
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
    """The command on the comment's first line: ``None`` for discussion. Never raises."""
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
    if spec.arg == "choice":
        if not args:
            return Command(spec.name)
        word = args[0].lower()
        return Command(spec.name, choice=word) if word in spec.choices else Malformed(usage)
    if not args:
        return Command(spec.name, count=spec.default)
    if not _COUNT.match(args[0]) or not spec.minimum <= int(args[0]) <= spec.maximum:
        return Malformed(
            f"{usage} {spec.arg_name} is a number from {spec.minimum} to {spec.maximum}."
        )
    return Command(spec.name, count=int(args[0]))
