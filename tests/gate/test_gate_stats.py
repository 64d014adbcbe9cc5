"""Gate health: weekly figures over ``gate_decisions``, the CLI's
``stats --gate``, the ``/triage_stats`` reply, and who may ask for it (recorded traffic)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cli import main
from bot.commands.handlers import triage_stats_reply
from bot.gate.stats import (
    ERROR_OUTCOME,
    OUTCOMES,
    gate_cells,
    gate_columns,
    gate_health,
    gate_weeks,
    mermaid_error_share,
    nearest_rank,
    version_cells,
    version_columns,
)
from bot.history.store import GateRow, Store, utc_now
from tests.support import cassette, load_webhook, migrate_first, write_payload
from tests.support.hostile_cases import HOSTILE_TEXT
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # a Monday
MODEL, PROMPT = "qwen2.5-coder:1.5b", "validator@1a2b3c4d"


def gate(
    created_at: str,
    verdict: str | None = "VALID",
    error_kind: str | None = None,
    ms: float = 1000.0,
    *,
    repo: str = "o/r",
    model: str = MODEL,
    prompt: str = PROMPT,
) -> GateRow:
    """A gate decision row (the label is the default one for its verdict)."""
    label = {"VALID": "ready-for-dev", "NEEDS_REFINEMENT": "needs-refinement"}.get(
        verdict or "", "validator-error"
    )
    return GateRow(repo, 1, "issues.opened", verdict, label, "r", error_kind, model, prompt,
                   100, 20, ms, created_at=created_at)  # fmt: skip


# The hand-made set: three weeks of o/r, one decision too old, one of another repository.
# Week of 2026-11-23: 20 decisions that reached the model (100 ms … 2000 ms), 3 VALID and
# 17 NEEDS_REFINEMENT, then 5 faults: 3 "unavailable" before any reply (no model time) and
# 2 "truncated" after 9 s; the prompt changed mid-week.
HAND_MADE = [
    gate("2026-11-16T10:00:00+00:00", "VALID", ms=800.0),
    gate("2026-11-22T23:59:59+00:00", "NEEDS_REFINEMENT", ms=1200.0),  # Sunday: same week
    *(
        gate(
            f"2026-11-23T{h:02d}:00:00+00:00",
            "VALID" if h < 3 else "NEEDS_REFINEMENT",
            ms=100.0 * (h + 1),
            prompt=PROMPT if h < 15 else "validator@99999999",
        )
        for h in range(20)
    ),
    *(gate("2026-11-24T08:00:00+00:00", None, "unavailable", ms=0.0) for _ in range(3)),
    *(gate("2026-11-25T08:00:00+00:00", None, "truncated", ms=9000.0) for _ in range(2)),
    gate("2026-11-30T08:00:00+00:00", None, None, ms=0.0),  # a fault stored without a kind
    gate("2025-01-01T00:00:00+00:00", "VALID"),  # too old
    gate("2026-11-30T09:00:00+00:00", "VALID", repo="other/repo"),
]


def _store(tmp_path: Path, rows: list[GateRow] = HAND_MADE) -> Store:
    store = Store(tmp_path / "t.db")
    for row in rows:
        store.record_gate(row)
    return store


def test_weekly_figures_of_a_hand_made_set(tmp_path: Path) -> None:
    weeks = gate_weeks(_store(tmp_path), "o/r", 3, now=NOW)
    assert [w.week for w in weeks] == ["2026-11-16", "2026-11-23", "2026-11-30"]
    first, busy, last = weeks
    assert (first.decisions, first.outcomes) == (
        2, {"VALID": 1, "NEEDS_REFINEMENT": 1, ERROR_OUTCOME: 0},
    )  # fmt: skip
    assert (first.timed, first.p50_ms, first.p95_ms) == (2, 800.0, 1200.0)
    assert first.error_kinds == {}

    assert busy.decisions == 25
    assert busy.outcomes == {"VALID": 3, "NEEDS_REFINEMENT": 17, ERROR_OUTCOME: 5}
    assert busy.error_kinds == {"unavailable": 3, "truncated": 2}  # most frequent first
    assert busy.as_dict()["error_rates"] == {"unavailable": 0.12, "truncated": 0.08}
    # 22 timed decisions (the 3 "unavailable" never reached the model): 100 … 2000, 9000, 9000.
    # Nearest rank: p50 is the 11th (1100 ms), p95 the 21st (ceil(20.9)): 9000 ms.
    assert (busy.timed, busy.p50_ms, busy.p95_ms) == (22, 1100.0, 9000.0)
    assert busy.versions == {(MODEL, PROMPT): 20, (MODEL, "validator@99999999"): 5}

    assert last.outcomes[ERROR_OUTCOME] == 1
    assert last.error_kinds == {"unknown": 1}
    assert (last.timed, last.p50_ms, last.p95_ms) == (0, None, None)


def test_the_weeks_bound_the_window(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert [w.week for w in gate_weeks(store, "o/r", 1, now=NOW)] == ["2026-11-30"]
    assert [w.week for w in gate_weeks(store, "o/r", 2, now=NOW)] == [
        "2026-11-23", "2026-11-30",
    ]  # fmt: skip
    everything = gate_weeks(store, "o/r", 52, now=NOW)
    assert "2025-01-01" not in {w.week for w in everything}  # 99 weeks back
    assert sum(w.decisions for w in everything) == 28
    assert [w.decisions for w in gate_weeks(store, "other/repo", 1, now=NOW)] == [1]


def test_an_empty_store_has_no_weeks() -> None:
    store = Store(":memory:")
    assert gate_weeks(store, "o/r", 52, now=NOW) == []
    reply = triage_stats_reply(store, "o/r", 8)
    assert reply.startswith("No gate decisions in the last 8 week(s).\n\n")
    assert "No live record: the store holds no settled gate decision" in reply


@pytest.mark.parametrize(
    ("n", "p50", "p95"), [(1, 1, 1), (2, 1, 2), (3, 2, 3), (20, 10, 19), (21, 11, 20)]
)
def test_nearest_rank(n: int, p50: int, p95: int) -> None:
    assert (nearest_rank(n, 50), nearest_rank(n, 95)) == (p50, p95)
    with pytest.raises(ValueError, match="no values"):
        nearest_rank(0, 50)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),  # days back
            st.sampled_from(["VALID", "NEEDS_REFINEMENT", None]),
            st.sampled_from([0.0, 1.0, 250.5, 999.0, 4000.0]),
        ),
        max_size=40,
    ),
    st.integers(0, 5),
    st.integers(0, 5),
)
def test_the_figures_match_a_direct_count(
    rows: list[tuple[int, str | None, float]], deleted: int, raw: int
) -> None:
    """Counts (trigger-kept) and percentiles (by rank in the index) equal those computed in
    Python from the rows, after deletes and after inserts that bypass ``record_gate``."""
    store = Store(":memory:")
    for n, (days, verdict, ms) in enumerate(rows):
        moment = (NOW - timedelta(days=days)).isoformat(timespec="seconds")
        row = gate(moment, verdict, None if verdict else "unavailable", ms)
        if n < raw:  # no week: the fill trigger sets it
            # as record_gate stores it: no content hash is NULL (never a duplicate key)
            raw_row = {**asdict(row), "content_sha": None}
            store.db["gate_decisions"].insert(raw_row)  # type: ignore[union-attr]
        else:
            store.record_gate(row)
    store.db.execute(
        "delete from gate_decisions where id in (select id from gate_decisions limit ?)", [deleted]
    )
    by_week: dict[str, list[tuple[str | None, float]]] = {}
    for week, verdict, ms in store.db.execute(
        "select week, verdict, duration_ms from gate_decisions"
    ):
        by_week.setdefault(week, []).append((verdict, ms))
    got = {w.week: w for w in gate_weeks(store, "o/r", 52, now=NOW)}
    assert set(got) == set(by_week)
    for week, decisions in by_week.items():
        counts = Counter(v or ERROR_OUTCOME for v, _ in decisions)
        times = sorted(ms for _, ms in decisions if ms > 0)
        w = got[week]
        assert w.outcomes == {o: counts[o] for o in OUTCOMES}
        assert w.timed == len(times)
        if times:
            assert w.p50_ms == times[math.ceil(0.5 * len(times)) - 1]
            assert w.p95_ms == times[math.ceil(0.95 * len(times)) - 1]


def test_neither_query_reads_a_decision_row(tmp_path: Path) -> None:
    """Fast on 100k rows (benchmarks/commands.py): the counts come from the trigger-kept
    ``gate_weeks`` by its key, the percentiles from a covering index; nothing is sorted."""
    from bot.gate import stats as gate_stats

    db = _store(tmp_path).db
    plans = [
        " ".join(str(row[-1]) for row in db.execute(f"explain query plan {sql}", args))
        for sql, args in ((gate_stats._MIX, ["o/r", "2026-10-05"]),
                          (gate_stats._AT_RANK.format("asc"), ["o/r", "2026-11-23", 3]),
                          (gate_stats._AT_RANK.format("desc"), ["o/r", "2026-11-23", 3]))
    ]  # fmt: skip
    assert plans[0] == "SEARCH gate_weeks USING PRIMARY KEY (repo=? AND week>?)"
    for plan in plans[1:]:
        assert plan.startswith("SEARCH gate_decisions USING COVERING INDEX"), plan
    assert "TEMP B-TREE" not in " ".join(plans)


def test_an_older_store_gets_the_week_of_its_decisions(tmp_path: Path) -> None:
    """A decision written without ``week`` gets it, in an older store read-only too."""
    path = tmp_path / "old.db"
    migrate_first(str(path), 1)
    with sqlite3.connect(path) as old:
        old.execute(
            "insert into gate_decisions (repo, issue, event, verdict, label, reason, model, "
            "prompt_version, created_at, duration_ms) values ('o/r', 1, 'issues.opened', "
            "'VALID', 'ready-for-dev', 'r', ?, ?, '2026-11-29T23:00:00+00:00', 500.0)",
            [MODEL, PROMPT],
        )
    reader = Store(path, read_only=True)  # through a migrated copy in memory
    assert [(w.week, w.p50_ms) for w in gate_weeks(reader, "o/r", 2, now=NOW)] == [
        ("2026-11-23", 500.0)
    ]
    reader.close()
    writer = Store(path)
    assert writer.db.execute("select week from gate_decisions").fetchall() == [("2026-11-23",)]
    writer.close()


def test_cells_columns_and_chart(tmp_path: Path) -> None:
    weeks = gate_weeks(_store(tmp_path), "o/r", 3, now=NOW)
    assert gate_columns() == (
        "week", "decisions", "VALID", "NEEDS_REFINEMENT", "validator-error",
        "errors by kind", "p50", "p95", "model / prompt",
    )  # fmt: skip
    assert gate_cells(weeks[1], text=str) == (
        "2026-11-23", "25", "3", "17", "5", "unavailable 12%, truncated 8%", "1.1 s", "9.0 s",
        f"{MODEL} {PROMPT} ×20, {MODEL} validator@99999999 ×5",
    )  # fmt: skip
    assert gate_cells(weeks[2], text=str)[5:8] == ("unknown 100%", "–", "–")
    chart = mermaid_error_share(weeks)
    assert chart.startswith("```mermaid\nxychart-beta\n")
    assert 'x-axis ["2026-11-16", "2026-11-23", "2026-11-30"]' in chart
    assert "bar [0, 20, 100]" in chart


def test_a_week_lists_two_versions_and_four_kinds_then_counts(tmp_path: Path) -> None:
    rows = [gate("2026-11-30T08:00:00+00:00", prompt=f"v{i}") for i in range(4)]
    rows += [gate("2026-11-30T08:00:00+00:00", None, f"kind{i}", 0.0) for i in range(6)]
    (week,) = gate_weeks(_store(tmp_path, rows), "o/r", 1, now=NOW)
    cells = gate_cells(week, text=str)
    assert cells[5].endswith(", +2 more")
    assert cells[8].endswith(", +3 more")  # v0–v3 and the faults' version: 5 in all


def test_cli_json_shape_and_table(tmp_path: Path) -> None:
    _store(tmp_path).close()
    db = str(tmp_path / "t.db")
    raw = CliRunner().invoke(
        main, ["stats", "--gate", "--repo", "o/r", "--db", db, "--weeks", "52", "--json"]
    )
    assert raw.exit_code == 0, raw.output
    weeks = json.loads(raw.stdout)
    assert len(raw.stdout.splitlines()) == 1
    assert all(
        list(w) == [
            "week", "decisions", "valid", "needs_refinement", "validator_error", "error_kinds",
            "error_rates", "timed", "model_ms_p50", "model_ms_p95", "versions",
        ]
        for w in weeks
    )  # fmt: skip
    busy = next(w for w in weeks if w["week"] == "2026-11-23")
    assert busy["validator_error"] == 5
    assert busy["error_kinds"] == {"unavailable": 3, "truncated": 2}
    assert (busy["model_ms_p50"], busy["model_ms_p95"]) == (1100.0, 9000.0)
    assert busy["versions"][0] == {
        "model": MODEL, "prompt_version": PROMPT, "decisions": 20, "valid": 3,
        "needs_refinement": 12, "validator_error": 5,
        "error_kinds": {"unavailable": 3, "truncated": 2},
    }  # fmt: skip
    table = CliRunner().invoke(main, ["stats", "--gate", "--repo", "o/r", "--db", db])
    assert table.exit_code == 0
    assert "Gate decisions of o/r, last 8 week(s)" in table.stdout
    empty = CliRunner().invoke(
        main, ["stats", "--gate", "--repo", "o/r", "--db", str(tmp_path / "none.db"), "--json"]
    )
    assert (empty.exit_code, empty.stdout) == (0, "[]\n")
    assert not (tmp_path / "none.db").exists()  # read-only: nothing created


@pytest.mark.parametrize("weeks", ["0", "53"])
def test_cli_weeks_are_bounded(tmp_path: Path, weeks: str) -> None:
    result = CliRunner().invoke(
        main, ["stats", "--gate", "--repo", "o/r", "--db", str(tmp_path / "t.db"),
               "--weeks", weeks]
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--weeks" in result.output


HOSTILE_VERSIONS = [
    HOSTILE_TEXT,
    "m|x` | <b>td</b> | `@octocat",  # closes its code span and the cell, if not escaped
    "```mermaid\ngraph TD; A-->B\n```",  # a diagram fence of its own
    "validator@" + "ec26c3e57ca3a959ca5aad62de7213c562f8c821 #1 GH-2 :rocket:",
    "`" * 200,
    "m\u202e\u200b\x00\x1b[31m\n# heading",  # bidi override, NUL, ANSI colour, a line
]


def test_the_reply_renders_as_a_table_and_a_chart_whatever_the_versions(tmp_path: Path) -> None:
    """The markdown oracle: stored model and prompt strings cannot add markup, mentions or
    links, split a cell, or open a fence; 52 hostile weeks fit one comment."""
    hostile = [HOSTILE_VERSIONS[w % len(HOSTILE_VERSIONS)] for w in range(53)]
    rows = [
        gate((NOW - timedelta(weeks=w)).isoformat(), None, hostile[w][:60], 500.0,
             model=hostile[w], prompt=hostile[w + 1])
        for w in range(52)
    ]  # fmt: skip
    rows += [gate((NOW - timedelta(weeks=w)).isoformat(), model=f"m{w}") for w in range(52)]
    store = _store(tmp_path, rows)
    reply = triage_stats_reply(store, "o/r", 52)
    assert len(reply) < 65_536
    rendered = render(reply)
    assert set(rendered.tags) <= {"p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre"}
    assert not rendered.attributes - {"class"}  # the mermaid fence's language class only
    assert not rendered.mentions
    assert not rendered.github_links
    # the weekly table (a heading row and one per week), then the versions (20 shown)
    assert rendered.tags["tr"] == 53 + 21
    assert rendered.tags["td"] == 52 * len(gate_columns()) + 20 * len(version_columns())
    assert rendered.tags["pre"] == 1  # the chart, and only it
    # then the live record: none in this store, said in a paragraph, and the duplicates line
    assert [b[0] for b in rendered.blocks] == ["p", "table", "pre", "p", "table", "p", "p", "p"]
    assert rendered.blocks[-2][1].startswith("Live record: No live record")
    assert rendered.blocks[-1][1].startswith("Possible duplicates: 0 settled ranking(s)")
    assert rendered.blocks[2][1].startswith("xychart-beta\n")
    assert 'class="language-mermaid"' in rendered.html
    assert rendered.html.count("language-") == 1


def _comment_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, captured: list[Any]
) -> tuple[int, str, Any]:
    """``/triage_stats 4`` by Codertocat on Codertocat/Hello-World#1, through ``triage-bot
    run`` on the cassette ``name``, with the hand-made decisions (this week's) in the store."""
    import bot.clients.github_client as gc

    monkeypatch.setattr(gc, "DEFAULT_SECONDS_BETWEEN_WRITES", 0.0)
    now = utc_now()
    rows = [gate(now, "VALID", model="m@octocat"), gate(now, None, "unavailable", 0.0)]
    _store(tmp_path, [replace(r, repo="Codertocat/Hello-World") for r in rows]).close()
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = "/triage_stats 4"
    env = {"GITHUB_TOKEN": "test-token-not-real", "TRIAGE_DB": str(tmp_path / "t.db")}
    args = ["run", "--event-name", "issue_comment", "--event-path"]
    with cassette(name, captured) as cass:
        result = CliRunner().invoke(main, [*args, str(write_payload(tmp_path, payload))], env=env)
    return result.exit_code, result.stdout, cass


def test_triage_stats_command_replies_to_a_maintainer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured: list[Any] = []
    code, out, cass = _comment_run(tmp_path, monkeypatch, "e2e_command_triage_stats", captured)
    assert code == 0, out
    assert cass.all_played  # permission, 👀, one reply
    assert json.loads(captured[1].body) == {"content": "eyes"}
    reply = json.loads(captured[-1].body)["body"]
    assert reply.startswith("Gate decisions, last 4 week(s)")
    assert "| 2 | 1 | 0 | 1 | `unavailable` 50% |" in reply
    assert not render(reply).mentions  # the stored model name "m@octocat"


def test_triage_stats_command_gives_a_non_collaborator_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    captured: list[Any] = []
    code, out, cass = _comment_run(tmp_path, monkeypatch, "github_permission_none", captured)
    assert code == 0
    assert cass.play_count == 1  # the permission read: no reaction, no reply
    assert [r.method for r in captured] == ["GET"]
    assert out.startswith("triage-bot: refused: Codertocat has none permission")
    assert "Gate decisions" not in out


def test_an_unreadable_store_is_exit_5_not_a_traceback(tmp_path: Path) -> None:
    store = _store(tmp_path, HAND_MADE[:1])
    store.db.execute("drop table gate_weeks")  # damaged by hand
    store.close()
    result = CliRunner().invoke(
        main, ["stats", "--gate", "--repo", "o/r", "--db", str(tmp_path / "t.db")]
    )
    assert result.exit_code == 5
    assert "cannot read the gate decisions: no such table: gate_weeks" in result.stderr


# --- per model and prompt version: two models side by side -------------------------------------
SIDE_BY_SIDE = [
    # model A, prompt p1: 10 decisions over two weeks, 6 VALID, 3 NEEDS_REFINEMENT, 1 fault
    *(gate("2026-11-24T08:00:00+00:00", "VALID", model="A", prompt="p1") for _ in range(6)),
    *(gate("2026-11-30T08:00:00+00:00", "NEEDS_REFINEMENT", model="A", prompt="p1")
      for _ in range(3)),
    gate("2026-11-30T09:00:00+00:00", None, "unavailable", 0.0, model="A", prompt="p1"),
    # model B, prompt p2: 10 decisions, 2 VALID, 4 NEEDS_REFINEMENT, 4 faults of two kinds
    *(gate("2026-11-24T08:00:00+00:00", "VALID", model="B", prompt="p2") for _ in range(2)),
    *(gate("2026-11-24T08:00:00+00:00", "NEEDS_REFINEMENT", model="B", prompt="p2")
      for _ in range(4)),
    *(gate("2026-11-30T08:00:00+00:00", None, "truncated", 900.0, model="B", prompt="p2")
      for _ in range(3)),
    gate("2026-11-30T08:00:00+00:00", None, "copied_from_issue", 900.0, model="B", prompt="p2"),
    # model A with a newer prompt: 2 decisions, both VALID
    *(gate("2026-11-30T10:00:00+00:00", "VALID", model="A", prompt="p3") for _ in range(2)),
]  # fmt: skip


def test_gate_health_per_model_and_prompt_version_on_both_stores(store_target: str) -> None:
    """The verdict mix and error rate of each model and prompt version over the weeks, from
    the weekly counts: the same on the SQLite file and on PostgreSQL."""
    from bot.config import Settings
    from bot.factory import make_store

    writer = make_store(Settings(db_path=store_target))
    for row in SIDE_BY_SIDE:
        writer.record_gate(row)
    writer.close()
    store = make_store(Settings(db_path=store_target), read_only=True)
    try:
        health = gate_health(store, "o/r", 2, now=NOW)
        reply = triage_stats_reply(store, "o/r", 52)
    finally:
        store.close()
    assert [(v.model, v.prompt_version, v.decisions) for v in health.versions] == [
        ("A", "p1", 10), ("B", "p2", 10), ("A", "p3", 2),
    ]  # most decisions first, ties by name  # fmt: skip
    a, b, newer = health.versions
    assert a.outcomes == {"VALID": 6, "NEEDS_REFINEMENT": 3, ERROR_OUTCOME: 1}
    assert a.error_kinds == {"unavailable": 1}
    assert b.outcomes == {"VALID": 2, "NEEDS_REFINEMENT": 4, ERROR_OUTCOME: 4}
    assert b.error_kinds == {"truncated": 3, "copied_from_issue": 1}
    assert version_cells(a, text=str) == ("A", "p1", "10", "60%", "30%", "10%", "unavailable 10%")
    assert version_cells(b, text=str) == (
        "B", "p2", "10", "20%", "40%", "40%", "truncated 30%, copied_from_issue 10%",
    )  # fmt: skip
    assert version_cells(newer, text=str)[3:] == ("100%", "0%", "0%", "–")
    # each week's versions add up to the week, and the weeks to the versions
    assert [sum(v.decisions for v in w.by_version) for w in health.weeks] == [
        w.decisions for w in health.weeks
    ]
    assert sum(w.decisions for w in health.weeks) == sum(v.decisions for v in health.versions)
    assert "| `A` | `p1` | 10 | 60% | 30% | 10% | `unavailable` 10% |" in reply
    assert "| `B` | `p2` | 10 | 20% | 40% | 40% | `truncated` 30%, `copied_from_issue` 10% |" in (
        reply
    )


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),  # days back
            st.sampled_from(["a", "b"]),
            st.sampled_from(["p", "q"]),
            st.sampled_from(["VALID", "NEEDS_REFINEMENT", None]),
            st.sampled_from(["unavailable", "truncated"]),
        ),
        max_size=40,
    )
)
def test_the_figures_per_version_match_a_direct_count(
    rows: list[tuple[int, str, str, str | None, str]],
) -> None:
    store = Store(":memory:")
    for days, model, prompt, verdict, kind in rows:
        moment = (NOW - timedelta(days=days)).isoformat(timespec="seconds")
        store.record_gate(gate(moment, verdict, None if verdict else kind, model=model,
                               prompt=prompt))  # fmt: skip
    health = gate_health(store, "o/r", 52, now=NOW)
    expected: dict[tuple[str, str], Counter[str]] = {}
    kinds: dict[tuple[str, str], Counter[str]] = {}
    for _, model, prompt, verdict, kind in rows:
        expected.setdefault((model, prompt), Counter())[verdict or ERROR_OUTCOME] += 1
        if verdict is None:
            kinds.setdefault((model, prompt), Counter())[kind] += 1
    got = {(v.model, v.prompt_version): v for v in health.versions}
    assert set(got) == set(expected)
    for key, counts in expected.items():
        assert got[key].outcomes == {o: counts[o] for o in OUTCOMES}
        assert got[key].decisions == sum(counts.values())
        assert got[key].error_kinds == dict(kinds.get(key, {}))
    sizes = [v.decisions for v in health.versions]
    assert sizes == sorted(sizes, reverse=True)
    for week in health.weeks:
        assert sum(v.decisions for v in week.by_version) == week.decisions


def test_cli_compares_the_models_side_by_side(tmp_path: Path) -> None:
    _store(tmp_path, SIDE_BY_SIDE).close()
    db = str(tmp_path / "t.db")
    table = CliRunner().invoke(
        main, ["stats", "--gate", "--repo", "o/r", "--db", db, "--weeks", "52"],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert table.exit_code == 0, table.output
    per_version = table.stdout.split("Per model and prompt version")[1]
    rows = [line for line in per_version.splitlines() if line.startswith("│ ")]
    # unquote: the table's cells pass the log sink, which may escape "%"
    cells = [[unquote(c.strip()) for c in row.strip("│ ").split("│")] for row in rows]
    assert cells == [
        ["A", "p1", "10", "60%", "30%", "10%", "unavailable 10%"],
        ["B", "p2", "10", "20%", "40%", "40%", "truncated 30%, copied_from_issue 10%"],
        ["A", "p3", "2", "100%", "0%", "0%", "–"],
    ]
    raw = CliRunner().invoke(
        main, ["stats", "--gate", "--repo", "o/r", "--db", db, "--weeks", "52", "--json"]
    )
    weeks = json.loads(raw.stdout)
    last = weeks[-1]["versions"]
    assert last[1] == {  # a tie with A p1 (4 decisions too), after it by name
        "model": "B", "prompt_version": "p2", "decisions": 4, "valid": 0,
        "needs_refinement": 0, "validator_error": 4,
        "error_kinds": {"truncated": 3, "copied_from_issue": 1},
    }  # fmt: skip


def test_the_duplicate_record_line_says_what_decides_the_statement(tmp_path: Path) -> None:
    from bot.duplicates.suggestions import record_ranking, settle_suggestion
    from bot.gate.stats import duplicate_record_line

    store = _store(tmp_path, [])
    for n in range(1, 11):
        record_ranking(store, "o/r", n, 100 + n, 0.5)
        settle_suggestion(store, "o/r", n, "right" if n <= 4 else "wrong")
    line = duplicate_record_line(store, "o/r", 0.8)
    assert line.startswith("Possible duplicates: 10 settled ranking(s), top candidate right 40%")
    assert line.endswith("the live record decides the statement from 30.")
    for n in range(11, 41):
        record_ranking(store, "o/r", n, 100 + n, 0.9)
        settle_suggestion(store, "o/r", n, "right")
    line = duplicate_record_line(store, "o/r", 0.8)
    assert line.endswith("said from score 0.90 (30 of 30 right at or above it).")
    assert "no score earns" in duplicate_record_line(store, "o/r", 0.99)
