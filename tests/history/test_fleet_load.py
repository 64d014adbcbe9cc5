"""A runner pool on one store: writer processes with replays and same-event races
lose no row, double none, keep the weekly sums and post one comment per issue or PR.

The writers are real processes (``python -m tests.support.fleet_load write …``), on each store
(``store_target``: a SQLite file, and a fresh database of the test PostgreSQL server). The full
8 × 250 run is ``benchmarks/store_load.py --db postgresql://…``.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fleet_load import REPEAT_EVERY, events_of, expected, run_fleet


def test_the_schedule_has_replays_and_races() -> None:
    writers, events = 4, 50
    mine = events_of(0, writers, events)
    assert len(mine) == events
    repeats = len(mine) - len(set(mine))
    others = [e for e in mine if e in set(events_of(1, writers, events))]
    assert others  # races: events writer 1 handles too
    assert repeats  # replays of its own events
    assert len(others) + repeats == events // REPEAT_EVERY  # one event in five
    assert expected(writers, events)["comments"] <= 100


def test_a_pool_of_writers_loses_and_doubles_nothing(store_target: str, tmp_path: Path) -> None:
    result = run_fleet(store_target, tmp_path / "board.json", writers=4, events=50)
    assert result["exit_codes"] == [0, 0, 0, 0], result["stderr"]
    want = result["expected"]
    assert result["gate_rows"] == result["gate_keys"] == want["gate_rows"]
    assert result["gate_weekly"] == want["gate_rows"]
    assert result["audit_rows"] == result["audit_keys"] == want["audit_rows"]
    assert result["weeks_match"]
    assert result["comments"] == want["comments"]
    assert result["most_comments_on_one"] == 1
    assert result["created"] == want["comments"]  # every other write edited
