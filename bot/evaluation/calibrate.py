"""``triage-bot calibrate``: choose a decision policy for a model from a labelled set.

Every candidate decides each judged item again, with no model call; the best on the tune
half is chosen, and refused when the measurement cannot support it
(docs/models-and-policies.md).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from bot.errors import ConfigError
from bot.evaluation.run import Judged, gate_metrics, label_shares, outcome_of
from bot.evaluation.sets import EvalIssue, dev_half
from bot.gate.policy import decide
from bot.policy_file import GUARDS, GatePolicy, HalfFigures, Measurement
from bot.prompts import current_name
from bot.run_report import fit
from bot.shares import Share

__all__ = [
    "MIN_HALF_ITEMS",
    "MIN_HALF_NEEDS_REFINEMENT",
    "TIED_NAMES_CHARS",
    "Calibration",
    "Candidate",
    "calibrate",
    "candidates",
    "check_halves",
    "choice_problems",
    "label_of",
    "policy_yaml",
    "prompt_problems",
    "refuse_or_warn",
    "render_candidates",
    "score",
    "set_problems",
    "tie_note",
]

Half = Literal["tune", "check"]

MIN_HALF_ITEMS = 30
"""The fewest items a half needs without ``--force``: fewer is uncertain by ±17 points."""

MIN_HALF_NEEDS_REFINEMENT = 10
"""The fewest expected NEEDS_REFINEMENT a half needs without ``--force``."""

_SPREAD_AT_MIN = Share(MIN_HALF_ITEMS // 2, MIN_HALF_ITEMS).half_width

SHARES = ("agreement", "agreement_non_borderline", "nr_precision", "nr_recall")
"""The shares printed per candidate and half."""


def label_of(policy: GatePolicy) -> str:
    """A candidate's short name, e.g. ``model+short`` or ``guards+unfilled+short``."""
    return "+".join([policy.verdict_from, *(g for g in GUARDS if g in policy.guards)])


def candidates(base: GatePolicy) -> list[GatePolicy]:
    """Both verdict sources × every guard subset, with ``base``'s thresholds.

    A candidate that can never say NEEDS_REFINEMENT is left out.
    """
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
    """A candidate policy and its figures and :data:`SHARES` per half."""

    policy: GatePolicy
    halves: dict[str, dict[str, Any]]
    shares: dict[str, dict[str, Share]]

    def key(self) -> tuple[float, float, float, int, int]:
        """The choice's order on the tune half; larger is better."""
        tune = self.halves["tune"]
        clear = tune["agreement_non_borderline"]
        return (
            clear if clear is not None else tune["agreement"],
            tune["agreement"],
            tune["nr_precision"] or 0.0,
            int(self.policy.counts_model()),
            -len(self.policy.guards),
        )

    def tie_key(self) -> tuple[float, float, float]:
        """The measured part of :meth:`key`: candidates equal on it tie."""
        clear, agreement, precision, _, _ = self.key()
        return clear, agreement, precision

    def deciding(self, half: Half) -> tuple[str, Share]:
        """The named figure ranked first on ``half``; agreement when all items are borderline."""
        shares = self.shares[half]
        if shares["agreement_non_borderline"].n:
            return "non-borderline agreement", shares["agreement_non_borderline"]
        return "agreement", shares["agreement"]


def _redecide(judged: Judged, policy: GatePolicy) -> tuple[str, str]:
    d = judged.decision
    if d.verdict is None or d.facts is None or d.evidence is None or d.model_verdict is None:
        return d.outcome, ""
    ruling = decide(d.facts, d.evidence, d.model_verdict, policy)
    return ruling.verdict, ruling.rule


def score(judged: Sequence[Judged], policy: GatePolicy) -> Candidate:
    """``policy``'s figures on each half, every item decided again under it."""
    outcomes = [outcome_of(j, *_redecide(j, policy), split=True) for j in judged]
    halves: dict[str, dict[str, Any]] = {}
    shares: dict[str, dict[str, Share]] = {}
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
        counted = label_shares(mine)
        shares[half] = {key: counted[key] for key in SHARES}
    return Candidate(policy, halves, shares)


def _figures(half: dict[str, Any]) -> HalfFigures:
    return HalfFigures(
        items=half["items"],
        agreement=half["agreement"],
        agreement_non_borderline=half["agreement_non_borderline"],
        nr_precision=half["nr_precision"],
        nr_recall=half["nr_recall"],
    )


def check_halves(items: Iterable[EvalIssue]) -> None:
    """Check the set can choose at all; :exc:`ConfigError` whatever ``--force`` says.

    Both halves need items, and the tune half a NEEDS_REFINEMENT.
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


def set_problems(items: Iterable[EvalIssue]) -> list[str]:
    """Why the labelled set is too small to choose on; ``[]`` when it is not."""
    items = list(items)
    sizes = Counter(dev_half(i.id) for i in items)
    needs = Counter(dev_half(i.id) for i in items if i.expected == "NEEDS_REFINEMENT")
    small = [
        f"the {half} half holds {sizes[half]} items ({needs[half]} NEEDS_REFINEMENT)"
        for half in ("tune", "check")
        if sizes[half] < MIN_HALF_ITEMS or needs[half] < MIN_HALF_NEEDS_REFINEMENT
    ]
    if not small:
        return []
    return [
        f"{' and '.join(small)}, under {MIN_HALF_ITEMS} items or {MIN_HALF_NEEDS_REFINEMENT} "
        f"NEEDS_REFINEMENT: a share of so few is uncertain by ±{_SPREAD_AT_MIN * 100:.0f} points "
        "or more (95%), so the choice would be noise"
    ]


def prompt_problems(versions: Iterable[str], current: str) -> list[str]:
    """Why the replies cannot measure a policy: they answer a prompt other than ``current``."""
    others = sorted({current_name(v) for v in versions} - {current})
    if not others:
        return []
    named = ", ".join(others[:2]) + (f" and {len(others) - 2} more" if len(others) > 2 else "")
    return [
        f"the replies answer prompt {named}, not {current}, the one this bot sends: a policy "
        "measured on them never holds at run time (no author comment); record them again "
        "with eval --save-replies"
    ]


TIED_NAMES_CHARS = 200
"""Most characters of tied names a warning lists, so it fits the policy's ``chosen_on``."""


def tie_note(scored: Sequence[Candidate]) -> str | None:
    """A note when candidates tie for the best on the tune half, else ``None``."""
    best = scored[0]
    tied = [c for c in scored if c.tie_key() == best.tie_key()]
    if len(tied) < 2:
        return None
    what, share = best.deciding("tune")
    names, left = fit([label_of(c.policy) for c in tied], TIED_NAMES_CHARS, separator=2)
    listed = ", ".join(names) + (f" and {left} more" if left else "")
    return (
        f"{len(tied)} candidates tie for the best on the tune half ({what} {share}; "
        f"agreement and NR precision alike: {listed}); {label_of(best.policy)} is written by "
        "the tie-break (the model's verdict first, then the fewer guards), not by a figure"
    )


def choice_problems(scored: Sequence[Candidate]) -> list[str]:
    """Why ``scored[0]`` fails: another beats it on the check half beyond its interval."""
    best = scored[0]
    problems = []
    what, mine = best.deciding("check")
    if mine.value is not None:
        beaten = [
            (other, share)
            for other in scored[1:]
            for share in [other.deciding("check")[1]]
            if share.value is not None and share.value - mine.value > mine.half_width
        ]
        if beaten:
            other, share = max(beaten, key=lambda pair: pair[1].value or 0.0)
            more = f" (and {len(beaten) - 1} others)" if len(beaten) > 1 else ""
            problems.append(
                f"on the check half, {label_of(best.policy)}'s {what} {mine} is below "
                f"{label_of(other.policy)}'s {share}{more} by "
                f"{((share.value or 0.0) - mine.value) * 100:.0f} points, more than its "
                f"interval's half-width ({mine.half_width * 100:.0f}): the choice does not "
                "hold there"
            )
    return problems


def refuse_or_warn(problems: Sequence[str], *, force: bool) -> list[str]:
    """``problems`` as warnings with ``force``, else :exc:`ConfigError` naming each."""
    if problems and not force:
        raise ConfigError(
            "calibrate writes no policy the measurement cannot support: "
            + "; ".join(f"({n}) {p}" for n, p in enumerate(problems, start=1))
            + ". --force writes it anyway, with these warnings in its chosen_on"
        )
    return list(problems)


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` chose; warnings and note are kept in its ``chosen_on``."""

    policy: GatePolicy
    scored: list[Candidate]
    warnings: list[str]
    note: str | None = None


def calibrate(
    judged: Sequence[Judged],
    base: GatePolicy,
    *,
    name: str,
    model: str,
    prompt_version: str,
    labelled_set: str,
    force: bool = False,
    warnings: Sequence[str] = (),
) -> Calibration:
    """Score every candidate and choose the best on the tune half.

    ``warnings`` are problems ``force`` let through before judging. The choice's
    ``same_model_as`` is empty. Raises :exc:`ConfigError` as :func:`check_halves`, and
    without ``force`` for a :func:`choice_problems` problem.
    """
    check_halves(j.item for j in judged)
    scored = sorted((score(judged, p) for p in candidates(base)), key=Candidate.key, reverse=True)
    found = [*warnings, *refuse_or_warn(choice_problems(scored), force=force)]
    best = scored[0]
    what, share = best.deciding("check")
    note = tie_note(scored)
    chosen_on = (
        f"triage-bot calibrate on {labelled_set}: the best of {len(scored)} candidates "
        f"({label_of(best.policy)}) on the tune half (non-borderline agreement, then "
        "agreement, then needs-refinement precision); the check half was not used to choose; "
        f"there, its {what} is {share}" + (f". Note: {note}" if note else "")
    )
    if found:
        chosen_on += ". Written with --force despite: " + "; ".join(
            f"({n}) {w}" for n, w in enumerate(found, start=1)
        )
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
            "chosen_on": chosen_on,
        }
    )
    return Calibration(chosen, scored, found, note)


def policy_yaml(policy: GatePolicy) -> str:
    """The policy as the YAML ``gate:`` block of ``.github/triage-bot.yml``, never folded."""
    data = {"gate": {"policy": policy.model_dump(mode="json", exclude_none=True)}}
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=float("inf")))


def render_candidates(scored: Sequence[Candidate]) -> str:
    """The candidates as a markdown table, best first, one row per half."""
    lines = [
        "| policy | half | agreement | non-borderline agreement | NR precision | NR recall "
        "| raised |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in scored:
        for half in ("tune", "check"):
            shares = c.shares[half]
            cells = " | ".join(str(shares[key]) for key in SHARES)
            lines.append(
                f"| {label_of(c.policy)} | {half} | {cells} | {c.halves[half]['raised']} |"
            )
    return "\n".join(lines)
