"""Comment command parsing: only a first-line command counts, and user text never crashes it."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.commands.handlers import COMMANDS
from bot.commands.parser import Command, Malformed, parse_command
from bot.commands.spec import help_text


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/triage", Command("triage")),
        ("/triage\nplease look again", Command("triage")),
        ("\n\n  /triage  ", Command("triage")),
        ("/TRIAGE", Command("triage")),
        ("/audit", Command("audit")),
        ("/audit src/app.py:10-80", Command("audit", range="src/app.py:10-80")),
        ("/audit_history", Command("audit_history", count=10)),
        ("/audit_history 25", Command("audit_history", count=25)),
        ("/audit_stats", Command("audit_stats", count=8)),
        ("/audit_stats 52", Command("audit_stats", count=52)),
        ("/triage_stats", Command("triage_stats", count=8)),
        ("/Triage_Stats 1", Command("triage_stats", count=1)),
        ("/help", Command("help")),
        ("/help\r\n", Command("help")),
        ("/duplicates", Command("duplicates")),
        ("/duplicates dismiss", Command("duplicates", choice="dismiss")),
        ("/Duplicates DISMISS", Command("duplicates", choice="dismiss")),
    ],
)
def test_commands(body: str, expected: Command) -> None:
    assert parse_command(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        None,
        "",
        "Thanks! /triage",
        "please /audit this",
        "> /triage",
        "```\n/triage\n```",
        "~~~\n/triage",
        "    /triage",
        "\t/triage",
        "text first\n/triage",
        "/ triage",
        "//triage",
        "triage",
        "/etc/passwd is world-readable",
        "/ok.",
    ],
)
def test_not_commands(body: str | None) -> None:
    assert parse_command(body) is None


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("/deploy", "Unknown command"),
        ("/triage now", "Usage: `/triage`"),
        ("/help me", "Usage: `/help`"),
        ("/audit a.py:1-2 b.py:3-4", "Usage: `/audit [PATH:START-END]`"),
        ("/audit_history 0", "N is a number from 1 to 50"),
        ("/audit_history 51", "from 1 to 50"),
        ("/audit_history ten", "from 1 to 50"),
        ("/audit_history -5", "from 1 to 50"),
        ("/audit_stats 99999999999", "WEEKS is a number from 1 to 52"),
        ("/audit_stats 1 2", "Usage: `/audit_stats [WEEKS]`"),
        ("/triage_stats 53", "WEEKS is a number from 1 to 52"),
        ("/triage_stats 0", "WEEKS is a number from 1 to 52"),
        ("/duplicates close", "Usage: `/duplicates [dismiss]`"),
        ("/duplicates dismiss now", "Usage: `/duplicates [dismiss]`"),
        ("/" + "x" * 2000, "too long"),
    ],
)
def test_malformed_get_a_one_line_usage_reply(body: str, needle: str) -> None:
    result = parse_command(body)
    assert isinstance(result, Malformed)
    assert needle in result.reply
    assert "\n" not in result.reply


def test_64kb_comment_reads_only_the_first_line() -> None:
    body = "/audit_stats 4\n" + "x" * 65536
    assert parse_command(body) == Command("audit_stats", count=4)
    assert isinstance(parse_command("/" + "a" * 65536), Malformed)


def test_help_lists_every_command() -> None:
    text = help_text(COMMANDS)
    for name in COMMANDS:
        assert f"`/{name}" in text


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_never_raises(body: str) -> None:
    result = parse_command(body)
    assert result is None or isinstance(result, Command | Malformed)


@given(st.text(max_size=100), st.sampled_from(sorted(COMMANDS)))
def test_only_first_line_commands_count(prefix: str, name: str) -> None:
    first = prefix.split("\n", 1)[0].strip()
    assume(first and not first.startswith("/") and "\r" not in prefix)
    assert parse_command(f"{prefix}\n/{name}") is None
