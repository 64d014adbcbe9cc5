"""Does the enclosing block help? ("hunt before judging": the whole enclosing function
as context). `.venv/bin/python benchmarks/audit_context.py [--out R.json] [--limit N]`

Each defect segment of `evals/segments.jsonl` and its fixed twin differ only by the fix, so the
lines that differ (difflib, on the twin's side and the defect's) are what a PR making or
fixing the defect would change. Each side is audited twice on the embedded default model, JSON
format: the changed lines alone (what the audit saw before, one hunk's added lines), and the
same lines with the segment's enclosing block shown as context
(:func:`bot.audit.enclosing.enclosing_context`). Prints, per condition, the figures of
:func:`bot.evaluation.run.audit_metrics` over those pairs (FIX recall, pair accuracy, line hit,
GO on twins) and the p50 time. Loads the model; about 25 minutes for the 21 pairs on 2 cores.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.auditor import Auditor, AuditResult  # noqa: E402
from bot.audit.enclosing import enclosing_context  # noqa: E402
from bot.audit.selection import Segment  # noqa: E402
from bot.config import AUDITOR_JSON_OPTIONS, Settings  # noqa: E402
from bot.evaluation.run import audit_metrics, cited_lines, line_hit  # noqa: E402
from bot.evaluation.sets import EvalSegment, load_jsonl  # noqa: E402
from bot.factory import make_chat_model  # noqa: E402


def changed_range(item: EvalSegment, other: EvalSegment) -> tuple[int, int]:
    """File lines of ``item`` that differ from ``other`` (first to last changed line)."""
    matcher = difflib.SequenceMatcher(a=other.lines, b=item.lines, autojunk=False)
    changed = [
        n
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
        for n in range(j1, max(j2, j1 + 1))
    ]
    lo, hi = min(changed), min(max(changed), len(item.lines) - 1)
    return item.start + lo, item.start + hi


def file_of(item: EvalSegment) -> list[str]:
    """The segment as a file: blank lines above it, so its line numbers are the file's."""
    return [""] * (item.start - 1) + item.lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, help="write every outcome as JSON")
    parser.add_argument("--limit", type=int, default=0, help="first N pairs only")
    args = parser.parse_args()
    items = {s.id: s for s in load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)}
    pairs = [(items[t.twin_of], t) for t in items.values() if t.twin_of]
    if args.limit:
        pairs = pairs[: args.limit]
    model = make_chat_model(Settings.resolve({}, os.environ), "auditor")
    auditor = Auditor(model, AUDITOR_JSON_OPTIONS, fmt="json")
    runs: dict[str, list[dict[str, Any]]] = {"alone": [], "with context": []}
    for defect, twin in pairs:
        for item, other in ((defect, twin), (twin, defect)):
            start, end = changed_range(item, other)
            lines = file_of(item)
            segment = Segment(item.path, start, end)
            for name, context in (
                ("alone", None),
                ("with context", enclosing_context(lines, start, end)),
            ):
                result = auditor.audit(segment, lines[start - 1 : end], context)
                accepted = isinstance(result, AuditResult)
                cited = cited_lines(result.markdown) if isinstance(result, AuditResult) else []
                runs[name].append(
                    {
                        "id": item.id,
                        "defect": item.defect,
                        "twin_of": item.twin_of,
                        "range": [start, end],
                        "context": None if context is None else [context.start, context.end],
                        "status": ("repaired" if result.retried else "first")
                        if accepted
                        else "rejected",
                        "verdict": result.verdict if isinstance(result, AuditResult) else None,
                        "line_hit": line_hit(cited, item.defect_lines) if item.defect else None,
                        "duration_ms": result.duration_ms,
                    }
                )
                print(f"{name:12} {item.id:32} {start}-{end} {runs[name][-1]['verdict']}")
    print("\ncondition      FIX recall  pair accuracy  line hit  GO on twins  p50 s")
    for name, outcomes in runs.items():
        m = audit_metrics(outcomes)
        p50 = statistics.median(o["duration_ms"] for o in outcomes) / 1000
        print(
            f"{name:14} {m['fix_recall']:10.1%}  {m['pair_accuracy']:13.1%}  "
            f"{m['line_hit']:8.1%}  {m['twin_go']:11.1%}  {p50:5.1f}"
        )
    if args.out:
        args.out.write_text(json.dumps(runs, indent=1), "utf-8")


if __name__ == "__main__":
    main()
