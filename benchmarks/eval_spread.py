"""Run-to-run spread of the eval (issue "Eval gate"): `.venv/bin/python benchmarks/eval_spread.py
REPORT.json REPORT.json [...]`.

Takes two or more JSON reports of one configuration (`triage-bot eval --out`, same prompt, model
and sets) and prints each headline metric's min, mean and max, then the gate items whose outcome
differed between runs. The validator is greedy (temperature 0), but the `<issue id>` nonce is
random per call, so runs differ by an item or two: a goal met by one item in one run is only
met when the spread says so. `--runs N` first makes N fresh gate runs with `--model-path`
(about 11 minutes each for Qwen2.5-Coder 1.5B on 2 cores), keeps their reports in `--out-dir`
(default `eval-spread/`) and adds them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from bot.cli import main  # noqa: E402
from bot.evaluation.report import spread_reports  # noqa: E402


def fresh_runs(count: int, model_path: Path | None, out_dir: Path) -> list[Path]:
    """Make ``count`` gate runs with the CLI; return their report paths."""
    paths = []
    for n in range(count):
        out = out_dir / f"run{n + 1}.json"
        args = ["eval", "--only", "gate", "--out", str(out)]
        if model_path is not None:
            args += ["--model-path", str(model_path)]
        result = CliRunner().invoke(main, args)
        if result.exit_code != 0:
            raise SystemExit(f"eval run {n + 1} failed ({result.exit_code}): {result.output}")
        print(f"run {n + 1}: {out}", file=sys.stderr)
        paths.append(out)
    return paths


def load_report(path: Path, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """One JSON report; a missing, unreadable or non-JSON file is a usage error (exit 2)."""
    try:
        report = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        parser.error(f"{path}: not a readable JSON report ({exc})")
    if not isinstance(report, dict):
        parser.error(f"{path}: not a JSON report (expected an object)")
    return report


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path, help="JSON reports of earlier runs")
    parser.add_argument("--runs", type=int, default=0, help="fresh gate runs to add first")
    parser.add_argument("--model-path", type=Path, help="GGUF for the fresh runs")
    parser.add_argument("--out-dir", type=Path, default=Path("eval-spread"))
    args = parser.parse_args()
    if len(args.reports) + args.runs < 2:
        parser.error("give at least two reports in all (REPORT … and/or --runs N)")
    reports = [load_report(path, parser) for path in args.reports]  # before any long run
    if args.runs:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    fresh = fresh_runs(args.runs, args.model_path, args.out_dir)
    reports += [load_report(path, parser) for path in fresh]
    try:
        text = spread_reports(reports)
    except ValueError as exc:
        parser.error(str(exc))
    for n, path in enumerate([*args.reports, *fresh], 1):
        print(f"run {n}: {path}")
    print(text)


if __name__ == "__main__":
    main_()
