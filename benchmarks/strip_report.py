"""Keep a development-set eval report in the project without the issues' words.

    .venv/bin/python benchmarks/strip_report.py FULL.json KEPT.json

`triage-bot eval --only gate --split --issues ../shared/dev-issues/issues.jsonl` writes, per
item, the model's quotes and reason and the bot's reason: words of other people's issues,
which stay outside the project. This writes the same report with those text fields replaced
by their length in characters (``{"problem": 31, …}``), keeping the ids, labels, verdicts,
rule steps, which quotes were found, the facts, timings and every figure. A stripped report
still works with ``eval --compare`` and ``benchmarks/eval_spread.py``; re-scoring it under
another policy needs the replies (``eval --save-replies``), then ``calibrate --replies``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TEXT_FIELDS = ("reason", "model_reason", "reply")
"""Outcome fields holding words of the issue or about it."""


def strip_outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    """One gate outcome without its text: text fields become their length, quotes too."""
    kept = dict(outcome)
    for field in TEXT_FIELDS:
        if isinstance(kept.get(field), str):
            kept[field] = len(kept[field])
    quotes = kept.get("quotes")
    if isinstance(quotes, dict):
        kept["quotes"] = {k: len(v) if isinstance(v, str) else v for k, v in quotes.items()}
    return kept


def strip_report(report: dict[str, Any]) -> dict[str, Any]:
    """The report with every gate outcome stripped (the audit part has no issue text)."""
    kept = dict(report)
    gate = kept.get("gate")
    if isinstance(gate, dict):
        kept["gate"] = dict(gate, outcomes=[strip_outcome(o) for o in gate.get("outcomes", [])])
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("full", type=Path)
    parser.add_argument("kept", type=Path)
    args = parser.parse_args()
    report = json.loads(args.full.read_text(encoding="utf-8"))
    text = json.dumps(strip_report(report), ensure_ascii=False, indent=1)
    args.kept.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
