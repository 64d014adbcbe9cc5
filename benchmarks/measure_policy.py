"""Measure a given decision policy on a labelled set from recorded replies, and write its
figures into it (how the shipped policies' ``measured`` blocks are made).

    .venv/bin/python benchmarks/measure_policy.py POLICY.json ISSUES.jsonl REPLIES.jsonl \\
        [--labelled-set NAME] [--write]

Every item is judged on its recorded reply (``triage-bot eval --save-replies``) through the same
parsing, checks and decision as a live run, then ``POLICY`` is scored on both halves of the
fixed split exactly as ``triage-bot calibrate`` scores its candidates. With ``--write`` the
policy file gets a ``measured`` block naming the replies' model and prompt version.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import VALIDATOR_OPTIONS  # noqa: E402
from bot.evaluation.calibrate import render_candidates, score  # noqa: E402
from bot.evaluation.replies import ReplayModel, load_replies  # noqa: E402
from bot.evaluation.run import judge_items  # noqa: E402
from bot.evaluation.sets import EvalIssue, load_jsonl  # noqa: E402
from bot.gate.policy import policy_json  # noqa: E402
from bot.gate.validator import Validator  # noqa: E402
from bot.policy_file import HalfFigures, Measurement, load_policy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policy", type=Path)
    parser.add_argument("issues", type=Path)
    parser.add_argument("replies", type=Path)
    parser.add_argument("--labelled-set", help="the set's name in the measured block")
    parser.add_argument("--write", action="store_true", help="write the figures into POLICY")
    args = parser.parse_args()
    policy = load_policy(args.policy)
    items = load_jsonl(args.issues, EvalIssue)
    replay = ReplayModel(load_replies(args.replies))
    validator = Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000, policy=policy)
    candidate = score(judge_items(validator, items, replay=replay), policy)
    print(render_candidates([candidate]))
    if not args.write:
        return
    (version,) = replay.replies.prompt_versions or {validator.prompt_version}

    def figures(half: str) -> HalfFigures:
        h = candidate.halves[half]
        return HalfFigures(
            items=h["items"],
            agreement=h["agreement"],
            agreement_non_borderline=h["agreement_non_borderline"],
            nr_precision=h["nr_precision"],
            nr_recall=h["nr_recall"],
        )

    measured = Measurement(
        model=replay.name,
        prompt_version=version,
        labelled_set=args.labelled_set or f"{args.issues.name} ({len(items)} items)",
        tune=figures("tune"),
        check=figures("check"),
    )
    args.policy.write_text(policy_json(policy.model_copy(update={"measured": measured})), "utf-8")
    print(json.dumps(measured.model_dump(mode="json"), indent=1))


if __name__ == "__main__":
    main()
