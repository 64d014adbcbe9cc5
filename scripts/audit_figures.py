"""The audit's accepted figures on the CI segments, from recorded replies (no model).

    .venv/bin/python scripts/audit_figures.py            # print the figures the replies give now
    .venv/bin/python scripts/audit_figures.py --accept   # write them to evals/audit-figures.json

The embedded default's replies to ``evals/segments-ci.jsonl`` (a fixed part of
``evals/segments.jsonl``), each segment's first reply and its repair reply, are kept in
``evals/replies/`` with the prompt versions they answer. ``tests/audit/test_audit_figures.py``
feeds them through the auditor (the default format's parsing, the checker, the repair turn and
the evidence rule) on every CI run and fails when the figures differ from
``evals/audit-figures.json`` or miss its bounds, so a checker change is seen before it lands.
After a change meant to move them, look at the new figures and accept them with ``--accept``;
after a prompt change, record the replies again first (the test says how).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.auditor import make_auditor  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.evaluation.replies import ReplayModel, load_replies  # noqa: E402
from bot.evaluation.run import eval_audit  # noqa: E402
from bot.evaluation.sets import EvalSegment, load_jsonl  # noqa: E402

ACCEPTED = ROOT / "evals" / "audit-figures.json"
"""The accepted figures, the bounds they must keep, and the replies they come from."""

FIGURES = (
    "items",
    "accepted_first_try",
    "accepted_after_repair",
    "rejected",
    "fix_recall",
    "line_hit",
    "clean_go",
    "pairs",
    "pair_accuracy",
    "twin_go",
)
"""The report figures CI holds (``bot.evaluation.run.audit_metrics``)."""


def measure(replies_path: Path, segments_path: Path) -> dict[str, Any]:
    """The audit's figures on ``segments_path`` from the replies in ``replies_path``, through
    the auditor a run with default settings builds; with the prompt versions of both turns and
    each segment's status and verdict."""
    replay = ReplayModel(load_replies(replies_path))
    auditor = make_auditor(Settings(), replay)
    report = eval_audit(auditor, load_jsonl(segments_path, EvalSegment), replay=replay)
    return {
        "model": replay.name,
        "prompt_versions": auditor.prompt_versions,
        "replies_prompt_versions": sorted(
            replay.replies.prompt_versions | replay.replies.repair_versions
        ),
        "figures": {key: report[key] for key in FIGURES},
        "outcomes": {o["id"]: f"{o['status']} {o['verdict'] or '-'}" for o in report["outcomes"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accept", action="store_true", help="write evals/audit-figures.json")
    args = parser.parse_args()
    accepted = json.loads(ACCEPTED.read_text("utf-8"))
    now = measure(ROOT / accepted["replies"], ROOT / accepted["segments"])
    print(json.dumps(now, indent=2))
    if args.accept:
        accepted.update(
            prompt_versions=now["prompt_versions"],
            figures=now["figures"],
            outcomes=now["outcomes"],
        )
        ACCEPTED.write_text(json.dumps(accepted, indent=2) + "\n", "utf-8")
        print(f"written: {ACCEPTED.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
