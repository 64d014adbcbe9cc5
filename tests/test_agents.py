"""The agents built from settings (:func:`bot.gate.validator.make_validator`,
:func:`bot.audit.auditor.make_auditor`): what the runner and the eval judge with."""

from __future__ import annotations

from bot.audit.auditor import audit_format, make_auditor
from bot.audit.selection import Segment
from bot.config import AUDITOR_JSON_OPTIONS, AUDITOR_OPTIONS, VALIDATOR_OPTIONS, Settings
from bot.gate.validator import make_validator
from tests.support import FakeChatModel
from tests.support.replies import NEEDS_REPLY


def test_the_validator_takes_the_role_options_and_the_body_cut() -> None:
    model = FakeChatModel().enqueue(NEEDS_REPLY)
    decision = make_validator(Settings(max_body_chars=300), model).judge("t", "word " * 200)
    assert decision.issue.truncated
    assert decision.issue.kept_chars <= 300
    assert model.history[0]["options"] == VALIDATOR_OPTIONS


def test_the_auditor_takes_the_role_options_and_the_format() -> None:
    assert (audit_format(Settings()), audit_format(Settings(audit_format="markdown"))) == (
        "json",
        "markdown",
    )
    for fmt, schema_sent, options in (
        ("markdown", False, AUDITOR_OPTIONS),
        ("json", True, AUDITOR_JSON_OPTIONS),  # a shorter num_predict: a loop costs less
    ):
        model = FakeChatModel().enqueue("no", "no")
        make_auditor(Settings(audit_format=fmt), model).audit(Segment("a.py", 1, 1), ["x = 1"])
        assert model.history[0]["options"] == options
        assert model.history[1]["options"] == options  # the repair turn too
        assert (model.history[0]["schema"] is not None) == schema_sent
