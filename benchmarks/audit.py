"""PR-audit figures (issue "PR audit"): `.venv/bin/python benchmarks/audit.py [--segments N]`.

Prints:
1. GitHub requests per PR audit, counted on recorded traffic (goal ≤ audited files + 3).
2. Contract-check time per response (µs), over the real model outputs kept in
   tests/data/model_outputs/ and a canonical response.
3. Acceptance of the embedded model (Gemma 3 270M) in both audit formats on N segments of this
   project's own code: accepted first try, accepted after repair, rejected. Slow: about
   1.5 minutes per segment and format on 2 cores.

`--save-outputs DIR` also writes each raw first reply (markdown mode: whatever the model wrote,
cut or not) for the contract checker's table of real outputs.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.auditor import Auditor, AuditRejected, AuditResult  # noqa: E402
from bot.audit.checker import SegmentRef, check_response  # noqa: E402
from bot.audit.contract import render_sections  # noqa: E402
from bot.audit.prompt import segment_message, system_prompt  # noqa: E402
from bot.audit.selection import Segment  # noqa: E402
from bot.chat import ChatMessage  # noqa: E402
from bot.clients.embedded import EmbeddedChatModel  # noqa: E402
from bot.clients.github_client import PullRef, PyGithubClient  # noqa: E402
from bot.config import AUDITOR_OPTIONS, EMBEDDED_N_CTX  # noqa: E402
from bot.flows import apply_audit, plan_audit  # noqa: E402
from bot.history.store import Store  # noqa: E402
from tests.support import FakeChatModel, cassette  # noqa: E402

FUNCTIONS = [
    ("bot/audit/selection.py", "merge_ranges"),
    ("bot/triage/labels.py", "plan_labels"),
    ("bot/audit/ranges.py", "normalise_path"),
    ("bot/audit/selection.py", "added_ranges"),
    ("bot/history/store.py", "record_audits"),
]


def function_segment(path: str, name: str) -> Segment:
    """The lines of a function in this project (found with ast, so edits do not shift it)."""
    tree = ast.parse((ROOT / path).read_text("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return Segment(path, node.lineno, node.end_lineno or node.lineno)
    raise LookupError(f"{name} not found in {path}")


SEGMENTS = [function_segment(path, name) for path, name in FUNCTIONS]
CANONICAL = render_sections(
    {
        "bottom_line": "allowed() admits one upload too many.",
        "verified_defects": "- Line 13: `<=` lets MAX_UPLOADS + 1 uploads through.",
        "non_blocking_risks": "None",
        "assumptions": "None",
        "future_improvements": "None",
        "verdict": "FIX",
        "confidence": "High",
    }
)


def github_requests() -> tuple[int, int]:
    """(requests, audited files) for one PR audit replayed from cassettes."""
    pull = PullRef("Codertocat/Hello-World", 2, "ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    with cassette("github_pr_audit_create") as cass:
        github = PyGithubClient(token="bench-not-real", retries=0, seconds_between_writes=0.0)
        auditor = Auditor(FakeChatModel().enqueue(CANONICAL), AUDITOR_OPTIONS)
        plan = plan_audit(pull, github, auditor, audit_format="markdown")
        apply_audit(plan, github, Store(":memory:"))
        files = len({s.path for s in plan.selection.segments})
        return cass.play_count, files


def check_time() -> tuple[float, int]:
    """Mean contract-check time per response (µs) and how many responses were timed."""
    outputs = [CANONICAL]
    folder = ROOT / "tests" / "data" / "model_outputs"
    outputs += [p.read_text("utf-8") for p in sorted(folder.glob("*.md"))]
    ref = SegmentRef("src/limits.py", 7, 18, "def allowed(history): return len(recent)")
    rounds = 200
    started = time.perf_counter()
    for _ in range(rounds):
        for text in outputs:
            check_response(text, ref)
    return (time.perf_counter() - started) / (rounds * len(outputs)) * 1e6, len(outputs)


def acceptance(fmt: str, count: int, save: Path | None) -> dict[str, float]:
    model = EmbeddedChatModel(n_ctx=EMBEDDED_N_CTX)
    auditor = Auditor(model, AUDITOR_OPTIONS, fmt=fmt)  # type: ignore[arg-type]
    tally = {"first": 0, "repaired": 0, "rejected": 0, "seconds": 0.0}
    for segment in SEGMENTS[:count]:
        lines = (
            (ROOT / segment.path).read_text("utf-8").splitlines()[segment.start - 1 : segment.end]
        )
        if save is not None:
            raw_first_reply(model, fmt, segment, lines, save)
        started = time.perf_counter()
        outcome = auditor.audit(segment, lines)
        tally["seconds"] += time.perf_counter() - started
        if isinstance(outcome, AuditResult):
            tally["repaired" if outcome.retried else "first"] += 1
        else:
            assert isinstance(outcome, AuditRejected)
            tally["rejected"] += 1
    return tally


def raw_first_reply(
    model: EmbeddedChatModel, fmt: str, segment: Segment, lines: list[str], folder: Path
) -> None:
    """Save the model's raw first reply, even when it ran into num_predict."""
    llm = model._llm()
    messages = [ChatMessage("system", system_prompt(fmt)[0]), segment_message(segment, lines)]
    reply = llm.create_chat_completion(
        messages=[{"role": m.role, "content": m.content} for m in messages],
        temperature=AUDITOR_OPTIONS.temperature,
        max_tokens=AUDITOR_OPTIONS.num_predict,
        seed=AUDITOR_OPTIONS.seed,
    )
    name = f"gemma270m-{fmt}-{Path(segment.path).stem}-{segment.start}.md"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(reply["choices"][0]["message"]["content"] or "", "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=3, help="segments per format (max 5)")
    parser.add_argument("--formats", default="json,markdown")
    parser.add_argument("--save-outputs", type=Path, default=None)
    args = parser.parse_args()

    requests, files = github_requests()
    print("== GitHub requests per PR audit (recorded traffic)")
    print(f"requests: {requests} for {files} audited file(s)   (goal <= files + 3 = {files + 3})")

    micros, count = check_time()
    print("\n== Contract check")
    print(f"mean {micros:.0f} µs per response over {count} responses")

    print("\n== Embedded model acceptance (Gemma 3 270M)")
    for fmt in args.formats.split(","):
        tally = acceptance(fmt, min(args.segments, len(SEGMENTS)), args.save_outputs)
        total = tally["first"] + tally["repaired"] + tally["rejected"]
        per = statistics.mean([tally["seconds"] / total]) if total else 0.0
        print(
            f"{fmt:9s} segments {total}: first try {tally['first']}/{total}, "
            f"after repair {tally['first'] + tally['repaired']}/{total}, "
            f"rejected {tally['rejected']}/{total}   ({per:.0f} s per segment)"
        )


if __name__ == "__main__":
    main()
