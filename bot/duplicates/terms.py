"""An issue's index terms: the words both stores' full-text search and the scorer see.

A term is a run of letters, marks and digits (Unicode categories L, M, Nd and Nl; not No, the
fractions and other numbers PostgreSQL's parser splits at) that starts with a letter or digit,
after NFKC and case folding, at most :data:`MAX_TERM_CHARS` long (longer runs are dropped:
hashes and base64 say nothing about what an issue is). Everything else, NUL and every search
engine's query syntax included, separates terms, so a term is never more than data to either
engine.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["BODY_CHARS", "MAX_TERM_CHARS", "IssueTerms", "issue_terms", "terms"]

MAX_TERM_CHARS = 40
BODY_CHARS = 4000
"""How much of a body is indexed and kept (characters, from the start)."""


def _is_term_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "LM" or category in ("Nd", "Nl")


def _runs(text: str) -> Iterator[str]:
    start = None
    for index, char in enumerate(text):
        if _is_term_char(char):
            # a mark continues a term and never starts one (PostgreSQL's parser drops it there)
            if start is None and unicodedata.category(char)[0] != "M":
                start = index
        elif start is not None:
            yield text[start:index]
            start = None
    if start is not None:
        yield text[start:]


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order, repeats kept."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return [run for run in _runs(folded) if len(run) <= MAX_TERM_CHARS]


@dataclass(frozen=True)
class IssueTerms:
    """An issue's title and body terms, each joined by single spaces (what the store keeps)."""

    title: str
    body: str

    def all(self) -> set[str]:
        """Every distinct term of the title and the body."""
        return set(self.title.split()) | set(self.body.split())


def issue_terms(title: str, body: str | None) -> IssueTerms:
    """The index terms of an issue: its title, and the first :data:`BODY_CHARS` of its body."""
    return IssueTerms(" ".join(terms(title)), " ".join(terms((body or "")[:BODY_CHARS])))
