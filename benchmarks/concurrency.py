"""Throughput of the eval's gate loop with N model calls at once:
`.venv/bin/python benchmarks/concurrency.py [--delay S] [--items K] [--levels 1,2,4,8]`.

The model server is a fake OpenAI-compatible server on loopback (tests/fake_openai.py, real
HTTP through the openai client) that answers every request after a fixed delay, as a server
that batches would: so the figure measures the bot's side (threads, the client, the validator's
own work), not this machine's cores. The items are the regression suite's issues
(evals/issues.jsonl), judged by the real validator through the OpenAI-compatible backend and
``judge_items`` (``triage-bot eval``'s gate loop) at each concurrency level.

Each reply depends on the issue it answers (a hash of the issue as the user message delimits
it, less its random tag id, picks the verdict and is written into the reason), and the server
refuses every tenth request with a 400, whichever issue it carries: one call in ten fails. For
each level the script checks that the outcomes come back in the set's order, that each item got
its own answer (its reason's hash, and ``ERROR`` exactly for the refused ones), and that the
server was asked exactly once per item: no item lost or duplicated. Then it prints wall time,
items per second, the speed-up over N = 1 and the ideal (N), and the most requests the server
held at once. Goals: at least 3.5x at N = 4 and 6x at N = 8.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import zlib
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import Settings  # noqa: E402
from bot.evaluation.run import RecordingModel, judge_items  # noqa: E402
from bot.evaluation.sets import EvalIssue, load_jsonl  # noqa: E402
from bot.factory import make_chat_model, model_concurrency  # noqa: E402
from bot.gate.issue_text import delimit_issue, prepare_issue  # noqa: E402
from bot.gate.validator import make_validator  # noqa: E402
from tests.fake_openai import Answer, Received, completion, fake_openai_server  # noqa: E402
from tests.replies import reply  # noqa: E402

GOALS = {4: 3.5, 8: 6.0}


def mark(text: str) -> int:
    """The hash that picks an issue's answer: of its user message after the ``<issue id=…>``
    line (the tag id is random per call)."""
    return zlib.crc32(text.encode())


class Server:
    """The fake server's answers: each depends on the issue it answers, and every tenth
    request (whichever issue it carries) is refused with a 400; the refused issues are kept."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.refused: set[int] = set()

    def answer(self, request: Received) -> Answer:
        value = mark(request.body["messages"][-1]["content"].split("\n", 1)[1])
        with self.lock:
            self.count += 1
            refuse = self.count % 10 == 0
            if refuse:
                self.refused.add(value)
        if refuse:
            return Answer(400, {"error": {"message": "refused", "type": "bad_request"}})
        verdict = "VALID" if value % 2 else "NEEDS_REFINEMENT"
        return completion(reply(verdict, f"Judged as case {value}."))


def expected_mark(item: EvalIssue) -> int:
    issue = prepare_issue(item.title, item.body, max_body_chars=6000)
    return mark(delimit_issue(issue).split("\n", 1)[1])


def run_level(
    url: str, items: list[EvalIssue], level: int, server: Server
) -> tuple[float, list[str]]:
    """Judge ``items`` with ``level`` calls at once; the wall time (s) and what went wrong."""
    settings = replace(
        Settings.resolve({"validator_model": "fake"}, {"TRIAGE_OPENAI_BASE_URL": url}),
        model_concurrency=level,
    )
    recorder = RecordingModel(make_chat_model(settings, "validator"))
    validator = make_validator(settings, recorder)
    started = time.perf_counter()
    judged = judge_items(validator, items, recorder=recorder,
                         concurrency=model_concurrency(settings))  # fmt: skip
    wall = time.perf_counter() - started
    problems = []
    if [j.item.id for j in judged] != [i.id for i in items]:
        problems.append("outcomes out of the set's order")
    for j in judged:
        value = expected_mark(j.item)
        if value in server.refused:
            if j.decision.error_kind != "model_request_rejected":
                problems.append(f"{j.item.id}: expected the refusal, got {j.decision.error_kind}")
        elif j.reply is None or f"case {value}." not in j.reply:
            problems.append(f"{j.item.id}: not its own answer ({j.fault or j.reply})")
    return wall, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.4, help="the server's delay, seconds")
    parser.add_argument("--items", type=int, default=48, help="issues judged per level")
    parser.add_argument("--levels", default="1,2,4,8", help="concurrency levels, comma-separated")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    issues = load_jsonl(ROOT / "evals" / "issues.jsonl", EvalIssue)
    items = [issues[i % len(issues)] for i in range(args.items)]
    print(f"concurrency: {len(items)} issues, every tenth request refused by the server, "
          f"fixed server delay {args.delay:g} s")  # fmt: skip
    print()
    print("| N | wall s | issues/s | speed-up | ideal | share of ideal | most in flight | checks |")
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    answers = Server()
    with fake_openai_server(answers.answer, delay_s=args.delay) as server:
        run_level(server.url, items[:2], 1, answers)  # warm-up: imports, connections
        base = None
        for level in levels:
            server.received.clear()
            server.most_in_flight = 0
            answers.count, answers.refused = 0, set()
            wall, problems = run_level(server.url, items, level, answers)
            asked = sorted(mark(r.body["messages"][-1]["content"].split("\n", 1)[1])
                           for r in server.received)  # fmt: skip
            if asked != sorted(expected_mark(i) for i in items):
                problems.append(f"{len(asked)} requests for {len(items)} issues, not one each")
            if len(answers.refused) != len(items) // 10:
                problems.append(f"{len(answers.refused)} refused, not one in ten")
            base = base or wall * level  # N = 1's time, or its ideal from the first level
            speedup = base / wall
            share = speedup / level
            goal = GOALS.get(level)
            missed = goal is not None and speedup < goal
            failed = failed or missed or bool(problems)
            checks = "; ".join(problems[:3]) or "order kept, each its own answer, none lost"
            print(f"| {level} | {wall:.2f} | {len(items) / wall:.1f} | {speedup:.2f}x"
                  f"{' (goal ' + str(goal) + 'x: missed)' if missed else ''} | {level}x "
                  f"| {share:.0%} | {server.most_in_flight} | {checks} |")  # fmt: skip
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
