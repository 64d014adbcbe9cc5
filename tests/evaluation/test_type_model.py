"""``triage-bot types fit`` and ``triage-bot eval --only types``: what they print, write and
refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.cli import main
from bot.types.model_file import load_type_model
from tests.support.type_rows import made_up_rows, write_rows


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Result]:
    folder = tmp_path_factory.mktemp("types")
    rows = made_up_rows(12) + made_up_rows(12, seed=9, repo="other/repo")
    issues = write_rows(folder / "rows.jsonl", rows)
    out = folder / "types.json"
    result = _run(
        "types", "fit", "--issues", str(issues), "--repo", "acme/widgets", "--out", str(out)
    )
    return issues, out, result


def test_types_fit_prints_the_figures_and_writes_the_model(
    fitted: tuple[Path, Path, Result],
) -> None:
    _, out, result = fitted
    assert result.exit_code == 0, result.output
    model = load_type_model(out)
    assert model.repo == "acme/widgets"
    assert model.figures.rows == 36  # the other repository's rows left out
    lines = result.output.splitlines()
    assert "5-fold cross-validated, 36 rows" in result.output
    for kind in ("bug", "feature", "question"):
        scores = model.figures.per_type[kind]
        (line,) = [line for line in lines if line.startswith(f"│ {kind} ")]
        cells = [c.strip() for c in line.strip("│").split("│")]
        threshold = model.thresholds[kind]
        assert cells[3] == f"{scores.f1:.3f}"
        assert cells[4] == ("none" if threshold is None else f"{threshold:.2f}")
        assert cells[6] == f"{scores.threshold_coverage:.1%}"
    assert f"macro-F1 {model.figures.macro_f1:.3f}; at the thresholds (precision bound 90%" in (
        result.output
    )
    assert f"written to {out} ({out.stat().st_size:,} bytes)" in result.output
    assert "Next: commit it and name it in .github/triage-bot.yml" in result.output


def test_types_fit_refuses_too_few_rows_a_missing_repo_and_a_bad_line(tmp_path: Path) -> None:
    out = tmp_path / "types.json"
    few = write_rows(tmp_path / "few.jsonl", made_up_rows(9))
    result = _run("types", "fit", "--issues", str(few), "--out", str(out))
    assert result.exit_code == 2
    assert "27 type row(s): a model needs at least 30" in result.output
    assert not out.exists()
    rows = write_rows(tmp_path / "rows.jsonl", made_up_rows(12))
    result = _run("types", "fit", "--issues", str(rows), "--repo", "no/such", "--out", str(out))
    assert result.exit_code == 2
    assert "no row of --repo no/such" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "title": "t", "body": "b", "type": "chore"}\n', "utf-8")
    result = _run("types", "fit", "--issues", str(bad), "--out", str(out))
    assert result.exit_code == 2
    assert f"--issues {bad}:1: not a valid TypeRow: type:" in result.output
    assert "chore" not in result.output
    result = _run("types", "fit", "--issues", str(rows), "--out", str(tmp_path / "no" / "x.json"))
    assert result.exit_code == 2
    assert "does not exist" in result.output
    result = _run("types", "fit", "--issues", str(rows), "--repo", "not a repo", "--out", str(out))
    assert result.exit_code == 2
    assert "--repo must be OWNER/NAME" in result.output


def test_eval_only_types_reports_each_row_and_the_figures(
    fitted: tuple[Path, Path, Result], tmp_path: Path
) -> None:
    _, model_path, _ = fitted
    issues = write_rows(tmp_path / "later.jsonl", made_up_rows(6, seed=21))
    report_path = tmp_path / "report.json"
    result = _run(
        "eval", "--only", "types", "--issues", str(issues), "--types-model", str(model_path),
        "--out", str(report_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(report_path.read_text("utf-8"))
    section = report["types"]
    assert section["items"] == 18
    assert set(section["per_type"]) == {"bug", "feature", "question"}
    assert set(section["per_type"]["bug"]) == {
        "precision", "recall", "f1", "threshold", "labelled", "precision_at_threshold",
        "coverage_at_threshold",
    }  # fmt: skip
    model = load_type_model(model_path)
    rows = made_up_rows(6, seed=21)
    guesses = model.guesses([(r.title, r.body) for r in rows])
    assert section["outcomes"] == [
        {
            "id": r.id,
            "expected": r.type,
            "got": g.type,
            "confidence": g.confidence,
            "labelled": g.clears,
        }
        for r, g in zip(rows, guesses, strict=True)
    ]
    right = sum(1 for o in section["outcomes"] if o["got"] == o["expected"])
    assert right >= 15  # the made-up types are easy
    f1s = [s["f1"] for s in section["per_type"].values()]
    assert section["macro_f1"] == pytest.approx(sum(f1s) / 3)
    assert f"macro-F1 {section['macro_f1']:.3f}" in result.output
    assert f"report written to {report_path}" in result.output


def test_eval_only_types_refuses_a_broken_model_with_exit_2(
    fitted: tuple[Path, Path, Result], tmp_path: Path
) -> None:
    issues = write_rows(tmp_path / "rows.jsonl", made_up_rows(3))
    out = tmp_path / "report.json"
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "triage-bot-types", "version": 1, "types": []}', "utf-8")
    result = _run(
        "eval", "--only", "types", "--issues", str(issues), "--types-model", str(broken),
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 2
    assert f"type model {broken}: not a valid model" in result.output
    assert not out.exists()
    result = _run("eval", "--only", "types", "--issues", str(issues), "--out", str(out))
    assert result.exit_code == 2
    assert "needs --types-model" in result.output
    pickle = tmp_path / "model.pkl"
    pickle.write_bytes(b"\x80\x04\x95cos\nsystem\n")
    result = _run(
        "eval", "--only", "types", "--issues", str(issues), "--types-model", str(pickle),
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "not JSON" in result.output
