"""Where the time went: every model call's cost, in the dry-run plan and the
step summary, with the numbers the backend reported.

The fake model returns :class:`~bot.chat.ChatResult` values with known figures; the runs go
through the CLI as a maintainer starts them (the audit's GitHub reads replay the recorded
manual-audit cassette).
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bot.audit.auditor import Auditor, AuditRejected, AuditResult
from bot.audit.contract import render_sections
from bot.audit.selection import Segment
from bot.chat import CallUsage, ChatResult
from bot.cli import main
from bot.config import AUDITOR_OPTIONS
from bot.errors import ModelTruncated, ModelUnavailable
from bot.run_report import calls_plan_lines, calls_summary
from tests.support import FakeChatModel, cassette, load_webhook, write_payload
from tests.support.replies import COMPLETE_BODY, VALID_REPLY

GO = render_sections(
    {
        "bottom_line": "The window check reads as intended.",
        "verified_defects": "None",
        "non_blocking_risks": "None",
        "assumptions": "None",
        "future_improvements": "None",
        "verdict": "GO",
        "confidence": "Medium",
    }
)


def _result(text: str, prompt: int, evaluated: int | None, output: int, ms: float) -> ChatResult:
    return ChatResult(text, "stop", "fake-model", prompt, output, ms, evaluated)


def _gate(tmp_path: Path) -> tuple[str, str]:
    """A dry run of the gate on the completed example issue: (stdout, step summary)."""
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY
    summary = tmp_path / "summary.md"
    args = ["run", "--dry-run", "--event-name", "issues", "--event-path",
            str(write_payload(tmp_path, payload))]  # fmt: skip
    result = CliRunner().invoke(
        main, args, env={"GITHUB_STEP_SUMMARY": str(summary)}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.stdout, summary.read_text("utf-8")


def test_reuse_is_the_prompt_less_what_was_evaluated() -> None:
    assert CallUsage("validator", "first", 1.0, 405, 33, 120).reused_tokens == 285
    assert CallUsage("validator", "first", 1.0, 405, 33, None).reused_tokens is None
    assert CallUsage.of_error(ModelUnavailable("down"), "auditor", "first") is None
    cut = ModelTruncated(
        "cut", prompt_tokens=700, output_tokens=512, duration_ms=9000.0, prompt_eval_tokens=50
    )
    assert CallUsage.of_error(cut, "auditor", "repair") == CallUsage(
        "auditor", "repair", 9000.0, 700, 512, 50
    )


def test_the_gate_shows_its_call_with_evaluated_and_reused_tokens(
    tmp_path: Path, model: FakeChatModel
) -> None:
    model.enqueue(_result(VALID_REPLY, 405, 120, 33, 2900.0))
    out, summary = _gate(tmp_path)
    assert "verdict:  VALID" in out
    figures = "2.90 s; 120 evaluated / 285 reused of 405 prompt tokens; 33 output tokens"
    assert f"\n  call validator first: {figures}\n" in out
    assert f"\n  total: {figures}\n" in out
    assert "| call | model s | prompt tokens | evaluated | reused | output tokens |" in summary
    assert "| validator first | 2.90 | 405 | 120 | 285 | 33 |" in summary
    assert "| **total** (1 call(s)) | 2.90 | 405 | 120 | 285 | 33 |" in summary


def test_a_backend_that_does_not_split_reuse_is_shown_as_such(
    tmp_path: Path, model: FakeChatModel
) -> None:
    model.enqueue(_result(VALID_REPLY, 405, None, 33, 2900.0))  # as Ollama reports
    out, summary = _gate(tmp_path)
    assert (
        "  call validator first: 2.90 s; 405 prompt tokens, evaluated / reused not reported; "
        "33 output tokens"
    ) in out
    assert "| validator first | 2.90 | 405 | not reported | not reported | 33 |" in summary
    assert "| 0 |" not in summary


def test_a_validator_error_still_shows_the_call_it_cost(
    tmp_path: Path, model: FakeChatModel
) -> None:
    model.enqueue(
        ModelTruncated(
            "cut", prompt_tokens=405, output_tokens=160, duration_ms=7000.0, prompt_eval_tokens=5
        )
    )
    out, summary = _gate(tmp_path)
    assert "verdict:  ERROR (truncated)" in out
    assert (
        "  call validator first: 7.00 s; 5 evaluated / 400 reused of 405 prompt tokens; "
        "160 output tokens"
    ) in out
    assert "| validator first | 7.00 | 405 | 5 | 400 | 160 |" in summary


def test_no_call_that_cost_anything_says_so(tmp_path: Path, model: FakeChatModel) -> None:
    model.enqueue(ModelUnavailable("the model server is down"))
    out, summary = _gate(tmp_path)
    assert "calls:    none (no model call ran, or a failed one reported no cost)" in out
    assert "**Model calls:** none" in summary


def test_the_audit_lists_the_repair_turn_as_its_own_call(
    tmp_path: Path, model: FakeChatModel
) -> None:
    model.enqueue(
        _result("Sure! Here is the audit.", 1200, 1200, 40, 20000.0),  # breaks the contract
        _result(GO, 1300, 150, 180, 9000.0),
    )
    summary = tmp_path / "summary.md"
    with cassette("e2e_audit_manual_dry_run"):
        result = CliRunner().invoke(
            main,
            [
                "audit",
                "--dry-run",
                "--repo",
                "Codertocat/Hello-World",
                "--pr",
                "2",
                "--audit-format",
                "markdown",
            ],
            env={"GITHUB_STEP_SUMMARY": str(summary)},
            catch_exceptions=False,
        )
    out, text = result.stdout, summary.read_text("utf-8")
    assert result.exit_code == 0, out
    assert "ACCEPTED  GO / Medium  retried: yes  (2500+220 tokens, 29000 ms)" in out
    assert "calls:    2 model call(s)" in out
    assert (
        "  call auditor first src/limits.py:7-18: 20.00 s; 1200 evaluated / 0 reused of 1200 "
        "prompt tokens; 40 output tokens\n"
        "  call auditor repair src/limits.py:7-18: 9.00 s; 150 evaluated / 1150 reused of 1300 "
        "prompt tokens; 180 output tokens\n"
        "  total: 29.00 s; 1350 evaluated / 1150 reused of 2500 prompt tokens; 220 output tokens"
    ) in out
    assert "| auditor first | `src/limits.py:7-18` | 20.00 | 1200 | 1200 | 0 | 40 |" in text
    assert "| auditor repair | `src/limits.py:7-18` | 9.00 | 1300 | 150 | 1150 | 180 |" in text
    assert "| **total** (2 call(s)) |  | 29.00 | 2500 | 1350 | 1150 | 220 |" in text


SEG = Segment("src/window.py", 10, 11)
LINES = ["def in_window(window, now):", "    return window.start <= now"]


def test_a_rejected_audit_keeps_the_calls_that_happened(fake_model: FakeChatModel) -> None:
    """A repair that never reached the model adds no call; one cut at ``num_predict`` does."""
    auditor = Auditor(fake_model, AUDITOR_OPTIONS)
    fake_model.enqueue(_result("no sections", 800, 800, 30, 4000.0), ModelUnavailable("down"))
    down = auditor.audit(SEG, LINES)
    assert isinstance(down, AuditRejected)
    assert down.error_kind == "model_unavailable"
    assert down.calls == (CallUsage("auditor", "first", 4000.0, 800, 30, 800),)
    cut = ModelTruncated("cut", prompt_tokens=900, output_tokens=512, duration_ms=8000.0)
    fake_model.enqueue(_result("no sections", 800, 800, 30, 4000.0), cut)
    rejected = auditor.audit(SEG, LINES)
    assert isinstance(rejected, AuditRejected)
    assert rejected.error_kind is None
    assert [c.turn for c in rejected.calls] == ["first", "repair"]
    assert rejected.calls[1] == CallUsage("auditor", "repair", 8000.0, 900, 512, None)
    assert (rejected.prompt_tokens, rejected.output_tokens) == (1700, 542)  # the sums stay


def test_a_total_over_calls_of_which_some_did_not_say_names_how_many() -> None:
    rows = [("a.py:1-2", CallUsage("auditor", "first", 1000.0, 300, 10, 100)),
            ("a.py:1-2", CallUsage("auditor", "repair", 500.0, 400, 20, None))]  # fmt: skip
    assert calls_plan_lines(rows)[-1] == (
        "  total: 1.50 s; 100 evaluated / 200 reused of 700 prompt tokens "
        "(1 of 2 calls reported); 30 output tokens"
    )
    assert calls_summary(rows).endswith(
        "| **total** (2 call(s)) |  | 1.50 | 700 | 100 (1 of 2 calls reported) "
        "| 200 (1 of 2 calls reported) | 30 |"
    )


def test_an_accepted_audit_carries_one_call_per_turn(fake_model: FakeChatModel) -> None:
    fake_model.enqueue(_result(GO, 600, 40, 90, 3000.0))
    result = Auditor(fake_model, AUDITOR_OPTIONS).audit(SEG, LINES)
    assert isinstance(result, AuditResult)
    assert result.calls == (CallUsage("auditor", "first", 3000.0, 600, 90, 40),)
