"""Throughput with N model calls at once, for eval's gate loop, a backlog run and PR audits:
`.venv/bin/python benchmarks/concurrency.py [--delay S] [--items K] [--levels 1,2,4,8]
[--only eval,backlog,audit]`.

The model server is a fake OpenAI-compatible server on loopback (tests/support/fake_openai.py, real
HTTP through the openai client) that answers every request after a fixed delay, as a server
that batches would: so the figure measures the bot's side (threads, the client, the validator's
and the auditor's own work, the writes), not this machine's cores.

- **eval**: the regression suite's issues (evals/issues.jsonl) through ``judge_items``
  (``triage-bot eval``'s gate loop).
- **backlog**: the same issues, open on a fake GitHub (tests/support/fake_github.py), through
  ``triage-bot backlog`` (``runner.run_backlog``): the selection, the judging, then each issue's
  labels, author comment and decision row in a SQLite store, one issue at a time.
- **audit**: pull requests of 8 changed files each (one segment a file), through
  ``triage-bot audit`` (``runner.run_pull``): the reads, the 8 audits, the rows and the comment.

Each reply depends on the item it answers (a hash of the issue as the user message delimits it,
less its random tag id; a segment's path and lines), and the server refuses the items whose
hash is 3 mod 10 with a 400: about one call in ten fails. For each level the script checks that
every item was asked for exactly once (none lost, none duplicated), that the refused ones, and
only they, ended in an error, and that what the run produced (eval: each item's outcome and
reply; backlog: the report's lines, every GitHub write in order, the decision rows in order;
audit: each segment's outcome line, the model-call table's segments and the posted comments)
is what the N = 1 run produced, in the same order. Then it prints wall time, items per second,
the speed-up over N = 1 against the ideal (N), and the most requests the server held at once.
Goals: at least 3.5x at N = 4 and 6x at N = 8.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot import runner  # noqa: E402
from bot.audit.contract import render_sections  # noqa: E402
from bot.clients.github_port import ChangedFile  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.evaluation.run import RecordingModel, judge_items  # noqa: E402
from bot.evaluation.sets import EvalIssue, load_jsonl  # noqa: E402
from bot.factory import make_chat_model, model_concurrency  # noqa: E402
from bot.gate.issue_text import delimit_issue, prepare_issue  # noqa: E402
from bot.gate.validator import make_validator  # noqa: E402
from bot.history.store import Store  # noqa: E402
from tests.support.fake_github import FakeGitHub  # noqa: E402
from tests.support.fake_openai import Answer, Received, completion, fake_openai_server  # noqa: E402
from tests.support.replies import reply  # noqa: E402

GOALS = {4: 3.5, 8: 6.0}
REPO = "Codertocat/Hello-World"
SEGMENTS_PER_PR = 8
_SEGMENT = re.compile(r'path="([^"]+)" lines="([^"]+)"')


def mark(text: str) -> int:
    """The hash that picks an item's answer and whether it is refused."""
    return zlib.crc32(text.encode())


def refused(value: int) -> bool:
    """About one item in ten: the server refuses it."""
    return value % 10 == 3


def request_mark(request: Received) -> int:
    """The mark of the item a chat request carries: a segment's path and lines (the audit),
    else the issue as the user message delimits it, less its ``<issue id=…>`` line."""
    messages = request.body["messages"]
    segment = _SEGMENT.search(messages[1]["content"]) if len(messages) > 1 else None
    if segment is not None:
        return mark(f"{segment.group(1)}:{segment.group(2)}")
    return mark(messages[-1]["content"].split("\n", 1)[1])


def issue_mark(item: EvalIssue) -> int:
    issue = prepare_issue(item.title, item.body, max_body_chars=6000)
    return mark(delimit_issue(issue).split("\n", 1)[1])


def answer(request: Received) -> Answer:
    """A reply that depends on the item it answers; a 400 for the refused ones."""
    value = request_mark(request)
    if refused(value):
        return Answer(400, {"error": {"message": "refused", "type": "bad_request"}})
    if _SEGMENT.search(request.body["messages"][1]["content"]):
        segment = _SEGMENT.search(request.body["messages"][1]["content"])
        assert segment is not None
        return completion(_go(f"{segment.group(1)} lines {segment.group(2)}: case {value}."))
    verdict = "VALID" if value % 2 else "NEEDS_REFINEMENT"
    return completion(reply(verdict, f"Judged as case {value}."))


def _go(bottom_line: str) -> str:
    none = dict.fromkeys(
        ("verified_defects", "non_blocking_risks", "assumptions", "future_improvements"), "None"
    )
    return render_sections(
        {**none, "bottom_line": bottom_line, "verdict": "GO", "confidence": "High"}
    )


def _settings(url: str, level: int, **kw: Any) -> Settings:
    settings = Settings.resolve({"validator_model": "fake"}, {"TRIAGE_OPENAI_BASE_URL": url})
    return replace(settings, model_concurrency=level, **kw)


Level = tuple[float, Any, list[str]]
"""One level's wall time (s), what it produced (compared with N = 1's), what went wrong."""


def eval_level(url: str, items: list[EvalIssue], level: int, _tmp: Path) -> Level:
    settings = _settings(url, level)
    recorder = RecordingModel(make_chat_model(settings, "validator"))
    validator = make_validator(settings, recorder)
    started = time.perf_counter()
    judged = judge_items(validator, items, recorder=recorder,
                         concurrency=model_concurrency(settings))  # fmt: skip
    wall = time.perf_counter() - started
    problems = []
    for j in judged:
        value = issue_mark(j.item)
        if refused(value) != (j.decision.error_kind == "model_request_rejected"):
            problems.append(f"{j.item.id}: {j.decision.error_kind}, refused: {refused(value)}")
        elif not refused(value) and (j.reply is None or f"case {value}." not in j.reply):
            problems.append(f"{j.item.id}: not its own answer ({j.fault or j.reply})")
    produced = [(j.item.id, j.decision.outcome, j.decision.error_kind, j.reply) for j in judged]
    return wall, produced, problems


def _no_ms(text: str) -> str:
    return re.sub(r"\d+ ms", "… ms", text)


def backlog_level(url: str, items: list[EvalIssue], level: int, tmp: Path) -> Level:
    github = FakeGitHub()
    github.open_issue_list = [
        {"number": n, "title": item.title, "body": item.body, "state": "open", "labels": []}
        for n, item in enumerate(items, start=1)
    ]
    runner.make_github = lambda settings, **k: github  # type: ignore[assignment]
    db = tmp / f"backlog-{level}.db"
    settings = _settings(url, level, github_token="t", db_path=db)
    started = time.perf_counter()
    report = runner.run_backlog(settings, REPO, limit=len(items))
    wall = time.perf_counter() - started
    store = Store(db, read_only=True)
    try:
        rows = store.fetch("select issue, label, error_kind from gate_decisions order by id", [])
    finally:
        store.close()
    problems = []
    for n, item in enumerate(items, start=1):
        errors = [kind for issue, _, kind in rows if issue == n]
        if len(errors) != 1:
            problems.append(f"#{n}: {len(errors)} decision rows")
        elif refused(issue_mark(item)) != (errors[0] == "model_request_rejected"):
            problems.append(f"#{n}: {errors[0]}, refused: {refused(issue_mark(item))}")
    produced = (_no_ms(report.text), report.summary, github.writes, rows)
    return wall, produced, problems


def audit_level(url: str, items: list[EvalIssue], level: int, tmp: Path) -> Level:
    prs = max(1, len(items) // SEGMENTS_PER_PR)
    github = FakeGitHub()
    for pr in range(1, prs + 1):
        files = []
        for f in range(SEGMENTS_PER_PR):
            path = f"src/pr{pr}/module_{f}.py"
            lines = [f"value_{i} = {pr * 100 + f * 10 + i}" for i in range(6)]
            patch = "@@ -0,0 +1,6 @@\n" + "\n".join(f"+{line}" for line in lines)
            files.append(ChangedFile(path, "added", patch))
            github.contents[path] = lines
        github.files[pr] = files
        github.heads[pr] = f"{pr:040x}"
    runner.make_github = lambda settings, **k: github  # type: ignore[assignment]
    settings = _settings(url, level, github_token="t", db_path=tmp / f"audit-{level}.db",
                         audit_format="markdown", max_segments=SEGMENTS_PER_PR)  # fmt: skip
    started = time.perf_counter()
    reports = [runner.run_pull(settings, REPO, pr) for pr in range(1, prs + 1)]
    wall = time.perf_counter() - started
    problems = []
    outcomes, calls = [], []
    for report in reports:
        for path, lines, state in re.findall(
            r"segment (\S+):(\d+-\d+)\s+(ACCEPTED|REJECTED)", report.text
        ):
            outcomes.append((path, state))
            if refused(mark(f"{path}:{lines}")) != (state == "REJECTED"):
                problems.append(f"{path}: {state}")
        calls += re.findall(r"^\| auditor \w+ \| `([^`]+)` \|", report.summary, re.MULTILINE)
    if len(outcomes) != prs * SEGMENTS_PER_PR:
        problems.append(f"{len(outcomes)} outcomes for {prs * SEGMENTS_PER_PR} segments")
    comments = [c.body for pr in range(1, prs + 1) for c in github.comments[pr]]
    return wall, (outcomes, calls, comments, github.writes), problems


PIPELINES: dict[str, tuple[str, Callable[[str, list[EvalIssue], int, Path], Level]]] = {
    "eval": ("issues", eval_level),
    "backlog": ("issues", backlog_level),
    "audit": ("segments", audit_level),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.4, help="the server's delay, seconds")
    parser.add_argument("--items", type=int, default=48, help="issues, or segments, per level")
    parser.add_argument("--levels", default="1,2,4,8", help="concurrency levels, comma-separated")
    parser.add_argument("--only", default="eval,backlog,audit", help="pipelines, comma-separated")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    issues = load_jsonl(ROOT / "evals" / "issues.jsonl", EvalIssue)
    items = [issues[i % len(issues)] for i in range(args.items)]
    failed = False
    with fake_openai_server(answer, delay_s=args.delay) as server, \
            tempfile.TemporaryDirectory() as folder:  # fmt: skip
        tmp = Path(folder)
        eval_level(server.url, items[:2], 1, tmp)  # warm-up: imports, connections
        for name in args.only.split(","):
            unit, run = PIPELINES[name]
            print(f"\n{name}: {len(items)} {unit} (audit: {SEGMENTS_PER_PR} a pull request), "
                  f"about one in ten refused, server delay {args.delay:g} s\n")  # fmt: skip
            print(f"| N | wall s | {unit}/s | speed-up | ideal | share of ideal "
                  "| most in flight | checks |")  # fmt: skip
            print("|---|---|---|---|---|---|---|---|")
            base: float | None = None
            first: Any = None
            for level in levels:
                server.received.clear()
                server.most_in_flight = 0
                wall, produced, problems = run(server.url, items, level, tmp)
                chats = [r for r in server.received if r.path.endswith("/chat/completions")]
                asked = sorted(request_mark(r) for r in chats)
                if len(asked) != len(set(asked)) or len(asked) != len(items):
                    problems.append(f"{len(asked)} requests for {len(items)} {unit}")
                if first is None:
                    first = produced
                elif produced != first:
                    problems.append("not what N = 1 produced, in its order")
                base = base or wall * level  # N = 1's time, or its ideal from the first level
                speedup = base / wall
                goal = GOALS.get(level)
                missed = goal is not None and speedup < goal
                failed = failed or missed or bool(problems)
                errors = sum(refused(request_mark(r)) for r in chats)
                checks = "; ".join(problems[:3]) or (
                    f"as N = 1, in order; each asked once; {errors} refused, each its own error"
                )
                note = f" (goal {goal}x: missed)" if missed else ""
                print(f"| {level} | {wall:.2f} | {len(items) / wall:.1f} | {speedup:.2f}x{note} "
                      f"| {level}x | {speedup / level:.0%} | {server.most_in_flight} "
                      f"| {checks} |")  # fmt: skip
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
