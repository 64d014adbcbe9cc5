"""``triage-bot calibrate``: choose a decision policy for a model from a labelled set.

The gate runs over the set once (live, or on recorded replies); every candidate policy then
decides each item again from the same facts, evidence and model verdict, with no model call.
Candidates are every combination of where the verdict comes from (the model's own, or VALID
unless a guard lowers it) and which guards apply (:data:`bot.gate_policy.GUARDS`), with the
thresholds of the base policy. Each is scored on both halves of the fixed split
(:func:`bot.evaluation.sets.dev_half`); the best on the tune half is chosen (non-borderline
agreement, then agreement, then NEEDS_REFINEMENT precision, then the one that counts the
model's verdict, then the fewer guards) and written with its figures on both halves. The check
half is never used to choose: it is the figure to trust.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from bot.errors import ConfigError
from bot.evaluation.run import Judged, gate_metrics, outcome_of
from bot.evaluation.sets import EvalIssue, dev_half
from bot.gate.policy import decide
from bot.gate_policy import GUARDS, GatePolicy, HalfFigures, Measurement

__all__ = [
    "Candidate",
    "calibrate",
    "candidates",
    "check_halves",
    "label_of",
    "policy_yaml",
    "render_candidates",
    "score",
]

Half = Literal["tune", "check"]


def label_of(policy: GatePolicy) -> str:
    """A candidate's short name: ``model``, ``model+short``, ``guards+unfilled+short`` …"""
    return "+".join([policy.verdict_from, *(g for g in GUARDS if g in policy.guards)])


def candidates(base: GatePolicy) -> list[GatePolicy]:
    """Every candidate policy: both verdict sources × every subset of the guards, each with
    ``base``'s thresholds, named by :func:`label_of`; none that can never say
    NEEDS_REFINEMENT (:meth:`~bot.gate_policy.GatePolicy.can_refuse`)."""
    found = []
    for source in ("model", "guards"):
        for size in range(len(GUARDS) + 1):
            for guards in itertools.combinations(GUARDS, size):
                policy = base.model_copy(
                    update={"verdict_from": source, "guards": guards, "measured": None}
                )
                if policy.can_refuse():
                    found.append(policy.model_copy(update={"name": label_of(policy)}))
    return found


@dataclass(frozen=True)
class Candidate:
    """A candidate policy and its figures.

    Attributes:
        policy: the candidate.
        halves: ``tune`` and ``check`` → :func:`bot.evaluation.run.label_metrics` figures, plus
            ``raised`` (items whose model said NEEDS_REFINEMENT and the policy VALID).
    """

    policy: GatePolicy
    halves: dict[str, dict[str, Any]]

    def key(self) -> tuple[float, float, float, int, int]:
        """The choice's order on the tune half (larger is better)."""
        tune = self.halves["tune"]
        clear = tune["agreement_non_borderline"]
        return (
            clear if clear is not None else tune["agreement"],
            tune["agreement"],
            tune["nr_precision"] or 0.0,
            int(self.policy.counts_model()),
            -len(self.policy.guards),
        )


def _redecide(judged: Judged, policy: GatePolicy) -> tuple[str, str]:
    d = judged.decision
    if d.verdict is None or d.facts is None or d.evidence is None or d.model_verdict is None:
        return d.outcome, ""
    ruling = decide(d.facts, d.evidence, d.model_verdict, policy)
    return ruling.verdict, ruling.rule


def score(judged: Sequence[Judged], policy: GatePolicy) -> Candidate:
    """``policy``'s figures on each half of the judged items (each decided again under it)."""
    outcomes = [outcome_of(j, *_redecide(j, policy), split=True) for j in judged]
    halves: dict[str, dict[str, Any]] = {}
    for half in ("tune", "check"):
        mine = [o for o in outcomes if o["half"] == half]
        metrics = gate_metrics(mine, split=False)
        halves[half] = {
            key: metrics[key]
            for key in (
                "items", "agreement", "agreement_non_borderline", "nr_precision", "nr_recall",
                "valid_precision", "valid_recall", "validator_error_rate", "raised",
            )
        }  # fmt: skip
    return Candidate(policy, halves)


def _figures(half: dict[str, Any]) -> HalfFigures:
    return HalfFigures(
        items=half["items"],
        agreement=half["agreement"],
        agreement_non_borderline=half["agreement_non_borderline"],
        nr_precision=half["nr_precision"],
        nr_recall=half["nr_recall"],
    )


def check_halves(items: Iterable[EvalIssue]) -> None:
    """Check the labelled set can choose a policy: items on both halves of the fixed split (the
    choice is made on the tune half, the check half is the figure to trust), and a
    NEEDS_REFINEMENT among the tune half's (else every policy that never says no ties at 100%).

    Raises:
        ConfigError: a half holds no item, or the tune half no NEEDS_REFINEMENT; no flag
            overrides it.
    """
    items = list(items)
    counts = Counter(dev_half(i.id) for i in items)
    empty = [half for half in ("tune", "check") if not counts[half]]
    if empty:
        raise ConfigError(
            f"the labelled set ({counts.total()} items) has no item on the "
            f"{' and the '.join(empty)} half of the fixed split: calibrate chooses on the tune "
            "half and measures on the check half"
        )
    if not any(dev_half(i.id) == "tune" and i.expected == "NEEDS_REFINEMENT" for i in items):
        raise ConfigError(
            f"the tune half ({counts['tune']} items) holds no NEEDS_REFINEMENT item: a policy "
            "that never asks for more would agree with every item there; add issues your "
            "maintainers sent back"
        )


def calibrate(
    judged: Sequence[Judged],
    base: GatePolicy,
    *,
    name: str,
    model: str,
    prompt_version: str,
    labelled_set: str,
) -> tuple[GatePolicy, list[Candidate]]:
    """Score every candidate and choose (see the module docstring).

    Args:
        judged: the gate's decisions on the labelled set (:func:`bot.evaluation.run.judge_items`).
        base: the policy whose thresholds the candidates share.
        name: the chosen policy's name.
        model: the model the replies came from, as runs will name it.
        prompt_version: the validator prompt the model answered.
        labelled_set: the set's name (no path outside the project).

    Returns:
        The chosen policy with its measurement, and every candidate, best first. Its
        ``same_model_as`` is empty: the base policy's other names are another model's.

    Raises:
        ConfigError: a half of the set holds no item (:func:`check_halves`).
    """
    check_halves(j.item for j in judged)
    scored = sorted((score(judged, p) for p in candidates(base)), key=Candidate.key, reverse=True)
    best = scored[0]
    chosen = best.policy.model_copy(
        update={
            "name": name,
            "same_model_as": (),
            "measured": Measurement(
                model=model,
                prompt_version=prompt_version,
                labelled_set=labelled_set,
                tune=_figures(best.halves["tune"]),
                check=_figures(best.halves["check"]),
            ),
            "chosen_on": (
                f"triage-bot calibrate on {labelled_set}: the best of {len(scored)} candidates "
                f"({label_of(best.policy)}) on the tune half (non-borderline agreement, then "
                "agreement, then needs-refinement precision); the check half was not used to "
                "choose"
            ),
        }
    )
    return chosen, scored


def policy_yaml(policy: GatePolicy) -> str:
    """The policy as the ``gate:`` block of ``.github/triage-bot.yml`` (YAML). No value is
    folded onto a continuation line (a long model name would start one with its own text)."""
    data = {"gate": {"policy": policy.model_dump(mode="json", exclude_none=True)}}
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=float("inf")))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def render_candidates(scored: Sequence[Candidate]) -> str:
    """The candidates as a markdown table, best first: per half agreement (non-borderline),
    NEEDS_REFINEMENT precision and recall, and how many model NEEDS_REFINEMENTs became VALID."""
    head = (
        "| policy | tune agreement (non-borderline) | tune NR precision / recall | "
        "check agreement (non-borderline) | check NR precision / recall | raised (tune / check) |"
    )
    lines = [head, "|---|---|---|---|---|---|"]
    for c in scored:
        t, k = c.halves["tune"], c.halves["check"]
        lines.append(
            f"| {label_of(c.policy)} | {_pct(t['agreement'])} "
            f"({_pct(t['agreement_non_borderline'])}) | {_pct(t['nr_precision'])} / "
            f"{_pct(t['nr_recall'])} | {_pct(k['agreement'])} "
            f"({_pct(k['agreement_non_borderline'])}) | {_pct(k['nr_precision'])} / "
            f"{_pct(k['nr_recall'])} | {t['raised']} / {k['raised']} |"
        )
    return "\n".join(lines)
