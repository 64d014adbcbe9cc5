"""Re-score recorded gate runs under other decision rules (issue 14): the trade-off table.

    .venv/bin/python benchmarks/gate_rule.py \
        --issues ../shared/dev-issues/issues.jsonl REPORT.json [REPORT.json ...]

Each report is a `triage-bot eval --only gate --split` JSON of the development set (or a
whole-set run of ``evals/issues.jsonl``, printed as one half ``all``), whose
outcomes carry the model's verdict and quotes; the bot's facts and which quotes are found in
the issue are computed again from the issues file with the current code (a fix to either
needs no model run). No model runs here: the same replies are decided again by

* the shipped rule (``bot/triage/gate_rule.json``);
* its steps alone and in turn (facts only; the model alone; the model with the evidence check);
* the shipped rule at other thresholds (``short_words``), the operating points;

and each is printed per half (tune, check): agreement on the non-borderline items and the
precision and recall of NEEDS_REFINEMENT and of VALID. Prompts and thresholds are chosen on
``tune``; ``check`` is printed beside it every time (see evals/README.md, "Development set").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.evaluation.run import label_metrics  # noqa: E402
from bot.evaluation.sets import EvalIssue, load_jsonl  # noqa: E402
from bot.triage.evidence import gather_evidence  # noqa: E402
from bot.triage.facts import (  # noqa: E402
    IssueFacts,
    issue_facts,
)
from bot.triage.issue_text import IssueText, prepare_issue  # noqa: E402
from bot.triage.rule import GateRule, decide, gate_rule  # noqa: E402
from bot.triage.verdict import NO_VERDICT  # noqa: E402

Decision = Callable[[Mapping[str, Any]], str]


FACTS: dict[str, IssueFacts] = {}
"""Issue id → facts, from ``--issues`` with the current code."""
ISSUES: dict[str, IssueText] = {}
"""Issue id → the issue as judged, to check the recorded quotes with the current code."""


def _ruled(rule: GateRule) -> Decision:
    def decision(o: Mapping[str, Any]) -> str:
        if o.get("model_verdict") is None:
            return NO_VERDICT
        evidence = gather_evidence(dict(o["quotes"]), ISSUES[o["id"]])
        return decide(FACTS[o["id"]], evidence, o["model_verdict"], rule).verdict

    return decision


def rules() -> list[tuple[str, Decision]]:
    """The decisions compared: name → decision over one recorded outcome."""
    shipped = gate_rule()
    never = {"unfilled_empty_sections": 10**6, "unfilled_placeholders": 10**6, "short_words": 0}
    out: list[tuple[str, Decision]] = [
        (f"shipped ({shipped.version})", _ruled(shipped)),
        ("model verdict alone", lambda o: o.get("model_verdict") or NO_VERDICT),
        ("facts alone (then VALID)", _ruled(shipped.model_copy(update={"valid_needs_one_of": ()}))),
        ("evidence alone (no facts)", _ruled(shipped.model_copy(update=never))),
        (
            "shipped + the model's NEEDS_REFINEMENT",
            _ruled(shipped.model_copy(update={"model_verdict_counts": True})),
        ),
        (
            "facts, then the model's verdict",
            _ruled(
                shipped.model_copy(update={"valid_needs_one_of": (), "model_verdict_counts": True})
            ),
        ),
    ]
    for words in (10, 15, 25, 30, 40):
        out.append((f"shipped, short_words={words}",
                    _ruled(shipped.model_copy(update={"short_words": words}))))  # fmt: skip
    return out


def table(reports: list[Mapping[str, Any]]) -> str:
    """The markdown table: one row per rule × half, figures averaged over the reports."""
    lines = [
        "| rule | half | agreement (non-borderline) | NR precision | NR recall | "
        "VALID precision | VALID recall |",
        "|---|---|---|---|---|---|---|",
    ]
    split = all("half" in r["gate"]["outcomes"][0] for r in reports)
    for name, decision in rules():
        for half in ("tune", "check") if split else ("all",):
            runs = []
            for report in reports:
                outcomes = []
                for o in report["gate"]["outcomes"]:
                    if o.get("half", "all") != half:
                        continue
                    got = decision(o)
                    outcomes.append({**o, "got": got, "agree": got == o["expected"]})
                runs.append(label_metrics(outcomes))
            cells = []
            for key in ("agreement_non_borderline", "nr_precision", "nr_recall",
                        "valid_precision", "valid_recall"):  # fmt: skip
                values = [r[key] for r in runs if r[key] is not None]
                cells.append(" / ".join(f"{v:.0%}" for v in values) if values else "–")
            lines.append(f"| {name} | {half} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Print the table for the reports given."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--issues", type=Path, required=True,
                        help="the set the reports ran on (the development set, or "
                        "evals/issues.jsonl for whole-set runs)")  # fmt: skip
    args = parser.parse_args()
    for item in load_jsonl(args.issues, EvalIssue):
        issue = prepare_issue(item.title, item.body, max_body_chars=6000)
        ISSUES[item.id] = issue
        FACTS[item.id] = issue_facts(issue.title, issue.author_body)
    reports = [json.loads(p.read_text("utf-8")) for p in args.reports]
    halves = {"half" in r["gate"]["outcomes"][0] for r in reports}
    if len(halves) > 1:
        parser.error("mix of --split runs and whole-set runs: give one kind at a time")
    print(f"runs: {', '.join(p.name for p in args.reports)} (figures per run, '/'-separated)")
    print(table(reports))


if __name__ == "__main__":
    main()
