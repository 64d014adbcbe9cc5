"""The live record's read time: `.venv/bin/python benchmarks/record_stats.py [--rows N]`.

Fills a SQLite file store (WAL) with N settled gate decisions (default 100,000: one row per
issue, over 4 models, 3 prompt versions and 2 policies, a tenth of them unsettled by one of four
reasons) and N reported defects (over the same models and prompts, most settled), then prints
the median and worst of 20 runs, in process, of:

- the gate's read per run (`read_live_records`: the one grouped query the author comment's
  bound rests on) and the audit's (`line_rule`);
- `triage-bot stats --gate --record` and `stats --record` as they compute their text: the
  readers and every row's cells;
- the live record part of `/triage_stats` and `/audit_stats` (markdown).

Goal: each under 100 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.earned import line_rule  # noqa: E402
from bot.audit.stats import defect_cells  # noqa: E402
from bot.commands import handlers  # noqa: E402
from bot.gate.earned import read_live_records  # noqa: E402
from bot.gate.stats import record_cells  # noqa: E402
from bot.history.protocol import utc_now  # noqa: E402
from bot.history.record import (  # noqa: E402
    DEFECT_TABLE,
    GATE_TABLE,
    DefectOutcome,
    GateOutcome,
    defect_records,
    gate_records,
)
from bot.history.store import Store  # noqa: E402

REPO = "o/r"
MODELS = ("qwen2.5-coder-1.5b.gguf", "qwen2.5-coder:7b", "llama3.1:70b", "gemma3:270m")
PROMPTS = ("validator@1", "validator@2", "validator@3")
POLICIES = ("policy@a", "policy@b")
REASONS = ("open", "no maintainer signal", "transferred", "no verdict")
GOAL_MS = 100.0


def _fill(store: Store, rows: int, rng: random.Random) -> None:
    now = utc_now()
    settled = [GateOutcome.AGREE] * 7 + [GateOutcome.DISAGREE, GateOutcome.OVERRIDE]

    def gates(table: Any) -> None:
        for i in range(rows):
            unsettled = rng.random() < 0.1
            outcome = GateOutcome.UNSETTLED if unsettled else rng.choice(settled)
            table.upsert(
                {
                    "repo": REPO,
                    "issue": i + 1,
                    "decision_id": i + 1,
                    "model": rng.choice(MODELS),
                    "prompt_version": rng.choice(PROMPTS),
                    "policy_version": rng.choice(POLICIES),
                    "verdict": rng.choice(("VALID", "NEEDS_REFINEMENT")),
                    "outcome": str(outcome),
                    "expected": None,
                    "reason": rng.choice(REASONS) if unsettled else "closed",
                    "event_at": now,
                    "settled_at": now,
                },
                ("repo", "issue"),
            )

    outcomes = [*DefectOutcome, None]

    def defects(table: Any) -> None:
        for i in range(rows):
            outcome = rng.choice(outcomes)
            table.upsert(
                {
                    "repo": REPO,
                    "pr": i // 5 + 1,
                    "head_sha": "a" * 40,
                    "path": f"src/m{i % 5}.py",
                    "line": 10,
                    "category": "off-by-one",
                    "model": rng.choice(MODELS),
                    "prompt_version": rng.choice(PROMPTS).replace("validator", "audit-json"),
                    "created_at": now,
                    "outcome": None if outcome is None else str(outcome),
                    "reason": "bench",
                },
                ("repo", "pr", "head_sha", "path", "line"),
            )

    store.change(GATE_TABLE, gates)
    store.change(DEFECT_TABLE, defects)


def _timed(name: str, fn: Callable[[], object], runs: int = 20) -> float:
    fn()  # warm the page cache, as a runner's second job would
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    median = statistics.median(times)
    verdict = "ok" if max(times) < GOAL_MS else "OVER"
    print(f"{name:58s} median {median:6.1f} ms  worst {max(times):6.1f} ms  {verdict}")
    return max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    rng = random.Random(37)
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "triage.db")
        started = time.perf_counter()
        _fill(store, args.rows, rng)
        print(
            f"inserted {args.rows} settled gate decisions and {args.rows} reported defects in "
            f"{time.perf_counter() - started:.1f} s (SQLite, WAL)"
        )

        def gate_text() -> list[tuple[str, ...]]:
            return [record_cells(r, min_precision=0.8, text=str) for r in gate_records(store, REPO)]

        def defect_text() -> list[tuple[str, ...]]:
            return [defect_cells(r, min_acted=0.3, text=str) for r in defect_records(store, REPO)]

        worst = [
            _timed("gate run: read_live_records", lambda: read_live_records(store, REPO)),
            _timed(
                "audit run: line_rule",
                lambda: line_rule(
                    store, REPO, model=MODELS[0], prompt_version="audit-json@1", min_acted=0.3
                ),
            ),
            _timed("stats --gate --record (readers and cells)", gate_text),
            _timed("stats --record (readers and cells)", defect_text),
            _timed(
                "/triage_stats live record (markdown)",
                lambda: handlers._gate_record(store, REPO, 0.8, None),
            ),
            _timed(
                "/audit_stats live record (markdown)",
                lambda: handlers._defect_record(store, REPO, 0.3, None),
            ),
        ]
        store.close()
    print(f"worst of all: {max(worst):.1f} ms (goal < {GOAL_MS:.0f} ms)")


if __name__ == "__main__":
    main()
