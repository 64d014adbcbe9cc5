"""The contract checker on real replies of the embedded model (tests/data/model_outputs/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.audit.checker import SegmentRef, check_response
from bot.audit.contract import render_sections
from bot.audit.structured import parse_audit_json
from bot.errors import ModelOutputError

FOLDER = Path(__file__).parents[1] / "data" / "model_outputs"
INDEX: list[dict[str, Any]] = json.loads((FOLDER / "index.json").read_text("utf-8"))


@pytest.mark.parametrize("entry", INDEX, ids=[e["file"] for e in INDEX])
def test_real_output_is_rejected_with_the_recorded_violations(entry: dict[str, Any]) -> None:
    text = (FOLDER / entry["file"]).read_text("utf-8")
    if entry["format"] == "json":
        try:
            text = render_sections(parse_audit_json(text).bodies())
        except ModelOutputError:  # the auditor's own code for a reply outside the schema
            assert entry["expected_rules"] == ["json_schema"]
            return
    ref = SegmentRef(entry["path"], entry["start"], entry["end"], entry["code"])
    result = check_response(text, ref)
    assert not result.ok
    assert sorted({v.rule for v in result.violations}) == entry["expected_rules"]


def test_the_table_covers_both_formats() -> None:
    assert {e["format"] for e in INDEX} == {"markdown", "json"}
