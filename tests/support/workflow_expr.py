"""The example workflow's concurrency, evaluated for a webhook payload (no commenter may cancel
a queued audit), and the action's run-step env, evaluated for its inputs.

A small evaluator of the expression forms the workflow uses (`a || b`, `a == 'b'`, context
paths, literals), shared by tests/action/test_workflow_concurrency.py and the reliability rows; and
:func:`evaluate`, which adds `&&` and parentheses (GitHub's precedence: `==`, then `&&`, then
`||`; `&&` and `||` return an operand, as in GitHub's expressions) over a flat context.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.support import ROOT

__all__ = ["WORKFLOW", "concurrency", "evaluate"]

WORKFLOW = ROOT / ".github" / "workflows" / "triage.yml"


def _value(expression: str, event_name: str, payload: dict[str, Any]) -> Any:
    """Evaluate `path`, `'literal'`, `a == b` and `a || b || c` over the github context."""
    expression = expression.strip()
    if "||" in expression:
        for operand in expression.split("||"):
            value = _value(operand, event_name, payload)
            if value not in (None, "", 0, False):
                return value
        return value
    if "==" in expression:
        left, right = expression.split("==")
        return _value(left, event_name, payload) == _value(right, event_name, payload)
    if re.fullmatch(r"'[^']*'", expression):
        return expression[1:-1]
    if expression == "github.event_name":
        return event_name
    assert expression.startswith("github.event."), f"the evaluator does not know {expression}"
    value: Any = payload
    for key in expression.removeprefix("github.event.").split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _render(template: Any, event_name: str, payload: dict[str, Any]) -> Any:
    if not isinstance(template, str):
        return template
    whole = re.fullmatch(r"\$\{\{(.*?)\}\}", template.strip())
    if whole:
        return _value(whole.group(1), event_name, payload)

    def text(match: re.Match[str]) -> str:
        value = _value(match.group(1), event_name, payload)
        assert value not in (None, ""), f"{match.group(0)} is empty for {event_name}"
        return str(value)

    return re.sub(r"\$\{\{(.*?)\}\}", text, template)


def concurrency(event_name: str, payload: dict[str, Any]) -> tuple[str, bool]:
    """The ``(group, cancel-in-progress)`` GitHub would compute for this event."""
    spec = yaml.safe_load(WORKFLOW.read_text("utf-8"))["concurrency"]
    group = _render(spec["group"], event_name, payload)
    cancel = _render(spec.get("cancel-in-progress", False), event_name, payload)
    assert isinstance(cancel, bool), cancel
    return group, cancel


def _top_level(expression: str, operator: str) -> list[str]:
    """``expression`` split at ``operator`` outside quotes and parentheses."""
    parts, depth, quoted, start, at = [], 0, False, 0, 0
    while at < len(expression):
        ch = expression[at]
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        elif not quoted and depth == 0 and expression.startswith(operator, at):
            parts.append(expression[start:at])
            start = at = at + len(operator)
            continue
        at += 1
    return [*parts, expression[start:]]


def _truthy(value: Any) -> bool:
    return value not in (None, "", 0, False)


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    """Evaluate ``${{ … }}``'s inside over ``context`` (``inputs.token`` → value …)."""
    expression = expression.strip()
    if (alternatives := _top_level(expression, "||"))[1:]:
        values = [evaluate(a, context) for a in alternatives]
        return next((v for v in values if _truthy(v)), values[-1])
    if (conjuncts := _top_level(expression, "&&"))[1:]:
        value: Any = None
        for conjunct in conjuncts:
            value = evaluate(conjunct, context)
            if not _truthy(value):
                return value
        return value
    if (sides := _top_level(expression, "=="))[1:]:
        left, right = sides
        return evaluate(left, context) == evaluate(right, context)
    if expression.startswith("(") and expression.endswith(")"):
        return evaluate(expression[1:-1], context)
    if re.fullmatch(r"'[^']*'", expression):
        return expression[1:-1]
    assert expression in context, f"the evaluator does not know {expression}"
    return context[expression]
