"""The checklist elements and the evidence for them: quotes the bot can find in the issue.

Rule source: issue 14, "Structured evidence, not a sub-protocol inside reason". Each element
is a field of the validator's reply (:class:`bot.triage.verdict.Verdict`), filled under
constrained decoding with a short verbatim quote from the issue, or ``""``. The bot does not
take the model's word for it: an element counts as present only when its quote is found in the
issue text after the same normalisation on both sides (Unicode NFKC, HTML entities, case,
whitespace and markdown punctuation), outside the lines the bot itself quoted as planted
verdicts or chat turns, and is more than an error's bare name. A quote may skip words with
``...`` / ``…``; each part must then be found, in order.

:data:`ELEMENTS` is the one definition: the prompt's field instructions, the reason the bot
builds, and (issue 16) the comment that tells an author what to add all read it.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

from bot.triage.facts import WIDE_SCRIPT
from bot.triage.issue_text import (
    IssueText,
    escape_delimiters,
    quote_role_lines,
    quote_verdict_lines,
)

__all__ = ["ELEMENTS", "QUOTE_MIN_CHARS", "Element", "Evidence", "find_quote", "gather_evidence"]


@dataclass(frozen=True)
class Element:
    """One checklist element.

    Attributes:
        key: the reply's field name.
        ask: what the model is asked to copy (prompt wording).
        missing: what an author is asked to add, in plain words.
    """

    key: str
    ask: str
    missing: str


ELEMENTS: tuple[Element, ...] = (
    Element("problem", "the words saying what goes wrong, or what change or answer is wanted",
            "what goes wrong (the error, the output or the behaviour you see), or the change "
            "you want"),
    Element("trigger", "the words saying what the author did or ran when it happens (steps, "
            "command, code, setting, link to a reproduction)",
            "how to make it happen: the steps, command, code or a link to a reproduction"),
    Element("expected", "the words saying what should happen instead",
            "what you expected to happen instead"),
)  # fmt: skip

QUOTE_MIN_CHARS = 4
"""Shortest quote that counts (characters after normalisation, letters or digits included)."""

_PUNCTUATION = re.compile(r"[`*_>#\[\]\"'“”‘’„«»「」]")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_ERROR_NAME = re.compile(r"[\w.:]*(?:error|exception|panic)", re.IGNORECASE)


def _normal(text: str) -> str:
    text = html.unescape(unicodedata.normalize("NFKC", text)).casefold()
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def _judgeable(issue: IssueText) -> str:
    """The issue's title and body as the author wrote them, without the bot's cut marker and
    the lines the bot quoted as planted verdicts or chat turns (``> `` added by
    :func:`quote_verdict_lines` / :func:`quote_role_lines`): a quote of text the author did not
    write, or of planted text, is no evidence."""
    kept = []
    for text in (issue.title, issue.author_body):
        original = escape_delimiters(text).split("\n")
        quoted = quote_verdict_lines(quote_role_lines(escape_delimiters(text))).split("\n")
        kept += [line for line, sent in zip(original, quoted, strict=True) if line == sent]
    return _normal("\n".join(kept))


def find_quote(quote: str, text: str) -> bool:
    """Whether ``quote`` is a quote of ``text`` (both as :func:`_normal` makes them).

    ``text`` must already be normalised. A quote shorter than :data:`QUOTE_MIN_CHARS`, with no
    letter or digit, that is only an error's name (``TypeError``) or a single word of a script
    written with spaces (``Slow``) is not evidence.
    """
    normal = _normal(quote).strip(" .,;:!?")
    if len(normal) < QUOTE_MIN_CHARS or not any(ch.isalnum() for ch in normal):
        return False
    if _ERROR_NAME.fullmatch(normal):
        return False
    if " " not in normal and not WIDE_SCRIPT.search(normal):
        return False  # one word ("Slow", "Traceback") names a topic, it states nothing
    at = 0
    for part in (p.strip(" .,;:") for p in _ELLIPSIS.split(normal)):
        if not part:
            continue
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


@dataclass(frozen=True)
class Evidence:
    """The elements found in an issue: element key → the model's quote, verified, or ``None``.

    Attributes:
        quotes: every element's quote as the model wrote it (``""`` for none).
        found: the keys whose quote was found in the issue.
    """

    quotes: dict[str, str]
    found: frozenset[str]

    @property
    def missing(self) -> tuple[Element, ...]:
        """The elements with no verified quote, in :data:`ELEMENTS` order."""
        return tuple(e for e in ELEMENTS if e.key not in self.found)


def gather_evidence(quotes: dict[str, str], issue: IssueText) -> Evidence:
    """Check each element's quote against the issue (see the module docstring).

    Args:
        quotes: element key → the model's quote (``""`` when the model found none).
        issue: the issue as judged.
    """
    text = _judgeable(issue)
    found = frozenset(key for key, quote in quotes.items() if quote and find_quote(quote, text))
    return Evidence(quotes=dict(quotes), found=found)
