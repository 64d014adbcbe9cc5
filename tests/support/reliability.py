"""The shape shared by the reliability tables: one row per fault or hostile input.

A row's ``observe`` runs the scenario and returns what happened as a short outcome string; the
row's ``expected`` is the defined outcome. ``tests/reliability/test_fault_matrix.py``,
``tests/reliability/test_hostile_rows.py`` and ``tests/reliability/test_security_rows.py`` assert
every row's outcome
(``observed == expected``); ``benchmarks/reliability.py`` prints them all with time and peak
memory and checks the rows' bounds (they depend on the machine and its load, so no unit test
asserts them). The table a maintainer reads and the suite are the same code.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One scenario of the reliability table.

    Attributes:
        group: ``model fault``, ``github fault``, ``crash``, ``hostile input``, ``posting``.
        case: what is done, e.g. ``Ollama 503 busy on every try``.
        expected: the defined outcome, e.g. ``gate=validator-error (model_unavailable)``.
        observe: runs the scenario; returns the observed outcome in the same words.
        max_ms: time bound for the scenario (ms); ``None`` when none is claimed.
        max_peak_mib: memory bound (MiB of Python allocations, tracemalloc); ``None`` = none.
    """

    group: str
    case: str
    expected: str
    observe: Callable[[], str]
    max_ms: float | None = None
    max_peak_mib: float | None = None


@dataclass(frozen=True)
class Measured:
    """A row's observed outcome with its wall time (ms) and Python peak memory (MiB)."""

    row: Row
    observed: str
    ms: float
    peak_mib: float

    @property
    def ok(self) -> bool:
        """Outcome as expected and within the row's bounds."""
        within_time = self.row.max_ms is None or self.ms <= self.row.max_ms
        within_memory = self.row.max_peak_mib is None or self.peak_mib <= self.row.max_peak_mib
        return self.observed == self.row.expected and within_time and within_memory


def measure(row: Row) -> Measured:
    """Run one row under ``tracemalloc`` and a wall clock."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        observed = row.observe()
    finally:
        ms = (time.perf_counter() - started) * 1000
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return Measured(row, observed, ms, peak / 2**20)
