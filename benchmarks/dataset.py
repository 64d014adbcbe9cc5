"""`triage-bot dataset` against a loopback GitHub: `.venv/bin/python benchmarks/dataset.py`.

A real HTTP server on 127.0.0.1 (tests/support/dataset_server.py: http.server in a thread) serves
200 closed issues, one scenario per labelling rule and per reason to leave one out in turn
(tests/support/dataset_world.py), with a closed pull request after every fourth issue, timelines,
GraphQL edit histories and the repository file. The real client (PyGithub, patient, the
sleep recorded instead of slept) runs the pipeline; the server counts each request.

Prints, per run: requests by kind and per issue (goal ≤ 3), whether every issue got the row
or the reason its scenario says (per rule), time; then the same command again (resume:
everything done, the pages asked with their ETag), and a run whose every kind of read
meets a rate limit first (the waits it made instead of failing).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.clients.github_client import RATE_LIMIT_WINDOW_S, PyGithubClient  # noqa: E402
from bot.dataset import DatasetReport, run_dataset  # noqa: E402
from bot.dataset.files import row_id, state_path  # noqa: E402
from bot.evaluation.sets import EvalIssue, load_jsonl  # noqa: E402
from bot.gate.labels import file_gate_labels  # noqa: E402
from bot.repo_file import REPO_FILE_PATH, parse_repo_file  # noqa: E402
from tests.support.dataset_server import LoopbackGitHub  # noqa: E402
from tests.support.dataset_world import REPO, Scenario, world  # noqa: E402

ISSUES = 200
GOAL_PER_ISSUE = 3


class Clock:
    """The time the server and the client share: a wait moves it on, nothing really waits."""

    def __init__(self) -> None:
        self.now = time.time()
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def _client(base_url: str, clock: Clock) -> PyGithubClient:
    return PyGithubClient(
        token="benchmark-token",
        base_url=base_url,
        retries=1,
        backoff_s=0.0,
        sleep=clock.sleep,
        clock=clock,
        max_rate_limit_wait_s=RATE_LIMIT_WINDOW_S,
    )


def _run(github: LoopbackGitHub, out: Path, clock: Clock) -> tuple[DatasetReport, float]:
    client = _client(github.base_url, clock)
    start = time.perf_counter()
    text = client.repo_file(REPO, REPO_FILE_PATH, None)
    file = parse_repo_file(text or "")
    report = run_dataset(client, REPO, out, config=file.dataset, gate=file_gate_labels(file))
    return report, time.perf_counter() - start


def _right(scenarios: list[Scenario], out: Path) -> Counter[tuple[str, bool]]:
    """(rule, right?) → issues: the row or the reason each scenario says."""
    import json

    rows = {r.id: r for r in load_jsonl(out, EvalIssue)} if out.exists() else {}
    state = json.loads(state_path(out).read_text("utf-8"))
    skipped = state["repos"][REPO]["skipped"]
    tally: Counter[tuple[str, bool]] = Counter()
    for s in scenarios:
        item = row_id(REPO, s.number)
        if s.expected is None:
            ok = item not in rows and item in skipped
        else:
            row = rows.get(item)
            ok = row is not None and (row.expected, row.borderline, row.title, row.body) == (
                s.expected,
                s.borderline,
                s.title,
                s.body,
            )
        tally[(s.rule, ok)] += 1
    return tally


def _requests(github: LoopbackGitHub) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(github.requests.items()))


def _summary(report: DatasetReport, tally: Counter[tuple[str, bool]]) -> list[str]:
    done = report.progress
    rules = {rule for rule, _ in tally}
    wrong = sorted({rule for (rule, ok), n in tally.items() if not ok})
    right = sum(n for (_, ok), n in tally.items() if ok)
    return [
        f"rows: {done.rows} ({done.labelled['VALID']} VALID, "
        f"{done.labelled['NEEDS_REFINEMENT']} NEEDS_REFINEMENT, {done.borderline} borderline); "
        f"left out {sum(done.skipped.values())}",
        f"right: {right}/{ISSUES} issues, {len(rules) - len(wrong)}/{len(rules)} rules"
        + (f"; WRONG: {wrong}" if wrong else ""),
    ]


def main() -> None:
    scenarios = world(ISSUES)
    folder = Path(tempfile.mkdtemp())
    out = folder / "set.jsonl"
    clock = Clock()
    with LoopbackGitHub(scenarios, clock=clock) as github:
        report, seconds = _run(github, out, clock)
        spent = sum(github.requests.values())
        met = "met" if spent / ISSUES <= GOAL_PER_ISSUE else "MISSED"
        print(
            f"## {ISSUES} closed issues ({len(github.listing) - ISSUES} pull requests among them)"
        )
        print(f"requests: {spent} ({_requests(github)}): {spent / ISSUES:.2f} an issue (goal ≤ "
              f"{GOAL_PER_ISSUE}: {met})")  # fmt: skip
        print("\n".join(_summary(report, _right(scenarios, out))))
        print(f"time: {seconds:.2f} s ({1000 * seconds / ISSUES:.1f} ms an issue), "
              f"waits: {len(clock.waits)}")  # fmt: skip

        github.requests.clear()
        again, seconds = _run(github, out, clock)
        print("\n## the same command again (resume: all done)")
        print(f"requests: {sum(github.requests.values())} ({_requests(github)}), "
              f"304 answers: {github.not_modified}, issues read: {again.progress.read}, "
              f"time: {seconds:.2f} s")  # fmt: skip

    limited_out = folder / "limited.jsonl"
    limited_clock = Clock()
    faults = {
        "list": ["primary", "low"],
        "graphql": ["graphql-limited", "secondary"],
        "timeline": ["secondary", "primary", "secondary"],
    }
    with LoopbackGitHub(scenarios, faults=faults, clock=limited_clock) as github:
        limited, seconds = _run(github, limited_out, limited_clock)
        waits = ", ".join(f"{w:.0f} s" for w in limited_clock.waits)
        print("\n## every kind of read meets a rate limit first")
        print(f"requests: {sum(github.requests.values())} ({_requests(github)}); "
              f"waits instead of failures: {len(limited_clock.waits)} ({waits})")  # fmt: skip
        print("\n".join(_summary(limited, _right(scenarios, limited_out))))


if __name__ == "__main__":
    main()
