"""``triage-bot eval``: run the sets with a progress bar, write the JSON report, check bounds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.progress import Progress

from bot.agents import make_auditor, make_validator
from bot.config import Settings
from bot.errors import EvalBelowThreshold
from bot.evaluation.report import Threshold, compare_reports, failed_thresholds, render_report
from bot.evaluation.run import RecordingModel, eval_audit, eval_gate
from bot.evaluation.sets import EvalIssue, EvalSegment, load_jsonl
from bot.factory import make_chat_model

__all__ = ["run_eval"]

BOUNDS = (
    ("min_agreement", "gate", "agreement", True),
    ("max_validator_error", "gate", "validator_error_rate", False),
    ("max_injection_valid", "gate", "injection_valid_against_expectation", False),
    ("min_acceptance", "audit", "accepted_after_repair", True),
    ("min_fix_recall", "audit", "fix_recall", True),
    ("min_pair_accuracy", "audit", "pair_accuracy", True),
    ("min_line_hit", "audit", "line_hit", True),
    ("min_clean_go", "audit", "clean_go", True),
)
"""CLI option → the report figure it bounds, and whether it is a minimum."""


def run_eval(settings: Settings, flags: Mapping[str, Any]) -> str:
    """Run the eval described by the CLI flags; return the markdown to print.

    Raises:
        ConfigError: an eval set is missing or malformed.
        EvalBelowThreshold: a ``--min-*``/``--max-*`` bound was missed (after writing the report).
    """
    limit = flags.get("limit")
    model = make_chat_model(settings, "validator")
    report: dict[str, Any] = {"model": model.name, "audit_format": settings.audit_format}
    with Progress(transient=True) as progress:
        if flags["only"] in ("gate", "both"):
            issues = load_jsonl(flags["issues_path"], EvalIssue)[:limit]
            task = progress.add_task("gate", total=len(issues))
            validator = make_validator(settings, model)
            report["gate"] = eval_gate(
                validator, issues, lambda: progress.advance(task), split=bool(flags.get("split"))
            )
        if flags["only"] in ("audit", "both"):
            segments = load_jsonl(flags["segments_path"], EvalSegment)[:limit]
            task = progress.add_task("audit", total=len(segments))
            recorder = RecordingModel(make_chat_model(settings, "auditor"))
            auditor = make_auditor(settings, recorder)
            report["audit"] = eval_audit(
                auditor, segments, lambda: progress.advance(task), recorder
            )
    flags["out"].write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", "utf-8")
    text = render_report(report)
    if flags.get("compare") is not None:
        text += "\n" + compare_reports(json.loads(flags["compare"].read_text("utf-8")), report)
    thresholds = [
        Threshold(section, key, float(flags[option]), minimum)
        for option, section, key, minimum in BOUNDS
        if flags.get(option) is not None
    ]
    failures = failed_thresholds(report, thresholds)
    if failures:
        raise EvalBelowThreshold(text + "\neval below threshold: " + "; ".join(failures))
    return text
