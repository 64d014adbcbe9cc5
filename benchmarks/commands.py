"""Maintainer-command figures: `.venv/bin/python benchmarks/commands.py`.

Prints, first, GitHub requests per gate event with the author comment on (goal: ≤ 3 when the verdict
changes, 0 when it does not), split into reads and writes, for a store kept between jobs (a
self-hosted runner in its steady state: labels created, the repository file read at the default
branch's commit `GITHUB_SHA`) and for an empty store (an ephemeral runner, or the first event after
the store was lost). They are counted on the project's fake GitHub (tests/support/fake_github.py),
one request per port call: tests/gate/test_request_budget.py checks on recorded traffic that each
port call is one request, and the same rows on the fake.

Then GitHub requests per `/triage` comment, counted on recorded traffic (goal ≤ 4 for the
permission, 👀 and the label; the recording's issue needs refinement, so the author comment's
list and post come on top; no `GITHUB_SHA` there, so the repository file is read by
branch), and
`/audit_stats` time over 100,000 synthetic accepted audits by three models (goal ≤ 50 ms), median
of 20 runs on a file store (WAL): the weekly figures alone (`triage-bot stats`) and the whole
reply (weekly and per model), plus the `/audit_history` query time; then the `/triage_stats`
figures (verdict mix, errors by kind, p50/p95 model time, versions) over 100,000 synthetic gate
decisions the same way.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.contract import CONFIDENCES, VERDICTS  # noqa: E402
from bot.audit.stats import weekly_stats  # noqa: E402
from bot.commands.handlers import stats_reply  # noqa: E402
from bot.gate.stats import gate_weeks  # noqa: E402
from bot.history.store import AuditRow, GateRow, Store  # noqa: E402

ROWS = 100_000
MODELS = ("qwen2.5-coder:1.5b", "gemma3:270m", "llama3.2:1b")


def synthetic_rows(count: int, repo: str) -> list[AuditRow]:
    rng = random.Random(7)
    now = datetime.now(UTC)
    rows = []
    for i in range(count):
        created = now - timedelta(minutes=rng.randrange(0, 60 * 24 * 7 * 52))
        rows.append(
            AuditRow(
                repo=repo if i % 10 else "other/repo",
                pr=rng.randrange(1, 5000),
                head_sha=f"{i:040x}",
                path=f"src/module_{i % 300}.py",
                line_start=1,
                line_end=rng.randrange(1, 200),
                verdict=rng.choice(VERDICTS),
                confidence=rng.choice(CONFIDENCES),
                retried=rng.random() < 0.2,
                audit_format="markdown",
                model=rng.choice(MODELS),
                prompt_version="audit-markdown@00000000",
                prompt_tokens=900,
                output_tokens=300,
                duration_ms=1000.0,
                markdown="",
                created_at=created.isoformat(timespec="seconds"),
            )
        )
    return rows


def synthetic_gate_rows(count: int, repo: str) -> list[GateRow]:
    """A year of gate decisions: a third each VALID, NEEDS_REFINEMENT and faults (half of
    those before any reply, with no model time), two prompt versions."""
    rng = random.Random(11)
    now = datetime.now(UTC)
    rows = []
    for i in range(count):
        created = now - timedelta(minutes=rng.randrange(0, 60 * 24 * 7 * 52))
        verdict = rng.choice(("VALID", "NEEDS_REFINEMENT", None))
        kind = None if verdict else rng.choice(("unavailable", "truncated", "output"))
        rows.append(
            GateRow(
                repo=repo if i % 10 else "other/repo",
                issue=rng.randrange(1, 5000),
                event="issues.opened",
                verdict=verdict,
                label="x",
                reason="",
                error_kind=kind,
                model="bench",
                prompt_version=rng.choice(("validator@00000000", "validator@11111111")),
                prompt_tokens=900,
                output_tokens=60,
                duration_ms=0.0 if kind == "unavailable" else rng.uniform(500, 9000),
                created_at=created.isoformat(timespec="seconds"),
            )
        )
    return rows


def insert_gate_rows(store: Store, rows: list[GateRow]) -> None:
    """One transaction, through ``Store.record_gate``'s columns (one row per event in use)."""
    from dataclasses import asdict

    from bot.history.store import week_of

    # as record_gate stores them: no content hash is NULL, never a duplicate key
    data = [asdict(r) | {"week": week_of(r.created_at), "content_sha": None} for r in rows]
    with store.db.conn:
        store.db["gate_decisions"].insert_all(data)  # type: ignore[union-attr]


def timed(fn, runs: int = 20) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def triage_requests() -> int:
    """Run `/triage` from a recorded issue_comment event; count the api.github.com requests."""
    import json

    from click.testing import CliRunner

    import bot.clients.github_client as gc
    from bot.cli import main as cli
    from bot.settings_table import DEFAULT_OLLAMA_MODEL
    from tests.support import cassette, policy_file

    gc.DEFAULT_SECONDS_BETWEEN_WRITES = 0.0
    payload = json.loads(
        (ROOT / "tests" / "data" / "webhooks" / "issue_comment.created.0.json").read_text("utf-8")
    )
    payload["comment"]["body"] = "/triage"
    with tempfile.TemporaryDirectory() as tmp:
        event = Path(tmp) / "event.json"
        event.write_text(json.dumps(payload), encoding="utf-8")
        env = {
            "GITHUB_TOKEN": "bench-not-real",
            "OLLAMA_HOST": "http://127.0.0.1:11434",
            "TRIAGE_DB": str(Path(tmp) / "t.db"),
            "INPUT_BOT_LOGIN": "github-actions[bot]",
            # the recorded model's answers under a policy measured for it: the author comment
            "TRIAGE_GATE_POLICY": policy_file(Path(tmp), DEFAULT_OLLAMA_MODEL),
        }
        with cassette("e2e_command_triage") as cass:
            result = CliRunner().invoke(
                cli, ["run", "--event-name", "issue_comment", "--event-path", str(event)], env=env
            )
        if result.exit_code != 0:
            raise SystemExit(result.output)
        return sum(1 for r in cass.requests[: cass.play_count] if "api.github.com" in r.uri)


GATE_SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
"""The default branch's last commit, as Actions sets ``GITHUB_SHA`` for an ``issues`` event."""

SHORT = "The app crashes when I click save."
"""Seven words: needs refinement whatever the model quotes (the rule's ``short`` step)."""


def _gate_event(tmp: Path, github, model, event, *, db, number=1):  # type: ignore[no-untyped-def]
    """Run one ``issues`` event (action, body, labels) through the runner on the fake GitHub,
    as Actions runs it (``GITHUB_SHA``/``GITHUB_REF`` of an ``issues`` event); the names of
    the port calls it made."""
    import json

    from bot import runner
    from bot.config import Settings
    from tests.support import load_webhook, policy_file
    from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY

    action, body, labels = event
    texts = {"short": SHORT, "short+": SHORT.replace("click", "press"), "complete": COMPLETE_BODY}
    body = texts[body]
    payload = load_webhook("issues.opened.18")
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "older text"}}
    payload["issue"]["number"] = number
    payload["issue"]["body"] = body
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    path = tmp / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    model.queue[:] = [VALID_REPLY if body == COMPLETE_BODY else NEEDS_REPLY]
    env = {
        "GITHUB_TOKEN": "bench-not-real",
        "GITHUB_EVENT_NAME": "issues",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_SHA": GATE_SHA,
        "GITHUB_REF": "refs/heads/master",
        "TRIAGE_DB": str(db),
        "INPUT_BOT_LOGIN": "github-actions[bot]",  # as action.yml passes it for github.token
        # a policy measured for the fake model, so its needs-refinement asks the author
        "TRIAGE_GATE_POLICY": policy_file(tmp, model.name),
    }
    real = runner.make_github, runner.make_chat_model
    runner.make_github = lambda settings, **k: github.built_for(settings.bot_login)  # type: ignore[assignment]
    runner.make_chat_model = lambda *a, **k: model  # type: ignore[assignment]
    before = len(github.requests)
    try:
        runner.run_event(Settings.resolve({}, env))
    finally:  # the `/triage` count below runs the real clients on recorded traffic
        runner.make_github, runner.make_chat_model = real
    return list(github.requests[before:])


GATE_ROWS = (
    # (row, earlier events on the same issue, the measured event, goal)
    ("opened -> needs-refinement", (), ("opened", "short", ()), 3),
    ("opened -> ready-for-dev", (), ("opened", "complete", ()), 3),
    (
        "edited needs-refinement -> ready-for-dev",
        (("opened", "short", ()),),
        ("edited", "complete", ("needs-refinement",)),
        3,
    ),
    (
        "edited needs-refinement -> same (same missing list)",
        (("opened", "short", ()),),
        ("edited", "short+", ("needs-refinement",)),
        0,
    ),
    (
        "edited, text unchanged (replay)",
        (("opened", "short", ()),),
        ("edited", "short", ("needs-refinement",)),
        0,
    ),
)


def gate_requests(*, keep_store: bool) -> list[tuple[str, int, int, int]]:
    """GitHub requests of each row's measured event with the author comment on: (row, reads,
    writes, goal). Counted on the project's fake GitHub (tests/support/fake_github.py), one request
    per port call as the PyGithub adapter makes them (tests/gate/test_request_budget.py checks the
    costs on the recordings in cassettes/).

    ``keep_store``: one store for every job, as on a self-hosted runner, in the repository's
    steady state: earlier issues were judged at the same default-branch commit (``GITHUB_SHA``),
    so the gate labels exist and the repository file was read. Else every job starts with an
    empty store (an ephemeral runner, or the first event after the store was lost).
    """
    from tests.support import FakeChatModel
    from tests.support.fake_github import WRITE_METHODS, FakeGitHub

    rows = []
    for name, earlier, event, goal in GATE_ROWS:
        github, model = FakeGitHub(), FakeChatModel()
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            jobs = iter(range(100))

            def db(tmp: Path = tmp, jobs=jobs) -> Path:  # type: ignore[no-untyped-def]
                return tmp / ("kept.db" if keep_store else f"job{next(jobs)}.db")

            if keep_store:
                _gate_event(tmp, github, model, ("opened", "short", ()), db=db(), number=2)
                _gate_event(tmp, github, model, ("opened", "complete", ()), db=db(), number=3)
            for step in earlier:
                _gate_event(tmp, github, model, step, db=db())
            measured = _gate_event(tmp, github, model, event, db=db())
        writes = sum(1 for m in measured if m in WRITE_METHODS)
        rows.append((name, len(measured) - writes, writes, goal))
    return rows


def print_gate_requests() -> None:
    """The table of :func:`gate_requests`, a store kept and an empty store side by side."""
    kept, empty = gate_requests(keep_store=True), gate_requests(keep_store=False)
    print("GitHub requests per gate event, author comment on (reads + writes = total)")
    print(f"{'event':52s} {'store kept':>16s} {'empty store':>16s}   goal")
    for (name, r1, w1, goal), (_, r2, w2, _) in zip(kept, empty, strict=True):
        cells = [f"{r} + {w} = {r + w}" for r, w in ((r1, w1), (r2, w2))]
        print(f"{name:52s} {cells[0]:>16s} {cells[1]:>16s}   <= {goal}")


def main() -> None:
    print_gate_requests()
    print(
        f"/triage: {triage_requests()} GitHub requests   (goal <= 4, + 2 for the author comment, "
        "+ 1 for the repository file)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        started = time.perf_counter()
        store.record_audits(synthetic_rows(ROWS, "o/r"))
        print(f"inserted {ROWS} rows in {time.perf_counter() - started:.1f} s")
        for weeks in (8, 52):
            ms = timed(lambda w=weeks: weekly_stats(store, "o/r", w))  # type: ignore[misc]
            print(f"stats        {weeks:2d} weeks: {ms:6.1f} ms median of 20   (goal <= 50 ms)")
            ms = timed(lambda w=weeks: stats_reply(store, "o/r", w))  # type: ignore[misc]
            print(f"/audit_stats {weeks:2d} weeks: {ms:6.1f} ms median of 20   (goal <= 50 ms)")
        ms = timed(lambda: store.audits("o/r", limit=10))
        print(f"/audit_history 10:   {ms:6.1f} ms median of 20")
        started = time.perf_counter()
        insert_gate_rows(store, synthetic_gate_rows(ROWS, "o/r"))
        print(f"inserted {ROWS} gate decisions in {time.perf_counter() - started:.1f} s")
        for weeks in (8, 52):
            ms = timed(lambda w=weeks: gate_weeks(store, "o/r", w))  # type: ignore[misc]
            print(f"/triage_stats {weeks:2d} weeks: {ms:6.1f} ms median of 20   (goal <= 50 ms)")
        store.close()


if __name__ == "__main__":
    main()
