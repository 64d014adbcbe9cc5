"""The three gate labels and the label plan.

VALID → ``ready-for-dev``, NEEDS_REFINEMENT →
``needs-refinement``, any fault → ``validator-error``; the three are mutually exclusive, so
applying one removes the other two. Labels the issue has that are not gate labels are never
touched, and a gate label the bot did not add is not removed either (the plan keeps it: see
:func:`bot.gate.plan.plan_gate`). The plan is computed from the labels in the webhook payload,
so an unchanged re-run plans (and writes) nothing.

Adding a label that does not exist through the issue endpoint creates it grey and without a
description (GitHub's "Add labels to an issue": colour ``ededed``), so the GitHub client
creates a missing label with the colour and description below before adding it.

A repository may rename the three and set their colours and descriptions
(``.github/triage-bot.yml``, ``labels:``): the pipeline then works with its
:class:`GateLabels` (:func:`gate_labels`); the module-level labels are the
defaults.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.errors import ConfigError
from bot.gate.verdict import VerdictValue

if TYPE_CHECKING:
    from bot.repo_file import RepoFile

__all__ = [
    "DEFAULT_LABELS",
    "GATE_LABELS",
    "LABEL_FOR_VERDICT",
    "VALIDATOR_ERROR",
    "GateLabel",
    "GateLabels",
    "LabelPlan",
    "file_gate_labels",
    "gate_labels",
    "is_gate_label",
    "label_for",
    "plan_labels",
]


@dataclass(frozen=True)
class GateLabel:
    """A gate label as created in the repository.

    Attributes:
        name: label name (case-insensitive on GitHub).
        color: six hex digits, no ``#`` (GitHub's label ``color`` field).
        description: ≤ 100 characters (GitHub's limit).
    """

    name: str
    color: str
    description: str


READY = GateLabel(
    "ready-for-dev", "0e8a16", "triage-bot: the issue is complete enough to start work"
)
NEEDS_REFINEMENT = GateLabel(
    "needs-refinement", "fbca04", "triage-bot: the author needs to add detail before work starts"
)
VALIDATOR_ERROR = GateLabel(
    "validator-error", "b60205", "triage-bot: the validator failed; a maintainer should look"
)

GATE_LABELS: tuple[GateLabel, ...] = (READY, NEEDS_REFINEMENT, VALIDATOR_ERROR)
"""All gate labels; exactly one of them is on a gated issue."""

_GATE_NAMES = frozenset(label.name.lower() for label in GATE_LABELS)

LABEL_FOR_VERDICT: dict[VerdictValue, GateLabel] = {
    "VALID": READY,
    "NEEDS_REFINEMENT": NEEDS_REFINEMENT,
}


@dataclass(frozen=True)
class GateLabels:
    """The three gate labels of one repository (its ``.github/triage-bot.yml`` may rename them
    and set their colours and descriptions; :data:`DEFAULT_LABELS` otherwise).

    Attributes:
        ready: the label of a VALID verdict.
        needs_refinement: the label of a NEEDS_REFINEMENT verdict.
        validator_error: the label of a fault (no verdict).
    """

    ready: GateLabel = READY
    needs_refinement: GateLabel = NEEDS_REFINEMENT
    validator_error: GateLabel = VALIDATOR_ERROR

    @property
    def all(self) -> tuple[GateLabel, ...]:
        """The three labels, in the order ready, needs-refinement, validator-error."""
        return (self.ready, self.needs_refinement, self.validator_error)

    def is_gate(self, name: str) -> bool:
        """Whether ``name`` is one of the three, case-insensitively (GitHub's rule)."""
        return name.lower() in {label.name.lower() for label in self.all}

    def for_verdict(self, verdict: VerdictValue | None) -> GateLabel:
        """The label of a verdict; ``None`` (a fault) is :attr:`validator_error`."""
        if verdict is None:
            return self.validator_error
        return self.ready if verdict == "VALID" else self.needs_refinement


DEFAULT_LABELS = GateLabels()
"""The gate labels of a repository that renames none."""


def gate_labels(settings: Settings) -> GateLabels:
    """The repository's three gate labels: the bot's, with what its file's ``labels:`` sets.

    Raises:
        ConfigError: two of the three would share a name (GitHub compares names
            case-insensitively).
    """
    return file_gate_labels(settings.repo_file)


def file_gate_labels(file: RepoFile | None) -> GateLabels:
    """The three gate labels a repository file sets (:func:`gate_labels`; ``None``: no file).

    Raises:
        ConfigError: two of the three would share a name.
    """
    if file is None:
        return DEFAULT_LABELS
    given = file.labels
    merged = GateLabels(
        *(
            GateLabel(
                cfg.name or base.name,
                (cfg.color or base.color).lower(),
                base.description if cfg.description is None else cfg.description,
            )
            for cfg, base in zip(
                (given.ready, given.needs_refinement, given.validator_error),
                DEFAULT_LABELS.all,
                strict=True,
            )
        )
    )
    names = [label.name.lower() for label in merged.all]
    if len(set(names)) != len(names):
        raise ConfigError(
            ".github/triage-bot.yml: labels: the three gate labels need three different names"
        )
    return merged


def is_gate_label(name: str) -> bool:
    """Whether ``name`` is one of the gate labels, compared case-insensitively (GitHub's rule
    for label names)."""
    return name.lower() in _GATE_NAMES


def label_for(verdict: VerdictValue | None) -> GateLabel:
    """The gate label of a verdict; ``None`` (a fault: no verdict) is ``validator-error``."""
    return VALIDATOR_ERROR if verdict is None else LABEL_FOR_VERDICT[verdict]


@dataclass(frozen=True)
class LabelPlan:
    """What to change on one issue.

    Attributes:
        target: the gate label the issue must carry afterwards.
        add: label names to add (empty or ``(target.name,)``).
        remove: gate label names to remove (names as the issue currently spells them).
        kept: other gate labels left on the issue because the bot did not add them
            (:func:`bot.gate.plan.plan_gate`: the bot removes only its own labels).
    """

    target: GateLabel
    add: tuple[str, ...]
    remove: tuple[str, ...]
    kept: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        """Whether applying the plan writes anything to GitHub."""
        return bool(self.add or self.remove)


def plan_labels(
    current: Iterable[str], target: GateLabel, gate: GateLabels = DEFAULT_LABELS
) -> LabelPlan:
    """Plan the label writes that leave exactly ``target`` among the gate labels.

    Args:
        current: label names on the issue now (from the payload); GitHub compares them
            case-insensitively, and so does this function.
        target: the gate label to end with.
        gate: the repository's three gate labels (the others are removed).
    """
    current_list = list(current)
    has_target = any(name.lower() == target.name.lower() for name in current_list)
    remove = tuple(
        name for name in current_list if gate.is_gate(name) and name.lower() != target.name.lower()
    )
    add = () if has_target else (target.name,)
    return LabelPlan(target=target, add=add, remove=remove)
