"""The validator agent: one issue in, one :class:`GateDecision` out, never an exception.

Every model fault becomes a ``validator-error`` decision. The steps are in docs/gate.md.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import cache

from bot.chat import CallUsage, ChatMessage, ChatModel, RoleOptions
from bot.checklist import ELEMENTS, Element, checklist
from bot.config import VALIDATOR_OPTIONS, Settings
from bot.errors import ModelCopiedInput, ModelError
from bot.gate.evidence import Evidence, gather_evidence
from bot.gate.facts import IssueFacts, issue_facts
from bot.gate.issue_text import TEXT_RULES_VERSION, IssueText, delimit_issue, prepare_issue
from bot.gate.policy import choose_policy, decide
from bot.gate.types import GateDecision, Ruling
from bot.gate.verdict import (
    Verdict,
    VerdictValue,
    parse_verdict,
    verdict_model,
    verdict_schema,
)
from bot.policy_file import GatePolicy, load_policy
from bot.prompts import load_prompt, prompt_version

__all__ = [
    "COPY_MIN_CHARS",
    "EXAMPLES",
    "NUM_PREDICT_CAP",
    "NUM_PREDICT_PER_ELEMENT",
    "Validator",
    "checklist_of",
    "gate_policy_of",
    "make_validator",
    "reject_copied_reason",
    "system_prompt",
]

COPY_MIN_CHARS = 8
"""Shortest reason (characters) checked for being copied from the issue; shorter ones, like a
quoted identifier, can legitimately appear in both."""


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def reject_copied_reason(reason: str, issue: IssueText) -> None:
    """Refuse a reason copied from the issue, whitespace and case aside.

    Raises:
        ModelCopiedInput: a reason of ``COPY_MIN_CHARS`` or more is in the title or body.
    """
    squashed = _squash(reason)
    if len(squashed) >= COPY_MIN_CHARS and squashed in _squash(f"{issue.title}\n{issue.body}"):
        raise ModelCopiedInput("the verdict's reason is copied from the issue text")


EXAMPLES: tuple[tuple[str, dict[str, str]], ...] = (
    (
        "Export fails. I run `tool export --csv` on 2.1 and get KeyError: 'id'. It should write "
        "out.csv.",
        {
            "problem": "get KeyError: 'id'",
            "trigger": "I run `tool export --csv` on 2.1",
            "expected": "It should write out.csv",
            "reason": "Command, error and expected result are given.",
            "verdict": "VALID",
        },
    ),
    (
        "App broken. It does not work anymore, please help.",
        {
            "problem": "It does not work anymore",
            "trigger": "",
            "expected": "",
            "reason": "No steps, error or expected result.",
            "verdict": "NEEDS_REFINEMENT",
        },
    ),
)
"""The prompt's few-shot examples: an issue and its reply, one quote per element of
:data:`~bot.checklist.ELEMENTS` (a repository's elements are not shown)."""


def _examples() -> str:
    # each reply goes through the reply model: element order, compact JSON
    reply = verdict_model()
    return "\n".join(
        f"Issue: {issue}\n{reply.model_validate(answer).model_dump_json()}"
        for issue, answer in EXAMPLES
    )


@cache
def system_prompt(elements: tuple[Element, ...] = ELEMENTS) -> tuple[str, str]:
    """The filled system prompt and its version, ``validator@SHA8``.

    The hash covers the text, ``TEXT_RULES_VERSION`` and a repository's own elements.
    """
    schema = json.dumps(verdict_schema(_reply_model(elements)), separators=(",", ":"))
    lines = "\n".join(f"- {e.key}: {e.ask}." for e in elements)
    text = load_prompt("validator").replace("{examples}", _examples())
    text = text.replace("{elements}", lines).replace("{schema}", schema)
    hashed = f"{text}\n{TEXT_RULES_VERSION}"
    extra = [dataclasses.asdict(e) for e in elements if e not in ELEMENTS]
    if extra:
        hashed += "\n" + json.dumps(extra, sort_keys=True)
    return text, prompt_version("validator", hashed)


def _reply_model(elements: tuple[Element, ...]) -> type[Verdict]:
    return verdict_model(tuple(e.key for e in elements))


class Validator:
    """Judges issues with a :class:`ChatModel`; build one with :func:`make_validator`.

    A ``policy`` of ``None`` takes the one measured for the model, else the default.
    """

    def __init__(
        self,
        model: ChatModel,
        options: RoleOptions,
        *,
        max_body_chars: int,
        elements: tuple[Element, ...] = ELEMENTS,
        policy: GatePolicy | None = None,
        policy_source: str = "setting",
        model_aliases: Mapping[str, str] | None = None,
    ) -> None:
        self._model = model
        self._options = options
        self._max_body_chars = max_body_chars
        self._elements = elements
        self._reply = _reply_model(elements)
        self.policy = choose_policy(
            policy,
            policy_source,
            model=model.name,
            prompt_version=self.prompt_version,
            aliases=model_aliases,
        )
        """The policy this validator decides with."""

    @property
    def prompt_version(self) -> str:
        """``validator@SHA8`` of this validator's prompt and checklist."""
        return system_prompt(self._elements)[1]

    def messages(self, issue: IssueText, *, nonce: str | None = None) -> list[ChatMessage]:
        """The system prompt, then the delimited issue."""
        system, _ = system_prompt(self._elements)
        return [
            ChatMessage("system", system),
            ChatMessage("user", delimit_issue(issue, nonce=nonce)),
        ]

    def judge(
        self, title: str | None, body: str | None, *, labels: Iterable[str] = ()
    ) -> GateDecision:
        """Judge one issue; a model fault becomes ``validator-error``, never an exception."""
        started = time.perf_counter()
        issue = prepare_issue(title, body, max_body_chars=self._max_body_chars)
        version = self.prompt_version
        prompt_tokens = output_tokens = 0
        model_ms = 0.0
        verdict: VerdictValue | None = None
        model_verdict: VerdictValue | None = None
        reason, error_kind, model_reason, rule = "", None, "", ""
        evidence: Evidence | None = None
        facts: IssueFacts | None = None
        calls: tuple[CallUsage, ...] = ()
        ruling: Ruling | None = None
        try:
            result = self._model.chat(
                self.messages(issue), options=self._options, schema=verdict_schema(self._reply)
            )
            prompt_tokens, output_tokens = result.prompt_tokens, result.output_tokens
            model_ms = result.duration_ms
            calls = (CallUsage.of(result, "validator", "first"),)
            parsed = parse_verdict(result.text, self._reply)
            reject_copied_reason(parsed.reason, issue)
            model_verdict, model_reason = parsed.verdict, parsed.reason
            evidence = gather_evidence(parsed.quotes, issue, elements=self._elements, labels=labels)
            facts = issue_facts(issue.title, issue.author_body)
            ruling = decide(facts, evidence, parsed.verdict, self.policy.policy)
            verdict, reason, rule = ruling.verdict, ruling.reason, ruling.rule
        except ModelError as exc:  # a call that ran without a result still reports its cost
            reason, error_kind = str(exc), exc.kind
            if exc.prompt_tokens:  # else keep a returned reply's figures (unparseable, copied)
                prompt_tokens, output_tokens = exc.prompt_tokens, exc.output_tokens
                model_ms = exc.duration_ms
            failed = CallUsage.of_error(exc, "validator", "first")
            if not calls and failed is not None:  # a returned reply's usage is already here
                calls = (failed,)
        return GateDecision(
            verdict=verdict,
            model_verdict=model_verdict,
            reason=reason,
            error_kind=error_kind,
            model=self._model.name,
            prompt_version=version,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            model_ms=model_ms,
            wall_ms=(time.perf_counter() - started) * 1000,
            issue=issue,
            model_reason=model_reason,
            rule=rule,
            evidence=evidence,
            facts=facts,
            calls=calls,
            ruling=ruling,
            policy=self.policy,
        )


NUM_PREDICT_PER_ELEMENT = 15
"""Output tokens added to the validator's ``num_predict`` per element a repository adds (one
more quote of at most 12 words), up to :data:`NUM_PREDICT_CAP`."""

NUM_PREDICT_CAP = 200
"""The validator's ``num_predict`` never exceeds this: a verdict is short, and a model that
runs on is cut off rather than waited for."""


def checklist_of(settings: Settings) -> tuple[Element, ...]:
    """The bot's elements, then the repository file's ``elements:``."""
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
    """The validator for these settings: runs and evals build it here alone, so they agree."""
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
        model_aliases=settings.repo_file.gate.model_aliases if settings.repo_file else None,
    )


def gate_policy_of(settings: Settings) -> tuple[GatePolicy | None, str]:
    """The policy the settings name, and where from; ``None`` when they name none.

    Raises:
        ConfigError: the ``gate_policy`` file cannot be read or is not a policy.
    """
    if settings.gate_policy is not None:
        return load_policy(settings.gate_policy), "setting"
    if settings.repo_policy is not None:
        return settings.repo_policy, f"repository path {settings.gate_policy_path}"
    if settings.repo_file is not None and settings.repo_file.gate.policy is not None:
        return settings.repo_file.gate.policy, "repository file"
    return None, "default"
