"""History rows and weekly statistics over accepted audits."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.audit import stats
from bot.audit.contract import CONFIDENCES, VERDICTS
from bot.audit.stats import (
    history_line,
    json_key,
    mermaid_fix_share,
    model_stats,
    stats_cells,
    stats_columns,
    weekly_stats,
)
from bot.history.protocol import first_week, week_of
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
        [  # one head SHA per row: one audit per segment and head SHA (a unique key)
            audit_row(created_at=t, verdict=v, confidence=c, retried=r, head_sha=f"{i:040x}")
            for i, (t, v, c, r) in enumerate(rows)
        ]
    )
    store.record_audits([audit_row(repo="other/repo", created_at="2026-11-30T09:00:00+00:00")])
    return store


def test_weekly_stats_group_by_monday_and_repo(tmp_path: Path) -> None:
    stats = weekly_stats(_store(tmp_path), "o/r", 3, now=NOW)
    assert [s.week for s in stats] == ["2026-11-16", "2026-11-23", "2026-11-30"]
    first = stats[0]
    assert (first.audits, first.retried) == (3, 1)
    assert {v: n for v, n in first.verdicts.items() if n} == {"GO": 1, "GO_WITH_NOTES": 1, "FIX": 1}
    assert {c: n for c, n in first.confidences.items() if n} == {"High": 1, "Medium": 1, "Low": 1}
    assert stats[1].share(stats[1].verdicts["FIX"]) == 1.0
    assert stats[2].audits == 1


def test_every_verdict_and_confidence_of_the_contract_is_counted(tmp_path: Path) -> None:
    """The statistics read their columns from the contract, in its order (CLI, /audit_stats)."""
    (week, *_) = weekly_stats(_store(tmp_path), "o/r", 3, now=NOW)
    assert tuple(week.verdicts) == VERDICTS
    assert tuple(week.confidences) == CONFIDENCES
    assert list(week.as_dict()) == [
        "week", "audits", *map(json_key, VERDICTS), "retried", *map(json_key, CONFIDENCES),
    ]  # fmt: skip
    assert stats_columns(short=False) == (
        "week", "audits", *VERDICTS, "retried", " / ".join(CONFIDENCES),
    )  # fmt: skip
    assert stats_columns(short=True)[-1] == "H/M/L"
    cells = stats_cells(week, short=True, text=str)
    assert (cells[:2], cells[-2:]) == (("2026-11-16", "3"), ("33%", "1/1/1"))  # retried, mix
    shares = dict(zip(VERDICTS, cells[2:-2], strict=True))
    assert {v: share for v, share in shares.items() if share != "0%"} == {
        "GO": "33%", "GO_WITH_NOTES": "33%", "FIX": "33%",
    }  # fmt: skip


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
            st.sampled_from((*VERDICTS, "MAYBE")),  # a verdict no contract names: audits only
            st.sampled_from((*CONFIDENCES, "Unsure")),
            st.booleans(),
            st.sampled_from(("m", "n", "other model")),
        ),
        max_size=30,
    ),
    st.integers(0, 5),
)
def test_weekly_sums_match_the_accepted_rows(
    rows: list[tuple[int, str, str, bool, str]], deleted: int
) -> None:
    """The trigger-kept counts equal a direct count of the rows, per week and per model,
    after inserts and deletes."""
    store = Store(":memory:")
    store.record_audits(
        [
            audit_row(
                created_at=(NOW - timedelta(days=d)).isoformat(timespec="seconds"),
                verdict=v,
                confidence=c,
                retried=r,
                model=m,
                head_sha=f"{i:040x}",  # distinct keys: each row is another audit
            )
            for i, (d, v, c, r, m) in enumerate(rows)
        ]
    )
    store.db.execute("delete from audits where id in (select id from audits limit ?)", [deleted])
    expected: dict[str, Counter[str]] = {}
    by_model: dict[str, Counter[str]] = {}
    for row in store.db.execute("select week, verdict, confidence, retried, model from audits"):
        seen = ["audits", row[1], row[2]] + (["retried"] if row[3] else [])
        expected.setdefault(row[0], Counter()).update(seen)
        by_model.setdefault(row[4], Counter()).update(seen)
    got = {s.week: s for s in weekly_stats(store, "o/r", 52, now=NOW)}
    assert set(got) == set(expected)
    for week, counts in expected.items():
        s = got[week]
        assert (s.audits, s.retried) == (counts["audits"], counts["retried"])
        assert s.verdicts == {v: counts[v] for v in VERDICTS}
        assert s.confidences == {c: counts[c] for c in CONFIDENCES}
    models = model_stats(store, "o/r", 52, now=NOW)
    assert [m.model for m in models] == sorted(by_model, key=lambda m: (-by_model[m]["audits"], m))
    for m in models:
        counts = by_model[m.model]
        assert (m.audits, m.retried) == (counts["audits"], counts["retried"])
        assert m.verdicts == {v: counts[v] for v in VERDICTS}


NEW_VERDICT, NEW_CONFIDENCE = "NEW_VERDICT", "New confidence"
"""Values no contract names yet: as a verdict and a confidence the contract might add."""


@pytest.mark.parametrize(
    ("verdicts", "confidences"),
    [
        ((*VERDICTS, NEW_VERDICT), CONFIDENCES),
        ((NEW_VERDICT, *VERDICTS), (*CONFIDENCES, NEW_CONFIDENCE)),
        (VERDICTS[:2], CONFIDENCES[1:]),
    ],
)
def test_a_value_the_contract_adds_or_drops_is_counted_without_a_schema_change(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verdicts: tuple[str, ...],
    confidences: tuple[str, ...],
) -> None:
    """The statistics count stored values: whatever verdicts and confidences the contract
    names are the counts, columns and JSON keys, in its order, on the store as migrated; a
    stored value it no longer names counts in the audits only."""
    monkeypatch.setattr(stats, "VERDICTS", verdicts)
    monkeypatch.setattr(stats, "CONFIDENCES", confidences)
    store = Store(tmp_path / "t.db")
    values = [(v, c) for v in (*verdicts, *VERDICTS) for c in (*confidences, *CONFIDENCES)]
    store.record_audits(
        [
            audit_row(verdict=v, confidence=c, head_sha=f"{i:040x}", created_at=NOW.isoformat())
            for i, (v, c) in enumerate(values)
        ]
    )
    (week,) = weekly_stats(store, "o/r", 1, now=NOW)
    (model,) = model_stats(store, "o/r", 1, now=NOW)
    assert week.audits == model.audits == len(values)
    assert week.verdicts == {v: sum(1 for x, _ in values if x == v) for v in verdicts}
    assert model.verdicts == week.verdicts
    assert week.confidences == {c: sum(1 for _, x in values if x == c) for c in confidences}
    assert list(week.as_dict())[2 : 2 + len(verdicts)] == [json_key(v) for v in verdicts]
    assert stats_columns(short=False)[2 : 2 + len(verdicts)] == verdicts
    cells = stats_cells(week, short=True, text=str)
    assert len(cells) == len(stats_columns(short=True))


@given(
    st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.timezones()
    ),
    st.integers(1, 52),
    st.integers(-60 * 24 * 7 * 60, 60 * 24 * 7),
)
def test_the_window_opens_on_the_monday_weeks_back(now: datetime, weeks: int, minutes: int) -> None:
    """``first_week`` is the Monday (UTC) ``weeks - 1`` weeks before the current week's, and a
    row is in the window exactly when it was written on or after that Monday, 00:00 UTC."""
    first = date.fromisoformat(first_week(weeks, now))
    current = date.fromisoformat(week_of(now.isoformat()))
    assert first.weekday() == 0
    assert current - first == timedelta(weeks=weeks - 1)
    written = now + timedelta(minutes=minutes)
    opens = datetime.combine(first, time(0), tzinfo=UTC)
    assert (week_of(written.isoformat()) >= first.isoformat()) == (written >= opens)
