"""The type label the gate adds beside its gate label: the classifier's guess and the rules.

A guess is applied only when its confidence clears its type's threshold, and only to an issue
that carries no type label and from which no person removed one; the bot adds at most one and
never swaps it. The label goes in the same request as the gate label
(:func:`bot.gate.plan.apply_gate`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.clients.github_port import LabelEvent
from bot.context import JobTypeModel
from bot.gate.labels import GateLabel
from bot.repo_file import TypeLabels
from bot.type_guess import TypeGuess

__all__ = ["TypePlan", "bot_type_labels", "plan_type", "type_label"]

TYPE_LABEL_COLOR = "c5def5"
"""The colour of a type label the bot creates (six hex digits)."""


def type_label(name: str) -> GateLabel:
    """The type label ``name`` as the bot creates it when the repository lacks it."""
    return GateLabel(
        name, TYPE_LABEL_COLOR, "triage-bot: the issue's type, as its classifier guessed"
    )


@dataclass(frozen=True)
class TypePlan:
    """What the gate does about one issue's type.

    Attributes:
        guess: ``None`` when the model could not be used (``problem`` says why).
        label: the type label to add, or ``None``.
        why_not: why no label is added though there is a guess (plain text).
        problem: why the configured type model was not used (plain text).
    """

    guess: TypeGuess | None
    label: str | None = None
    why_not: str | None = None
    problem: str | None = None

    def describe(self) -> str:
        """One plain-text line: the guess and what is done about it (each sink escapes it)."""
        if self.guess is None:
            return f"not guessed: {self.problem}"
        g = self.guess
        said = f"{g.type} {_shown(g.confidence, g.threshold)}"
        if self.label is not None:
            return f"{said}, threshold {_shown(g.threshold, g.confidence)}: +{self.label}"
        return f"{said}, {self.why_not}: no label"


def _shown(value: float | None, other: float | None) -> str:
    """``value`` with 2 decimals, or as many more (up to 4) as tell it from ``other``."""
    if value is None:
        return "none"
    for digits in (2, 3):
        if other is None or f"{value:.{digits}f}" != f"{other:.{digits}f}":
            return f"{value:.{digits}f}"
    return f"{value:.4f}"


def _same(login: str | None, own: str | None) -> bool:
    return login is not None and own is not None and login.lower() == own.lower()


def bot_type_labels(
    events: Sequence[LabelEvent], types: TypeLabels, *, login: Callable[[], str | None]
) -> frozenset[str]:
    """The lower-cased type labels whose newest ``labeled`` event is the bot's."""
    newest: dict[str, LabelEvent] = {}
    for event in events:
        if types.type_of(event.label) is not None:
            newest[event.label.lower()] = event
    return frozenset(
        name
        for name, event in newest.items()
        if not event.removed and _same(event.actor_login, login())
    )


def _blocked(
    label_names: Sequence[str],
    events: Callable[[], Sequence[LabelEvent]] | None,
    types: TypeLabels,
) -> str | None:
    """Why no type label may be added: one is on the issue, or one was removed."""
    present = next((name for name in label_names if types.type_of(name) is not None), None)
    if present is not None:
        return f"the issue has {present!r}"
    if events is None:
        return None
    newest: dict[str, LabelEvent] = {}
    for event in events():
        if types.type_of(event.label) is not None:
            newest[event.label.lower()] = event
    for event in newest.values():
        if not event.removed:  # a payload older than the events
            return f"the issue has {event.label!r}"
        # the bot never removes a type label: a removal under its login is another workflow's
        # or a person's with the same token
        return f"{event.label!r} was removed"
    return None


def plan_type(
    model: JobTypeModel,
    types: TypeLabels,
    guess: TypeGuess | None,
    label_names: Sequence[str],
    *,
    events: Callable[[], Sequence[LabelEvent]] | None,
    login: Callable[[], str | None],
) -> TypePlan:
    """The type plan for one issue from its ``guess`` (``None`` when ``model`` has no
    classifier).

    ``events`` reads the issue's label events (asked only when a label would be added);
    ``None`` when there are none to read (a newly opened issue).
    """
    if guess is None:
        return TypePlan(None, problem=model.problem or "no classifier")
    if guess.threshold is None:
        return TypePlan(guess, why_not="a type the model never applies")
    if not guess.clears:
        shown = _shown(guess.threshold, guess.confidence)
        return TypePlan(guess, why_not=f"below its threshold {shown}")
    name = types.applied(guess.type)
    if name is None:
        return TypePlan(guess, why_not=f"the repository file gives {guess.type} no label")
    blocked = _blocked(label_names, events, types)
    if blocked is not None:
        return TypePlan(guess, why_not=blocked)
    return TypePlan(guess, label=name)
