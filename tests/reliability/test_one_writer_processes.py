"""One writer per issue and pull request, with real processes: ``triage-bot run`` started at
once for an ``issues`` event and a ``/triage`` comment (a pull request event and ``/audit``),
on one SQLite file and on the real PostgreSQL (tests/support/pg.py), against a loopback GitHub and a
loopback model that answers each run differently (tests/support/concurrent_triggers.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.concurrent_triggers import GATE_LABELS, in_turn, new_issue, new_pull, rig
from tests.support.pg import fresh_database
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY


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


@pytest.mark.parametrize(
    ("hand", "kept"),
    [
        ([("needs-refinement", True), ("needs-refinement", False)], True),  # taken off, put back
        ([("needs-refinement", True)], False),  # taken off: nothing left to remove
    ],
)
def test_a_stale_payload_leaves_a_label_a_person_put_back(
    tmp_path: Path, store: str, hand: list[tuple[str, bool]], kept: bool
) -> None:
    """The bot labelled the issue needs-refinement; a person took the label off (and put it
    back); an edit's payload shows no gate label. The new verdict, VALID, removes nothing of
    the person's: a label they put back wins over the run, as when the payload shows it."""
    with rig(tmp_path, store, delay_s=0.0, answer=in_turn(NEEDS_REPLY, VALID_REPLY)) as r:
        r.github.add_issue(1, "Spelling error in the README file", "The app crashes.")
        r.race(["issues"], 1)
        assert r.github.gate_labels(1, GATE_LABELS) == ["needs-refinement"]
        for name, removed in hand:
            r.github.by_hand(1, name, removed=removed)
        with r.github.lock:
            r.github.issues[1]["body"] = COMPLETE_BODY
            r.github.requests.clear()
        (out,) = r.race(["edited"], 1)
        with r.github.lock:
            deletes = [path for method, path in r.github.requests if method == "DELETE"]
        assert deletes == []
        expected = ["needs-refinement"] if kept else ["ready-for-dev"]
        assert r.github.gate_labels(1, GATE_LABELS) == expected, out
        assert ("skipped: a maintainer set 'needs-refinement' by hand" in out) == kept
