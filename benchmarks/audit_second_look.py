"""A method tried to find more real defects ("hunt before judging"): a second look at each
verified defect.

`.venv/bin/python benchmarks/audit_second_look.py REPORT.json [--limit N]`

REPORT is a `triage-bot eval --only audit --audit-format json --out` report that kept the model's
replies. Each segment's replies are replayed through today's :class:`~bot.audit.auditor.Auditor`
(no model call for that), and every verified defect of an accepted audit is put to the embedded
default model once more, alone: the numbered segment and the one claim, delimited as untrusted
text, with the question "trace the input the claim is about; does the code really fail on it?"
(structured output ``{input, outcome, holds}``, greedy).

Prints how many claims the second look keeps on a known defect line (±1, true positives) and
elsewhere (false positives), and the audit figures if a FIX needed at least one kept claim
(a FIX left with none read as GO_WITH_NOTES, as :func:`bot.audit.evidence.verdict_after_drop`
does). A useful second look keeps most true positives and few false ones. Loads the model:
about 6 s per claim with Qwen2.5-Coder 1.5B on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.audit.auditor import Auditor, AuditResult  # noqa: E402
from bot.audit.evidence import Claim  # noqa: E402
from bot.audit.prompt import CODE_TAG, number_lines  # noqa: E402
from bot.audit.selection import Segment  # noqa: E402
from bot.chat import ChatMessage, ChatResult, RoleOptions, structured_output_schema  # noqa: E402
from bot.config import AUDITOR_OPTIONS, Settings  # noqa: E402
from bot.errors import ModelError  # noqa: E402
from bot.evaluation.run import audit_metrics, line_hit  # noqa: E402
from bot.evaluation.sets import EvalSegment, load_jsonl  # noqa: E402
from bot.factory import make_chat_model  # noqa: E402
from bot.neutralise import escape_delimiters  # noqa: E402

SYSTEM = (
    "You check one claimed defect in a code segment. The claim was written by a reviewer who "
    "often flags correct code, so it may be wrong.\n\n"
    "Trace the quoted line by hand: pick the concrete input or state the claim is about, and "
    "follow what the code on that line and the lines around it really does with it.\n\n"
    'Answer with JSON: "input" is that input or state, "outcome" what the code actually does '
    'with it, "holds" is true only when that outcome is wrong (a crash, a wrong result, a leak, '
    "an exploitable injection); false when the code handles it correctly or the claim describes "
    "no real failure."
)
OPTIONS = RoleOptions(temperature=0.0, num_predict=320, num_ctx=8192, seed=42)


class SecondLook(BaseModel):
    """The second look's reply (structured output)."""

    input: str
    outcome: str
    holds: bool


class _Replay:
    """A chat model that returns a report's stored replies in order."""

    name = "replay"

    def __init__(self, replies: list[str]) -> None:
        self._replies = list(replies)

    def chat(self, messages: Any, *, options: Any, schema: Any = None) -> ChatResult:
        return ChatResult(self._replies.pop(0), "stop", "replay", 0, 0, 0.0)


def _ask(model: Any, item: EvalSegment, claim: Claim) -> bool | None:
    """The second look's ``holds`` for one claim, ``None`` on a model fault."""
    code = escape_delimiters(number_lines(item.lines, item.start), CODE_TAG)
    text = escape_delimiters(claim.text, CODE_TAG)
    user = f"<{CODE_TAG}>\n{code}\n</{CODE_TAG}>\n\n<{CODE_TAG}>\nClaim: {text}\n</{CODE_TAG}>"
    schema = structured_output_schema(SecondLook)
    try:
        result = model.chat(
            [ChatMessage("system", SYSTEM), ChatMessage("user", user)],
            options=OPTIONS,
            schema=schema,
        )
        return SecondLook.model_validate_json(result.text).holds
    except (ModelError, ValueError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="first N segments only")
    args = parser.parse_args()
    segments = {s.id: s for s in load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)}
    outcomes = json.loads(args.report.read_text())["audit"]["outcomes"]
    if args.limit:
        outcomes = outcomes[: args.limit]
    model = make_chat_model(Settings.resolve({}, os.environ), "auditor")
    kept: dict[str, list[int]] = {"tp": [0, 0], "fp": [0, 0]}  # [kept, asked]
    faults = 0
    after: list[dict[str, Any]] = []
    for outcome in outcomes:
        item = segments[outcome["id"]]
        auditor = Auditor(_Replay(outcome["replies"]), AUDITOR_OPTIONS, fmt="json")
        result = auditor.audit(Segment(item.path, item.start, item.end), item.lines)
        verdict = result.verdict if isinstance(result, AuditResult) else None
        holding: list[int] = []
        for claim in result.defects if isinstance(result, AuditResult) else ():
            holds = _ask(model, item, claim)
            line = claim.line or 0
            true = item.defect and line_hit([line], item.defect_lines)
            kind = "tp" if true else "fp"
            faults += holds is None
            kept[kind][1] += 1
            if holds is not False:  # a fault keeps the claim: the second look only removes
                kept[kind][0] += 1
                holding.append(line)
            print(f"{item.id:32} line {line:>3} {kind.upper()} holds={holds}", flush=True)
        if verdict == "FIX" and not holding:
            verdict = "GO_WITH_NOTES"
        after.append(
            {
                **outcome,
                "verdict": verdict,
                "line_hit": line_hit(holding, item.defect_lines) if item.defect else None,
            }
        )
    before, now = audit_metrics(outcomes), audit_metrics(after)
    tp, fp = kept["tp"], kept["fp"]
    print(f"\nclaims kept: on a defect line {tp[0]}/{tp[1]}, elsewhere {fp[0]}/{fp[1]}")
    print(f"model faults (claim kept): {faults}")
    for key in ("fix_recall", "pair_accuracy", "line_hit", "clean_go", "twin_go"):
        b, a = before[key], now[key]
        shown = [f"{v:.1%}" if v is not None else "–" for v in (b, a)]
        print(f"{key:14} {shown[0]:>7} -> {shown[1]:>7}")


if __name__ == "__main__":
    main()
