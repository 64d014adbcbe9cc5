"""Evidence for the checklist elements (:mod:`bot.checklist`): quotes found in the issue.

Structured evidence, not a sub-protocol inside the reason: each element is a field of the
validator's reply (:class:`bot.gate.verdict.Verdict`), filled under constrained decoding with a
short verbatim quote from the issue, or ``""``. The bot does not take the model's word for it: an
element counts as present only when its quote is found in the issue text after the same
normalisation on both sides (Unicode NFKC, HTML entities, case, whitespace and markdown
punctuation), outside the lines the bot itself quoted as planted verdicts or chat turns, and is more
than an error's bare name. A quote may skip words with ``...`` / ``…``; each part must then be
found, in order.
"""

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


def find_quote(quote: str, text: str, *, one_word: bool = False) -> bool:
    """Whether ``quote`` is a quote of ``text`` (both as :func:`_normal` makes them).

    ``text`` must already be normalised. A quote shorter than :data:`QUOTE_MIN_CHARS`, with no
    letter or digit, that is only an error's name (``TypeError``) or, unless ``one_word``
    (:attr:`Element.one_word`), a single word of a script written with spaces (``Slow``) is
    not evidence.
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
    """The elements found in an issue: element key → the model's quote, verified, or ``None``.

    Attributes:
        quotes: every element's quote as the model wrote it (``""`` for none).
        found: the keys whose quote was found in the issue.
        elements: the checklist judged (:func:`bot.checklist.checklist`).
        labels: the issue's labels, lower-cased (its kind, for :attr:`Element.required_for`).
    """

    quotes: dict[str, str]
    found: frozenset[str]
    elements: tuple[Element, ...] = ELEMENTS
    labels: frozenset[str] = frozenset()

    @property
    def missing(self) -> tuple[Element, ...]:
        """The elements that apply to this issue (:meth:`Element.applies`) with no verified
        quote, in checklist order: those the model left empty and those it misquoted."""
        return tuple(e for e in self.elements if e.key not in self.found and e.applies(self.labels))

    @property
    def absent(self) -> tuple[Element, ...]:
        """The elements that apply to this issue and that the model left empty (it said the
        issue does not give them), in checklist order: what an author may be asked for."""
        return tuple(e for e in self.missing if not self.quotes.get(e.key, "").strip())

    @property
    def unverified(self) -> tuple[Element, ...]:
        """The elements the model quoted but whose quote does not count (not in the issue, or
        too little to be evidence: :func:`find_quote`), in checklist order: the model's
        error, never the author's omission."""
        return tuple(e for e in self.missing if self.quotes.get(e.key, "").strip())

    @property
    def required_missing(self) -> tuple[Element, ...]:
        """The elements required of this issue (:meth:`Element.required`) with no verified
        quote, in checklist order."""
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
    """Check each element's quote against the issue (see the module docstring).

    Args:
        quotes: element key → the model's quote (``""`` when the model found none).
        issue: the issue as judged.
        elements: the checklist the quotes answer (:func:`bot.checklist.checklist`).
        labels: the issue's labels (from the payload), which say which elements it requires.
    """
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
