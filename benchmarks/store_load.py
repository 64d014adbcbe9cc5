"""Store under load (issue 6): `.venv/bin/python benchmarks/store_load.py`.

Prints:
1. Two writer processes × 1,000 accepted audits each on one fresh store file (WAL, busy
   timeout), batches of 10 per transaction: rows kept, sum of the weekly counts, distinct keys,
   exit codes and wall time (goal: 2,000 / 2,000 / 2,000, both exit 0).
2. A writer killed with SIGKILL once 500 rows are committed: integrity check, partial batches
   (goal 0), weekly sums vs raw rows, and whether the reopened store accepts a new write.

:func:`rows` returns the same two results as ``(case, expected, observed)`` strings for the
reliability table (``benchmarks/reliability.py``). The processes are ``tests/store_load.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.store_load import kill_mid_run, run_writers  # noqa: E402

PROCESSES = 2
PER_PROCESS = 1_000
BATCH = 10
KILL_BATCH = 50
KILL_AFTER_ROWS = 500


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


def main() -> None:
    """Run both scenarios and print the figures."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
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
