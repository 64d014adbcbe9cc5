"""PR-audit figures (issue "PR audit"): `.venv/bin/python benchmarks/audit.py [--segments N]`.

Prints:
1. GitHub requests per PR audit, counted on recorded traffic (goal ≤ audited files + 3).
2. Contract-check time per response (µs), over the real model outputs kept in
   tests/data/model_outputs/ and a canonical response.
3. Acceptance of the embedded model (Gemma 3 270M) in both audit formats on N segments of this
   project's own code: accepted first try, accepted after repair, rejected. Slow: about
   1.5 minutes per segment and format on 2 cores.

4. `--timing [--limit N]`: where an audit's time goes on the eval segments
   (`evals/segments.jsonl`, JSON format, embedded default model): per segment wall time p50/p95,
   and per model call the prompt tokens evaluated (prefill), their time, the output tokens and
   their time (generation), first try vs repair turn, read from llama.cpp's perf counters.
   Runs only this section (it loads the model; ~25 s per segment with Qwen 1.5B on 2 cores).
5. `--compare BEFORE.json AFTER.json`: two `triage-bot eval --only audit` reports side by side:
   p50/p95 per segment on the segments both measured, and the eval figures (acceptance, FIX
   recall, pair accuracy, line hit, GO on clean). No model.

`--save-outputs DIR` also writes each raw first reply (markdown mode: whatever the model wrote,
cut or not) for the contract checker's table of real outputs.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.auditor import Auditor, AuditRejected, AuditResult  # noqa: E402
from bot.audit.checker import SegmentRef, check_response  # noqa: E402
from bot.audit.contract import render_sections  # noqa: E402
from bot.audit.plan import apply_audit, plan_audit  # noqa: E402
from bot.audit.prompt import segment_message, system_prompt  # noqa: E402
from bot.audit.selection import Segment  # noqa: E402
from bot.chat import ChatMessage  # noqa: E402
from bot.clients.embedded import EmbeddedChatModel  # noqa: E402
from bot.clients.github_client import PyGithubClient  # noqa: E402
from bot.clients.github_port import PullRef  # noqa: E402
from bot.config import AUDITOR_JSON_OPTIONS, AUDITOR_OPTIONS, EMBEDDED_N_CTX  # noqa: E402
from bot.evaluation.run import percentile  # noqa: E402
from bot.evaluation.sets import EvalSegment, load_jsonl  # noqa: E402
from bot.history.store import Store  # noqa: E402
from tests.support import FakeChatModel, cassette  # noqa: E402

FUNCTIONS = [
    ("bot/audit/selection.py", "merge_ranges"),
    ("bot/gate/labels.py", "plan_labels"),
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
    options = AUDITOR_JSON_OPTIONS if fmt == "json" else AUDITOR_OPTIONS
    auditor = Auditor(model, options, fmt=fmt)  # type: ignore[arg-type]
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


class PerfModel:
    """The embedded model, noting llama.cpp's perf counters after each call: prompt tokens
    evaluated and their ms (prefill), tokens generated and their ms (generation)."""

    def __init__(self, model: EmbeddedChatModel) -> None:
        self.model = model
        self.calls: list[dict[str, float]] = []

    @property
    def name(self) -> str:
        return self.model.name

    def chat(self, messages: Any, *, options: Any, schema: Any = None) -> Any:
        import llama_cpp

        started = time.perf_counter()
        result = self.model.chat(messages, options=options, schema=schema)
        perf = llama_cpp.llama_perf_context(self.model._llm()._ctx.ctx)
        self.calls.append(
            {
                "wall_ms": (time.perf_counter() - started) * 1000,
                "prompt_tokens": result.prompt_tokens,
                "prefill_tokens": perf.n_p_eval,
                "prefill_ms": perf.t_p_eval_ms,
                "output_tokens": perf.n_eval,
                "generation_ms": perf.t_eval_ms,
            }
        )
        return result


def timing(limit: int | None) -> None:
    items = load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)[:limit]
    model = PerfModel(EmbeddedChatModel(n_ctx=EMBEDDED_N_CTX))
    auditor = Auditor(model, AUDITOR_JSON_OPTIONS, fmt="json")  # type: ignore[arg-type]
    walls: list[float] = []
    turns: dict[str, list[dict[str, float]]] = {"first": [], "repair": []}
    for item in items:
        model.calls.clear()
        started = time.perf_counter()
        auditor.audit(Segment(item.path, item.start, item.end), item.lines)
        walls.append((time.perf_counter() - started) * 1000)
        for n, call in enumerate(model.calls):
            turns["first" if n == 0 else "repair"].append(call)
    total = sum(walls)
    print(f"\n== Audit time on {len(items)} eval segments (JSON format, {model.name})")
    print(
        f"per segment: p50 {percentile(walls, 0.5) / 1000:.1f} s, "
        f"p95 {percentile(walls, 0.95) / 1000:.1f} s   (goal p50 <= 30 s)"
    )
    print("turn     calls  prefill tok (mean)  prefill s  output tok (mean)  generation s  share")
    for turn, calls in turns.items():
        if not calls:
            continue
        prefill = sum(c["prefill_ms"] for c in calls) / 1000
        generation = sum(c["generation_ms"] for c in calls) / 1000
        print(
            f"{turn:8s} {len(calls):5d}  "
            f"{statistics.mean(c['prefill_tokens'] for c in calls):18.0f}  {prefill:9.1f}  "
            f"{statistics.mean(c['output_tokens'] for c in calls):17.0f}  {generation:12.1f}  "
            f"{(prefill + generation) / (total / 1000):.0%}"
        )


COMPARED = (
    "accepted_first_try",
    "accepted_after_repair",
    "fix_recall",
    "pair_accuracy",
    "line_hit",
    "clean_go",
    "output_tokens_mean",
    "prompt_tokens_mean",
)


def compare(before: Path, after: Path) -> None:
    reports = [json.loads(p.read_text("utf-8")) for p in (before, after)]
    audits = [r.get("audit", r) for r in reports]
    by_id = [{o["id"]: o["duration_ms"] for o in a["outcomes"]} for a in audits]
    common = sorted(set(by_id[0]) & set(by_id[1]))
    print(f"== {before.name} -> {after.name}: {len(common)} segments in both")
    for name, times in zip(("before", "after"), by_id, strict=True):
        values = [times[i] for i in common]
        print(
            f"{name:7s} p50 {percentile(values, 0.5) / 1000:5.1f} s  "
            f"p95 {percentile(values, 0.95) / 1000:5.1f} s"
        )
    for key in COMPARED:
        cells = [a.get(key) for a in audits]
        shown = [f"{c:.3f}" if isinstance(c, float) else str(c) for c in cells]
        print(f"{key:22s} {shown[0]:>8s} -> {shown[1]:>8s}   (whole sets)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=3, help="segments per format (max 5)")
    parser.add_argument("--formats", default="json,markdown")
    parser.add_argument("--save-outputs", type=Path, default=None)
    parser.add_argument("--timing", action="store_true", help="section 4 only")
    parser.add_argument("--limit", type=int, default=None, help="first N eval segments")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    if args.timing:
        timing(args.limit)
        return

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
