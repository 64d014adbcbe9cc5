"""The gate's checklist: the bot's own elements and the reply keys no other element may take.

The repository file (:mod:`bot.repo_file`) refuses an element named like one of these, and the
gate (:mod:`bot.gate.evidence`, :mod:`bot.gate.validator`) builds its prompt, reply shape and
author comment from them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ELEMENTS", "EVERY_ISSUE", "REPLY_KEYS", "RESERVED_KEYS", "Element", "checklist"]

EVERY_ISSUE = "*"
"""In :attr:`Element.required_for`: the element is required of every issue."""


@dataclass(frozen=True)
class Element:
    """One checklist element.

    Attributes:
        key: the reply's field name.
        ask: what the model is asked to copy (prompt wording).
        missing: what an author is asked to add, in plain words.
        required_for: the issue labels (compared case-insensitively) for which a missing quote
            alone makes the issue NEEDS_REFINEMENT; :data:`EVERY_ISSUE` for all issues. Empty
            for the bot's own elements, which the decision policy weighs together
            (``valid_needs_one_of``).
        one_word: whether a one-word quote counts. Not for the bot's own elements ("Slow"
            names a topic); a repository's element is often a value (``2.3.1``).
    """

    key: str
    ask: str
    missing: str
    required_for: tuple[str, ...] = ()
    one_word: bool = False

    def required(self, labels: frozenset[str]) -> bool:
        """Whether an issue with these labels (lower-cased) must give this element."""
        return any(kind == EVERY_ISSUE or kind.lower() in labels for kind in self.required_for)

    def applies(self, labels: frozenset[str]) -> bool:
        """Whether an author of such an issue is asked for it when it is missing: the bot's
        own elements always, a repository's when required."""
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
    """The validator's checklist: :data:`ELEMENTS`, then a repository's own elements.

    Raises:
        ValueError: an extra element reuses a key (:data:`RESERVED_KEYS` or another extra's).
    """
    keys = [e.key for e in extra]
    clash = (set(keys) & RESERVED_KEYS) or {k for k in keys if keys.count(k) > 1}
    if clash:
        raise ValueError(f"checklist element keys must be unique: {sorted(clash)}")
    return (*ELEMENTS, *extra)
