"""Issue 13's findings, one reliability row each (tests/security_cases.py), asserted here."""

from __future__ import annotations

import pytest

from tests.reliability import Row, measure
from tests.security_cases import ROWS


@pytest.mark.parametrize("row", ROWS, ids=[row.case[:80] for row in ROWS])
def test_row(row: Row) -> None:
    """Observed equals expected, within the row's bounds."""
    measured = measure(row)
    assert measured.ok, (
        f"{row.case}\n  expected: {row.expected}\n  observed: {measured.observed}\n"
        f"  time: {measured.ms:.0f} ms (bound {row.max_ms}); "
        f"memory: {measured.peak_mib:.1f} MiB (bound {row.max_peak_mib})"
    )
