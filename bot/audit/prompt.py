"""Audit prompts: the stable system prompt per format, the delimited segment, the repair turn.

The system prompt is the same for every segment, so its prefix stays cached. Code is untrusted:
its ``<untrusted-code`` tags are escaped, and the opening tag carries a per-request nonce.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from functools import cache
from typing import Literal

from bot.audit.contract import (
    CATEGORIES,
    SECTIONS,
    Section,
    Violation,
    heading,
    one_of,
    verdict_guide,
)
from bot.audit.enclosing import Context
from bot.audit.selection import Segment
from bot.audit.structured import AuditJSON
from bot.chat import ChatMessage, structured_output_schema
from bot.neutralise import escape_delimiters
from bot.prompts import load_prompt, prompt_version

__all__ = [
    "CONTEXT_MARK",
    "AuditFormat",
    "number_lines",
    "repair_message",
    "repair_version",
    "segment_message",
    "system_prompt",
]

AuditFormat = Literal["markdown", "json"]
CODE_TAG = "untrusted-code"


@cache
def system_prompt(fmt: AuditFormat) -> tuple[str, str]:
    """The filled system prompt and its version ``audit-FORMAT@SHA8``, a hash of the text."""
    described = "\n".join(f"{heading(s)}\n<{s.rule}>" for s in SECTIONS)
    if fmt == "markdown":
        tail = load_prompt("audit_markdown").replace("{sections}", described)
    else:
        keyed = "\n".join(f"- {s.key}: {s.rule}" for s in SECTIONS)
        schema = json.dumps(structured_output_schema(AuditJSON), separators=(",", ":"))
        tail = load_prompt("audit_json").replace("{sections}", keyed).replace("{schema}", schema)
    text = (
        load_prompt("audit")
        .replace("{categories}", one_of(CATEGORIES))
        .replace("{verdicts}", verdict_guide())
        .replace("{format}", tail)
    )
    return text, prompt_version(f"audit-{fmt}", text)


def _field_name(section: Section) -> str:
    return f'"{section.key}"'


def number_lines(lines: Sequence[str], start: int) -> str:
    """``NUMBER | text`` rows, numbered from ``start`` as in the file."""
    width = len(str(start + len(lines) - 1))
    return "\n".join(f"{start + i:>{width}} | {line}" for i, line in enumerate(lines))


CONTEXT_MARK = ":"
"""The separator of a context row (``NUMBER : text``): shown, not audited."""


def _numbered(segment: Segment, lines: Sequence[str], context: Context | None) -> str:
    """Audited rows as ``NUMBER | text``; context rows around them as ``NUMBER : text``."""
    if context is None:
        return number_lines(lines, segment.start)
    width = len(str(context.end))
    return "\n".join(
        f"{n:>{width}} {'|' if segment.start <= n <= segment.end else CONTEXT_MARK} {text}"
        for n, text in enumerate(context.lines, start=context.start)
    )


def segment_message(
    segment: Segment,
    lines: Sequence[str],
    *,
    nonce: str | None = None,
    context: Context | None = None,
) -> ChatMessage:
    """The user message: the segment's lines, numbered and delimited as untrusted data.

    With ``context``, the enclosing block is shown around them, marked, and the bot says which
    rows are audited. ``nonce`` is random when ``None``.
    """
    tag_id = nonce or secrets.token_hex(4)
    body = escape_delimiters(_numbered(segment, lines, context), CODE_TAG)
    path = escape_delimiters(segment.path, CODE_TAG).replace('"', "'")
    shown = "" if context is None else f' context="{context.start}-{context.end}"'
    lead = (
        ""
        if context is None
        else (
            f"Audit lines {segment.start}-{segment.end} (rows 'N | code'). The rows "
            f"'N {CONTEXT_MARK} code' are the enclosing block, shown only so you can read "
            f"them: a defect must be on an audited line.\n"
        )
    )
    return ChatMessage(
        "user",
        f'{lead}<{CODE_TAG} id="{tag_id}" path="{path}" lines="{segment.start}-{segment.end}"'
        f"{shown}>\n{body}\n</{CODE_TAG}>",
    )


def _repair_name(fmt: AuditFormat) -> str:
    return "repair" if fmt == "markdown" else "repair_json"


def repair_version(fmt: AuditFormat) -> str:
    """The repair turn's version ``repair-FORMAT@SHA8``, a hash of its prompt file's text."""
    return prompt_version(f"repair-{fmt}", load_prompt(_repair_name(fmt)))


def repair_message(violations: Sequence[Violation], fmt: AuditFormat) -> ChatMessage:
    """The repair turn: quotes every violation and asks for the whole corrected response."""
    messages = [v.message if fmt == "markdown" else v.worded(_field_name) for v in violations]
    listed = "\n".join(f"- {m}" for m in messages)
    text = load_prompt(_repair_name(fmt)).replace("{violations}", listed)
    return ChatMessage("user", text.replace("{first_heading}", heading(SECTIONS[0])))
