"""A security review's findings, one reliability row each (tests/support/security_cases.py),
asserted here.

Each row's outcome is asserted; its time and memory bounds are measured and checked by
``benchmarks/reliability.py`` (they depend on the machine and its load)."""

from __future__ import annotations

import pytest

from tests.support.reliability import Row
from tests.support.security_cases import ROWS


@pytest.mark.parametrize("row", ROWS, ids=[row.case[:80] for row in ROWS])
def test_row(row: Row) -> None:
    """Observed equals expected (the bounds: benchmarks/reliability.py)."""
    assert row.observe() == row.expected, row.case
