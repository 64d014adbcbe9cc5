"""A model server's 2xx reply of another shape than its API's, on either backend: the client
raises a ``ModelError`` (an output error saying where the reply departs from the shape), never
anything else; the gate labels ``validator-error`` with that kind, the audit rejects the
segment with it, and ``triage-bot run`` exits 0. Served by a loopback fake
(tests/support/fake_openai.py) that answers any path, so it stands in for Ollama too."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.auditor import Auditor, AuditRejected
from bot.audit.selection import Segment
from bot.chat import ChatMessage, ChatModel, ChatResult
from bot.cli import main
from bot.clients.model_http import TOKEN_COUNT_MAX
from bot.clients.ollama_client import OllamaChatModel
from bot.clients.openai_client import OpenAIChatModel
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS
from bot.errors import ModelError, ModelOutputError
from bot.gate.validator import Validator
from bot.retry import RetryPolicy
from tests.support import ROOT
from tests.support.fake_openai import FakeOpenAI, Received, fake_openai_server
from tests.support.profiles import HTTP_FUZZ
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE

ONCE = RetryPolicy(attempts=1)

OPENAI_VALID: dict[str, Any] = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hello"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12,
              "prompt_tokens_details": {"cached_tokens": 4}},
}  # fmt: skip
OLLAMA_VALID: dict[str, Any] = {
    "model": "m", "created_at": "2025-01-01T00:00:00Z", "done": True, "done_reason": "stop",
    "message": {"role": "assistant", "content": "hello"},
    "prompt_eval_count": 10, "eval_count": 2, "total_duration": 5_000_000,
}  # fmt: skip

OPENAI_MALFORMED = [
    ("choices a string", {"choices": "x"}, "choices"),
    ("message null", {"choices": [{"message": None, "finish_reason": "stop"}]}, "message"),
    ("content as a list of parts",
     {"choices": [{"message": {"content": [{"type": "text", "text": "hi"}]}}]}, "content"),
    ("choice null", {"choices": [None]}, "choices.0"),
    ("choice a number", {"choices": [1]}, "choices.0"),
    ("finish_reason a number",
     {"choices": [{"message": {"content": "x"}, "finish_reason": 3}]}, "finish_reason"),
    ("usage a list", {"choices": [], "usage": []}, "usage"),
    ("prompt tokens text", {**OPENAI_VALID, "usage": {"prompt_tokens": "many"}}, "prompt_tokens"),
    ("prompt tokens negative", {**OPENAI_VALID, "usage": {"prompt_tokens": -5}}, "prompt_tokens"),
    ("prompt tokens beyond a column", {**OPENAI_VALID, "usage": {"completion_tokens": 2**40}},
     "completion_tokens"),
    ("cached tokens a list",
     {**OPENAI_VALID, "usage": {"prompt_tokens_details": {"cached_tokens": [1]}}},
     "cached_tokens"),
    ("no choices at all", {"id": "c"}, "choices"),
]  # fmt: skip
"""The malformed 2xx replies met so far: (name, body, the field the message names)."""

OLLAMA_MALFORMED = [
    ("message null", {**OLLAMA_VALID, "message": None}, "message"),
    ("content as a list", {**OLLAMA_VALID, "message": {"content": ["hi"]}}, "content"),
    ("no message", {"done": True}, "message"),
    ("eval count text", {**OLLAMA_VALID, "eval_count": "two"}, "eval_count"),
    ("eval count negative", {**OLLAMA_VALID, "prompt_eval_count": -1}, "prompt_eval_count"),
    ("duration beyond a float", {**OLLAMA_VALID, "total_duration": 10**400}, "total_duration"),
    ("done_reason a list", {**OLLAMA_VALID, "done_reason": ["stop"]}, "done_reason"),
]  # fmt: skip


class Body:
    """What the fake server answers next: a JSON value (or raw bytes) as application/json."""

    def __init__(self) -> None:
        self.value: Any = OPENAI_VALID

    def answer(self, _request: Received) -> Any:
        from tests.support.fake_openai import Answer

        value = self.value
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else json.dumps(value)
        return Answer(200, text, {"content-type": "application/json"})


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[FakeOpenAI, Body]]:
    body = Body()
    with fake_openai_server(body.answer) as server:
        yield server, body


def _openai(server: FakeOpenAI) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=server.url, model="m", timeout_s=10, retry=ONCE)


def _ollama(server: FakeOpenAI) -> OllamaChatModel:
    return OllamaChatModel(host=server.url.removesuffix("/v1"), model="m", timeout_s=10,
                           retry=ONCE)  # fmt: skip


def _call(model: ChatModel) -> ChatResult:
    return model.chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)


@pytest.mark.parametrize(
    ("what", "value", "field"), OPENAI_MALFORMED, ids=[m[0] for m in OPENAI_MALFORMED]
)
def test_openai_a_malformed_reply_is_an_output_error_naming_the_field(
    served: tuple[FakeOpenAI, Body], what: str, value: Any, field: str
) -> None:
    server, body = served
    body.value = value
    with pytest.raises(ModelOutputError) as caught:
        _call(_openai(server))
    assert type(caught.value) is ModelOutputError
    assert "another shape" in str(caught.value) or "no choice" in str(caught.value)
    assert field in str(caught.value) or "no choice" in str(caught.value)


@pytest.mark.parametrize(
    ("what", "value", "field"), OLLAMA_MALFORMED, ids=[m[0] for m in OLLAMA_MALFORMED]
)
def test_ollama_a_malformed_reply_is_an_output_error_naming_the_field(
    served: tuple[FakeOpenAI, Body], what: str, value: Any, field: str
) -> None:
    server, body = served
    body.value = value
    with pytest.raises(ModelOutputError, match="another shape") as caught:
        _call(_ollama(server))
    assert type(caught.value) is ModelOutputError
    assert field in str(caught.value)


@pytest.mark.parametrize(("backend", "valid"), [(_openai, OPENAI_VALID), (_ollama, OLLAMA_VALID)])
def test_a_reply_of_the_shape_is_read(
    served: tuple[FakeOpenAI, Body], backend: Any, valid: dict[str, Any]
) -> None:
    """The control: the shapes take a real reply, extra fields and all."""
    server, body = served
    body.value = {**valid, "system_fingerprint": "x", "timings": {"a": 1}}
    result = _call(backend(server))
    assert (result.text, result.prompt_tokens, result.output_tokens) == ("hello", 10, 2)


# --- any JSON ------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=12,
)  # fmt: skip


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (keys and list positions), the value itself first."""
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*at, index))
    return found


@st.composite
def _mutated(draw: st.DrawFn, valid: dict[str, Any]) -> Any:
    """A valid reply with one place replaced by any JSON, or removed."""
    reply = copy.deepcopy(valid)
    path = draw(st.sampled_from(_paths(reply)[1:]))
    parent = reply
    for key in path[:-1]:
        parent = parent[key]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(JSON)
    return reply


def _bodies(valid: dict[str, Any]) -> st.SearchStrategy[Any]:
    return JSON | _mutated(valid) | st.binary(max_size=40)


_MODELS: dict[str, ChatModel] = {}
"""One model per backend for the properties (its connection kept between examples)."""


def _holds(result: ChatResult) -> None:
    """What a reply that is read gives: text and token counts of their types and bounds."""
    assert isinstance(result.text, str)
    assert isinstance(result.done_reason, str)
    for count in (result.prompt_tokens, result.output_tokens):
        assert type(count) is int
        assert 0 <= count <= TOKEN_COUNT_MAX


@HTTP_FUZZ
@given(value=_bodies(OPENAI_VALID))
def test_openai_any_reply_is_read_or_a_model_error(
    served: tuple[FakeOpenAI, Body], value: Any
) -> None:
    server, body = served
    body.value = value
    try:
        result = _call(_MODELS.setdefault("openai", _openai(server)))
    except ModelError:
        return
    _holds(result)


@HTTP_FUZZ
@given(value=_bodies(OLLAMA_VALID))
def test_ollama_any_reply_is_read_or_a_model_error(
    served: tuple[FakeOpenAI, Body], value: Any
) -> None:
    server, body = served
    body.value = value
    try:
        result = _call(_MODELS.setdefault("ollama", _ollama(server)))
    except ModelError:
        return
    _holds(result)


# --- what the pipelines make of it ---------------------------------------------------------


@pytest.mark.parametrize("backend", [_openai, _ollama])
def test_the_gate_fails_closed_with_the_kind(served: tuple[FakeOpenAI, Body], backend: Any) -> None:
    server, body = served
    body.value = {"choices": "x", "message": None}
    decision = Validator(backend(server), VALIDATOR_OPTIONS, max_body_chars=6000).judge(
        COMPLETE_TITLE, COMPLETE_BODY
    )
    assert decision.label.name == "validator-error"
    assert decision.error_kind == ModelOutputError.kind
    assert "another shape" in decision.reason


@pytest.mark.parametrize("backend", [_openai, _ollama])
def test_the_audit_rejects_the_segment_with_the_kind(
    served: tuple[FakeOpenAI, Body], backend: Any
) -> None:
    server, body = served
    body.value = [{"choices": [{"message": {"content": ["a", "b"]}}]}]
    outcome = Auditor(backend(server), AUDITOR_OPTIONS, fmt="json").audit(
        Segment("src/app.py", 1, 2), ["a = 1", "b = 2"]
    )
    assert isinstance(outcome, AuditRejected)
    assert outcome.error_kind == ModelOutputError.kind


OPENAI_RUN = ["choices a string", "message null", "content as a list of parts"]


@pytest.mark.parametrize("what", OPENAI_RUN)
@pytest.mark.parametrize("setting", ["TRIAGE_OPENAI_BASE_URL", "OLLAMA_HOST"])
def test_run_labels_validator_error_and_exits_0(
    served: tuple[FakeOpenAI, Body], what: str, setting: str
) -> None:
    server, body = served
    body.value = next(m[1] for m in OPENAI_MALFORMED if m[0] == what)
    url = server.url if setting == "TRIAGE_OPENAI_BASE_URL" else server.url.removesuffix("/v1")
    result = CliRunner().invoke(
        main,
        ["run", "--dry-run", "--event-name", "issues",
         "--event-path", str(ROOT / "examples" / "issues.opened.json")],
        env={setting: url, "TRIAGE_VALIDATOR_MODEL": "m", "TRIAGE_MODEL_TIMEOUT": "10"},
    )  # fmt: skip
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == 0, result.output
    assert "label:    validator-error" in result.stdout
    assert f"ERROR ({ModelOutputError.kind})" in result.stdout
    assert "Traceback" not in result.output
