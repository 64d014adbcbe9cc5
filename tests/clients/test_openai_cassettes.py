"""The OpenAI-compatible backend against recorded chat-completions traffic
(cassettes/openai_*.yaml): the real llama-cpp-python server's exchanges, and the fault shapes a
real server cannot be made to produce on demand (429 with Retry-After, 500 on every try, a
strict schema refused with 400, a model not served, a key refused)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import vcr

from bot.chat import ChatMessage
from bot.clients.openai_client import (
    OpenAIChatModel,
    openai_models,
    openai_one_token,
    openai_options,
    response_formats,
)
from bot.config import VALIDATOR_OPTIONS
from bot.errors import ModelNotFound, ModelRequestRejected, ModelTruncated, ModelUnavailable
from bot.gate.validator import Validator
from bot.gate.verdict import verdict_schema
from bot.retry import RetryPolicy
from tests.support import CASSETTES, cassette
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE

BASE_URL = "http://127.0.0.1:8080/v1"
FAST = RetryPolicy(attempts=3, wait_initial_s=0.0, wait_max_s=0.0)


def _model(model: str = "gemma3-270m", **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=BASE_URL, model=model, timeout_s=30, retry=FAST, **kwargs)


def _validator(model: OpenAIChatModel | None = None) -> Validator:
    return Validator(model or _model(), VALIDATOR_OPTIONS, max_body_chars=6000)


def _format(request: Any) -> str:
    return str(json.loads(request.body)["response_format"]["type"])


def _bodies(captured: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in captured if r.body]


def test_the_real_server_refuses_the_strict_form_and_takes_the_json_object_form() -> None:
    """The recorded exchange with llama-cpp-python's server: the strict ``json_schema`` form
    is refused with a 500 naming ``response_format`` (not retried), the same schema goes again
    as ``json_object``, and the reply is parsed as the validator's structured output."""
    captured: list[Any] = []
    with cassette("openai_llama_cpp_gate", captured) as cass:
        decision = _validator().judge(COMPLETE_TITLE, COMPLETE_BODY)
    assert cass.play_count == 2
    first, second = _bodies(captured)
    strict, fallback = response_formats(verdict_schema())
    assert first["response_format"] == strict
    assert strict["json_schema"]["strict"] is True
    assert (
        second["response_format"] == fallback == {"type": "json_object", "schema": verdict_schema()}
    )
    for body in (first, second):
        assert body["model"] == "gemma3-270m"
        assert body["stream"] is False
        assert {k: body[k] for k in ("temperature", "max_tokens", "seed")} == {
            "temperature": 0.0, "max_tokens": 160, "seed": 42
        }  # fmt: skip
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert decision.model_verdict == "NEEDS_REFINEMENT"
    assert (decision.prompt_tokens, decision.output_tokens) == (493, 63)  # the server's usage
    assert decision.error_kind is None


def test_the_fallback_is_kept_for_the_rest_of_the_models_life() -> None:
    """Once refused, the strict form is not sent again: the second call goes straight to the
    ``json_object`` form (one request, where the first call took two). Requests are matched on
    their ``response_format`` here, so each form gets the answer recorded for it."""

    def form(r1: Any, r2: Any) -> None:
        assert _format(r1) == _format(r2)

    recorder = vcr.VCR(cassette_library_dir=str(CASSETTES), record_mode="none",
                       match_on=["method", "path", "form"])  # fmt: skip
    recorder.register_matcher("form", form)
    model = _model()
    with recorder.use_cassette("openai_llama_cpp_gate.yaml", allow_playback_repeats=True) as cass:
        first = _validator(model).judge(COMPLETE_TITLE, COMPLETE_BODY)
        assert cass.play_count == 2
        second = _validator(model).judge(COMPLETE_TITLE, COMPLETE_BODY)
        assert cass.play_count == 3
    assert first.model_verdict == second.model_verdict == "NEEDS_REFINEMENT"


def test_a_refusal_of_the_strict_schema_in_openais_words_falls_back_too() -> None:
    captured: list[Any] = []
    with cassette("openai_strict_refused", captured) as cass:
        decision = _validator().judge(COMPLETE_TITLE, COMPLETE_BODY)
    assert cass.play_count == 2
    assert [b["response_format"]["type"] for b in _bodies(captured)] == [
        "json_schema", "json_object"
    ]  # fmt: skip
    assert decision.model_verdict == "NEEDS_REFINEMENT"


def test_a_real_truncation_raises_with_its_cost() -> None:
    """``finish_reason == "length"`` at ``max_tokens`` 5, as the real server answered it."""
    options = replace(VALIDATOR_OPTIONS, num_predict=5)
    with cassette("openai_llama_cpp_truncated"), pytest.raises(ModelTruncated) as caught:
        _model().chat(
            [ChatMessage("system", "s"), ChatMessage("user", "u")],
            options=options,
            schema=verdict_schema(),
        )
    assert (caught.value.prompt_tokens, caught.value.output_tokens) == (494, 5)
    assert "max_tokens=5" in str(caught.value)


def test_a_truncated_reply_fails_the_gate_closed() -> None:
    validator = Validator(_model(), replace(VALIDATOR_OPTIONS, num_predict=5), max_body_chars=6000)
    with cassette("openai_llama_cpp_truncated"):
        decision = validator.judge(COMPLETE_TITLE, COMPLETE_BODY)
    assert decision.label.name == "validator-error"
    assert decision.error_kind == "truncated"
    assert (decision.prompt_tokens, decision.output_tokens) == (494, 5)


def test_429_waits_what_retry_after_asks_then_answers() -> None:
    with cassette("openai_429_then_ok") as cass:
        decision = _validator().judge(COMPLETE_TITLE, COMPLETE_BODY)
    assert cass.play_count == 2
    assert cass.all_played
    assert decision.model_verdict == "NEEDS_REFINEMENT"


def test_500_is_retried_then_translated() -> None:
    with cassette("openai_500") as cass, pytest.raises(ModelUnavailable, match="500"):
        _model().chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    assert cass.play_count == 3


@pytest.mark.parametrize(
    ("name", "error", "words"),
    [
        ("openai_model_404", ModelNotFound, "/v1"),
        ("openai_401", ModelRequestRejected, "TRIAGE_OPENAI_API_KEY"),
    ],
)
def test_client_errors_are_not_retried(name: str, error: type[Exception], words: str) -> None:
    with cassette(name) as cass, pytest.raises(error, match=words):
        _model("qwen2.5-coder:1.5b").chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
    assert cass.play_count == 1


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("openai_500", "model_unavailable"),
        ("openai_model_404", "model_not_found"),
        ("openai_401", "model_request_rejected"),
    ],
)
def test_faults_become_validator_error(name: str, kind: str) -> None:
    with cassette(name):
        decision = _validator().judge("t", "b")
    assert decision.label.name == "validator-error"
    assert decision.error_kind == kind


def test_doctor_reads_the_models_and_makes_a_one_token_call() -> None:
    captured: list[Any] = []
    with cassette("openai_llama_cpp_doctor", captured) as cass:
        assert openai_models(BASE_URL, None) == ["gemma3-270m"]
        assert openai_one_token(BASE_URL, None, "gemma3-270m") >= 0
    assert cass.all_played
    assert _bodies(captured)[0]["max_tokens"] == 1


def test_role_options_as_the_api_names_them() -> None:
    assert openai_options(VALIDATOR_OPTIONS) == {"temperature": 0.0, "max_tokens": 160, "seed": 42}
