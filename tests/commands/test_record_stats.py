"""The live record where maintainers look: ``/triage_stats``, ``/audit_stats`` and
``triage-bot stats --record``, on both stores.

Every share shows its count and 95% interval, a small record beside a large one reads
differently, stored strings stay inline code, "No live record" is said plainly, and the gate's
rows say which record decides the author comment.
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from bot import factory
from bot.cli import main
from bot.commands.handlers import stats_reply, triage_stats_reply
from bot.config import Settings
from bot.history.protocol import HistoryStore
from bot.history.record import (
    DefectOutcome,
    DefectRow,
    GateOutcome,
    GateOutcomeRow,
    put_defects,
    put_gate_outcome,
    settle_defect,
)
from tests.support.markdown_oracle import render

REPO = "o/r"
HOSTILE = "x | @octocat <b>#1</b>"


def _gate(
    store: HistoryStore,
    first: int,
    outcomes: list[GateOutcome],
    *,
    model: str = "qwen",
    verdict: str = "NEEDS_REFINEMENT",
    reason: str = "closed",
    prompt: str = "validator@1",
) -> None:
    for i, outcome in enumerate(outcomes):
        put_gate_outcome(
            store,
            GateOutcomeRow(
                REPO, first + i, first + i, model, prompt, "policy@1", verdict, outcome,
                None, reason,
            ),
        )  # fmt: skip


def _defects(
    store: HistoryStore, outcomes: list[DefectOutcome | None], model: str, first: int = 1
) -> None:
    rows = [
        DefectRow(REPO, first + i, "a" * 40, "src/x.py", 5, "off-by-one", model, "audit-json@1")
        for i in range(len(outcomes))
    ]
    put_defects(store, rows)
    for row, outcome in zip(rows, outcomes, strict=True):
        if outcome is not None:
            key = {"repo": REPO, "pr": row.pr, "head_sha": row.head_sha, "path": row.path}
            settle_defect(store, {**key, "line": row.line}, outcome, "test")


def _store(target: str) -> HistoryStore:
    return factory.make_store(Settings(db_path=target))


def test_no_live_record_is_said_plainly(store_target: str) -> None:
    store = _store(store_target)
    try:
        assert "No live record" in triage_stats_reply(store, REPO, 8)
        assert "No live record" in stats_reply(store, REPO, 8)
    finally:
        store.close()


def test_the_gate_record_shows_each_share_with_its_count_and_interval(
    store_target: str,
) -> None:
    store = _store(store_target)
    try:
        agree, disagree = GateOutcome.AGREE, GateOutcome.DISAGREE
        _gate(store, 1, [agree] * 54 + [disagree] * 6)
        _gate(store, 100, [agree] * 4 + [disagree], model=HOSTILE)
        _gate(store, 200, [agree] * 3 + [GateOutcome.OVERRIDE], verdict="VALID")
        _gate(store, 300, [GateOutcome.UNSETTLED] * 5, reason="open")
        _gate(store, 400, [GateOutcome.UNSETTLED] * 2, reason="no maintainer signal")
        reply = triage_stats_reply(store, REPO, 8, min_precision=0.8)
    finally:
        store.close()
    rendered = render(reply)
    assert not rendered.mentions
    assert "b" not in rendered.tags
    assert set(rendered.tags) <= {"p", "table", "thead", "tbody", "tr", "th", "td", "code"}
    rows = [line for line in reply.splitlines() if line.startswith("| `")]
    qwen = next(r for r in rows if r.startswith("| `qwen`"))
    cells = [c.strip() for c in qwen.strip("|").split("|")]
    assert cells[3] == "64"  # 60 + 4 settled; the 7 unsettled are not
    assert cells[4] == "89% (57 of 64; 95% CI 79–95%)"  # agreement
    assert cells[5] == "90% (54 of 60; 95% CI 80–95%)"  # needs-refinement precision
    assert cells[6] == "75% (3 of 4; 95% CI 30–95%)"  # valid precision
    assert cells[7] == "1"  # the override
    assert cells[8] == "7 (`open` 5, `no maintainer signal` 2)"
    assert cells[9] == "earned: live record against 80%"
    small = next(r for r in rows if "octocat" in r)
    assert "80% (4 of 5; 95% CI 38–96%)" in small  # "80% of 5" is not "80% of 60"
    assert "calibrated figure decides (5 of 30 settled)" in small


def test_the_audit_record_shows_the_acted_on_share_and_what_is_counted_apart(
    store_target: str,
) -> None:
    store = _store(store_target)
    try:
        acted, not_acted = DefectOutcome.ACTED_ON, DefectOutcome.NOT_ACTED_ON
        outcomes: list[DefectOutcome | None] = [acted] * 6 + [not_acted] * 54
        outcomes += [DefectOutcome.ANSWERED] * 3 + [DefectOutcome.UNMERGED] * 2 + [None] * 4
        _defects(store, outcomes, "qwen")
        _defects(store, [acted], HOSTILE, first=500)
        reply = stats_reply(store, REPO, 8, min_acted=0.3)
    finally:
        store.close()
    rendered = render(reply)
    assert not rendered.mentions
    assert "b" not in rendered.tags
    qwen = next(line for line in reply.splitlines() if line.startswith("| `qwen`"))
    cells = [c.strip() for c in qwen.strip("|").split("|")]
    assert cells[2:] == [
        "69",
        "10% (6 of 60; 95% CI 5–20%)",
        "3",
        "`unmerged` 2",
        "4",
        "stopped: acted on below 30%",
    ]


def test_the_cli_prints_the_record_as_a_table_and_as_json(store_target: str) -> None:
    store = _store(store_target)
    try:
        _gate(store, 1, [GateOutcome.AGREE] * 36 + [GateOutcome.DISAGREE] * 24)
        _defects(store, [DefectOutcome.ACTED_ON] * 36 + [DefectOutcome.NOT_ACTED_ON] * 24, "q")
    finally:
        store.close()
    runner = CliRunner()
    base = ["stats", "--record", "--repo", REPO, "--db", store_target]
    table = runner.invoke(main, [*base, "--gate"])
    assert table.exit_code == 0, table.output
    assert "60% (36 of 60; 95% CI 47–71%)" in table.output
    assert "withheld: live record against 80%" in table.output
    gate = runner.invoke(main, [*base, "--gate", "--json", "--comment-min-precision", "0.5"])
    assert gate.exit_code == 0, gate.output
    (row,) = json.loads(gate.output)
    assert row["nr_precision"] == {"k": 36, "n": 60, "share": 0.6, "ci95": [0.4737, 0.7143]}
    assert row["author_comment"] == "earned: live record against 50%"
    audit = runner.invoke(main, [*base, "--json"])
    assert audit.exit_code == 0, audit.output
    (defects,) = json.loads(audit.output)
    assert defects["acted_on"]["k"] == 36
    assert defects["line_comments"] == "on: acted on at least 30%"


def test_the_cli_says_no_live_record(store_target: str) -> None:
    _store(store_target).close()
    result = CliRunner().invoke(main, ["stats", "--record", "--repo", REPO, "--db", store_target])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("No live record")
    empty: Any = CliRunner().invoke(
        main, ["stats", "--record", "--gate", "--json", "--repo", REPO, "--db", store_target]
    )
    assert json.loads(empty.output) == []
