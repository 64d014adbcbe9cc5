"""Store under load: concurrent writers and a kill -9 mid-run.

Run one writer process (what the helpers below spawn)::

    python -m tests.support.store_load write DB N PREFIX [--batch K]

It opens one :class:`~bot.history.store.Store` and writes ``N`` distinct accepted audits through
:meth:`Store.record_audits`, ``K`` per call (one transaction each). Every row's key is distinct:
``pr = PREFIX + i``. Every batch is recognisable: its rows share the path
``load/p{PREFIX}/b{batch:06d}-k{size}.py``, so after a crash each batch must hold either 0 or
``size`` rows, never part of them.

:func:`run_writers` and :func:`kill_mid_run` drive those processes and return plain counts, so
``tests/history/test_store_load.py`` asserts them and ``benchmarks/store_load.py`` prints them.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.audit.contract import CONFIDENCES, VERDICTS
from bot.errors import StoreError
from bot.history.store import AuditRow, Store

__all__ = ["audit_rows", "check_db", "kill_mid_run", "main", "run_writers"]

ROOT = Path(__file__).resolve().parents[2]
REPO = "load/test"
HEAD_SHA = "a" * 40
PREFIX_STEP = 1_000_000
"""Writer ``j`` of :func:`run_writers` uses prefix ``(j + 1) * PREFIX_STEP``: keys never clash."""

_BATCH_PATH = re.compile(r"^load/p(\d+)/b(\d+)-k(\d+)\.py$")
_WEEK_KEY = "repo, week, model, verdict, confidence, retried"
_BASE = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def audit_rows(prefix: int, batch: int, first: int, size: int) -> list[AuditRow]:
    """The ``size`` audits of one batch: rows ``first`` … ``first + size - 1`` of a writer.

    Rows spread over several weeks (one day apart) and all verdicts and confidences, so the
    weekly sums the triggers keep are exercised on more than one ``audit_weeks`` row.
    """
    rows = []
    for i in range(first, first + size):
        rows.append(
            AuditRow(
                repo=REPO,
                pr=prefix + i,
                head_sha=HEAD_SHA,
                path=f"load/p{prefix}/b{batch:06d}-k{size}.py",
                line_start=1,
                line_end=10,
                verdict=VERDICTS[i % len(VERDICTS)],
                confidence=CONFIDENCES[i % len(CONFIDENCES)],
                retried=i % 5 == 0,
                audit_format="markdown",
                model="load-test",
                prompt_version="audit-markdown@00000000",
                prompt_tokens=900,
                output_tokens=300,
                duration_ms=1.0,
                markdown="## 1. Bottom line\nload test row",
                created_at=(_BASE + timedelta(days=i % 60)).isoformat(timespec="seconds"),
            )
        )
    return rows


def write(db: str, count: int, prefix: int, batch: int) -> int:
    """Write ``count`` audits with one store, ``batch`` per transaction; returns rows written."""
    store = Store(db)
    written = 0
    try:
        for number, first in enumerate(range(0, count, batch)):
            size = min(batch, count - first)
            written += store.record_audits(audit_rows(prefix, number, first, size))
    finally:
        store.close()
    return written


def _command(db: Path | str, count: int, prefix: int, batch: int) -> list[str]:
    return [
        sys.executable, "-m", "tests.support.store_load", "write",
        str(db), str(count), str(prefix), "--batch", str(batch),
    ]  # fmt: skip


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def _count(db: Path | str) -> int:
    """Rows in ``audits`` as a reader sees them (0 while the table does not exist yet)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("select count(*) from audits").fetchone()[0])
    except sqlite3.Error:
        return 0


def check_db(db: Path | str) -> dict[str, Any]:
    """Inspect a store file after a run: integrity, counts, batches and weekly sums.

    Returns:
        ``integrity`` (``PRAGMA integrity_check``), ``rows``, ``weekly_sum`` (sum of
        ``audit_weeks.audits``), ``distinct_keys``, ``batches`` (complete ones),
        ``partial_batches`` (batches holding some but not all of their rows),
        ``weeks_match`` (every ``audit_weeks`` count equals the count of its raw rows).
    """
    with sqlite3.connect(str(db), timeout=5) as conn:
        integrity = "; ".join(r[0] for r in conn.execute("pragma integrity_check"))
        rows = conn.execute("select count(*) from audits").fetchone()[0]
        weekly_sum = conn.execute("select coalesce(sum(audits), 0) from audit_weeks").fetchone()[0]
        distinct_keys = conn.execute(
            "select count(*) from (select distinct repo, pr, head_sha, path, line_start, "
            "line_end from audits)"
        ).fetchone()[0]
        per_batch = conn.execute("select path, count(*) from audits group by path").fetchall()
        raw = conn.execute(
            f"select {_WEEK_KEY}, count(*) from audits group by {_WEEK_KEY} order by {_WEEK_KEY}"
        ).fetchall()
        kept = conn.execute(
            f"select {_WEEK_KEY}, audits from audit_weeks where audits != 0 order by {_WEEK_KEY}"
        ).fetchall()
    partial = 0
    for path, n in per_batch:
        match = _BATCH_PATH.match(path)
        if match is None or n != int(match.group(3)):
            partial += 1
    return {
        "integrity": integrity,
        "rows": rows,
        "weekly_sum": weekly_sum,
        "distinct_keys": distinct_keys,
        "batches": len(per_batch) - partial,
        "partial_batches": partial,
        "weeks_match": raw == kept,
    }


def run_writers(
    db: Path | str, processes: int, per_process: int, *, batch: int = 10, timeout: float = 300
) -> dict[str, Any]:
    """Start ``processes`` writers on one store file at once, wait for all, and count.

    Returns:
        :func:`check_db`'s figures plus ``exit_codes`` (one per process, in start order),
        ``stderr`` (the writers' error output, joined) and ``seconds`` (wall time of the run).
    """
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            _command(db, per_process, (j + 1) * PREFIX_STEP, batch),
            cwd=ROOT,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for j in range(processes)
    ]
    outputs = [p.communicate(timeout=timeout) for p in procs]
    seconds = time.perf_counter() - started
    result = check_db(db)
    result["exit_codes"] = [p.returncode for p in procs]
    result["stderr"] = "".join(err for _, err in outputs).strip()
    result["seconds"] = seconds
    return result


def kill_mid_run(
    db: Path | str,
    n: int = 100_000,
    *,
    batch: int = 50,
    min_rows: int = 1,
    timeout: float = 60,
) -> dict[str, Any]:
    """Start one writer of ``n`` audits, SIGKILL it once rows are committed, then check the file.

    The writer is killed as soon as a reader sees at least ``min_rows`` rows, i.e. while it is
    still writing (``n`` is far more than it writes in that time). Then the file is reopened with
    :class:`Store` (which migrates and re-enables WAL, recovering the log) and one new batch is
    written through it.

    Returns:
        :func:`check_db`'s figures taken after the reopen but before the new write, plus
        ``returncode`` (``-9`` when the kill landed), ``rows_seen`` (rows the poller saw before
        the kill), ``finished_before_kill`` (the writer exited on its own: the kill came too
        late to test anything), ``reopen`` (``ok`` or the error) and ``rows_after_write``.
    """
    proc = subprocess.Popen(
        _command(db, n, PREFIX_STEP, batch),
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    seen = 0
    while proc.poll() is None and time.monotonic() < deadline:
        seen = _count(db)
        if seen >= min_rows:
            break
        time.sleep(0.005)
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    result: dict[str, Any] = {"returncode": proc.returncode, "rows_seen": seen}
    result["finished_before_kill"] = finished
    result["writer_stderr"] = err.strip()
    try:
        store = Store(db)
    except StoreError as exc:
        result.update(reopen=f"error: {exc}", rows_after_write=None)
        result.update(check_db(db))
        return result
    try:
        result.update(check_db(db))
        store.record_audits(audit_rows(2 * PREFIX_STEP, 0, 0, batch))
        result["reopen"] = "ok"
    except StoreError as exc:
        result["reopen"] = f"error: {exc}"
    finally:
        store.close()
    result["rows_after_write"] = check_db(db)["rows"]
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: ``write DB N PREFIX [--batch K]``; exit 0 when all rows are written."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.store_load")
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write", help="write N distinct accepted audits")
    writer.add_argument("db")
    writer.add_argument("n", type=int)
    writer.add_argument("prefix", type=int)
    writer.add_argument("--batch", type=int, default=10)
    args = parser.parse_args(argv)
    if args.batch < 1 or args.n < 0:
        parser.error("N must be >= 0 and --batch >= 1")
    try:
        written = write(args.db, args.n, args.prefix, args.batch)
    except StoreError as exc:
        print(f"store_load: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
