"""A runner pool on one store: writer processes with replays and same-event races.

Run one writer process (what :func:`run_fleet` spawns)::

    python -m tests.support.fleet_load write DB BOARD WRITER WRITERS EVENTS

Each writer stands for one ephemeral runner. It handles ``EVENTS`` events the way the runner
applies a plan (:func:`bot.gate.run`, :func:`bot.audit.run`): under the store's
lock on the issue or PR (:meth:`~bot.history.protocol.HistoryStore.exclusive`) it looks up the
bot's comment, posts or edits it, and writes the decision row (a gate event) or the two segment
rows (an audit event). Four events in five are its own, fresh; the fifth repeats one: every
other time the event another writer is handling at that moment (a same-event race), else one it
handled itself three events earlier (a replay). Gate and audit events alternate; events share
issues and PRs, so comments are edited as well as posted.

The comments live on a :class:`Board`, a fake GitHub shared by processes (a JSON file; each
request atomic under ``flock``, a lookup and a post two requests, as on GitHub). So a lost race
shows as a second comment on a PR, a lost or doubled row in the counts of :func:`check_fleet`.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.config import Settings
from bot.errors import StoreError
from bot.factory import make_store
from bot.history.protocol import AuditRow, GateRow, HistoryStore

__all__ = ["Board", "check_fleet", "events_of", "run_fleet"]

ROOT = Path(__file__).resolve().parents[2]
REPO = "fleet/test"
ISSUES = 50
"""Gate events fall on issue numbers 1…50, audit events on PRs 1001…1050."""
SEGMENTS = 2
REPEAT_EVERY = 5
_BASE = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
_MARKER = "<!-- fleet-load -->"


class Board:
    """A fake GitHub's issue comments shared by processes: ``{number: [{id, body}]}`` in a JSON
    file, plus how many comments were created and edited. Each method is one request."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        with open(f"{self.path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(self.path.read_text()) if self.path.exists() else {}
            state.setdefault("comments", {})
            state.setdefault("created", 0)
            state.setdefault("edited", 0)
            yield state
            self.path.write_text(json.dumps(state))

    def find(self, number: int) -> int | None:
        """``GET …/comments``: the id of the bot's comment on ``number``, or ``None``."""
        with self._state() as state:
            found = state["comments"].get(str(number), [])
            return int(found[0]["id"]) if found else None

    def upsert(self, number: int, existing: int | None, body: str) -> None:
        """``PATCH`` ``existing``, else ``POST`` a new comment."""
        with self._state() as state:
            comments = state["comments"].setdefault(str(number), [])
            if existing is None:
                state["created"] += 1
                comments.append({"id": state["created"], "body": body})
            else:
                state["edited"] += 1
                for comment in comments:
                    if comment["id"] == existing:
                        comment["body"] = body

    def read(self) -> dict[str, Any]:
        """The whole state (after a run)."""
        with self._state() as state:
            return dict(state)


def events_of(writer: int, writers: int, events: int) -> list[int]:
    """The event ids writer ``writer`` handles, in order (see the module doc). A writer's fresh
    events are ``writer * fresh … writer * fresh + fresh - 1``."""
    fresh = events - events // REPEAT_EVERY
    out: list[int] = []
    done = 0
    for k in range(events):
        if k % REPEAT_EVERY == REPEAT_EVERY - 1 and done:
            if (k // REPEAT_EVERY) % 2 == 0:  # race: the other writer's event of this moment
                out.append(((writer + 1) % writers) * fresh + min(done, fresh - 1))
            else:  # replay: an event of its own, three events back
                out.append(writer * fresh + max(done - 3, 0))
        else:
            out.append(writer * fresh + min(done, fresh - 1))
            done += 1
    return out


def _subject(event: int) -> tuple[str, int]:
    """``("gate", issue)`` for an even event, ``("audit", pr)`` for an odd one."""
    if event % 2 == 0:
        return "gate", 1 + (event // 2) % ISSUES
    return "audit", 1001 + (event // 2) % ISSUES


def _created_at(event: int) -> str:
    return (_BASE + timedelta(days=event % 30)).isoformat(timespec="seconds")


def _gate_row(event: int, number: int) -> GateRow:
    return GateRow(
        repo=REPO, issue=number, event="issues.edited", verdict="VALID", label="ready-for-dev",
        reason="fleet load", error_kind=None, model="load-test", prompt_version="validator@0",
        prompt_tokens=500, output_tokens=40, duration_ms=100.0 + event % 7,
        created_at=_created_at(event), content_sha=f"{event:016x}",
    )  # fmt: skip


def _audit_rows(event: int, number: int) -> list[AuditRow]:
    return [
        AuditRow(
            repo=REPO,
            pr=number,
            head_sha=f"{event:040x}",
            path=f"src/f{s}.py",
            line_start=1,
            line_end=10,
            verdict=("GO", "GO_WITH_NOTES", "FIX")[event % 3],
            confidence=("High", "Medium", "Low")[event % 3],
            retried=event % 4 == 0,
            audit_format="json",
            model="load-test",
            prompt_version="audit-json@0",
            prompt_tokens=900,
            output_tokens=300,
            duration_ms=1.0,
            markdown="load",
            created_at=_created_at(event),
        )
        for s in range(SEGMENTS)
    ]


def handle(store: HistoryStore, board: Board, event: int) -> None:
    """One event as the runner applies it: the comment, then the rows, under the lock."""
    kind, number = _subject(event)
    with store.exclusive(f"{REPO}#{number}"):
        board.upsert(number, board.find(number), f"{_MARKER}\n{kind} event {event}")
        if kind == "gate":
            store.record_gate(_gate_row(event, number))
        else:
            store.record_audits(_audit_rows(event, number))


def write(db: str, board: str, writer: int, writers: int, events: int) -> int:
    """One writer's run; returns the events handled."""
    store = make_store(Settings(db_path=db))
    try:
        for event in events_of(writer, writers, events):
            handle(store, Board(board), event)
    finally:
        store.close()
    return events


def expected(writers: int, events: int) -> dict[str, int]:
    """What the store and the board must hold after :func:`run_fleet`: one row per distinct
    gate event, ``SEGMENTS`` per distinct audit event, one comment per issue or PR touched."""
    distinct = {e for w in range(writers) for e in events_of(w, writers, events)}
    gates = sum(1 for e in distinct if e % 2 == 0)
    subjects = {_subject(e) for e in distinct}
    return {
        "gate_rows": gates,
        "audit_rows": SEGMENTS * (len(distinct) - gates),
        "comments": len(subjects),
    }


def check_fleet(db: str, board: str) -> dict[str, Any]:
    """Count what a run left: rows, distinct keys, weekly sums against the raw rows, comments
    per issue or PR."""
    store = make_store(Settings(db_path=db), read_only=True)
    try:
        one = lambda sql: int(store.fetch(sql, [])[0][0])  # noqa: E731
        key = "repo, week, model, verdict, confidence, retried"
        raw = store.fetch(f"select {key}, count(*) from audits group by {key} order by {key}", [])
        kept = store.fetch(
            f"select {key}, audits from audit_weeks where audits != 0 order by {key}", []
        )
        gate_weekly = one("select coalesce(sum(decisions), 0) from gate_weeks")
        result = {
            "gate_rows": one("select count(*) from gate_decisions"),
            "gate_keys": one(
                "select count(*) from (select distinct repo, issue, content_sha, model, "
                "prompt_version, label from gate_decisions) k"
            ),
            "gate_weekly": gate_weekly,
            "audit_rows": one("select count(*) from audits"),
            "audit_keys": one(
                "select count(*) from (select distinct repo, pr, head_sha, path, line_start, "
                "line_end from audits) k"
            ),
            "weeks_match": [tuple(int(x) if not isinstance(x, str) else x for x in r) for r in raw]
            == [tuple(r) for r in kept],
        }
    finally:
        store.close()
    state = Board(board).read()
    per_subject = [len(c) for c in state["comments"].values()]
    result.update(
        comments=sum(per_subject),
        most_comments_on_one=max(per_subject, default=0),
        created=state["created"],
        edited=state["edited"],
    )
    return result


def run_fleet(
    db: str, board: Path, writers: int, events: int, *, timeout: float = 600
) -> dict[str, Any]:
    """Start ``writers`` writer processes on one store at once, wait, and count.

    Returns:
        :func:`check_fleet`'s figures, ``expected`` (:func:`expected`), ``exit_codes``,
        ``stderr``, ``seconds`` (wall time) and ``events_per_s`` (events handled per second,
        all writers together).
    """
    make_store(Settings(db_path=db)).close()  # migrated once before the clock starts
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.fleet_load",
                "write",
                db,
                str(board),
                str(w),
                str(writers),
                str(events),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    errors = [p.communicate(timeout=timeout)[1] for p in procs]
    seconds = time.perf_counter() - started
    result = check_fleet(db, str(board))
    result.update(
        expected=expected(writers, events),
        exit_codes=[p.returncode for p in procs],
        stderr="".join(errors).strip(),
        seconds=seconds,
        events_per_s=writers * events / seconds,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: ``write DB BOARD WRITER WRITERS EVENTS``; exit 0 when all are handled."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.fleet_load")
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write", help="one writer of the pool")
    for name in ("db", "board"):
        writer.add_argument(name)
    for name in ("writer", "writers", "events"):
        writer.add_argument(name, type=int)
    args = parser.parse_args(argv)
    try:
        write(args.db, args.board, args.writer, args.writers, args.events)
    except StoreError as exc:
        print(f"fleet_load: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
