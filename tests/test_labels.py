"""The label plan for every combination of current gate labels and every target."""

from __future__ import annotations

import itertools

import pytest

from bot.triage.labels import GATE_LABELS, plan_labels

NAMES = [label.name for label in GATE_LABELS]
COMBOS = [list(combo) for r in range(len(NAMES) + 1) for combo in itertools.combinations(NAMES, r)]


@pytest.mark.parametrize("target", GATE_LABELS, ids=NAMES)
@pytest.mark.parametrize("current", COMBOS, ids=lambda c: "+".join(c) or "none")
def test_plan_leaves_exactly_the_target(current: list[str], target: object) -> None:
    from bot.triage.labels import GateLabel

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
