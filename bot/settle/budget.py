"""A run's GitHub request budget: settling stops when it is spent and resumes on the next run."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_BUDGET", "Budget", "BudgetSpent"]

DEFAULT_BUDGET = 200
"""Requests a scheduled run may spend on settling."""


class BudgetSpent(Exception):
    """The next request would exceed the budget: stop here, keep what is settled."""


@dataclass
class Budget:
    """``limit`` requests; ``used`` so far. Spend before each request is sent."""

    limit: int = DEFAULT_BUDGET
    used: int = 0

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)

    def spend(self, requests: int = 1) -> None:
        """Count ``requests`` about to be sent.

        Raises:
            BudgetSpent: they would exceed the limit (nothing is counted).
        """
        if self.used + requests > self.limit:
            raise BudgetSpent(f"{self.used} of {self.limit} requests spent")
        self.used += requests

    def count(self, requests: int) -> None:
        """Count ``requests`` already sent (a long timeline's further pages), past the limit if
        so: the next :meth:`spend` then stops the run."""
        self.used += requests
