"""Fuzzing figures (the CommonMark oracle included):
`.venv/bin/python benchmarks/fuzz.py [--examples N]`.

Runs ``tests/reliability/test_fuzz.py`` and the oracle properties (``tests/test_neutralise.py``,
``tests/security/test_posting.py``) in a fresh ``python -m pytest`` process with
``TRIAGE_FUZZ_EXAMPLES=N`` (default 10,000 examples per property, the ``bench`` profile) and
prints, per target: the examples actually run (counted inside each property and written to a
JSON report at module teardown), how many of those the target accepted, hypothesis's own count
of passing examples (``--hypothesis-show-statistics``, as a cross-check), the result and the
seconds (both from pytest's JUnit XML). :func:`rows` gives the same results as
``(case, expected, observed)`` strings for the reliability table (``benchmarks/reliability.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_EXAMPLES = 10_000
TEST_FILES = (
    "tests/reliability/test_fuzz.py",
    "tests/test_neutralise.py",
    "tests/security/test_posting.py",
)
TARGETS: dict[str, tuple[str, str | None]] = {
    "test_fuzz_verdict_parser": ("verdict parser", "verdict"),
    "test_fuzz_contract_checker": ("contract checker", "contract"),
    "test_fuzz_command_parser": ("command parser", "commands"),
    "test_fuzz_selection": ("segment selection", "selection"),
    "test_fuzz_range_and_path_rules": ("range and path rules", "ranges"),
    # every sink and every posting place against the CommonMark oracle
    "test_inline_text_is_inert_anywhere_in_a_paragraph": ("oracle: inline text inert", None),
    "test_inline_text_shows_the_authors_text_whole": ("oracle: inline text whole", None),
    "test_table_cells_stay_cells": ("oracle: table cells stay cells", None),
    "test_code_span_shows_exactly_the_text": ("oracle: code span exact", None),
    "test_a_block_cannot_escape_the_bots_details": ("oracle: block stays in <details>", None),
    "test_a_block_keeps_every_word": ("oracle: block keeps every word", None),
    "test_code_block_holds_every_line": ("oracle: code block holds", None),
    "test_html_text_is_text_in_a_summary": ("oracle: <summary> text", None),
    "test_log_value_is_one_line_without_commands_and_loses_nothing": ("stdout: log value", None),
    "test_the_pr_comment_keeps_its_structure_whatever_the_text": ("oracle: PR comment", None),
    "test_the_history_reply_is_one_code_block": ("oracle: /audit_history reply", None),
    "test_step_summaries_render_only_the_bots_markup": ("oracle: step summaries", None),
    "test_the_plan_on_stdout_holds_no_workflow_command": ("stdout: dry-run plan", None),
    "test_the_audit_range_refusal_is_one_inert_paragraph": ("oracle: /audit refusal", None),
    "test_a_command_reply_on_stdout_holds_no_workflow_command": ("stdout: command reply", None),
}
"""Test function → (target as printed, counter key in the JSON report; ``None``: the examples
are hypothesis's own count of passing examples)."""

_STATS_TEST = re.compile(r"^\S*::(test_\w+):\s*$")
_STATS_PASSING = re.compile(r"^\s*- (\d+) passing")


@dataclass(frozen=True)
class TargetResult:
    """One fuzz target's run: examples run and accepted, hypothesis's count, outcome, time."""

    target: str
    examples: int
    accepted: int
    hypothesis_passing: int | None
    result: str
    seconds: float


def _junit(path: Path) -> dict[str, tuple[str, float, str]]:
    """Test name → (``passed``/``failed``/``error``/``skipped``, seconds, first message line)."""
    out: dict[str, tuple[str, float, str]] = {}
    if not path.exists():
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = "failed" if tag == "failure" else tag
                lines = (node.get("message") or "").strip().splitlines()
                message = lines[0][:100] if lines else ""
                break
        out[case.get("name", "")] = (outcome, float(case.get("time", 0.0)), message)
    return out


def _hypothesis_passing(stdout: str) -> dict[str, int]:
    """Test name → passing examples, from hypothesis's statistics block."""
    counts: dict[str, int] = {}
    current = None
    for line in stdout.splitlines():
        test = _STATS_TEST.match(line)
        if test:
            current = test.group(1)
            continue
        passing = _STATS_PASSING.match(line)
        if passing and current is not None:
            counts[current] = counts.get(current, 0) + int(passing.group(1))
    return counts


def run_fuzz(examples: int = DEFAULT_EXAMPLES) -> tuple[list[TargetResult], int, str]:
    """Run the fuzz suite with ``examples`` per property in a subprocess.

    Returns:
        (one :class:`TargetResult` per target, pytest's exit code, pytest's output tail).
    """
    with tempfile.TemporaryDirectory() as tmp:
        report, junit = Path(tmp) / "counts.json", Path(tmp) / "junit.xml"
        env = dict(os.environ, TRIAGE_FUZZ_EXAMPLES=str(examples), TRIAGE_FUZZ_REPORT=str(report))
        proc = subprocess.run(
            [
                sys.executable, "-m", "pytest", "-q", *TEST_FILES, "-p", "no:cacheprovider",
                "--hypothesis-show-statistics", f"--junitxml={junit}",
            ],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        counts = json.loads(report.read_text("utf-8")) if report.exists() else {}
        cases = _junit(junit)
    stats = _hypothesis_passing(proc.stdout)
    results = []
    for test, (target, key) in TARGETS.items():
        outcome, seconds, message = cases.get(test, ("not run", 0.0, ""))
        counted = stats.get(test, 0) if key is None else counts.get("runs", {}).get(key, 0)
        results.append(
            TargetResult(
                target=target,
                examples=counted,
                accepted=counted if key is None else counts.get("accepted", {}).get(key, 0),
                hypothesis_passing=stats.get(test),
                result=f"{outcome}: {message}" if message else outcome,
                seconds=seconds,
            )
        )
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    return results, proc.returncode, tail


def _observed(result: TargetResult) -> str:
    verdict = "no crash, no rule broken" if result.result == "passed" else result.result
    return f"{result.examples} examples, {verdict}"


def rows(
    examples: int = DEFAULT_EXAMPLES, results: list[TargetResult] | None = None
) -> list[tuple[str, str, str]]:
    """The fuzz results as ``(case, expected, observed)`` strings for the reliability table.

    Runs the suite with ``examples`` per property unless ``results`` of a run are passed in.
    ``observed`` carries the examples actually run, so a short run never reads as a full one.
    """
    if results is None:
        results, _, _ = run_fuzz(examples)
    return [
        (
            f"fuzz {r.target}",
            f"{examples} examples, no crash, no rule broken",
            _observed(r),
        )
        for r in results
    ]


def main() -> None:
    """Run the fuzz suite once and print the table."""
    parser = argparse.ArgumentParser(description="Fuzz the parsers and rules.")
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES, help="per property")
    args = parser.parse_args()
    results, code, tail = run_fuzz(args.examples)
    print(f"== Fuzzing: {args.examples:,} examples per property (hypothesis, profile 'bench')")
    header = f"{'target':34s} {'examples run':>12s} {'accepted':>9s} {'hyp. passing':>12s}"
    print(f"{header} {'seconds':>8s}  result")
    for r in results:
        passing = "?" if r.hypothesis_passing is None else str(r.hypothesis_passing)
        print(
            f"{r.target:34s} {r.examples:>12,} {r.accepted:>9,} {passing:>12s} "
            f"{r.seconds:>8.1f}  {r.result}"
        )
    total = sum(r.examples for r in results)
    print(f"{'total':34s} {total:>12,}   (pytest exit code {code})")
    print("accepted: inputs the target accepted; the property re-checks each against the rule.")
    if code != 0:
        print("\npytest output (tail):\n" + tail)
    print("\n== As reliability rows")
    for case, expected, observed in rows(args.examples, results):
        mark = "ok  " if observed == expected else "FAIL"
        print(f"{mark} {case}: {observed}")


if __name__ == "__main__":
    main()
