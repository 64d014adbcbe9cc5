"""The label plan for every combination of current gate labels and every target."""

from __future__ import annotations

import itertools

import pytest

from bot.gate.labels import GATE_LABELS, VALIDATOR_ERROR, is_gate_label, label_for, plan_labels

NAMES = [label.name for label in GATE_LABELS]
COMBOS = [list(combo) for r in range(len(NAMES) + 1) for combo in itertools.combinations(NAMES, r)]


@pytest.mark.parametrize("target", GATE_LABELS, ids=NAMES)
@pytest.mark.parametrize("current", COMBOS, ids=lambda c: "+".join(c) or "none")
def test_plan_leaves_exactly_the_target(current: list[str], target: object) -> None:
    from bot.gate.labels import GateLabel

    assert isinstance(target, GateLabel)
    current_with_others = ["bug", *current, "good first issue"]
    plan = plan_labels(current_with_others, target)
    after = (set(current_with_others) | set(plan.add)) - set(plan.remove)
    assert {n for n in after if n in NAMES} == {target.name}
    assert {"bug", "good first issue"} <= after
    assert plan.changes == (set(current) != {target.name})
    assert (plan.add == ()) == (target.name in current)


def test_unchanged_plans_nothing() -> None:
    plan = plan_labels(["bug", "ready-for-dev"], GATE_LABELS[0])
    assert not plan.changes
    assert plan.add == plan.remove == ()


def test_names_compare_case_insensitively_like_github() -> None:
    plan = plan_labels(["Ready-For-Dev", "NEEDS-REFINEMENT"], GATE_LABELS[0])
    assert plan.add == ()
    assert plan.remove == ("NEEDS-REFINEMENT",)


def test_labels_have_colour_and_short_description() -> None:
    for label in GATE_LABELS:
        assert len(label.color) == 6
        int(label.color, 16)
        assert 0 < len(label.description) <= 100


def test_the_label_of_each_verdict_and_of_a_fault() -> None:
    """One mapping: the decision's label and the plan's target both come from it."""
    assert label_for("VALID").name == "ready-for-dev"
    assert label_for("NEEDS_REFINEMENT").name == "needs-refinement"
    assert label_for(None) is VALIDATOR_ERROR
    assert {label_for(v) for v in ("VALID", "NEEDS_REFINEMENT", None)} == set(GATE_LABELS)


def test_gate_labels_are_recognised_in_any_case_and_only_they() -> None:
    assert all(is_gate_label(name) and is_gate_label(name.upper()) for name in NAMES)
    assert not any(is_gate_label(name) for name in ("bug", "ready", "needs-refinement2", ""))
