"""The two model agents built from settings: the one place a validator or an auditor is made.

Rule source: design.md, "Models" (per-role effort: :data:`~bot.config.VALIDATOR_OPTIONS`,
:data:`~bot.config.AUDITOR_OPTIONS`). The runner (``run``, ``backlog``, ``audit``, the comment
commands) and the eval (``triage-bot eval``) build their agents here, so a run and an eval of the
same settings judge with the same role options, body cut and audit format. The caller brings the
chat model (:func:`bot.factory.make_chat_model`): the runner needs the validator model's
name before judging (the replay check), and the eval wraps the auditor's model to keep every
reply. Tests and benchmarks that script a model build the classes directly.
"""

from __future__ import annotations

from bot.audit.auditor import Auditor
from bot.audit.prompt import AuditFormat
from bot.chat import ChatModel
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS, Settings
from bot.triage.validator import Validator

__all__ = ["audit_format", "make_auditor", "make_validator"]


def make_validator(settings: Settings, model: ChatModel) -> Validator:
    """The issue gate's validator: ``model`` with the validator role's options and the
    settings' ``max_body_chars`` (characters of issue body judged)."""
    return Validator(model, VALIDATOR_OPTIONS, max_body_chars=settings.max_body_chars)


def audit_format(settings: Settings) -> AuditFormat:
    """The settings' audit format: ``json`` when set so, else ``markdown``."""
    return "json" if settings.audit_format == "json" else "markdown"


def make_auditor(settings: Settings, model: ChatModel) -> Auditor:
    """The PR auditor: ``model`` with the auditor role's options, in the settings' audit
    format (:func:`audit_format`)."""
    return Auditor(model, AUDITOR_OPTIONS, fmt=audit_format(settings))
