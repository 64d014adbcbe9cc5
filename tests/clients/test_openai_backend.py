"""The OpenAI-compatible backend against a real model server: llama-cpp-python's server with
Gemma 3 270M on loopback (tests/support/model_server.py; ``.ci/run`` starts it). Real HTTP, real
structured output (the server refuses the strict ``json_schema`` form, so the fallback is what
runs), a real truncation, a real ``doctor``, the README's main job through this backend, and a
server stopped mid-run. Invariants only, as in tests/clients/test_real_model.py: what must hold
whatever
a 270M model answers.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.audit.auditor import Auditor, AuditRejected, AuditResult
from bot.audit.selection import Segment
from bot.chat import ChatMessage
from bot.cli import main
from bot.clients.openai_client import OpenAIChatModel
from bot.config import AUDITOR_JSON_OPTIONS, VALIDATOR_OPTIONS
from bot.errors import ModelError, ModelTruncated, ModelUnavailable
from bot.gate.labels import GATE_LABELS
from bot.gate.validator import Validator
from bot.gate.verdict import verdict_schema
from bot.retry import RetryPolicy
from tests.support import ROOT, TIMINGS
from tests.support.model_server import MODEL, private_server, server_url
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE

pytestmark = pytest.mark.model

GATE_NAMES = {label.name for label in GATE_LABELS}
QUICK = RetryPolicy(attempts=2, wait_initial_s=0.1, wait_max_s=0.2)


def _model(url: str | None = None) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=url or server_url(), model=MODEL, timeout_s=300, retry=QUICK)


def test_the_gate_gets_structured_output_from_the_real_server() -> None:
    started = time.perf_counter()
    decision = Validator(_model(), VALIDATOR_OPTIONS, max_body_chars=6000).judge(
        COMPLETE_TITLE, COMPLETE_BODY
    )
    TIMINGS.append(("server gate", (time.perf_counter() - started) * 1000))
    # the grammar the server built from the schema makes every reply parse
    assert decision.error_kind is None, decision.reason
    assert decision.model_verdict in ("VALID", "NEEDS_REFINEMENT")
    assert decision.label.name in GATE_NAMES
    assert decision.prompt_tokens > 0
    assert decision.output_tokens > 0
    assert decision.model == MODEL


def test_one_audit_through_the_real_server() -> None:
    """A JSON audit of a real bug: accepted, or rejected for what the model wrote (never for
    the transport); each call's usage is the server's."""
    auditor = Auditor(_model(), AUDITOR_JSON_OPTIONS, fmt="json")
    started = time.perf_counter()
    code = ["def add(a, b):", "    return a - b", ""]
    outcome = auditor.audit(Segment("src/calc.py", 1, 3), code)
    TIMINGS.append(("server audit", (time.perf_counter() - started) * 1000))
    assert isinstance(outcome, AuditResult | AuditRejected)
    if isinstance(outcome, AuditRejected):
        assert outcome.error_kind not in ("model_unavailable", "model_request_rejected")
    assert outcome.calls
    assert all(call.prompt_tokens > 0 for call in outcome.calls)


def test_a_real_truncation_at_five_tokens() -> None:
    """The schema's JSON cannot close in 5 tokens: the server stops at ``max_tokens`` and says
    ``length``, which is an error with its cost, never a result."""
    messages = [ChatMessage("user", "Describe this issue: the export crashes on empty files.")]
    options = replace(VALIDATOR_OPTIONS, num_predict=5)
    with pytest.raises(ModelTruncated) as caught:
        _model().chat(messages, options=options, schema=verdict_schema())
    assert caught.value.output_tokens == 5
    assert caught.value.prompt_tokens > 0


def test_the_readme_main_job_through_the_server_backend() -> None:
    """``triage-bot run --dry-run`` on the README's example event, with the base URL set:
    the same kind of plan as the embedded default's, naming the server's model."""
    result = CliRunner().invoke(
        main,
        ["run", "--dry-run", "--event-name", "issues",
         "--event-path", str(ROOT / "examples" / "issues.opened.json")],
        env={"TRIAGE_OPENAI_BASE_URL": server_url(), "TRIAGE_VALIDATOR_MODEL": MODEL},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "issues.opened Codertocat/Hello-World#1" in result.stdout
    assert f"model:    {MODEL} (validator@" in result.stdout
    lines = result.stdout.splitlines()
    verdicts = [line.split()[1] for line in lines if line.startswith("verdict:")]
    assert verdicts in (["VALID"], ["NEEDS_REFINEMENT"]), result.stdout
    labels = [line.split()[1] for line in lines if line.startswith("label:")]
    assert len(labels) == 1
    assert labels[0] in GATE_NAMES


def test_doctor_on_the_real_server() -> None:
    result = CliRunner().invoke(
        main, ["doctor"], env={"TRIAGE_OPENAI_BASE_URL": server_url(),
                               "TRIAGE_VALIDATOR_MODEL": MODEL}
    )  # fmt: skip
    url = server_url()
    assert f"ok   model: OpenAI-compatible server {url} answers; one-token call: {MODEL} " in (
        result.stdout
    ), result.stdout


def test_doctor_names_a_model_the_server_does_not_serve() -> None:
    result = CliRunner().invoke(
        main, ["doctor"], env={"TRIAGE_OPENAI_BASE_URL": server_url(),
                               "TRIAGE_VALIDATOR_MODEL": "qwen2.5-coder:1.5b"}
    )  # fmt: skip
    assert result.exit_code == 1
    assert "does not serve qwen2.5-coder:1.5b (it lists: gemma3-270m)" in result.stdout


def test_a_server_stopped_mid_run(tmp_path: Path) -> None:
    """A server of the test's own answers, then dies (SIGKILL) while a request is in flight (a
    prompt of ~6000 tokens takes seconds to read): that call and the next fail as
    ``ModelUnavailable`` within the retry policy, and the gate fails closed."""
    with private_server(tmp_path / "server") as server:
        model = _model(server.url)
        validator = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000)
        assert validator.judge(COMPLETE_TITLE, COMPLETE_BODY).error_kind is None
        long_prompt = [ChatMessage("user", "The export crashes on empty files. " * 700)]
        outcome: list[object] = []

        def call() -> None:
            try:
                outcome.append(model.chat(long_prompt, options=replace(
                    VALIDATOR_OPTIONS, num_ctx=8192, num_predict=16)))  # fmt: skip
            except ModelError as exc:
                outcome.append(exc)

        worker = threading.Thread(target=call)
        worker.start()
        time.sleep(1.0)
        os.kill(server.pid, signal.SIGKILL)
        worker.join(60)
        assert not worker.is_alive()
        assert len(outcome) == 1
        assert isinstance(outcome[0], ModelUnavailable), outcome
        started = time.perf_counter()
        decision = validator.judge(COMPLETE_TITLE, COMPLETE_BODY)
        assert time.perf_counter() - started < 10
        assert decision.label.name == "validator-error"
        assert decision.error_kind == "model_unavailable"
        assert "unreachable" in decision.reason
