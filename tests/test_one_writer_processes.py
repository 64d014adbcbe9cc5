"""One writer per issue and pull request, with real processes: ``triage-bot run`` started at
once for an ``issues`` event and a ``/triage`` comment (a pull request event and ``/audit``),
on one SQLite file and on the real PostgreSQL (tests/pg.py), against a loopback GitHub and a
loopback model that answers each run differently (tests/concurrent_triggers.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.concurrent_triggers import GATE_LABELS, new_issue, new_pull, rig
from tests.pg import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "triage.db")
    else:
        yield from fresh_database()


def test_an_issues_event_and_a_triage_at_once_leave_one_gate_label(
    tmp_path: Path, store: str
) -> None:
    with rig(tmp_path, store) as r:
        for number in (1, 2, 3):
            new_issue(r, number)
            outputs = r.race(["issues", "triage"], number)
            labels = r.github.gate_labels(number, GATE_LABELS)
            assert len(labels) == 1, (labels, outputs)


def test_a_pull_request_event_and_an_audit_at_once_post_one_comment(
    tmp_path: Path, store: str
) -> None:
    with rig(tmp_path, store) as r:
        for number in (2, 3):
            new_pull(r, number, f"{number:x}" * 40)
            outputs = r.race(["pull_request", "audit"], number)
            assert len(r.github.bot_comments(number)) == 1, outputs
            # the next push: the one comment is edited to the new head
            new_pull(r, number, "e" * 40)
            r.race(["pull_request"], number)
            (comment,) = r.github.bot_comments(number)
            assert "e" * 40 in comment["body"]
