"""Settling audits: `.venv/bin/python benchmarks/settle_pulls.py [--pulls N] [--db URL]`.

Builds N audited pull requests (default 50) with two defects each on the project's fake GitHub
(tests/support/pull_world.py: every settling rule in turn), settles them with one run's budget,
checks each defect settled to what its history implies, and prints GitHub requests per pull
request (goal ≤ 4; counted one request per port call, which tests/clients/test_settle_reads.py
checks on recorded traffic), the run's total, and the wall time. Then a second run, which must
find nothing pending and send no request. ``--db`` runs on that store (a PostgreSQL URL)
instead of a SQLite file in a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import Settings  # noqa: E402
from bot.factory import make_store  # noqa: E402
from bot.settle.budget import Budget  # noqa: E402
from bot.settle.pulls import settle_pulls  # noqa: E402
from tests.support.pull_world import REPO, pull_world  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulls", type=int, default=50)
    parser.add_argument("--db", default=None, help="a store target (default: a SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = make_store(Settings(db_path=args.db or str(Path(folder) / "settle.db")))
        try:
            github, expected = pull_world(store, args.pulls)
            started = time.perf_counter()
            report = settle_pulls(github, store, REPO, Budget(10_000), since=None)
            elapsed = time.perf_counter() - started
            rows = store.fetch("select pr, line, outcome from audit_defects", [])
            got = {(int(pr), int(line)): str(outcome) for pr, line, outcome in rows}
            wrong = sorted(k for k, v in expected.items() if got.get(k) != v)
            github.requests.clear()
            again = settle_pulls(github, store, REPO, Budget(10_000), since=None)
        finally:
            store.close()
    per_pull = list(report.requests_per_pull.values())
    print(f"pull requests: {args.pulls}, defects: {len(expected)}")
    print(f"outcomes: {dict(sorted(Counter(got.values()).items()))}")
    print(f"wrong outcomes: {len(wrong)} {wrong[:5] if wrong else ''}")
    print(
        f"requests: {report.requests} in all; per pull request max {max(per_pull)}, "
        f"mean {sum(per_pull) / len(per_pull):.2f} (goal ≤ 4); the login once a run"
    )
    print(f"time: {elapsed * 1000:.0f} ms ({elapsed * 1000 / args.pulls:.2f} ms a pull request)")
    print(f"second run: {again.requests} requests, {again.settled} settled (goal 0, 0)")
    ok = not wrong and max(per_pull) <= 4 and again.requests == 0 and again.settled == 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
