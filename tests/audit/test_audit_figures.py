"""CI gates the audit without a model: the embedded default's recorded replies to the CI
segments (``evals/segments-ci.jsonl``), each segment's first reply and its repair reply, go
through the same parsing, checker, repair turn and evidence rule as a live run, and the figures
must be the accepted ones (``evals/audit-figures.json``) and keep its bounds. A checker or
evidence change that moves a figure fails here until the figures are accepted
(``scripts/audit_figures.py --accept``); a change to the audit's prompt or its repair turn fails
until the replies are recorded again for it."""

from __future__ import annotations

import json
import sys

import pytest

from bot.audit.auditor import audit_format
from bot.audit.prompt import repair_version, system_prompt
from bot.config import Settings
from bot.evaluation.replies import load_replies
from bot.evaluation.sets import EvalSegment, load_jsonl
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from audit_figures import ACCEPTED, measure

SETUP = json.loads(ACCEPTED.read_text("utf-8"))
RERECORD = (
    ".venv/bin/triage-bot eval --only audit --segments {segments} --save-replies {replies} "
    "--out /tmp/audit-report.json (the embedded default, no --model-path or --audit-format; "
    "about 20–25 minutes on 2 cores), then .venv/bin/python scripts/audit_figures.py --accept"
)


def test_the_replies_answer_the_current_prompt() -> None:
    """Editing the default format's audit prompt (``bot/prompts/audit.md``, ``audit_json.md``)
    or its repair turn (``repair_json.md``) fails here until the replies are recorded again."""
    replies = load_replies(ROOT / SETUP["replies"])
    fmt = audit_format(Settings())
    current, repair = system_prompt(fmt)[1], repair_version(fmt)
    again = "Record them again: " + RERECORD.format(**SETUP)
    assert replies.prompt_versions == {current}, (
        f"the audit prompt is now {current}; the recorded replies answer "
        f"{sorted(replies.prompt_versions)}. {again}"
    )
    assert replies.repair_versions <= {repair}, (
        f"the repair turn is now {repair}; the recorded repair replies answer "
        f"{sorted(replies.repair_versions)}. {again}"
    )


def test_the_ci_segments_are_a_part_of_the_eval_set_with_defects_pairs_and_clean_code() -> None:
    whole = set((ROOT / "evals" / "segments.jsonl").read_text("utf-8").splitlines())
    part = (ROOT / SETUP["segments"]).read_text("utf-8").splitlines()
    assert set(part) <= whole, "a CI segment is not a line of evals/segments.jsonl"
    segments = load_jsonl(ROOT / SETUP["segments"], EvalSegment)
    ids = {s.id for s in segments}
    assert len(ids) == len(segments)
    assert sum(s.defect for s in segments) >= 10
    assert sum(not s.defect and s.twin_of is None for s in segments) >= 5
    assert {s.twin_of for s in segments if s.twin_of} <= ids  # every twin beside its defect
    assert set(load_replies(ROOT / SETUP["replies"]).by_id) == ids


@pytest.fixture(scope="module")
def now() -> dict[str, object]:
    return measure(ROOT / SETUP["replies"], ROOT / SETUP["segments"])


def test_the_figures_are_the_accepted_ones(now: dict[str, object]) -> None:
    held = ("figures", "outcomes")
    assert {k: now[k] for k in held} == {k: SETUP[k] for k in held}, (
        "the audit's figures moved on the recorded replies: if the change is meant, run "
        ".venv/bin/python scripts/audit_figures.py --accept and say why in the commit"
    )


def test_the_figures_keep_their_bounds(now: dict[str, object]) -> None:
    figures = now["figures"]
    assert isinstance(figures, dict)
    bounds = SETUP["bounds"]
    assert figures["accepted_after_repair"] >= bounds["min_accepted_after_repair"]
    assert figures["fix_recall"] >= bounds["min_fix_recall"]
    assert figures["line_hit"] >= bounds["min_line_hit"]
    assert figures["clean_go"] >= bounds["min_clean_go"]
