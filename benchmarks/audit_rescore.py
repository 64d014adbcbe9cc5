"""Re-score stored audit evals with today's audit figures (FIX recall, pair accuracy, defect-line
hit): `.venv/bin/python benchmarks/audit_rescore.py
evals/results/qwen2.5-coder-1.5b-audit-json-v4.json [...]`.

No model runs here. Each report is a `triage-bot eval --out` JSON with an ``audit`` part whose
outcomes kept the model's replies (``replies``, from the second audit report on). The figures
are computed again by :func:`bot.evaluation.run.audit_metrics`, the eval's own function, so an
old run and a new one are scored alike:

* the defect-line hit rate reads the accepted reply (the last one of an accepted segment) with
  :func:`bot.evaluation.run.cited_lines`: a JSON reply's ``verified_defects[].line``, or a
  markdown reply's ``Line N`` citations. A report without replies has no hit rate (``–``);
* pair accuracy and GO on the twins need the fixed twins, which were added to
  ``evals/segments.jsonl`` after every stored run: they are ``–`` for such a report, and say so;
* the rest (acceptance, FIX recall, GO on clean, p50/p95) is what the report holds; GO on clean
  is over the 11 clean segments of the set then (a new run counts the twins too).

Each report prints as its stored figures beside the re-scored ones, then the defect segments
with the lines their accepted audits cite (✓ within ±1 of a known defect line).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.evaluation.report import compare_reports  # noqa: E402
from bot.evaluation.run import audit_metrics, cited_lines, line_hit  # noqa: E402
from bot.evaluation.sets import EvalSegment, load_jsonl  # noqa: E402


def rescore(report: Mapping[str, Any], segments: Mapping[str, EvalSegment]) -> dict[str, Any]:
    """The report's ``audit`` part with today's figures; outcomes gain ``cited_lines`` and
    ``line_hit`` (``None`` when the report kept no replies). Segment ids the set no longer has
    keep the report's own ``defect`` flag and get no lines."""
    outcomes = []
    for o in report["audit"]["outcomes"]:
        item = segments.get(o["id"])
        replies = o.get("replies") or []
        accepted = o["status"] != "rejected"
        cited = cited_lines(replies[-1]) if accepted and replies else []
        known = item.defect_lines if item else []
        hit = line_hit(cited, known) if o["defect"] and (replies or not accepted) else None
        outcomes.append({**o, "twin_of": None, "cited_lines": cited, "line_hit": hit})
    figures = audit_metrics(outcomes)
    if any(o["defect"] and o["line_hit"] is None for o in outcomes):
        figures["line_hit"] = None  # the report kept no replies to read the lines from
    timing = {k: report["audit"][k] for k in ("p50_ms", "p95_ms") if k in report["audit"]}
    return {**figures, **timing, "outcomes": outcomes}


def main() -> None:
    """Print each report's stored and re-scored figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--segments", type=Path, default=ROOT / "evals" / "segments.jsonl")
    args = parser.parse_args()
    segments = {s.id: s for s in load_jsonl(args.segments, EvalSegment)}
    for path in args.reports:
        report = json.loads(path.read_text("utf-8"))
        if "audit" not in report:
            print(f"## {path.name}: no audit part, skipped\n")
            continue
        new = rescore(report, segments)
        print(f"## {path.name} ({report.get('model', '?')}, {report.get('audit_format', '?')})\n")
        stored = {"model": "stored", "audit": report["audit"]}
        print(compare_reports(stored, {"model": "re-scored", "audit": new}))
        clean = sum(not o["defect"] for o in new["outcomes"])
        if not new["pairs"]:
            print("pair accuracy and GO on the fixed twins: – (no twins in this run: the set")
            print("had none then; a new run of evals/segments.jsonl measures them)")
        print(f"GO on clean is over the {clean} clean segments of this run ({new['twins']} twins)")
        if new["line_hit"] is None:
            print("defect-line hit: – (this report kept no replies to read cited lines from)")
        cells = [
            f"{o['id']} {o['verdict'] or 'rejected'} "
            + (",".join(map(str, o["cited_lines"])) + (" ✓" if o["line_hit"] else " ✗"))
            for o in new["outcomes"]
            if o["defect"] and o["cited_lines"]
        ]
        print("defect segments citing lines: " + ("; ".join(cells) or "none") + "\n")


if __name__ == "__main__":
    main()
