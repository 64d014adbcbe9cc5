"""benchmarks/strip_report.py: a development-set report kept without the issues' words.

The report shape is the one `triage-bot eval --split` writes (bot/evaluation/run.py); the
words are invented here, standing in for another project's issue text.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from bot.evaluation.report import compare_reports, spread_reports

ROOT = Path(__file__).resolve().parents[2]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "strip_report", ROOT / "benchmarks" / "strip_report.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WORDS = "the frobnicator crashes when the widget is empty"


def _report(agree: bool) -> dict[str, object]:
    outcome = {
        "id": "x-1",
        "expected": "VALID",
        "got": "VALID" if agree else "NEEDS_REFINEMENT",
        "agree": agree,
        "borderline": False,
        "reason": f"Found: problem (“{WORDS}”).",
        "model_reason": WORDS,
        "quotes": {"problem": WORDS, "trigger": "", "expected": ""},
        "found": ["problem"],
        "facts": {"prose_words": 8, "trace": False},
        "half": "tune",
    }
    gate = {"items": 1, "agreement": 1.0 if agree else 0.0, "outcomes": [outcome]}
    return {"model": "m.gguf", "gate": gate}


def test_no_word_of_the_issue_is_left_and_every_figure_is() -> None:
    strip = _module().strip_report
    full = _report(True)
    kept = strip(full)
    text = json.dumps(kept)
    assert "frobnicator" not in text
    outcome = kept["gate"]["outcomes"][0]
    assert outcome["quotes"] == {"problem": len(WORDS), "trigger": 0, "expected": 0}
    assert outcome["model_reason"] == len(WORDS)
    assert outcome["found"] == ["problem"]
    assert outcome["facts"] == {
        "prose_words": 8,
        "trace": False,
    }
    assert kept["gate"]["agreement"] == 1.0
    # the full report is not changed in place
    assert full["gate"]["outcomes"][0]["model_reason"] == WORDS  # type: ignore[index]


def test_stripped_reports_still_compare_and_spread() -> None:
    strip = _module().strip_report
    a, b = strip(_report(True)), strip(_report(False))
    assert "100.0%" in compare_reports(a, b)
    assert "x-1" in spread_reports([a, b])


def test_the_command_writes_the_stripped_file(tmp_path: Path) -> None:
    full, kept = tmp_path / "full.json", tmp_path / "kept.json"
    full.write_text(json.dumps(_report(True)), encoding="utf-8")
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "strip_report.py"), str(full), str(kept)],
        check=True,
    )
    assert "frobnicator" not in kept.read_text(encoding="utf-8")
    assert json.loads(kept.read_text(encoding="utf-8"))["gate"]["items"] == 1
