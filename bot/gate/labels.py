"""The three gate labels and the label plan.

Exactly one gate label is on a gated issue; other labels are never touched. A repository may
rename the three (``.github/triage-bot.yml``): use its :class:`GateLabels`, not the defaults.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.errors import ConfigError
from bot.gate.verdict import VerdictValue
from bot.repo_file import TYPE_NAMES

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
    """A gate label as created: ``color`` is six hex digits without ``#``, ``description`` at
    most 100 characters (GitHub's limit)."""

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
    """The three gate labels of one repository (:data:`DEFAULT_LABELS` unless renamed)."""

    ready: GateLabel = READY
    needs_refinement: GateLabel = NEEDS_REFINEMENT
    validator_error: GateLabel = VALIDATOR_ERROR

    @property
    def all(self) -> tuple[GateLabel, ...]:
        """Ready, needs-refinement and validator-error, in that order."""
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
    """The repository's gate labels; raises ``ConfigError`` when two of them share a name."""
    return file_gate_labels(settings.repo_file)


def file_gate_labels(file: RepoFile | None) -> GateLabels:
    """The gate labels a repository file sets (``None``: no file); raises as :func:`gate_labels`,
    and when the file's ``duplicates.label`` is one of them."""
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
    for kind in TYPE_NAMES:  # the names the file gives; the common defaults apply only unclaimed
        named: list[str] = getattr(file.types.labels, kind) or []
        clash = next((n for n in named if merged.is_gate(n)), None)
        if clash is not None:
            raise ConfigError(
                f".github/triage-bot.yml: types.labels.{kind}: {clash!r} is a gate label's "
                "name; a type label needs one of its own"
            )
    duplicate = file.duplicates.label
    if duplicate is not None and merged.is_gate(duplicate):
        raise ConfigError(
            f".github/triage-bot.yml: duplicates.label: {duplicate!r} is a gate label's name; "
            "the possible-duplicate label needs one of its own"
        )
    return merged


def is_gate_label(name: str) -> bool:
    """Whether ``name`` is one of the default gate labels, case-insensitively."""
    return name.lower() in _GATE_NAMES


def label_for(verdict: VerdictValue | None) -> GateLabel:
    """The default gate label of a verdict; ``None`` (a fault) is ``validator-error``."""
    return VALIDATOR_ERROR if verdict is None else LABEL_FOR_VERDICT[verdict]


@dataclass(frozen=True)
class LabelPlan:
    """What to change on one issue; ``kept`` are gate labels left because the bot did not add
    them, ``remove`` spells names as the issue does."""

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
    """The writes that leave exactly ``target`` among the gate labels (case-insensitive names)."""
    current_list = list(current)
    has_target = any(name.lower() == target.name.lower() for name in current_list)
    remove = tuple(
        name for name in current_list if gate.is_gate(name) and name.lower() != target.name.lower()
    )
    add = () if has_target else (target.name,)
    return LabelPlan(target=target, add=add, remove=remove)
