"""One writer per issue and pull request, under concurrent triggers.

    .venv/bin/python benchmarks/one_writer.py [--trials 20] [--db postgresql://…]

Each trial starts four ``triage-bot run`` processes at once on a new issue (the ``issues``
event, two ``/triage`` comments and the event again, as a redelivery would) and four on a new
pull request (the ``pull_request`` event twice, two ``/audit`` comments), against a loopback
GitHub and a loopback model that answers VALID and NEEDS_REFINEMENT in turn
(``tests/support/concurrent_triggers.py``), all on one store: a fresh SQLite file, or the PostgreSQL
database ``--db`` names (its tables must be empty or hold only this benchmark's rows). Then
two ``triage-bot backlog`` runs at once over 40 new issues.

Prints how often an issue ended with two gate labels and a pull request with two audit
comments (goal: 0 each), how many runs were superseded, and the time per trial.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.concurrent_triggers import GATE_LABELS, new_issue, new_pull, rig  # noqa: E402

ISSUE_TRIGGERS = ["issues", "triage", "triage", "issues"]
PULL_TRIGGERS = ["pull_request", "audit", "audit", "pull_request"]
BACKLOG_ISSUES = 40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--db", help="a postgresql:// URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = args.db or str(folder / "triage.db")
        print(f"store: {'PostgreSQL' if args.db else 'SQLite file'}; {args.trials} trials")
        with rig(folder, store) as r:
            issue_faults = pull_faults = superseded = 0
            started = time.perf_counter()
            for trial in range(args.trials):
                number = 1000 + trial
                new_issue(r, number)
                outputs = r.race(ISSUE_TRIGGERS, number)
                superseded += sum("superseded:" in out for out in outputs)
                issue_faults += len(r.github.gate_labels(number, GATE_LABELS)) != 1
                pull = 3000 + trial
                new_pull(r, pull, f"{trial:040x}")
                outputs = r.race(PULL_TRIGGERS, pull)
                superseded += sum("superseded:" in out for out in outputs)
                pull_faults += len(r.github.bot_comments(pull)) != 1
            per_trial = (time.perf_counter() - started) / max(1, args.trials)
            print(f"issues with two gate labels:        {issue_faults} of {args.trials}")
            print(f"pull requests with two comments:    {pull_faults} of {args.trials}")
            print(f"runs superseded (nothing written):  {superseded}")
            print(f"time per trial (4 + 4 processes):   {per_trial:.1f} s")
            for n in range(BACKLOG_ISSUES):
                new_issue(r, 5000 + n)
            r.race(["backlog", "backlog"], 0)
            doubled = sum(
                len(r.github.gate_labels(5000 + n, GATE_LABELS)) != 1 for n in range(BACKLOG_ISSUES)
            )
            print(f"two backlog runs at once: {doubled} of {BACKLOG_ISSUES} issues not one label")


if __name__ == "__main__":
    main()
