"""The gate's checklist: the bot's own elements and the reply keys they reserve."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ELEMENTS", "EVERY_ISSUE", "REPLY_KEYS", "RESERVED_KEYS", "Element", "checklist"]

EVERY_ISSUE = "*"
"""In :attr:`Element.required_for`: the element is required of every issue."""


@dataclass(frozen=True)
class Element:
    """One checklist element; ``ask`` is the prompt's wording, ``missing`` the author's.

    ``required_for`` labels compare case-insensitively; empty for the bot's own elements."""

    key: str
    ask: str
    missing: str
    required_for: tuple[str, ...] = ()
    one_word: bool = False

    def required(self, labels: frozenset[str]) -> bool:
        """Whether an issue with these lower-cased labels must give this element."""
        return any(kind == EVERY_ISSUE or kind.lower() in labels for kind in self.required_for)

    def applies(self, labels: frozenset[str]) -> bool:
        """Whether an author is asked for it when missing: the bot's always, else if required."""
        return not self.required_for or self.required(labels)


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
"""The bot's own elements, in the order the reply holds their quotes."""

REPLY_KEYS: tuple[str, ...] = ("reason", "verdict")
"""The reply's keys after the quotes."""

RESERVED_KEYS = frozenset({*(e.key for e in ELEMENTS), *REPLY_KEYS})
"""Reply keys a repository's element may not take."""


def checklist(extra: tuple[Element, ...] = ()) -> tuple[Element, ...]:
    """:data:`ELEMENTS`, then ``extra``; ``ValueError`` if a key is reserved or repeated."""
    keys = [e.key for e in extra]
    clash = (set(keys) & RESERVED_KEYS) or {k for k in keys if keys.count(k) > 1}
    if clash:
        raise ValueError(f"checklist element keys must be unique: {sorted(clash)}")
    return (*ELEMENTS, *extra)
