"""Every row of the fault matrix (tests/fault_matrix.py) has its defined outcome.

The same rows are printed by ``benchmarks/reliability.py``; here each is one test.
"""

from __future__ import annotations

import pytest

from tests.fault_matrix import ROWS
from tests.reliability import Row, measure


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.group}: {r.case}" for r in ROWS])
def test_row_has_its_defined_outcome(row: Row) -> None:
    measured = measure(row)
    assert measured.observed == row.expected
    assert measured.ok, f"over a bound: {measured.ms:.0f} ms, {measured.peak_mib:.1f} MiB"
