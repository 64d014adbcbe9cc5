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

from dataclasses import replace

from bot.audit.auditor import Auditor
from bot.audit.prompt import AuditFormat
from bot.chat import ChatModel
from bot.config import AUDITOR_JSON_OPTIONS, AUDITOR_OPTIONS, VALIDATOR_OPTIONS, Settings
from bot.gate.evidence import ELEMENTS, Element, checklist
from bot.gate.validator import Validator
from bot.gate_policy import GatePolicy, load_policy

__all__ = [
    "NUM_PREDICT_CAP",
    "NUM_PREDICT_PER_ELEMENT",
    "audit_format",
    "checklist_of",
    "gate_policy_of",
    "make_auditor",
    "make_validator",
]


NUM_PREDICT_PER_ELEMENT = 15
"""Output tokens added to the validator's ``num_predict`` per element a repository adds (one
more quote of at most 12 words), up to :data:`NUM_PREDICT_CAP`."""

NUM_PREDICT_CAP = 200
"""The validator's ``num_predict`` never exceeds this (design.md, "Models": ≤ 200)."""


def checklist_of(settings: Settings) -> tuple[Element, ...]:
    """The validator's checklist: the bot's elements, then the repository file's
    ``elements:`` (:class:`bot.repo_file.ElementConfig`), each asking the model for "the
    words giving" its definition, shown to authors as the definition itself, and found from a
    one-word quote too (:attr:`bot.gate.evidence.Element.one_word`)."""
    given = settings.repo_file.elements if settings.repo_file is not None else []
    return checklist(
        tuple(
            Element(
                key=e.name,
                ask=f"the words giving {e.definition.rstrip('.')}",
                missing=e.definition.rstrip("."),
                required_for=tuple(e.required_for),
                one_word=True,  # a value such as a version ("2.3.1") is one word
            )
            for e in given
        )
    )


def make_validator(settings: Settings, model: ChatModel) -> Validator:
    """The issue gate's validator: ``model`` with the validator role's options, the settings'
    ``max_body_chars`` (characters of issue body judged) and the repository's checklist
    (:func:`checklist_of`), deciding under the policy the settings name (:func:`gate_policy_of`);
    ``num_predict`` grows by :data:`NUM_PREDICT_PER_ELEMENT` per
    element the repository adds, capped at :data:`NUM_PREDICT_CAP`."""
    elements = checklist_of(settings)
    extra = len(elements) - len(ELEMENTS)
    options = replace(
        VALIDATOR_OPTIONS,
        num_predict=min(
            NUM_PREDICT_CAP, VALIDATOR_OPTIONS.num_predict + NUM_PREDICT_PER_ELEMENT * extra
        ),
    )
    policy, source = gate_policy_of(settings)
    return Validator(
        model,
        options,
        max_body_chars=settings.max_body_chars,
        elements=elements,
        policy=policy,
        policy_source=source,
    )


def gate_policy_of(settings: Settings) -> tuple[GatePolicy | None, str]:
    """The decision policy the settings name and where from: the ``gate_policy`` file, else the
    repository file's ``gate.policy``, else ``None`` (the validator then takes the policy
    measured for its model, or the default: :func:`bot.gate.policy.choose_policy`).

    Raises:
        ConfigError: the ``gate_policy`` file cannot be read or is not a policy.
    """
    if settings.gate_policy is not None:
        return load_policy(settings.gate_policy), "setting"
    if settings.repo_file is not None and settings.repo_file.gate.policy is not None:
        return settings.repo_file.gate.policy, "repository file"
    return None, "default"


def audit_format(settings: Settings) -> AuditFormat:
    """The settings' audit format: ``json`` when set so, else ``markdown``."""
    return "json" if settings.audit_format == "json" else "markdown"


def make_auditor(settings: Settings, model: ChatModel) -> Auditor:
    """The PR auditor: ``model`` with the auditor role's options for the settings' audit
    format (:func:`audit_format`; JSON: :data:`~bot.config.AUDITOR_JSON_OPTIONS`)."""
    fmt = audit_format(settings)
    return Auditor(model, AUDITOR_JSON_OPTIONS if fmt == "json" else AUDITOR_OPTIONS, fmt=fmt)
