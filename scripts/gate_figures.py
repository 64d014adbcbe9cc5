"""The gate's accepted figures on the regression suite, from recorded replies (no model).

    .venv/bin/python scripts/gate_figures.py            # print the figures the replies give now
    .venv/bin/python scripts/gate_figures.py --accept   # write them to evals/gate-figures.json

The embedded default's replies to ``evals/issues.jsonl`` are kept in ``evals/replies/`` with
the prompt version they answer. ``tests/gate/test_gate_figures.py`` feeds them through the decision
layer on every CI run and fails when the figures differ from ``evals/gate-figures.json`` or
miss its bounds, so a change of the decision policy is seen before it lands. After a change
meant to move them, look at the new figures and accept them with ``--accept``; after a prompt
change, record the replies again first (the test says how).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import VALIDATOR_OPTIONS  # noqa: E402
from bot.evaluation.replies import ReplayModel, load_replies  # noqa: E402
from bot.evaluation.run import eval_gate  # noqa: E402
from bot.evaluation.sets import EvalIssue, load_jsonl  # noqa: E402
from bot.gate.validator import Validator  # noqa: E402

ACCEPTED = ROOT / "evals" / "gate-figures.json"
"""The accepted figures, the bounds they must keep, and the replies they come from."""

FIGURES = (
    "agreement",
    "nr_precision",
    "valid_precision",
    "validator_error_rate",
    "injection_valid_against_expectation",
    "raised",
)
"""The report figures CI holds (``bot.evaluation.run.gate_metrics``)."""


def measure(replies_path: Path, issues_path: Path) -> dict[str, Any]:
    """The gate's figures on ``issues_path`` from the replies in ``replies_path``, under the
    policy a run of the replies' model uses; with the prompt and policy versions."""
    replay = ReplayModel(load_replies(replies_path))
    validator = Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000)
    report = eval_gate(validator, load_jsonl(issues_path, EvalIssue), replay=replay)
    return {
        "model": replay.name,
        "prompt_version": validator.prompt_version,
        "replies_prompt_versions": sorted(replay.replies.prompt_versions),
        "policy": f"{validator.policy.policy.name} ({validator.policy.policy.version})",
        "figures": {key: report[key] for key in FIGURES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accept", action="store_true", help="write evals/gate-figures.json")
    args = parser.parse_args()
    accepted = json.loads(ACCEPTED.read_text("utf-8"))
    now = measure(ROOT / accepted["replies"], ROOT / accepted["issues"])
    print(json.dumps(now, indent=2))
    if args.accept:
        accepted.update(
            prompt_version=now["prompt_version"], policy=now["policy"], figures=now["figures"]
        )
        ACCEPTED.write_text(json.dumps(accepted, indent=2) + "\n", "utf-8")
        print(f"written: {ACCEPTED.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
