from __future__ import annotations

import pytest

from bot.settle.budget import Budget, BudgetSpent


def test_a_budget_refuses_the_request_past_its_limit_and_counts_none_of_it() -> None:
    budget = Budget(limit=3)
    budget.spend(2)
    with pytest.raises(BudgetSpent, match="2 of 3"):
        budget.spend(2)
    assert (budget.used, budget.left) == (2, 1)
    budget.spend()
    assert budget.left == 0
