"""Every row of the fault matrix (tests/fault_matrix.py) has its defined outcome.

The same rows are printed by ``benchmarks/reliability.py``, which also checks their time and
memory bounds; here each is one test of its outcome.
"""

from __future__ import annotations

import pytest

from tests.fault_matrix import ROWS
from tests.reliability import Row


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.group}: {r.case}" for r in ROWS])
def test_row_has_its_defined_outcome(row: Row) -> None:
    assert row.observe() == row.expected
