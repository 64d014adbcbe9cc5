"""A base URL that points at something other than the API (a web UI, a proxy's login page, the
server's root instead of ``/v1``) answers 200 with a body that is not a chat completion. The
gate fails closed with a message that says what to fix, and ``doctor`` reports it; the body
itself, untrusted, is never shown. Served by a loopback fake (tests/support/fake_openai.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clients.openai_client import OpenAIChatModel
from bot.config import VALIDATOR_OPTIONS
from bot.errors import ModelOutputError
from bot.gate.validator import Validator
from bot.retry import RetryPolicy
from tests.support import ROOT
from tests.support.fake_openai import Answer, Received, fake_openai_server
from tests.support.replies import COMPLETE_BODY, COMPLETE_TITLE

PLANTED = "::warning::planted by the page"

NOT_THE_API = [
    ("an HTML page", Answer(200, f"<html><body>{PLANTED}</body></html>",
                            {"content-type": "text/html; charset=utf-8"})),
    ("plain text", Answer(200, PLANTED, {"content-type": "text/plain"})),
    ("no content type", Answer(200, PLANTED, {"content-type": ""})),
    ("a JSON string", Answer(200, PLANTED)),
    ("a JSON list", Answer(200, [PLANTED])),
]  # fmt: skip
"""2xx answers that are not the API's JSON, by name."""


def _serving(answer: Answer):  # type: ignore[no-untyped-def]
    def reply(request: Received) -> Answer:
        return answer

    return fake_openai_server(reply)


@pytest.mark.parametrize(("what", "answer"), NOT_THE_API, ids=[n[0] for n in NOT_THE_API])
def test_the_gate_fails_closed_and_says_to_check_the_base_url(what: str, answer: Answer) -> None:
    with _serving(answer) as server:
        model = OpenAIChatModel(
            base_url=server.url, model="m", timeout_s=10, retry=RetryPolicy(2, 0, 0)
        )
        decision = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000).judge(
            COMPLETE_TITLE, COMPLETE_BODY
        )
        assert len(server.received) == 1  # not retried: the same URL answers the same
    assert decision.label.name == "validator-error"
    assert decision.error_kind == ModelOutputError.kind
    assert "is the base URL the API's own" in decision.reason
    assert PLANTED not in decision.reason


@pytest.mark.parametrize(("what", "answer"), NOT_THE_API, ids=[n[0] for n in NOT_THE_API])
def test_run_and_doctor_report_it_without_a_traceback(what: str, answer: Answer) -> None:
    with _serving(answer) as server:
        env = {"TRIAGE_OPENAI_BASE_URL": server.url, "TRIAGE_VALIDATOR_MODEL": "m"}
        run = CliRunner().invoke(
            main,
            ["run", "--dry-run", "--event-name", "issues",
             "--event-path", str(ROOT / "examples" / "issues.opened.json")],
            env=env,
        )  # fmt: skip
        doctor = CliRunner().invoke(main, ["doctor"], env=env)
    assert run.exception is None or isinstance(run.exception, SystemExit), run.exc_info
    assert run.exit_code == 0, run.output
    assert "label:    validator-error" in run.stdout
    assert doctor.exit_code == 1
    fail = next(line for line in doctor.stdout.splitlines() if line.startswith("FAIL model"))
    assert "is the base URL the API's own, up to and including /v1?" in fail
    assert PLANTED not in run.output + doctor.output
