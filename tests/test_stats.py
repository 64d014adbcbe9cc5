"""History rows and weekly statistics over accepted audits."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.history.stats import history_line, mermaid_fix_share, weekly_stats
from bot.history.store import Store
from tests.support import audit_row

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "t.db")
    rows = [
        ("2026-11-16T10:00:00+00:00", "FIX", "High", True),
        ("2026-11-18T10:00:00+00:00", "GO", "Medium", False),
        ("2026-11-22T23:59:59+00:00", "GO_WITH_NOTES", "Low", False),  # Sunday: same week
        ("2026-11-23T00:00:00+00:00", "FIX", "High", False),  # Monday: next week
        ("2026-11-30T08:00:00+00:00", "GO", "High", True),
        ("2025-01-01T00:00:00+00:00", "FIX", "High", True),  # too old
    ]
    store.record_audits(
        [audit_row(created_at=t, verdict=v, confidence=c, retried=r) for t, v, c, r in rows]
    )
    store.record_audit(audit_row(repo="other/repo", created_at="2026-11-30T09:00:00+00:00"))
    return store


def test_weekly_stats_group_by_monday_and_repo(tmp_path: Path) -> None:
    stats = weekly_stats(_store(tmp_path), "o/r", 3, now=NOW)
    assert [s.week for s in stats] == ["2026-11-16", "2026-11-23", "2026-11-30"]
    first = stats[0]
    assert (first.audits, first.go, first.go_with_notes, first.fix) == (3, 1, 1, 1)
    assert (first.retried, first.high, first.medium, first.low) == (1, 1, 1, 1)
    assert stats[1].share(stats[1].fix) == 1.0
    assert stats[2].audits == 1


def test_weeks_limit_the_window(tmp_path: Path) -> None:
    assert [s.week for s in weekly_stats(_store(tmp_path), "o/r", 1, now=NOW)] == ["2026-11-30"]


def test_history_line_format(tmp_path: Path) -> None:
    row = _store(tmp_path).audits("o/r", limit=1)[0]
    assert history_line(row) == (
        f"#{row['id']} | GO | confidence: High | src/app.py:10-40 | retry: true | "
        "2026-11-30T08:00:00+00:00"
    )


def test_mermaid_chart(tmp_path: Path) -> None:
    chart = mermaid_fix_share(weekly_stats(_store(tmp_path), "o/r", 3, now=NOW))
    assert chart.startswith("```mermaid\nxychart-beta\n")
    assert 'x-axis ["2026-11-16", "2026-11-23", "2026-11-30"]' in chart
    assert "bar [33, 100, 0]" in chart


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),
            st.sampled_from(["GO", "GO_WITH_NOTES", "FIX"]),
            st.sampled_from(["High", "Medium", "Low"]),
            st.booleans(),
        ),
        max_size=30,
    ),
    st.integers(0, 5),
)
def test_weekly_sums_match_the_accepted_rows(
    rows: list[tuple[int, str, str, bool]], deleted: int
) -> None:
    """The trigger-kept sums equal a direct count of the rows, after inserts and deletes."""
    store = Store(":memory:")
    store.record_audits(
        [
            audit_row(
                created_at=(NOW - timedelta(days=d)).isoformat(timespec="seconds"),
                verdict=v,
                confidence=c,
                retried=r,
            )
            for d, v, c, r in rows
        ]
    )
    store.db.execute("delete from audits where id in (select id from audits limit ?)", [deleted])
    expected: dict[str, Counter[str]] = {}
    for row in store.db.execute("select week, verdict, confidence, retried from audits"):
        counts = expected.setdefault(row[0], Counter())
        counts.update(["audits", row[1], row[2]] + (["retried"] if row[3] else []))
    got = {s.week: s for s in weekly_stats(store, "o/r", 52, now=NOW)}
    assert set(got) == set(expected)
    for week, counts in expected.items():
        s = got[week]
        assert (s.audits, s.go, s.go_with_notes, s.fix) == (
            counts["audits"],
            counts["GO"],
            counts["GO_WITH_NOTES"],
            counts["FIX"],
        )
        assert (s.retried, s.high, s.medium, s.low) == (
            counts["retried"],
            counts["High"],
            counts["Medium"],
            counts["Low"],
        )
