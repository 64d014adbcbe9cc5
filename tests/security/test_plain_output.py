"""What people read on stdout and stderr is plain text: the workflow-command escaping
(``%25``, ``%0A``, ``%0D``) only ever appears inside a ``::command::`` line, and a table is
never cut (not at 80 columns on a pipe or in a CI log, not with ``…`` in a narrow terminal).

Each output comes from the real CLI: an eval that misses its bound (exit 6), a PostgreSQL
error (libpq's message has two lines), a malformed eval set (named, not quoted), hostile
error text, and the ``stats`` tables over a store whose rows hold long values and ``%``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given

from bot import cli
from bot.audit.stats import stats_columns
from bot.cli import main
from bot.errors import ConfigError, ModelUnavailable
from bot.evaluation import command
from bot.gate.stats import gate_columns
from bot.history.store import AuditRow, GateRow, Store
from tests.support import FakeChatModel
from tests.support.profiles import FUZZ
from tests.test_neutralise import STDOUT_TEXT, runner_commands

ESCAPES = re.compile("%(25|0A|0D)", re.IGNORECASE)
LONG_MODEL = "qwen2.5-coder:1.5b-instruct-q4_K_M-100%-of-the-context"
LONG_PROMPT = "validator@1a2b3c4d-decisions-of-a-long-prompt-version"


def test_an_eval_below_its_bound_prints_its_report_as_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exit 6: the markdown report and the bounds missed, line by line on stderr."""
    model = FakeChatModel().enqueue(*[ModelUnavailable("down: 100% of calls") for _ in range(40)])
    monkeypatch.setattr(command, "make_chat_model", lambda *a, **k: model)
    args = ["eval", "--only", "gate", "--limit", "2", "--out", str(tmp_path / "r.json"),
            "--max-validator-error", "0.5", "--ollama-host", "http://127.0.0.1:9"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 6, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("triage-bot: error: ")
    assert any(line.startswith("| ") for line in lines)  # the report's tables, row by row
    assert lines[-1].startswith("eval below threshold: ")
    assert "100.0%" in result.stderr
    assert ESCAPES.findall(result.stderr) == []


def test_a_postgresql_error_is_printed_as_libpq_wrote_it() -> None:
    """libpq's "connection refused" message has a second, indented line: it stays a line."""
    db = "postgresql://triage@127.0.0.1:1/x?connect_timeout=2"
    result = CliRunner().invoke(main, ["history", "--repo", "o/r", "--db", db])
    assert result.exit_code == 5
    lines = result.stderr.splitlines()
    assert lines[0].startswith("triage-bot: error: cannot open the store at ")
    assert "Connection refused" in lines[0]
    assert len(lines) >= 2
    assert ESCAPES.findall(result.stderr) == []


def test_a_malformed_eval_line_is_one_plain_line_naming_its_fields(tmp_path: Path) -> None:
    """A malformed eval set line: its file, line and each field at fault on one line, none of
    what the line holds (its id neither as it is nor escaped)."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "Not-An-Id 100%", "title": 5}\n', "utf-8")
    result = CliRunner().invoke(main, ["eval", "--only", "gate", "--issues", str(path)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"triage-bot: error: --issues {path}:1: not a valid EvalIssue: id: ")
    assert "title: Input should be a valid string" in line
    assert "Not-An-Id" not in line
    assert ESCAPES.findall(result.stderr) == []


@FUZZ
@given(STDOUT_TEXT)
def test_no_error_text_starts_a_workflow_command(text: str) -> None:
    """Whatever an error message holds (it may echo a path, a model reply, a server's words),
    the error lines on stderr start no workflow command and keep ``%`` as ``%``."""
    runner = CliRunner()
    with runner.isolation() as (_, err, _):
        with pytest.raises(SystemExit):
            cli._fail(ConfigError(text))
        printed = err.getvalue().decode("utf-8", "backslashreplace")
    assert runner_commands(printed) == []
    assert printed.count("%") == f"triage-bot: error: {text}".count("%")


def _stored(tmp_path: Path) -> str:
    db = tmp_path / "t.db"
    store = Store(db)
    store.record_gate(
        GateRow("o/r", 1, "issues.opened", "VALID", "ready-for-dev", "r", None, LONG_MODEL,
                LONG_PROMPT, 100, 20, 900.0, created_at="2026-11-30T08:00:00+00:00")
    )  # fmt: skip
    store.record_audits([
        AuditRow("o/r", 2, "c0ffee", "src/app.py", 1, 20, "GO_WITH_NOTES", "Medium", True,
                 "json", LONG_MODEL, LONG_PROMPT, 500, 90, 1500.0, "body",
                 created_at="2026-11-30T08:00:00+00:00")
    ])  # fmt: skip
    store.close()
    return str(db)


TABLES = [
    (["stats", "--gate", "--weeks", "52"], gate_columns()),
    (["stats", "--weeks", "52"], stats_columns(short=True)),
    (["history"], ("#", "verdict", "confidence", "range", "retry", "UTC time")),
]


@pytest.mark.parametrize(("args", "columns"), TABLES, ids=["stats --gate", "stats", "history"])
def test_a_table_on_a_pipe_is_printed_whole(
    tmp_path: Path, args: list[str], columns: tuple[str, ...]
) -> None:
    """stdout is no terminal here (CliRunner, like a CI log or a pipe): no 80-column cut, no
    ``…``, every header and the stored values whole, ``%`` as ``%``."""
    db = _stored(tmp_path)
    result = CliRunner().invoke(main, [*args, "--repo", "o/r", "--db", db])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "…" not in out
    assert ESCAPES.findall(out) == []
    assert all(column in out for column in columns), out
    if "--gate" in args:  # the model and prompt column alone is wider than 80 characters
        assert f"{LONG_MODEL} {LONG_PROMPT}" in out


def test_a_table_in_a_narrow_terminal_wraps_its_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 50-column terminal: the table fits it, cells wrap or fold, nothing is cut."""
    db = _stored(tmp_path)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: a terminal, though CliRunner's is a pipe
    monkeypatch.setenv("COLUMNS", "50")
    result = CliRunner().invoke(main, ["stats", "--gate", "--repo", "o/r", "--db", db])
    assert result.exit_code == 0, result.output
    plain = re.sub("\x1b\\[[0-9;]*m", "", result.stdout)
    assert "…" not in plain
    assert max(len(line) for line in plain.splitlines()) <= 50
    # the last column's pieces, line after line, hold the whole stored value
    body = [line for line in plain.splitlines() if line.startswith("│")]
    last = "".join(line.split("│")[-2].strip() for line in body)
    assert "".join(LONG_MODEL.split()) in last
