"""Every row of the fault matrix (tests/support/fault_matrix.py) has its defined outcome.

The same rows are printed by ``benchmarks/reliability.py``, which also checks their time and
memory bounds; here each is one test of its outcome, and once more as the benchmark runs them:
in a plain Python process, without this suite's fixtures (``tests/conftest.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support.fault_matrix import ROWS
from tests.support.reliability import Row

OUTSIDE_PYTEST = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.support.fault_matrix import ROWS
groups = set(sys.argv[2:])
print(json.dumps({r.case: [r.expected, r.observe()] for r in ROWS if r.group in groups}))
"""
"""Runs the rows of the named groups as ``benchmarks/reliability.py`` does; prints each row's
expected and observed outcome as JSON."""

PIPELINE_GROUPS = ("crash", "idempotency")
"""The rows that run a whole job through the runner: what a job decides depends on what the
process holds (the policy measured for its model among it), not only on the row's own set-up."""


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.group}: {r.case}" for r in ROWS])
def test_row_has_its_defined_outcome(row: Row) -> None:
    assert row.observe() == row.expected


def test_the_job_rows_hold_outside_pytest() -> None:
    """A row sets up what it measures itself (a policy for its model included): the suite's
    autouse fixtures are not there when the benchmark runs it."""
    done = subprocess.run(
        [sys.executable, "-c", OUTSIDE_PYTEST, str(ROOT), *PIPELINE_GROUPS],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(outcomes) == sum(r.group in PIPELINE_GROUPS for r in ROWS)
    assert {case: observed for case, (_, observed) in outcomes.items()} == {
        case: expected for case, (expected, _) in outcomes.items()
    }
