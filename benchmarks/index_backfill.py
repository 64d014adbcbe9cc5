"""The duplicate index's backfill on a loopback GitHub:
`.venv/bin/python benchmarks/index_backfill.py [--issues N] [--budget N] [--db URL]`.

A real HTTP server on 127.0.0.1 (tests/support/dataset_server.py) serves ``--issues`` open
issues (default 5,000; tests/support/duplicate_world.py ``many``) with a pull request listed after
every fourth. ``triage-bot index``'s path (bot.runner.run_index) with the real client (PyGithub)
indexes them into a SQLite store, or with ``--db`` a new database on that PostgreSQL server
(dropped afterwards), in runs of ``--budget`` requests (default 20) until one finishes, then one
more run, which must write nothing. Prints per run the pages, issues indexed, requests and
time; then requests per issue counted by the server (goal ≤ 1.2), the index's size (goal: every
issue), the rows written (each issue once, and a stopped run's last second again: its next page
might have held more of that second) and the whole time. Exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import Settings  # noqa: E402
from bot.factory import make_store  # noqa: E402
from bot.runner import run_index  # noqa: E402
from bot.stores import store_kind  # noqa: E402
from tests.support.dataset_server import LoopbackGitHub  # noqa: E402
from tests.support.dataset_world import REPO  # noqa: E402
from tests.support.duplicate_world import many  # noqa: E402

GOAL_PER_ISSUE = 1.2
MAX_RUNS = 1000


@contextmanager
def _target(db: str | None) -> Iterator[str]:
    """A SQLite file in a temporary folder, or a new database on ``db``'s PostgreSQL server."""
    if db is None:
        with tempfile.TemporaryDirectory() as folder:
            yield str(Path(folder) / "index.db")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=5000)
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--db", help="a PostgreSQL server's URL (a new database is made on it)")
    args = parser.parse_args()
    scenarios = many(args.issues)
    started = time.perf_counter()
    with _target(args.db) as target, LoopbackGitHub(scenarios, pulls_every=4) as github:
        settings = Settings(github_token="t", github_api_url=github.base_url, db_path=target)
        indexed = stops = 0
        for run in range(1, MAX_RUNS + 1):
            before = github.requests["list"]
            took = time.perf_counter()
            report = run_index(settings, REPO, budget=args.budget)
            took = time.perf_counter() - took
            indexed += report.indexed
            print(
                f"run {run}: {report.pages} page(s), {report.indexed} issue(s) indexed, "
                f"{github.requests['list'] - before} request(s), {took:.2f} s"
                + (f"; stopped: {report.stopped}" if report.stopped else "")
            )
            if report.stopped is None:
                break
            stops += 1
        final = run_index(settings, REPO, budget=args.budget)
        print(
            f"a run after the last: {final.indexed} issue(s) indexed, {final.requests} request(s)"
        )
        store = make_store(Settings(db_path=target), read_only=True)
        try:
            size = store.index_size(REPO)
        finally:
            store.close()
        listed = github.requests.total()
    total = time.perf_counter() - started
    per_issue = listed / args.issues
    print(
        f"{args.issues} issues ({args.issues // 4} pull requests listed among them): "
        f"{listed} request(s), {per_issue:.3f} per issue (goal ≤ {GOAL_PER_ISSUE}); "
        f"the index holds {size}; written {indexed} times ({stops} stopped run(s) wrote their "
        f"last second again); {total:.1f} s"
    )
    missed = per_issue > GOAL_PER_ISSUE or size != args.issues
    missed = missed or not args.issues <= indexed <= args.issues + stops
    missed = missed or final.indexed != 0
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
