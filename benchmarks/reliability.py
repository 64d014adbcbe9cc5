"""Reliability table: run with `.venv/bin/python benchmarks/reliability.py`.

Prints one table whose every row states the expected and the observed outcome:

1. Fault matrix (tests/support/fault_matrix.py): each model fault through the gate and a whole
   audit, each GitHub fault through PyGithub on recorded answers, crashes between steps, replays.
2. Hostile input and posting safety (tests/support/hostile_cases.py), with time and peak memory, and
   a security review's findings, one row each (tests/support/security_cases.py).
3. Storage under load (benchmarks/store_load.py): two processes × 1,000 audits, kill -9.
4. Fuzzing (benchmarks/fuzz.py): hypothesis properties at 10,000 examples each, the CommonMark
   oracle over every posting place included.
5. Throughput on the embedded model: prefix reuse (prompt tokens evaluated on the second and
   later gate calls) and `backlog` over 50 issues against its own 50 model calls alone, i.e.
   the share of backlog wall time spent in the model (goal ≥ 0.9). Failed calls count as model
   time: a reply cut at ``num_predict`` is the slowest call of all (leaving them out had made
   the ratio look like 0.71 on an idle machine).

The rows of 1 and 2 are the same objects whose outcomes the suite asserts
(tests/reliability/test_fault_matrix.py, tests/reliability/test_hostile_rows.py,
tests/reliability/test_security_rows.py); their time and memory bounds are checked here only (a
row over its bound is "NO"). Options: `--fast` uses 1,000 fuzz examples and 10 backlog issues;
`--no-model` skips 5; `--only-model` runs only 5.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fuzz  # noqa: E402
import store_load  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from rich.text import Text  # noqa: E402

from bot import runner  # noqa: E402
from bot.chat import ChatResult  # noqa: E402
from bot.clients.embedded import EmbeddedChatModel  # noqa: E402
from bot.config import EMBEDDED_N_CTX, VALIDATOR_OPTIONS, Settings  # noqa: E402
from bot.gate.issue_text import prepare_issue  # noqa: E402
from bot.gate.validator import Validator  # noqa: E402
from bot.gate.verdict import verdict_schema  # noqa: E402
from bot.runner import run_backlog  # noqa: E402
from tests.support.fake_github import FakeGitHub  # noqa: E402
from tests.support.fault_matrix import ROWS as FAULT_ROWS  # noqa: E402
from tests.support.hostile_cases import ROWS as HOSTILE_ROWS  # noqa: E402
from tests.support.reliability import measure  # noqa: E402
from tests.support.security_cases import ROWS as SECURITY_ROWS  # noqa: E402

EVAL_ISSUES = ROOT / "evals" / "issues.jsonl"


def backlog_issues(count: int) -> list[dict[str, object]]:
    """``count`` open issues in payload shape, from the project's own eval texts (cycled)."""
    texts = [json.loads(line) for line in EVAL_ISSUES.read_text("utf-8").splitlines() if line]
    return [
        {
            "number": 100 + i,
            "title": texts[i % len(texts)]["title"],
            "body": texts[i % len(texts)]["body"],
            "state": "open",
            "labels": [],
        }
        for i in range(count)
    ]


def prefix_reuse(model: EmbeddedChatModel, issues: list[dict[str, object]]) -> list[str]:
    """Prompt tokens vs tokens evaluated for the first few gate calls (fresh model state)."""
    validator = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000)
    lines = []
    for issue in issues:
        text = prepare_issue(str(issue["title"]), str(issue["body"]), max_body_chars=6000)
        result = model.chat(
            validator.messages(text), options=VALIDATOR_OPTIONS, schema=verdict_schema()
        )
        lines.append(f"{result.prompt_eval_tokens} of {result.prompt_tokens}")
    return lines


class _Timed:
    """A ChatModel wrapper that sums the wall time of every model call (ms), failed calls
    included: a reply cut at ``num_predict`` raises ``ModelTruncated`` after the longest
    generation of all, and a model-only pass would spend that time too."""

    def __init__(self, model: EmbeddedChatModel) -> None:
        self._model = model
        self.name = model.name
        self.model_ms = 0.0
        self.calls = 0
        self.failed = 0

    def chat(self, messages: Any, *, options: Any, schema: Any = None) -> ChatResult:
        started = time.perf_counter()
        self.calls += 1
        try:
            return self._model.chat(messages, options=options, schema=schema)
        except Exception:
            self.failed += 1
            raise
        finally:
            self.model_ms += (time.perf_counter() - started) * 1000


def throughput(
    model: EmbeddedChatModel, issues: list[dict[str, object]]
) -> tuple[float, float, _Timed]:
    """Issues per second of ``backlog`` (the whole handler: list, plan, label writes to a fake
    GitHub, a store row per issue) and of the same model calls alone (issues / the backend's
    summed wall time for those very calls, failed ones included). Measuring both on one run
    keeps the model's work identical: a second model-only pass would generate different output
    lengths."""
    timed = _Timed(model)
    github = FakeGitHub(open_issue_list=issues)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(github_token="t", db_path=Path(tmp) / "t.db")
        with (
            mock.patch.object(runner, "make_chat_model", return_value=timed),
            mock.patch.object(runner, "make_github", return_value=github),
        ):
            started = time.perf_counter()
            run_backlog(settings, "o/r", limit=len(issues))
            wall_s = time.perf_counter() - started
    return len(issues) / wall_s, len(issues) / (timed.model_ms / 1000), timed


def _add(table: Table, *cells: str) -> None:
    """One row of plain text: case names hold ``[`` (``##[set-output …]``), which rich would
    read as markup."""
    table.add_row(*(Text(cell) for cell in cells))


def main() -> None:
    """Run every part and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--fast", action="store_true", help="smaller load, fuzz and backlog")
    parser.add_argument("--no-model", action="store_true", help="skip the embedded-model part")
    parser.add_argument("--only-model", action="store_true", help="only the embedded-model part")
    args = parser.parse_args()
    table = Table(title="triage-bot reliability", show_lines=False)
    for column in ("group", "case", "expected", "observed", "ok", "ms", "peak MiB"):
        table.add_column(column, overflow="fold")
    failures = 0
    for row in [] if args.only_model else [*FAULT_ROWS, *HOSTILE_ROWS, *SECURITY_ROWS]:
        m = measure(row)
        failures += not m.ok
        _add(
            table,
            row.group,
            row.case,
            row.expected,
            m.observed,
            "yes" if m.ok else "NO",
            f"{m.ms:.0f}",
            f"{m.peak_mib:.1f}",
        )
    for case, expected, observed in [] if args.only_model else store_load.rows():
        ok = expected == observed
        failures += not ok
        _add(table, "storage", case, expected, observed, "yes" if ok else "NO", "", "")
    fuzz_rows = [] if args.only_model else fuzz.rows(examples=1000 if args.fast else 10_000)
    for case, expected, observed in fuzz_rows:
        ok = expected == observed
        failures += not ok
        _add(table, "fuzzing", case, expected, observed, "yes" if ok else "NO", "", "")
    if not args.no_model:
        count = 10 if args.fast else 50
        issues = backlog_issues(count)
        model = EmbeddedChatModel(n_ctx=EMBEDDED_N_CTX)
        reuse = prefix_reuse(model, issues[:4])
        _add(
            table,
            "throughput",
            "gate calls 1-4 on the embedded model: prompt tokens evaluated of total",
            "calls 2-4 evaluate only the issue's tokens",
            "; ".join(reuse),
            "",
            "",
            "",
        )
        backlog, model_only, timed = throughput(model, issues)
        ratio = backlog / model_only
        ok = ratio >= 0.9
        failures += not ok
        _add(
            table,
            "throughput",
            f"backlog of {count} issues vs its own {count} model calls alone",
            "≥ 0.9",
            f"{ratio:.2f} ({backlog:.3f} vs {model_only:.3f} issues/s; {timed.calls} calls, "
            f"{timed.failed} failed)",
            "yes" if ok else "NO",
            "",
            "",
        )
    Console(width=200).print(table)
    print(f"rows not as expected: {failures}")


if __name__ == "__main__":
    main()
