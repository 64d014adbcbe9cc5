"""``triage-bot eval`` and ``calibrate``: run the sets, write the report or policy, check bounds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from rich.progress import Progress

from bot.audit.auditor import make_auditor
from bot.chat import ChatModel
from bot.config import Settings
from bot.errors import ConfigError, EvalBelowThreshold
from bot.evaluation.calibrate import (
    calibrate,
    check_halves,
    label_of,
    policy_yaml,
    prompt_problems,
    refuse_or_warn,
    render_candidates,
    set_problems,
)
from bot.evaluation.replies import (
    ReplayModel,
    audit_replies_jsonl,
    load_replies,
    replies_jsonl,
)
from bot.evaluation.report import (
    Threshold,
    compare_reports,
    failed_thresholds,
    read_report,
    render_report,
)
from bot.evaluation.run import RecordingModel, eval_audit, eval_gate, judge_items
from bot.evaluation.sets import EvalIssue, EvalSegment, load_jsonl
from bot.factory import make_chat_model, model_concurrency
from bot.gate.policy import policy_json
from bot.gate.validator import make_validator
from bot.neutralise import log_text, log_value
from bot.policy_file import ModelName, policy_name, validation_problems
from bot.prompts import current_name
from bot.regular_file import check_output, read_input, write_output

__all__ = ["run_calibrate", "run_eval"]

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


def _gate_model(
    settings: Settings, flags: Mapping[str, Any]
) -> tuple[ChatModel, ReplayModel | None]:
    if flags.get("replies_path") is not None:
        replay = ReplayModel(
            load_replies(flags["replies_path"], what="--replies").answering("validator")
        )
        return replay, replay
    return make_chat_model(settings, "validator"), None


def _version_note(replay: ReplayModel | None, prompt_version: str) -> str:
    if replay is None:
        return ""
    others = sorted(v for v in replay.replies.prompt_versions if current_name(v) != prompt_version)
    if not others:
        return ""
    named = ", ".join(log_value(v, max_chars=40) for v in others)
    return (
        f"note: the replies name {named}; this prompt is {prompt_version}. "
        "Compare the prompt texts before trusting the figures."
    )


def _check_model_name(name: str, what: str) -> None:
    """Check a replies file and a policy can hold the name; :exc:`ConfigError` if not."""
    try:
        TypeAdapter(ModelName).validate_python(name)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]["msg"]
        raise ConfigError(f"{what}: {problem}") from None


def _earlier_report(path: Path) -> dict[str, Any]:
    return read_report(read_input(path, what="--compare"), source=f"--compare {path}")


def run_eval(settings: Settings, flags: Mapping[str, Any]) -> str:
    """Run the eval the CLI flags describe; return the markdown to print.

    Raises:
        ConfigError: a bad input or output, found before any model call but a failed write.
        EvalBelowThreshold: a ``--min-*``/``--max-*`` bound was missed; the report is written.
    """
    limit = flags.get("limit")
    check_output(flags["out"], what="--out")
    if flags.get("save_replies") is not None:
        check_output(flags["save_replies"], what="--save-replies")
    earlier = _earlier_report(flags["compare"]) if flags.get("compare") is not None else None
    model, replay = _gate_model(settings, flags)
    if flags.get("save_replies") is not None:
        _check_model_name(model.name, "--save-replies: the model's name")
    report: dict[str, Any] = {"model": model.name, "audit_format": settings.audit_format}
    redact = settings.redactor()  # a server may echo its key into a reply
    note = ""
    saved: list[str] = []
    with Progress(transient=True) as progress:
        if flags["only"] in ("gate", "both"):
            issues = load_jsonl(flags["issues_path"], EvalIssue, what="--issues")[:limit]
            task = progress.add_task("gate", total=len(issues))
            recorder = RecordingModel(model)
            validator = make_validator(settings, recorder)
            report["gate"] = eval_gate(
                validator,
                issues,
                lambda: progress.advance(task),
                split=bool(flags.get("split")),
                recorder=recorder,
                replay=replay,
                concurrency=model_concurrency(settings),
            )
            note = _version_note(replay, validator.prompt_version)
            saved.append(
                replies_jsonl(
                    report["gate"]["outcomes"],
                    prompt_version=validator.prompt_version,
                    model=model.name,
                )
            )
        if flags["only"] in ("audit", "both"):
            segments = load_jsonl(flags["segments_path"], EvalSegment, what="--segments")[:limit]
            task = progress.add_task("audit", total=len(segments))
            audit_recorder = RecordingModel(make_chat_model(settings, "auditor"))
            auditor = make_auditor(settings, audit_recorder)
            report["audit"] = eval_audit(
                auditor,
                segments,
                lambda: progress.advance(task),
                audit_recorder,
                concurrency=model_concurrency(settings),
            )
            saved.append(
                audit_replies_jsonl(
                    report["audit"]["outcomes"],
                    versions=auditor.prompt_versions,
                    model=audit_recorder.name,
                )
            )
    if flags.get("save_replies") is not None:
        write_output(flags["save_replies"], redact("".join(saved)), what="--save-replies")
    report_text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    write_output(flags["out"], redact(report_text), what="--out")
    text = render_report(report)
    if note:
        text += "\n" + note + "\n"
    if earlier is not None:
        text += "\n" + compare_reports(earlier, report)
    thresholds = [
        Threshold(section, key, float(flags[option]), minimum)
        for option, section, key, minimum in BOUNDS
        if flags.get(option) is not None
    ]
    failures = failed_thresholds(report, thresholds)
    if failures:
        raise EvalBelowThreshold(text + "\neval below threshold: " + "; ".join(failures))
    return text


def run_calibrate(settings: Settings, flags: Mapping[str, Any]) -> str:
    """``triage-bot calibrate``: write the best policy to ``--out``; return the markdown to print.

    Raises :exc:`ConfigError` for a bad input or output, and without ``--force`` when the
    measurement cannot support a choice (:mod:`bot.evaluation.calibrate`).
    """
    force = bool(flags.get("force"))
    model_name = flags.get("model_name")
    if model_name is not None:
        _check_model_name(model_name, "--model-name")
    check_output(flags["out"], what="--out")
    issues = load_jsonl(flags["issues_path"], EvalIssue, what="--issues")
    check_halves(issues)
    problems = set_problems(issues)
    if flags.get("replies_path") is None:
        refuse_or_warn(problems, force=force)  # before the model is built
    model, replay = _gate_model(settings, flags)
    if model_name is None:
        _check_model_name(model.name, "the model's name (give --model-name)")
    recorder = RecordingModel(model)
    validator = make_validator(settings, recorder)
    if replay is not None:
        problems += prompt_problems(replay.replies.prompt_versions, validator.prompt_version)
    warnings = refuse_or_warn(problems, force=force)
    with Progress(transient=True) as progress:
        task = progress.add_task("gate", total=len(issues))
        judged = judge_items(
            validator,
            issues,
            lambda: progress.advance(task),
            recorder=recorder,
            replay=replay,
            concurrency=model_concurrency(settings),
        )
    prompt_version = validator.prompt_version
    if replay is not None and len(replay.replies.prompt_versions) == 1:
        prompt_version = current_name(next(iter(replay.replies.prompt_versions)))
    path: Path = flags["issues_path"]
    name = flags.get("name") or f"calibrated-{model.name}"
    try:
        result = calibrate(
            judged,
            validator.policy.policy,
            name=policy_name(name),
            model=model.name if model_name is None else model_name,
            prompt_version=prompt_version,
            labelled_set=f"{path.name} ({len(issues)} items)",
            force=force,
            warnings=warnings,
        )
    except ValidationError as exc:  # a value no earlier check caught: a message, not a trace
        raise ConfigError(
            f"the calibrated policy is not valid: {validation_problems(exc)}"
        ) from None
    chosen = result.policy
    write_output(flags["out"], policy_json(chosen), what="--out")
    what, share = result.scored[0].deciding("check")
    lines = [
        f"calibrate: {len(issues)} issues, model {log_value(model.name, max_chars=200)}, "
        f"prompt {log_value(prompt_version, max_chars=40)}",
        "",
        render_candidates(result.scored),
        "",
        f"chosen: {label_of(chosen)} (best on the tune half), written to "
        f"{log_value(str(flags['out']))}; on the check half its {what} is {share}",
    ]
    if result.note:
        lines += ["", f"note: {log_text(result.note)} (kept in the policy's chosen_on)"]
    if result.warnings:
        lines += ["", *(f"warning: {log_text(w)}" for w in result.warnings)]
        lines += ["(written with --force; each warning is kept in the policy's chosen_on)"]
    if flags.get("yaml"):
        lines += [
            "",
            "The repository file's block (.github/triage-bot.yml):",
            "",
            log_text(policy_yaml(chosen)),
        ]
    return "\n".join(lines) + "\n"
