"""Every judgment figure the README and the docs show comes from ``evals/figures.json``.

The figure blocks are written by ``scripts/figures.py --write``; a figure in the prose around
them must be one the file, a shipped policy's measurement or the comment bound holds; the runs
the README leads with were measured with the prompt and policies this version ships.
"""

from __future__ import annotations

import importlib.util
import json
import re
from types import ModuleType
from typing import Any

import pytest

from bot.gate.policy import shipped_policies
from bot.gate.validator import system_prompt
from bot.prompts import current_name
from bot.settings_table import SETTINGS
from tests.support import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("figures", ROOT / "scripts" / "figures.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIGURES = _script()
DATA: dict[str, Any] = FIGURES.load()


@pytest.mark.parametrize("name", FIGURES.DOCS)
def test_every_figure_block_is_current(name: str) -> None:
    text = (ROOT / name).read_text("utf-8")
    assert FIGURES.BLOCK.search(text), f"{name} shows no figure block"
    assert FIGURES.rendered(text, DATA) == text, "run: .venv/bin/python scripts/figures.py --write"


def test_the_headline_runs_were_measured_with_what_this_version_ships() -> None:
    runs = FIGURES.runs_by_id(DATA)
    shipped = {p.name: p.version for p in shipped_policies()}
    prompt = current_name(system_prompt()[1])
    for column in DATA["headline_runs"]:
        for run_id in column.values():
            run = runs[run_id]
            assert current_name(run["prompt_version"]) == prompt, run_id
            assert shipped.get(run["policy"]) == run["policy_version"], run_id


def _allowed() -> set[str]:
    """Every share a doc may state in prose: the file's figures, the shipped policies'
    measured figures, and the author comment's bound."""
    shares: list[float] = []
    for run in DATA["runs"]:
        for figures in run["figures"].values():
            for figure in figures.values():
                shares.append(figure["k"] / figure["n"] if "k" in figure else figure["share"])
    for policy in shipped_policies():
        if policy.measured is not None:
            for half in (policy.measured.tune, policy.measured.check):
                shares += [v for v in half.model_dump().values() if isinstance(v, float)]
    bound = next(s for s in SETTINGS if s.name == "comment_min_precision").default
    shares.append(float(bound))
    return {f"{s * 100:.0f}%" for s in shares} | {f"{s * 100:.1f}%" for s in shares}


_OUTSIDE = re.compile(r"<!-- figures:[a-z-]+ -->.*?<!-- /figures -->|```.*?```|`[^`\n]*`", re.S)
"""Figure blocks, code blocks and code spans (an example of a format is not a figure)."""


@pytest.mark.parametrize("name", FIGURES.DOCS)
def test_a_figure_in_the_prose_is_one_the_file_holds(name: str) -> None:
    prose = _OUTSIDE.sub("", (ROOT / name).read_text("utf-8"))
    stated = set(re.findall(r"\b\d+(?:\.\d)?%", prose)) - {"95%"}  # the intervals' level
    assert stated <= _allowed(), f"{name}: figures no run in evals/figures.json holds"


def test_every_run_says_what_it_was_measured_with() -> None:
    for run in DATA["runs"]:
        for key in ("id", "title", "set", "model", "runtime", "prompt_version", "policy",
                    "policy_version", "command", "figures"):  # fmt: skip
            assert run.get(key), (run.get("id"), key)
        for figures in run["figures"].values():
            for figure in figures.values():
                assert ("k" in figure and 0 <= figure["k"] <= figure["n"]) or (
                    "share" in figure and figure["note"]
                ), run["id"]
    assert json.loads((ROOT / "evals" / "figures.json").read_text("utf-8")) == DATA
