"""The model's quote per checklist element, checked against the issue (docs/gate.md)."""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from bot.checklist import ELEMENTS, Element
from bot.gate.facts import WIDE_SCRIPT
from bot.gate.issue_text import IssueText, quote_role_lines, quote_verdict_lines
from bot.neutralise import escape_delimiters

__all__ = ["QUOTE_MIN_CHARS", "Evidence", "find_quote", "gather_evidence"]

QUOTE_MIN_CHARS = 4
"""Shortest quote that counts (characters after normalisation, letters or digits included)."""

_PUNCTUATION = re.compile(r"[`*_>#\[\]\"'“”‘’„«»「」]")
_ELLIPSIS = re.compile(r"\.\.\.|…")
_ERROR_NAME = re.compile(r"[\w.:]*(?:error|exception|panic)", re.IGNORECASE)


def _normal(text: str) -> str:
    text = html.unescape(unicodedata.normalize("NFKC", text)).casefold()
    return " ".join(_PUNCTUATION.sub(" ", text).split())


def _judgeable(issue: IssueText) -> str:
    # what the author wrote, less the cut marker and the lines the bot quoted as planted:
    # a quote of text the author did not write is no evidence
    kept = []
    for text in (issue.title, issue.author_body):
        original = escape_delimiters(text).split("\n")
        quoted = quote_verdict_lines(quote_role_lines(escape_delimiters(text))).split("\n")
        kept += [line for line, sent in zip(original, quoted, strict=True) if line == sent]
    return _normal("\n".join(kept))


def find_quote(quote: str, text: str, *, one_word: bool = False) -> bool:
    """Whether ``quote`` is in ``text``, which must already be normalised.

    Too short, a bare error name or, unless ``one_word``, a single word never counts.
    """
    normal = _normal(quote).strip(" .,;:!?")
    if len(normal) < QUOTE_MIN_CHARS or not any(ch.isalnum() for ch in normal):
        return False
    if _ERROR_NAME.fullmatch(normal):
        return False
    if " " not in normal and not one_word and not WIDE_SCRIPT.search(normal):
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
    """The model's quotes (``""`` for none), the keys found, and the lower-cased labels."""

    quotes: dict[str, str]
    found: frozenset[str]
    elements: tuple[Element, ...] = ELEMENTS
    labels: frozenset[str] = frozenset()

    @property
    def missing(self) -> tuple[Element, ...]:
        """The applicable elements with no verified quote, in checklist order."""
        return tuple(e for e in self.elements if e.key not in self.found and e.applies(self.labels))

    @property
    def absent(self) -> tuple[Element, ...]:
        """Missing elements the model left empty: what an author may be asked for."""
        return tuple(e for e in self.missing if not self.quotes.get(e.key, "").strip())

    @property
    def unverified(self) -> tuple[Element, ...]:
        """Missing elements the model quoted: its error, never the author's omission."""
        return tuple(e for e in self.missing if self.quotes.get(e.key, "").strip())

    @property
    def required_missing(self) -> tuple[Element, ...]:
        """The required elements with no verified quote, in checklist order."""
        return tuple(
            e for e in self.elements if e.key not in self.found and e.required(self.labels)
        )


def gather_evidence(
    quotes: dict[str, str],
    issue: IssueText,
    *,
    elements: tuple[Element, ...] = ELEMENTS,
    labels: Iterable[str] = (),
) -> Evidence:
    """Check each element's quote against the issue; ``labels`` are the payload's."""
    text = _judgeable(issue)
    one_word = {e.key for e in elements if e.one_word}
    found = frozenset(
        key
        for key, quote in quotes.items()
        if quote and find_quote(quote, text, one_word=key in one_word)
    )
    return Evidence(
        quotes=dict(quotes),
        found=found,
        elements=elements,
        labels=frozenset(name.lower() for name in labels),
    )
