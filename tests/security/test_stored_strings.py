"""Stored strings are untrusted text: whatever a week, model name, prompt version or error kind
in the store holds (a shared PostgreSQL store has more writers than the bot), the ``/audit_stats``
and ``/triage_stats`` replies keep their structure (markdown-it-py as the oracle: the same
tables, one mermaid chart whose lines stay its own, no markup, mention or link), and so does
the ``stats`` CLI's output. The step summary of a skipped run shows its reason (a label name,
a title pattern) as text."""

from __future__ import annotations

import re
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot import runner
from bot.audit.contract import VERDICTS
from bot.audit.stats import defect_columns, stats_columns
from bot.cli import main
from bot.commands.handlers import stats_reply, triage_stats_reply
from bot.config import Settings
from bot.gate.stats import gate_columns, record_columns, version_columns
from bot.history.record import (
    DefectRow,
    GateOutcome,
    GateOutcomeRow,
    put_defects,
    put_gate_outcome,
)
from bot.history.store import Store
from bot.neutralise import chart_label
from bot.run_report import skipped_report
from tests.support import audit_row, load_webhook, write_payload
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ
from tests.test_neutralise import HOSTILE, _squash

BREAKERS = ["```", "~~~", '"', "]", "\n", "%%", "#quot;", "|", "`"]
"""What could end the chart's fence, its quoted label or a table cell."""
STORED = st.lists(st.sampled_from(BREAKERS) | HOSTILE, min_size=1, max_size=6).map("".join)
TABLE_TAGS = {"p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre"}
NOW = datetime.now(UTC)


def _week(text: str) -> str:
    """A stored week the reply's window reads (``week >= cutoff``: a date in text order)."""
    return "9" + text


def _gate_store(weeks: list[str], models: list[str], prompts: list[str], kinds: list[str]) -> Any:
    """Decisions written into the store as another writer could, every text column hostile."""
    store = Store(":memory:")
    table = store.db["gate_decisions"]
    for n, week in enumerate(weeks):
        for m, (model, prompt, kind) in enumerate(zip(models, prompts, kinds, strict=False)):
            table.insert(  # type: ignore[union-attr]
                {"repo": "o/r", "issue": n * 10 + m, "event": "issues.opened",
                 "verdict": None if m % 2 else "VALID", "label": "x", "reason": "r",
                 "error_kind": kind if m % 2 else None, "model": model, "prompt_version": prompt,
                 "prompt_tokens": 1, "output_tokens": 1, "duration_ms": 100.0 + m,
                 "created_at": NOW.isoformat(), "content_sha": None, "week": week}
            )  # fmt: skip
    for m, (model, prompt, kind) in enumerate(zip(models, prompts, kinds, strict=False)):
        outcome = GateOutcome.UNSETTLED if m % 2 else GateOutcome.AGREE
        put_gate_outcome(  # the live record: model, prompt, policy and reason hostile too
            store,
            GateOutcomeRow(
                "o/r", m, m, model, prompt, kind, "NEEDS_REFINEMENT", outcome, None, kind
            ),
        )
    return store


def _records(models: list[str], prompts: list[str], kinds: list[str]) -> int:
    return len({(m, p, k) for m, p, k in zip(models, prompts, kinds, strict=False)})


def _chart(rendered: Any, weeks: int) -> None:
    """The one ``pre`` is the bot's chart: its five lines, ``weeks`` quoted labels."""
    assert rendered.tags["pre"] == 1
    assert rendered.html.count("language-") == 1
    assert 'class="language-mermaid"' in rendered.html
    [chart] = [text for tag, text in rendered.blocks if tag == "pre"]
    lines = chart.rstrip("\n").split("\n")
    assert [line.split()[0] for line in lines] == [
        "xychart-beta",
        "title",
        "x-axis",
        "y-axis",
        "bar",
    ]
    labels = re.fullmatch(r"    x-axis \[(.*)\]", lines[2])
    assert labels is not None
    assert len(re.findall(r'"[^"]*"', labels.group(1))) == weeks
    assert labels.group(1).count('"') == 2 * weeks


def _inert(rendered: Any) -> None:
    assert set(rendered.tags) <= TABLE_TAGS
    assert rendered.attributes <= {"class"}  # the mermaid fence's language class only
    assert not rendered.mentions
    assert not rendered.github_links
    assert not rendered.comments


@FUZZ
@given(
    st.lists(STORED, min_size=1, max_size=3, unique=True),
    st.lists(STORED, min_size=1, max_size=3),
    st.lists(STORED, min_size=1, max_size=3),
    st.lists(STORED, min_size=1, max_size=3),
)
def test_any_stored_string_keeps_the_triage_stats_reply_whole(
    weeks: list[str], models: list[str], prompts: list[str], kinds: list[str]
) -> None:
    stored_weeks = [_week(w) for w in weeks]
    store = _gate_store(stored_weeks, models, prompts, kinds)
    reply = triage_stats_reply(store, "o/r", 52)
    rendered = render(reply)
    _inert(rendered)
    _chart(rendered, len(weeks))
    versions = len({(m, p) for m, p, _ in zip(models, prompts, kinds, strict=False)})
    records = _records(models, prompts, kinds)
    blocks = ["p", "table", "pre", "p", "table", "p", "table", "p"]
    assert [tag for tag, _ in rendered.blocks] == blocks
    assert rendered.blocks[-1][1].startswith("Possible duplicates: ")
    assert rendered.tags["tr"] == 1 + len(weeks) + 1 + versions + 1 + records
    assert rendered.tags["td"] == len(weeks) * len(gate_columns()) + versions * len(
        version_columns()
    ) + records * len(record_columns())


@FUZZ
@given(st.lists(STORED, min_size=1, max_size=3, unique=True), st.lists(STORED, max_size=3))
def test_any_stored_string_keeps_the_audit_stats_reply_whole(
    weeks: list[str], models: list[str]
) -> None:
    store = Store(":memory:")
    table = store.db["audits"]
    for n, week in enumerate(weeks):
        for m, model in enumerate(models or ["m"]):
            row = asdict(audit_row(pr=n * 10 + m, model=model, verdict="FIX"))
            table.insert(  # type: ignore[union-attr]
                {**row, "retried": 1, "created_at": NOW.isoformat(), "week": _week(week)}
            )
    defects = [  # the live record: model, prompt and outcome hostile too
        DefectRow("o/r", m, "a" * 40, "p.py", 1, "other", model, week)
        for m, (model, week) in enumerate(zip(models or ["m"], weeks, strict=False))
    ]
    put_defects(store, defects)
    for row, week in zip(defects, weeks, strict=False):
        store.change(
            "audit_defects",
            lambda t, r=row, w=week: t.update({"repo": "o/r", "pr": r.pr}, {"outcome": w}),
        )
    reply = stats_reply(store, "o/r", 52)
    rendered = render(reply)
    _inert(rendered)
    _chart(rendered, len(weeks))
    assert [tag for tag, _ in rendered.blocks] == ["p", "table", "pre", "p", "table", "p", "table"]
    shown_models = len(set(models or ["m"]))
    records = len({(d.model, d.prompt_version) for d in defects})
    assert rendered.tags["tr"] == 1 + len(weeks) + 1 + shown_models + 1 + records
    per_model = len(("model", "audits", *VERDICTS, "retried"))
    cells = len(weeks) * len(stats_columns(short=False)) + shown_models * per_model
    cells += records * len(defect_columns())
    assert rendered.tags["td"] == cells


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("2026-11-23", "2026-11-23"),  # a week as the bot writes it: unchanged
        ('2026"]\n```\n@octocat', "2026?? ??? ?octocat"),  # one line
        ("x" * 40, "x" * 31 + "…"),
        ("%%{init: {}}%% <b>#quot;", "???init: ????? ?b??quot?"),
    ],
)
def test_a_chart_label_is_one_line_of_plain_characters(label: str, shown: str) -> None:
    assert chart_label(label) == shown


def test_the_stats_cli_prints_stored_strings_as_text(tmp_path: Path) -> None:
    """The CLI's tables: a stored line break or workflow command starts no line."""
    hostile = "2026-11-23\n::error::x\n##[group]y"
    store = Store(tmp_path / "t.db")
    store.db["audits"].insert(  # type: ignore[union-attr]
        {**asdict(audit_row()), "retried": 1, "created_at": NOW.isoformat(), "week": "9" + hostile}
    )
    store.db["gate_decisions"].insert(  # type: ignore[union-attr]
        {"repo": "o/r", "issue": 1, "event": "issues.opened", "verdict": "VALID", "label": "x",
         "reason": "r", "error_kind": None, "model": hostile, "prompt_version": hostile,
         "prompt_tokens": 1, "output_tokens": 1, "duration_ms": 1.0,
         "created_at": NOW.isoformat(), "content_sha": None, "week": "9" + hostile}
    )  # fmt: skip
    store.close()
    for gate in ([], ["--gate"]):
        result = CliRunner().invoke(
            main, ["stats", *gate, "--repo", "o/r", "--db", str(tmp_path / "t.db")]
        )
        assert result.exit_code == 0, result.output
        assert "Gate decisions" in result.stdout if gate else "Accepted audits" in result.stdout
        for line in result.stdout.splitlines():
            assert not line.lstrip().startswith("::")
            assert "##[" not in line


# --- the step summary of a skipped run --------------------------------------------------------
LABELS = [
    "<img src=x onerror=alert(1)>",
    "@octocat/team",
    "wip # heading",  # a line break in a label name is refused at load (test_backlog_retry)
    "[x](https://evil.example)",
    "`` ` ``<b>b</b>",
    "ready ##[error]x %0A",
]


@pytest.mark.parametrize("label", LABELS)
def test_a_skipped_runs_summary_shows_the_label_as_text(tmp_path: Path, label: str) -> None:
    """``skip.labels`` in the repository's file names a label the issue carries: the run is
    skipped, and its summary and log line show the label's name, inert."""
    rules = tmp_path / "triage-bot.yml"
    rules.write_text("skip:\n  labels: [" + _yaml(label) + "]\n", "utf-8")
    payload = load_webhook("issues.opened.18")
    payload["issue"]["labels"] = [{"name": label}]
    settings = Settings(
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        dry_run=True,
        repo_file_path=rules,
        db_path=str(tmp_path / "t.db"),
    )
    report = runner.run_event(settings)
    assert report.outputs["skipped"] == "true"
    rendered = render(report.summary)
    assert set(rendered.tags) <= {"p", "code"}
    assert not rendered.attributes
    assert not rendered.mentions
    assert [tag for tag, _ in rendered.blocks] == ["p"]
    expected = f"triage-bot skipped: the issue has the label {label!r}, which "
    assert _squash(rendered.all_text) == _squash(expected + ".github/triage-bot.yml skips")
    assert len(report.text.splitlines()) == 1
    assert "##[" not in report.text


def _yaml(text: str) -> str:
    """``text`` as a YAML double-quoted scalar."""
    import json

    return json.dumps(text)


@pytest.mark.parametrize(
    "reason",
    [
        "the title matches '<script>', which .github/triage-bot.yml skips",
        "#1 is unchanged since the bot's last decision (@team ![x](y)); /triage re-runs the gate",
        "already audited at ec26c3e57ca3 (the bot's comment says so); `/audit` re-runs it",
    ],
)
def test_every_skip_reason_reaches_the_summary_inert(reason: str) -> None:
    report = skipped_report(reason)
    rendered = render(report.summary)
    assert set(rendered.tags) <= {"p", "code"}
    assert not rendered.attributes
    assert not rendered.mentions
    assert not rendered.github_links
    assert replace(report, summary="").text.startswith("triage-bot: skipped: ")
    assert len(report.text.splitlines()) == 1
