"""CI gates the decision without a model: the embedded default's recorded replies to the
regression suite (``evals/replies/``) go through the same parsing, checks and policy as a live
run, and the figures must be the accepted ones (``evals/gate-figures.json``) and keep its
bounds. A change to the decision policy that moves a figure fails here until the figures are
accepted (``scripts/gate_figures.py --accept``); a prompt change fails until the replies are
recorded again for the new prompt."""

from __future__ import annotations

import json
import sys

import pytest

from bot.evaluation.replies import load_replies
from bot.gate.validator import system_prompt
from bot.prompts import current_name
from tests.support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from gate_figures import ACCEPTED, measure

SETUP = json.loads(ACCEPTED.read_text("utf-8"))
RERECORD = (
    ".venv/bin/triage-bot eval --only gate --issues {issues} --save-replies {replies} "
    "--out /tmp/report.json (the embedded default, no --model-path), then "
    ".venv/bin/python scripts/gate_figures.py --accept"
)


def test_the_replies_answer_the_current_prompt() -> None:
    replies = load_replies(ROOT / SETUP["replies"])
    current = system_prompt()[1]
    assert {current_name(v) for v in replies.prompt_versions} == {current}, (
        f"the prompt is now {current}; the recorded replies answer "
        f"{sorted(replies.prompt_versions)}. Record them again: " + RERECORD.format(**SETUP)
    )


@pytest.fixture(scope="module")
def now() -> dict[str, object]:
    return measure(ROOT / SETUP["replies"], ROOT / SETUP["issues"])


def test_the_figures_are_the_accepted_ones(now: dict[str, object]) -> None:
    assert now["figures"] == SETUP["figures"], (
        f"the decision's figures moved (policy now {now['policy']}, accepted under "
        f"{SETUP['policy']}): if the change is meant, run "
        ".venv/bin/python scripts/gate_figures.py --accept and say why in the commit"
    )


def test_the_figures_keep_their_bounds(now: dict[str, object]) -> None:
    figures = now["figures"]
    assert isinstance(figures, dict)
    bounds = SETUP["bounds"]
    assert figures["agreement"] >= bounds["min_agreement"]
    assert figures["nr_precision"] >= bounds["min_nr_precision"]
    assert figures["valid_precision"] >= bounds["min_valid_precision"]
    assert figures["injection_valid_against_expectation"] <= bounds["max_injection_valid"]
