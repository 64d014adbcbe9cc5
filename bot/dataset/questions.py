"""Whether a maintainer's comment asks the reporter something, read with markdown-it-py.

A question is a ``?`` ending a sentence of the prose (code, block quotes and URLs left out).
A duplicate check is not a request: its sentence ends on a reference to an issue or pull
request (``#12``, ``OWNER/NAME#12``, ``GH-12``, a link) and says at most
:data:`MAX_OTHER_WORDS` other words, in any language ("Is this the same as #101?", "¿Es lo
mismo que #101?"). The shape is read, not the meaning: "Can you try #101?" reads as a check,
"#101 と同じですか?" (the verb after the reference) as a request.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["MAX_OTHER_WORDS", "asks_for_information", "asks_question", "questions"]

MAX_OTHER_WORDS = 8
"""Most words a duplicate check says besides its references ("Could this be a duplicate of
#101?" has six)."""

_MARKDOWN = MarkdownIt("commonmark")

_QUESTION_END = re.compile(r"\?+(?=[\s)\]\"'”’*_~]|$)")
"""A question mark that ends a sentence (not one inside a URL's query)."""

_SENTENCE_END = re.compile(r"[.!?]+(?=\s)")
"""Where a sentence ends before the next one starts."""

_REF = "\x01"
"""What a reference to an issue stands as in a sentence's text."""

_CODE = "\x02"
"""What a code span stands as: a word, never a question or a reference."""

_REFERENCE = re.compile(
    r"(?<![\w#/.-])(?:[\w.-]+/[\w.-]+)?#\d+(?![\w-])"
    r"|(?<![\w-])GH-\d+(?![\w-])"
    r"|https?://[^\s/]+/[^\s/]+/[^\s/]+/(?:issues|pull)/\d+(?:#[\w-]*)?(?![\w/-])",
    re.IGNORECASE,
)
"""An issue or pull request as GitHub links it in text: ``#12``, ``OWNER/NAME#12``,
``GH-12``, or its URL."""

_ISSUE_LINK = re.compile(r"https?://[^\s/]+/[^\s/]+/[^\s/]+/(?:issues|pull)/\d+/?(?:[#?]\S*)?")
"""A link's target that is an issue or a pull request."""

_WORD = re.compile(rf"[^\W_]|{_CODE}")
"""A word has a letter or digit (or is a code span)."""

_CLOSING = " \t\n)]\"'”’*_~"
"""What may stand between a sentence's last word and its question mark."""


@dataclass(frozen=True)
class Question:
    """One question of a comment.

    Attributes:
        sentence: its sentence up to the ``?``, references shown as ``#``.
        about_another_issue: a duplicate check (module docstring), not a request.
    """

    sentence: str
    about_another_issue: bool


def _inline(children: list[Token]) -> Iterator[tuple[str, bool]]:
    """A paragraph's (or heading's, or cell's) pieces: ``(text, prose?)``. Prose is a text
    token's own words, references in it replaced; the rest (code spans, links to issues, line
    breaks) is a placeholder that asks nothing. Images and inline HTML are left out."""
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
    """The questions of a comment's prose (CommonMark, markdown-it-py; code and block quotes
    left out), in order: each ``?`` that ends a sentence of a text token."""
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
    """Whether a comment asks a question: a ``?`` ends a sentence of its prose."""
    return bool(questions(body))


def asks_for_information(body: str) -> bool:
    """Whether a comment asks the reporter something: a question of its prose that is not a
    duplicate check (module docstring)."""
    return any(not q.about_another_issue for q in questions(body))
