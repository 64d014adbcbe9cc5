"""Whether a maintainer's comment asks the reporter something, read as CommonMark.

A duplicate check is no request: its sentence ends on an issue reference and says at most
:data:`MAX_OTHER_WORDS` other words. The shape is read, not the meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["MAX_OTHER_WORDS", "asks_for_information", "asks_question", "questions"]

MAX_OTHER_WORDS = 8
"""Most words a duplicate check says besides its references."""

_MARKDOWN = MarkdownIt("commonmark")

# A question mark ending a sentence, not one in a URL's query.
_QUESTION_END = re.compile(r"\?+(?=[\s)\]\"'”’*_~]|$)")
_SENTENCE_END = re.compile(r"[.!?]+(?=\s)")

# Placeholders in a sentence: an issue reference, and a code span (a word that asks nothing).
_REF = "\x01"
_CODE = "\x02"

# An issue or pull request as GitHub links it: #12, OWNER/NAME#12, GH-12, or its URL.
_REFERENCE = re.compile(
    r"(?<![\w#/.-])(?:[\w.-]+/[\w.-]+)?#\d+(?![\w-])"
    r"|(?<![\w-])GH-\d+(?![\w-])"
    r"|https?://[^\s/]+/[^\s/]+/[^\s/]+/(?:issues|pull)/\d+(?:#[\w-]*)?(?![\w/-])",
    re.IGNORECASE,
)
_ISSUE_LINK = re.compile(r"https?://[^\s/]+/[^\s/]+/[^\s/]+/(?:issues|pull)/\d+/?(?:[#?]\S*)?")
_WORD = re.compile(rf"[^\W_]|{_CODE}")
_CLOSING = " \t\n)]\"'”’*_~"  # what may stand between a sentence's last word and its "?"


@dataclass(frozen=True)
class Question:
    """One question of a comment: its sentence up to the ``?``, references shown as ``#``."""

    sentence: str
    about_another_issue: bool
    """A duplicate check, not a request."""


def _inline(children: list[Token]) -> Iterator[tuple[str, bool]]:
    # (text, prose?) pieces; code spans, issue links and breaks are placeholders that ask nothing.
    in_issue_link = False
    for child in children:
        if child.type == "link_open":
            in_issue_link = bool(_ISSUE_LINK.fullmatch(str(child.attrs.get("href", ""))))
            if in_issue_link:
                yield _REF, False
        elif child.type == "link_close":
            in_issue_link = False
        elif in_issue_link:
            continue
        elif child.type == "text":
            yield _REFERENCE.sub(_REF, child.content), True
        elif child.type == "code_inline":
            yield _CODE, False
        elif child.type in ("softbreak", "hardbreak"):
            yield " ", False


def _about_another_issue(sentence: str) -> bool:
    said = sentence.rstrip(_CLOSING)
    if not said.endswith(_REF):
        return False
    words = [word for word in said.replace(_REF, " ").split() if _WORD.search(word)]
    return len(words) <= MAX_OTHER_WORDS


def questions(body: str) -> list[Question]:
    """The questions of a comment's prose, in order; code and block quotes are left out."""
    found = []
    quoted = 0
    for token in _MARKDOWN.parse(body):
        if token.type == "blockquote_open":
            quoted += 1
        elif token.type == "blockquote_close":
            quoted -= 1
        elif token.type == "inline" and not quoted:
            text = ""
            ends = []
            for piece, prose in _inline(token.children or []):
                if prose:
                    ends += [len(text) + m.start() for m in _QUESTION_END.finditer(piece)]
                text += piece
            for end in ends:
                start = max((m.end() for m in _SENTENCE_END.finditer(text, 0, end)), default=0)
                sentence = text[start:end].strip()
                found.append(
                    Question(
                        sentence.replace(_REF, "#").replace(_CODE, "`…`"),
                        _about_another_issue(sentence),
                    )
                )
    return found


def asks_question(body: str) -> bool:
    """Whether a ``?`` ends a sentence of the comment's prose."""
    return bool(questions(body))


def asks_for_information(body: str) -> bool:
    """Whether a comment asks a question that is not a duplicate check."""
    return any(not q.about_another_issue for q in questions(body))
