"""The Ollama backend against recorded /api/chat traffic (cassettes/ollama_*.yaml)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.audit.auditor import Auditor, AuditRejected
from bot.audit.pipeline import render_audit_summary
from bot.audit.plan import AuditPlan
from bot.audit.pr_comment import render_audit_comment
from bot.audit.selection import Segment, Selection
from bot.chat import ChatMessage, check_prompt_fits
from bot.clients.github_port import PullRef
from bot.clients.ollama_client import OllamaChatModel
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS
from bot.errors import ModelNotFound, ModelPromptTooLong, ModelTruncated, ModelUnavailable
from bot.gate.validator import Validator
from bot.gate.verdict import verdict_schema
from bot.retry import RetryPolicy
from tests.support import cassette
from tests.support.fault_matrix import slow_drip_server
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE

HOST = "http://127.0.0.1:11434"
FAST = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0)


def _model() -> OllamaChatModel:
    return OllamaChatModel(host=HOST, model="gemma3:270m", timeout_s=30, retry=FAST)


def _validator() -> Validator:
    return Validator(_model(), VALIDATOR_OPTIONS, max_body_chars=6000)


def _bodies(captured: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in captured if r.body]


def test_request_carries_schema_options_and_think_false() -> None:
    captured: list[Any] = []
    with cassette("ollama_chat_valid", captured):
        decision = _validator().judge(COMPLETE_TITLE, COMPLETE_BODY)
    body = _bodies(captured)[0]
    assert captured[0].method == "POST"
    assert captured[0].path == "/api/chat"
    assert body["model"] == "gemma3:270m"
    assert body["stream"] is False
    assert body["think"] is False
    assert body["format"] == verdict_schema()
    assert body["options"] == {"temperature": 0.0, "num_predict": 160, "num_ctx": 4096, "seed": 42}
    assert body["keep_alive"] == "30m"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"].startswith("<issue id=")
    assert decision.verdict == "VALID"
    assert decision.label.name == "ready-for-dev"
    assert decision.evidence is not None
    assert decision.evidence.found == {"problem", "expected"}  # the reply's quotes, verified
    assert decision.prompt_tokens == 312
    assert decision.output_tokens == 31
    assert decision.model_ms == pytest.approx(912.345678)


def test_fenced_reply_is_tolerated() -> None:
    with cassette("ollama_chat_fenced"):
        decision = _validator().judge("it broke", "does not work")
    assert decision.verdict == decision.model_verdict == "NEEDS_REFINEMENT"
    assert decision.model_reason == "No steps to reproduce and no expected result."


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ollama_chat_truncated", "truncated"),
        ("ollama_chat_prose", "unparseable"),
        ("ollama_model_404", "model_not_found"),
        ("ollama_500", "model_unavailable"),
    ],
)
def test_faults_become_validator_error(name: str, kind: str) -> None:
    with cassette(name):
        decision = _validator().judge("t", "b")
    assert decision.label.name == "validator-error"
    assert decision.error_kind == kind


def test_500_is_retried_then_translated() -> None:
    with cassette("ollama_500") as cass, pytest.raises(ModelUnavailable, match="500"):
        _model().chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    assert cass.play_count == 3


def test_404_is_not_retried() -> None:
    with cassette("ollama_model_404") as cass, pytest.raises(ModelNotFound, match="not found"):
        _model().chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    assert cass.play_count == 1


def test_truncation_raises() -> None:
    with cassette("ollama_chat_truncated"), pytest.raises(ModelTruncated) as caught:
        _model().chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    # the call ran: the error carries the recorded cost (prompt_eval_count, eval_count, ns → ms)
    assert (caught.value.prompt_tokens, caught.value.output_tokens) == (312, 160)
    assert caught.value.duration_ms == pytest.approx(912.345678)


def test_503_busy_then_ok() -> None:
    with cassette("ollama_503_then_ok") as cass:
        decision = _validator().judge(COMPLETE_TITLE, COMPLETE_BODY)
    assert cass.play_count == 2
    assert cass.all_played
    assert decision.verdict == "VALID"


def test_unreachable_host_is_model_unavailable() -> None:
    model = OllamaChatModel(
        host="http://127.0.0.1:9", model="m", timeout_s=2, retry=RetryPolicy(1, 0, 0)
    )
    with pytest.raises(ModelUnavailable, match="unreachable"):
        model.chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)


def test_slow_drip_reply_hits_the_wall_clock_deadline() -> None:
    """A server that sends one byte every 0.5 s never trips httpx's per-read timeout."""
    import time

    with slow_drip_server() as host:
        model = OllamaChatModel(host=host, model="m", timeout_s=2, retry=RetryPolicy(1, 0, 0))
        started = time.perf_counter()
        with pytest.raises(ModelUnavailable, match="timed out"):
            model.chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    assert time.perf_counter() - started < 5


def test_credentials_in_the_host_never_reach_messages() -> None:
    model = OllamaChatModel(
        host="http://bob:s3cret@127.0.0.1:9", model="m", timeout_s=2, retry=RetryPolicy(1, 0, 0)
    )
    with pytest.raises(ModelUnavailable) as info:
        model.chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    assert "s3cret" not in str(info.value)
    assert "bob" not in str(info.value)


def test_a_prompt_cut_to_num_ctx_fails_the_gate_closed() -> None:
    """Ollama cut the prompt to num_ctx and answered a well-formed VALID from the
    rest; ``prompt_eval_count == num_ctx`` is the only sign, and the bot must not trust it."""
    with cassette("ollama_chat_prompt_cut") as cass:
        decision = _validator().judge(COMPLETE_TITLE, COMPLETE_BODY)
    assert cass.play_count == 1
    assert decision.verdict is None
    assert decision.label.name == "validator-error"
    assert decision.error_kind == "prompt_too_long"
    assert (decision.prompt_tokens, decision.output_tokens) == (4096, 31)  # the call's cost
    assert decision.reason == (
        "prompt of 4096 tokens + num_predict 160 exceeds num_ctx 4096; "
        "Ollama cut the prompt to num_ctx=4096 without saying so"
    )


def test_a_prompt_cut_to_num_ctx_rejects_the_audit_at_once() -> None:
    """The same on the audit: a rejected segment, and no repair turn (it would only make the
    prompt longer)."""
    auditor = Auditor(_model(), AUDITOR_OPTIONS, fmt="json")
    with cassette("ollama_audit_prompt_cut") as cass:
        outcome = auditor.audit(Segment("src/app.py", 1, 3), ["a = 1", "b = 2", "c = a + b"])
    assert cass.play_count == 1
    assert isinstance(outcome, AuditRejected)
    assert outcome.error_kind == "prompt_too_long"
    assert outcome.retried is False
    assert (outcome.prompt_tokens, outcome.output_tokens) == (8192, 12)
    selection = Selection((outcome.segment,), ())
    comment = render_audit_comment(head_sha="a" * 40, selection=selection, outcomes=(outcome,),
                                   model=outcome.model)  # fmt: skip
    plan = AuditPlan(PullRef("o/r", 2, "a" * 40), selection, (outcome,), (), comment, "json")
    summary = render_audit_summary(plan, applied=True)
    assert (
        "**Model errors:** `src/app.py:1-3` `prompt_too_long`, 8192 prompt / 12 output tokens."
        in summary
    )


@pytest.mark.parametrize(
    ("prompt_tokens", "fits"),
    [(0, True), (4096 - 160, True), (4096 - 160 + 1, False), (4096, False), (9000, False)],
)
def test_the_prompt_must_leave_room_for_num_predict(prompt_tokens: int, fits: bool) -> None:
    """The rule (bot/chat.py, check_prompt_fits): prompt + num_predict <= num_ctx."""
    if fits:
        check_prompt_fits(VALIDATOR_OPTIONS, prompt_tokens=prompt_tokens, output_tokens=0,
                          duration_ms=0.0)  # fmt: skip
        return
    with pytest.raises(ModelPromptTooLong) as caught:
        check_prompt_fits(VALIDATOR_OPTIONS, prompt_tokens=prompt_tokens, output_tokens=7,
                          duration_ms=5.0)  # fmt: skip
    assert caught.value.kind == "prompt_too_long"
    assert (caught.value.prompt_tokens, caught.value.output_tokens) == (prompt_tokens, 7)
    assert f"prompt of {prompt_tokens} tokens + num_predict 160 exceeds num_ctx 4096" in str(
        caught.value
    )
