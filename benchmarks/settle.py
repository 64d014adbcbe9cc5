"""Settling on a loopback GitHub: `.venv/bin/python benchmarks/settle.py [--db URL]`.

A real HTTP server on 127.0.0.1 (tests/support/dataset_server.py) serves 200 decided issues,
each kind of tests/support/settle_world.py in turn (agree, disagree, the author answering the
bot, a maintainer's override on an open issue, no decision, never judged), a closed pull
request listed after every fourth, and 50 audited pull requests with two defects each, each
settling rule of tests/support/pull_world.py in turn (acted on, answered, not acted on,
closed unmerged, file gone, force-pushed). `triage-bot settle`'s path (bot.runner.run_settle:
the repository file, then the issues, then the pull requests in what is left of the budget)
with the real client (PyGithub) settles them into a SQLite store, or with ``--db`` a new
database on that PostgreSQL server (dropped afterwards).

Runs of ``--budget`` requests (default 200) until one finishes: the first stops, the next
resumes where it stopped; then one more run, which must change nothing. Prints per run the
requests by kind and what it settled; then requests per decided issue and per audited pull
request, counted by the server (max and mean; goals ≤ 3 and ≤ 4), wrong outcomes (goal 0),
and time. Exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import Settings  # noqa: E402
from bot.factory import make_store  # noqa: E402
from bot.history.record import DEFECT_TABLE, GATE_TABLE, put_defects  # noqa: E402
from bot.runner import run_settle  # noqa: E402
from bot.settle.pulls import PullsReport  # noqa: E402
from bot.settle.settling import SettleReport  # noqa: E402
from bot.stores import store_kind  # noqa: E402
from tests.support.dataset_server import LoopbackGitHub  # noqa: E402
from tests.support.dataset_world import REPO  # noqa: E402
from tests.support.pull_world import audited_pulls  # noqa: E402
from tests.support.settle_world import BOT, decide_all, world  # noqa: E402

GOAL_PER_ISSUE = 3
GOAL_PER_PULL = 4
MAX_RUNS = 20
ISSUE_KINDS = ("list", "graphql", "timeline")
PULL_KINDS = ("pull", "compare")


@contextmanager
def _target(db: str | None) -> Iterator[str]:
    """A SQLite file in a temporary folder, or a new database on ``db``'s PostgreSQL server."""
    if db is None:
        with tempfile.TemporaryDirectory() as folder:
            yield str(Path(folder) / "settle.db")
        return
    kind = store_kind(db)
    if kind is None or kind.on_runner:
        sys.exit(f"--db: not a PostgreSQL URL: {db}")
    name = f"triage_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute(f'create database "{name}"')
    try:
        yield urlunsplit(urlsplit(db)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(db, autocommit=True) as admin:
            admin.execute(f'drop database if exists "{name}" with (force)')


def _pulls_part(report: SettleReport) -> PullsReport | None:
    return next((p for p in report.parts if isinstance(p, PullsReport)), None)


def _rows(target: str) -> list[Any]:
    store = make_store(Settings(db_path=target), read_only=True)
    try:
        gate = store.fetch(f"select * from {GATE_TABLE} order by repo, issue", [])
        defects = store.fetch(f"select * from {DEFECT_TABLE} order by pr, line", [])
        return [tuple(r) for r in gate] + [tuple(r) for r in defects]
    finally:
        store.close()


def _outcomes(target: str) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    store = make_store(Settings(db_path=target), read_only=True)
    try:
        gate = store.fetch(f"select issue, outcome from {GATE_TABLE} where repo = ?", [REPO])
        defects = store.fetch(f"select pr, line, outcome from {DEFECT_TABLE}", [])
    finally:
        store.close()
    return (
        {int(n): str(o) for n, o in gate},
        {(int(pr), int(line)): str(o) for pr, line, o in defects},
    )


def _print_run(name: str, report: SettleReport, spent: Counter[str], took: float) -> None:
    pulls = _pulls_part(report)
    issues = ", ".join(f"{n} {o}" for o, n in sorted(report.settled.items())) or "none"
    defects = ", ".join(f"{n} {o}" for o, n in sorted(pulls.outcomes.items())) if pulls else ""
    stopped = report.stopped or (pulls.stopped if pulls else None)
    print(
        f"{name}: {spent.total()} requests {dict(sorted(spent.items()))}; "
        f"issues settled {issues}, {sum(report.unsettled.values())} unsettled; "
        + (
            f"pull requests read {pulls.pulls_read}, defects settled {defects or 'none'}; "
            if pulls
            else "pull requests not reached; "
        )
        + f"stopped: {stopped or 'no'}; {took:.2f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=200)
    parser.add_argument("--pulls", type=int, default=50)
    parser.add_argument("--budget", type=int, default=200, help="requests a run")
    parser.add_argument("--db", default=None, help="a PostgreSQL server URL (default: SQLite)")
    args = parser.parse_args()
    issues = world(args.issues)
    audited = audited_pulls(args.pulls, first=args.issues + 1)
    want_issues = {d.number: d.outcome for d in issues if d.outcome is not None}
    decided = [d.number for d in issues if d.verdict is not None]
    want_defects = {k: v for a in audited for k, v in a.expected.items()}
    with _target(args.db) as target:
        store = make_store(Settings(db_path=target))
        try:
            decide_all(store, issues)
            for pull in audited:
                put_defects(store, pull.defects)
        finally:
            store.close()
        scenarios = [d.scenario for d in issues]
        with LoopbackGitHub(scenarios, pulls_every=4, audited=audited, login=BOT) as github:
            settings = Settings(
                github_token="t", github_api_url=github.base_url, db_path=target, bot_login=BOT
            )
            started = time.perf_counter()
            slept = [0.0]
            sleep = time.sleep

            def asleep(seconds: float) -> None:
                slept[0] += seconds
                sleep(seconds)

            for run in range(1, MAX_RUNS + 1):
                before = Counter(github.requests)
                start = time.perf_counter()
                with mock.patch.object(time, "sleep", asleep):
                    report = run_settle(settings, REPO, budget=args.budget)
                spent = Counter(github.requests) - before
                _print_run(
                    "first" if run == 1 else "resume", report, spent, time.perf_counter() - start
                )
                pulls = _pulls_part(report)
                if report.stopped is None and pulls is not None and pulls.stopped is None:
                    break
            settle_took = time.perf_counter() - started
            settled_requests = Counter(github.requests)
            per_issue = [github.per_issue[n] for n in decided]
            per_pull = [github.per_pull[a.history.number] for a in audited]
            rows = _rows(target)
            before = Counter(github.requests)
            start = time.perf_counter()
            again = run_settle(settings, REPO, budget=args.budget)
            again_spent = Counter(github.requests) - before
            _print_run("again", again, again_spent, time.perf_counter() - start)
            unchanged = _rows(target) == rows
        got_issues, got_defects = _outcomes(target)
    wrong_issues = {n: (got_issues.get(n), o) for n, o in want_issues.items()}
    wrong_issues = {n: pair for n, pair in wrong_issues.items() if pair[0] != pair[1]}
    wrong_defects = {k: (got_defects.get(k), o) for k, o in want_defects.items()}
    wrong_defects = {k: pair for k, pair in wrong_defects.items() if pair[0] != pair[1]}
    issue_requests = sum(settled_requests[k] for k in ISSUE_KINDS)
    shared = settled_requests["list"] + settled_requests["graphql"]
    issue_mean = issue_requests / len(decided)
    issue_max = max(per_issue) + shared / len(decided)
    pull_mean = sum(per_pull) / len(per_pull)
    print(
        f"store: {'PostgreSQL' if args.db else 'SQLite'}; {run} run(s) of {args.budget} requests "
        f"to settle everything, {settle_took:.2f} s; {args.issues} issues ({len(decided)} "
        f"decided, {len(want_issues)} written), {args.pulls} audited pull requests "
        f"({len(want_defects)} defects)"
    )
    print(
        f"requests per decided issue: mean {issue_mean:.2f}, max {issue_max:.2f} (its own "
        f"timeline reads, at most {max(per_issue)}, and its share of the {shared} list pages and "
        f"GraphQL queries, each read for up to 100 issues; goal ≤ {GOAL_PER_ISSUE}); the "
        f"repository file once a run ({settled_requests['contents']})"
    )
    print(
        f"requests per pull request: mean {pull_mean:.2f}, max {max(per_pull)} (its GraphQL "
        f"read and its comparisons; goal ≤ {GOAL_PER_PULL}); the login was given, no viewer "
        f"query ({settled_requests['viewer']})"
    )
    posts = sum(settled_requests[k] for k in ("graphql", "pull", "viewer"))
    print(
        f"time: {settle_took:.2f} s to settle, of which {slept[0]:.2f} s asleep: PyGithub spaces "
        f"its POSTs ({posts} GraphQL queries) 1 s apart as writes"
    )
    print(f"issue outcomes: {dict(sorted(Counter(got_issues.values()).items()))}")
    print(f"defect outcomes: {dict(sorted(Counter(got_defects.values()).items()))}")
    print(
        f"wrong outcomes: {len(wrong_issues)} issue(s), {len(wrong_defects)} defect(s) (goal 0)"
        + (
            f"; {list(wrong_issues.items())[:5]} {list(wrong_defects.items())[:5]}"
            if wrong_issues or wrong_defects
            else ""
        )
    )
    print(
        f"again: {again_spent.total()} request(s), store rows "
        f"{'unchanged' if unchanged else 'CHANGED'} (goal: unchanged)"
    )
    ok = (
        not wrong_issues
        and not wrong_defects
        and issue_max <= GOAL_PER_ISSUE
        and max(per_pull) <= GOAL_PER_PULL
        and unchanged
        and run > 1
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
