"""The hostile-input and posting-safety rows of the reliability table, asserted one by one.

Each row (``tests/support/hostile_cases.py``) runs the real code on one hostile input; the test
holds
the observed outcome to the row's ``expected`` words, so the table a maintainer reads and what
the suite checks are the same code. The rows' time and memory bounds depend on the machine and
its load: ``benchmarks/reliability.py`` measures and checks them, not the unit tests.
"""

from __future__ import annotations

import pytest

from tests.support.hostile_cases import HOSTILE, POSTING, ROWS
from tests.support.reliability import Row, measure


@pytest.mark.parametrize("row", ROWS, ids=[f"{row.group}: {row.case}"[:90] for row in ROWS])
def test_row(row: Row) -> None:
    """Observed equals expected (the bounds: benchmarks/reliability.py)."""
    assert row.observe() == row.expected, f"{row.group} | {row.case}"


def test_table_covers_the_issue() -> None:
    """The table keeps the cases it was made for: payload faults of all three event kinds, the
    1 MiB body, the 10,000-line diff and 3,000-file PR, at least 20 path tricks, 64 KB
    commands, and posting checks for mentions, images, HTML, markers and the length limit."""
    cases = [row.case for row in ROWS]
    assert {row.group for row in ROWS} == {HOSTILE, POSTING}
    for event in ("issues (", "pull_request_target (", "issue_comment ("):
        assert sum(case.startswith(event) for case in cases) >= 5, event
    for needle in ("1 MiB", "10,000-line diff", "3,000-file PR", "65,536"):
        assert any(needle in case for case in cases), needle
    assert sum(case.startswith("/audit path:") for case in cases) >= 20
    assert sum(case.startswith("command comment:") for case in cases) >= 5
    posting = " ".join(row.case for row in ROWS if row.group == POSTING)
    for needle in ("@mentions", "images", "raw HTML", "triage-bot:audit", "triage-bot:head"):
        assert needle in posting, needle


def test_bounded_rows_claim_time_and_memory() -> None:
    """Every large input states both bounds, so a slowdown or a memory blow-up fails the row."""
    sizes = ("MiB", "KiB", "64 KB", "10,000", "3,000", "100,000", "65,536")
    large = [row for row in ROWS if any(size in row.case for size in sizes)]
    assert len(large) >= 15
    assert [row.case for row in large if row.max_ms is None or row.max_peak_mib is None] == []


def test_a_wrong_outcome_fails_its_row() -> None:
    """The harness is not vacuous: a row whose observation differs, or exceeds a bound, is
    not ok."""
    row = ROWS[0]
    wrong = Row(row.group, row.case, row.expected + " (not this)", row.observe)
    assert not measure(wrong).ok
    slow = Row(row.group, row.case, row.expected, row.observe, max_ms=0.0)
    assert not measure(slow).ok
