"""Store under load: `.venv/bin/python benchmarks/store_load.py [--db postgresql://…]`.

With ``--db postgresql://…``: a runner pool on one store, 8 writer processes × 250 events (gate
decisions and audits, 20% replays and same-event races, ``tests/support/fleet_load.py``) against
that server, then the same on a fresh SQLite file: rows against the expected counts (0 lost, 0
duplicated), weekly sums against the raw rows, comments per issue or PR on the shared fake GitHub
(goal: 1), and each store's throughput (events/s). The server's database should be empty or hold
only earlier runs of this benchmark: its rows are deleted first.

Without ``--db``:

Prints:
1. Two writer processes × 1,000 accepted audits each on one fresh store file (WAL, busy
   timeout), batches of 10 per transaction: rows kept, sum of the weekly counts, distinct keys,
   exit codes and wall time (goal: 2,000 / 2,000 / 2,000, both exit 0).
2. A writer killed with SIGKILL once 500 rows are committed: integrity check, partial batches
   (goal 0), weekly sums vs raw rows, and whether the reopened store accepts a new write.

:func:`rows` returns the same two results as ``(case, expected, observed)`` strings for the
reliability table (``benchmarks/reliability.py``). The processes are
``tests/support/store_load.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.fleet_load import REPO as FLEET_REPO  # noqa: E402
from tests.support.fleet_load import run_fleet  # noqa: E402
from tests.support.store_load import kill_mid_run, run_writers  # noqa: E402

PROCESSES = 2
PER_PROCESS = 1_000
BATCH = 10
KILL_BATCH = 50
KILL_AFTER_ROWS = 500
FLEET_WRITERS = 8
FLEET_EVENTS = 250


def concurrent_case(processes: int = PROCESSES, per_process: int = PER_PROCESS) -> dict[str, Any]:
    """Run the concurrent writers on a fresh store in a temporary folder; return the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        return run_writers(Path(tmp) / "triage.db", processes, per_process, batch=BATCH)


def kill_case() -> dict[str, Any]:
    """Run the kill -9 scenario on a fresh store in a temporary folder; return the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        return kill_mid_run(Path(tmp) / "triage.db", batch=KILL_BATCH, min_rows=KILL_AFTER_ROWS)


def _concurrent_outcome(result: dict[str, Any]) -> str:
    exits = ",".join(str(code) for code in result["exit_codes"])
    return (
        f"rows={result['rows']} weekly={result['weekly_sum']} keys={result['distinct_keys']} "
        f"exits={exits}"
    )


def _kill_outcome(result: dict[str, Any]) -> str:
    weeks = "match" if result["weeks_match"] else "differ"
    killed = "killed" if result["returncode"] == -9 else f"exit {result['returncode']}"
    return (
        f"{killed} integrity={result['integrity']} partial_batches={result['partial_batches']} "
        f"weekly={weeks} reopen={result['reopen']}"
    )


def rows(
    concurrent: dict[str, Any] | None = None, killed: dict[str, Any] | None = None
) -> list[tuple[str, str, str]]:
    """The load results as ``(case, expected, observed)`` strings for the reliability table.

    Runs both scenarios unless their results are passed in (so :func:`main` runs them once).
    """
    concurrent = concurrent if concurrent is not None else concurrent_case()
    killed = killed if killed is not None else kill_case()
    total = PROCESSES * PER_PROCESS
    return [
        (
            f"{PROCESSES} writer processes × {PER_PROCESS:,} audits, one store file",
            f"rows={total} weekly={total} keys={total} exits={','.join('0' * PROCESSES)}",
            _concurrent_outcome(concurrent),
        ),
        (
            f"writer kill -9 after {KILL_AFTER_ROWS} rows (batches of {KILL_BATCH})",
            "killed integrity=ok partial_batches=0 weekly=match reopen=ok",
            _kill_outcome(killed),
        ),
    ]


def fleet_case(db: str | None) -> dict[str, Any]:
    """The runner pool on ``db`` (a PostgreSQL URL; a fresh SQLite file when ``None``)."""
    with tempfile.TemporaryDirectory() as tmp:
        if db is None:
            db = str(Path(tmp) / "triage.db")
        else:
            _clear(db)
        return run_fleet(db, Path(tmp) / "board.json", FLEET_WRITERS, FLEET_EVENTS)


def _clear(url: str) -> None:
    """Delete an earlier run's rows (the delete triggers bring the weekly sums to 0)."""
    from bot.config import Settings
    from bot.factory import make_store

    make_store(Settings(db_path=url)).close()  # migrated
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("audits", "gate_decisions"):
            conn.execute(f"delete from {table} where repo = %s", [FLEET_REPO])


def print_fleet(url: str) -> bool:
    """Run the pool on the server and on SQLite, print both; ``True`` when both met the goal."""
    print(
        f"== Runner pool: {FLEET_WRITERS} writer processes × {FLEET_EVENTS} events "
        "(gate decisions and audits, 20% replays and same-event races)"
    )
    header = ("store", "gate rows", "audit rows", "keys", "weekly", "comments", "max/PR",
              "exits", "seconds", "events/s")  # fmt: skip
    print("  ".join(f"{h:>10}" for h in header))
    ok = True
    for name, db in (("PostgreSQL", url), ("SQLite", None)):
        r = fleet_case(db)
        want = r["expected"]
        good = (
            r["gate_rows"] == r["gate_keys"] == r["gate_weekly"] == want["gate_rows"]
            and r["audit_rows"] == r["audit_keys"] == want["audit_rows"]
            and r["weeks_match"]
            and r["comments"] == want["comments"]
            and r["most_comments_on_one"] == 1
            and not any(r["exit_codes"])
        )
        ok = ok and good
        cells = (
            name, f"{r['gate_rows']}/{want['gate_rows']}",
            f"{r['audit_rows']}/{want['audit_rows']}",
            "ok" if r["gate_keys"] + r["audit_keys"] == r["gate_rows"] + r["audit_rows"]
            else "DUP",
            "match" if r["weeks_match"] and r["gate_weekly"] == r["gate_rows"] else "differ",
            f"{r['comments']}/{want['comments']}", str(r["most_comments_on_one"]),
            ",".join(str(c) for c in r["exit_codes"]), f"{r['seconds']:.1f}",
            f"{r['events_per_s']:.0f}",
        )  # fmt: skip
        print("  ".join(f"{c:>10}" for c in cells) + ("" if good else "  FAIL"))
        if r["stderr"]:
            print(f"writer errors: {r['stderr'][:2000]}")
    return ok


def main() -> None:
    """Run the scenarios and print the figures (the pool with ``--db``; exit 1 when it missed
    its goal)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a postgresql:// URL: run the runner-pool benchmark on it")
    args = parser.parse_args()
    if args.db:
        raise SystemExit(0 if print_fleet(args.db) else 1)
    concurrent = concurrent_case()
    killed = kill_case()
    print(
        f"== Store under load: {PROCESSES} processes × {PER_PROCESS:,} audits (batches of {BATCH})"
    )
    print(f"{'rows':>8} {'weekly sum':>11} {'distinct keys':>14} {'exit codes':>11} {'seconds':>8}")
    exits = ",".join(str(code) for code in concurrent["exit_codes"])
    print(
        f"{concurrent['rows']:>8} {concurrent['weekly_sum']:>11} "
        f"{concurrent['distinct_keys']:>14} {exits:>11} {concurrent['seconds']:>8.2f}"
    )
    if concurrent["stderr"]:
        print(f"writer errors: {concurrent['stderr']}")

    print(f"\n== kill -9 of a writer once {KILL_AFTER_ROWS} rows are committed")
    print(f"exit code:          {killed['returncode']}  (-9 = SIGKILL landed mid-run)")
    print(f"rows seen / kept:   {killed['rows_seen']} / {killed['rows']}")
    print(f"integrity_check:    {killed['integrity']}")
    print(f"complete batches:   {killed['batches']}   partial batches: {killed['partial_batches']}")
    print(f"weekly sums:        {killed['weekly_sum']}  (match raw rows: {killed['weeks_match']})")
    print(f"reopen + new write: {killed['reopen']}  (rows after: {killed['rows_after_write']})")

    print("\n== As reliability rows")
    for case, expected, observed in rows(concurrent, killed):
        mark = "ok  " if observed == expected else "FAIL"
        print(f"{mark} {case}\n     expected {expected}\n     observed {observed}")


if __name__ == "__main__":
    main()
