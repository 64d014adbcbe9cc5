"""Settling gate decisions on a loopback GitHub: `.venv/bin/python benchmarks/settle_issues.py`.

A real HTTP server on 127.0.0.1 (tests/support/dataset_server.py) serves 200 decided issues, each
kind of tests/support/settle_world.py in turn (agree, disagree, the author answering the bot, a
maintainer's override on an open issue, no decision, never judged), with a closed pull request
after every fourth issue. The real client (PyGithub) settles them into a SQLite store (or
TRIAGE_DB) within a budget of 100 requests a run: it stops, the next run resumes, then the
next finds nothing left (a list page).

Prints, per run: requests by kind and per decided issue (goal ≤ 3), whether every issue got the
outcome its history implies, time.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import Settings  # noqa: E402
from bot.factory import make_github, make_store  # noqa: E402
from bot.history.record import GATE_TABLE  # noqa: E402
from bot.settle.budget import Budget  # noqa: E402
from bot.settle.settling import settle_repo  # noqa: E402
from tests.support.dataset_server import LoopbackGitHub  # noqa: E402
from tests.support.dataset_world import REPO  # noqa: E402
from tests.support.settle_world import BOT, decide_all, world  # noqa: E402

ISSUES = 200
BUDGET = 100
GOAL_PER_ISSUE = 3


def main() -> int:
    issues = world(ISSUES)
    want = {d.number: d.outcome for d in issues if d.outcome is not None}
    with tempfile.TemporaryDirectory() as folder:
        target = os.environ.get("TRIAGE_DB") or str(Path(folder) / "triage.db")
        store = make_store(Settings(db_path=target))
        decide_all(store, issues)
        ok = True
        with LoopbackGitHub([d.scenario for d in issues], pulls_every=4) as github:
            client = make_github(Settings(github_token="t", github_api_url=github.base_url))
            for run in ("first", "resume", "again"):
                before = dict(github.requests)
                start = time.perf_counter()
                report = settle_repo(client, store, REPO, Budget(BUDGET), bot_login=BOT)
                took = time.perf_counter() - start
                spent = {k: v - before.get(k, 0) for k, v in github.requests.items()}
                settled = sum(report.settled.values()) + sum(report.unsettled.values())
                per = sum(spent.values()) / settled if settled else 0.0
                print(
                    f"{run}: {sum(spent.values())} requests {spent}, {settled} issue(s) "
                    f"written, {per:.2f} per issue written, stopped: {report.stopped or 'no'}, "
                    f"{took:.2f} s"
                )
                ok = ok and (per <= GOAL_PER_ISSUE)
        rows = store.fetch(f"select issue, outcome from {GATE_TABLE} where repo = ?", [REPO])
        got = {int(n): str(o) for n, o in rows}
        wrong = {n: (got.get(n), o) for n, o in want.items() if got.get(n) != o}
        print(
            f"{len(want)} decided issues of {ISSUES}: {len(want) - len(wrong)} settled to the "
            f"outcome their history implies" + (f"; wrong: {wrong}" if wrong else "")
        )
        store.close()
    return 0 if ok and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
