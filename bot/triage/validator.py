"""The validator agent: one issue in, one :class:`GateDecision` out, never an exception.

Rule source: design.md, "Issue gate" and "Models".

Prompt order keeps the stable part first for prompt-cache reuse: the system message is the rules
plus the verdict's JSON schema (``bot/prompts/validator.md``, identical for every issue), the user
message is only the delimited issue. The same schema goes to the model as structured output, and
the reply is parsed by :func:`bot.triage.verdict.parse_verdict` regardless (a schema constrains
syntax, not values).

A reply whose reason (≥ ``COPY_MIN_CHARS``) appears verbatim in the issue text is rejected as
:class:`~bot.errors.ModelCopiedInput`: an issue that carries a pre-filled verdict (a prompt
injection) cannot get its own words back as the bot's judgment, whatever the model does. A
reason whose finding repeats one of the prompt's own examples, with none of its words in the
issue, is rejected the same way (:class:`~bot.errors.ModelEchoedPrompt`).

Fail closed: every :class:`~bot.errors.ModelError` — unreachable, 404, 5xx after retries, timeout,
truncation, empty, unparseable or schema-invalid output — becomes the ``validator-error`` label
with the fault recorded in ``error_kind``. The fault is the bot's, not the author's.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from functools import cache

from bot.clients.model_client import ChatMessage, ChatModel, RoleOptions
from bot.errors import ModelCopiedInput, ModelEchoedPrompt, ModelError
from bot.prompts import load_prompt, prompt_version
from bot.triage.checklist import (
    MISSING_WORDS,
    RULES_VERSION,
    checklist_verdict,
    labelled_findings,
)
from bot.triage.issue_text import TEXT_RULES_VERSION, IssueText, delimit_issue, prepare_issue
from bot.triage.labels import LABEL_FOR_VERDICT, VALIDATOR_ERROR, GateLabel
from bot.triage.verdict import VerdictValue, parse_verdict, verdict_schema

__all__ = [
    "COPY_MIN_CHARS",
    "GateDecision",
    "Validator",
    "reject_borrowed_reason",
    "system_prompt",
]

COPY_MIN_CHARS = 8
"""Shortest reason (characters) checked for being copied from the issue; shorter ones, like a
quoted identifier, can legitimately appear in both."""


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


_WORD = re.compile(r"[\w.-]{3,}")


def _words(text: str) -> set[str]:
    """The words of 3+ characters in squashed ``text``, sentence dots and dashes stripped
    ("v2.1." is "v2.1")."""
    return {word.strip(".-") for word in _WORD.findall(text)} - {""}


@cache
def _example_findings() -> frozenset[str]:
    """The findings of the prompt's own example replies (squashed), ``none`` and the like
    excepted: the lines of ``validator.md`` that start with ``{"reason":``."""
    out: set[str] = set()
    for line in load_prompt("validator").splitlines():
        if line.startswith('{"reason":'):
            found = labelled_findings(json.loads(line)["reason"])
            out.update(_squash(f) for f in found)
    return frozenset(f for f in out if f not in MISSING_WORDS)


def reject_borrowed_reason(reason: str, issue: IssueText) -> None:
    """Raise when ``reason`` is not the model's own reading of the issue.

    Two checks on one squashed copy of the issue text (whitespace and case aside):

    * the whole reason occurs in the issue's title or body (a pre-filled verdict echoed);
    * a finding (``Trigger:``, ``Result:`` or ``Detail:``, in a whole checklist or not)
      repeats a finding of the prompt's own examples (e.g. "add --dry-run") and none of its
      words (3+ characters) is a word of the issue. Seen on the embedded Gemma 3 270M with
      prompt v10: 22 of 56 eval reasons did. A finding the issue supports ("an IndexError" on
      an IndexError report) is kept; a word only inside another ("mode" in "model") is no
      support.

    Raises:
        ModelCopiedInput: the reason is at least ``COPY_MIN_CHARS`` long and occurs in the
            issue (shorter reasons never parse: ``REASON_MIN_CHARS``).
        ModelEchoedPrompt: the reason echoes the prompt instead of describing the issue.
    """
    text = _squash(f"{issue.title}\n{issue.body}")
    squashed = _squash(reason)
    if len(squashed) >= COPY_MIN_CHARS and squashed in text:
        raise ModelCopiedInput("the verdict's reason is copied from the issue text")
    issue_words = _words(text)
    for finding in labelled_findings(reason):
        squashed = _squash(finding)
        if squashed in _example_findings() and not _words(squashed) & issue_words:
            raise ModelEchoedPrompt(f"the reason repeats the prompt's example finding {finding!r}")


@cache
def system_prompt() -> tuple[str, str]:
    """The filled validator system prompt and its version (``validator@SHA8``).

    The SHA covers the prompt text, :data:`~bot.triage.checklist.RULES_VERSION` and
    :data:`~bot.triage.issue_text.TEXT_RULES_VERSION`: the rules applied to the reply, and the
    way the issue is turned into the text the model is sent, change the outcome as much as the
    prompt does."""
    schema = json.dumps(verdict_schema(), separators=(",", ":"))
    text = load_prompt("validator").replace("{schema}", schema)
    return text, prompt_version("validator", f"{text}\n{RULES_VERSION}\n{TEXT_RULES_VERSION}")


@dataclass(frozen=True)
class GateDecision:
    """The gate's outcome for one issue.

    Attributes:
        verdict: ``VALID`` / ``NEEDS_REFINEMENT``, or ``None`` on a fault; the checklist's
            verdict when the reason has the checklist form (:mod:`bot.triage.checklist`).
        label: the gate label this outcome maps to.
        model_verdict: the verdict the model wrote (``None`` on a fault).
        reason: the model's reason, or the fault's message on ``validator-error``.
        error_kind: ``None``, or the fault's ``BotError.kind`` (e.g. ``truncated``).
        model: model name.
        prompt_version: ``validator@SHA8``.
        prompt_tokens: prompt tokens the model evaluated (0 when it was never reached).
        output_tokens: tokens generated.
        model_ms: the model's own time for the call (ms).
        wall_ms: the whole judgement including prompt build and parse (ms).
        issue: the cleaned issue as judged (cut marker and counts included).
    """

    verdict: VerdictValue | None
    label: GateLabel
    reason: str
    error_kind: str | None
    model: str
    prompt_version: str
    prompt_tokens: int
    output_tokens: int
    model_ms: float
    wall_ms: float
    issue: IssueText
    model_verdict: VerdictValue | None = None


class Validator:
    """Judges issues with a :class:`ChatModel`.

    Args:
        model: the backend (Ollama or embedded).
        options: validator role options (temperature 0, ``num_predict`` ≤ 200).
        max_body_chars: longest body judged (characters); longer bodies are cut visibly.
    """

    def __init__(self, model: ChatModel, options: RoleOptions, *, max_body_chars: int) -> None:
        self._model = model
        self._options = options
        self._max_body_chars = max_body_chars

    def messages(self, issue: IssueText, *, nonce: str | None = None) -> list[ChatMessage]:
        """The two chat messages for one issue: stable system prompt, then the delimited issue."""
        system, _ = system_prompt()
        return [
            ChatMessage("system", system),
            ChatMessage("user", delimit_issue(issue, nonce=nonce)),
        ]

    def judge(self, title: str | None, body: str | None) -> GateDecision:
        """Judge one issue. Never raises for model faults: they become ``validator-error``.

        Args:
            title: ``issue.title`` from the payload.
            body: ``issue.body`` from the payload (``None`` when empty).
        """
        started = time.perf_counter()
        issue = prepare_issue(title, body, max_body_chars=self._max_body_chars)
        _, version = system_prompt()
        prompt_tokens = output_tokens = 0
        model_ms = 0.0
        verdict: VerdictValue | None = None
        model_verdict: VerdictValue | None = None
        label, reason, error_kind = VALIDATOR_ERROR, "", None
        try:
            result = self._model.chat(
                self.messages(issue), options=self._options, schema=verdict_schema()
            )
            prompt_tokens, output_tokens = result.prompt_tokens, result.output_tokens
            model_ms = result.duration_ms
            parsed = parse_verdict(result.text)
            reject_borrowed_reason(parsed.reason, issue)
            model_verdict = parsed.verdict
            verdict = checklist_verdict(parsed.reason) or parsed.verdict
            reason = parsed.reason
            label = LABEL_FOR_VERDICT[verdict]
        except ModelError as exc:  # a call that ran without a result still reports its cost
            reason, error_kind = str(exc), exc.kind
            if exc.prompt_tokens:  # else keep a returned reply's figures (unparseable, copied)
                prompt_tokens, output_tokens = exc.prompt_tokens, exc.output_tokens
                model_ms = exc.duration_ms
        return GateDecision(
            verdict=verdict,
            model_verdict=model_verdict,
            label=label,
            reason=reason,
            error_kind=error_kind,
            model=self._model.name,
            prompt_version=version,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            model_ms=model_ms,
            wall_ms=(time.perf_counter() - started) * 1000,
            issue=issue,
        )
