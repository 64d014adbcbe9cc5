"""``triage-bot types fit`` and ``triage-bot eval --only types``: a type model fitted on type
rows and written, or applied to them and measured; the figures as a table."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.errors import ConfigError
from bot.evaluation.sets import load_jsonl
from bot.neutralise import log_value
from bot.regular_file import check_output, write_output
from bot.repo_file import TypeName
from bot.types.model_file import TypeModel, load_type_model, write_type_model
from bot.types.rows import TypeRow
from bot.types.scores import Prediction, at_thresholds, macro_f1, type_scores

__all__ = ["run_types_eval", "run_types_fit", "types_report"]


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _threshold(value: float | None) -> str:
    return "none" if value is None else f"{value:.2f}"


def _table(title: str, rows: Sequence[Sequence[str]]) -> str:
    table = Table(title=title, title_justify="left")
    for column in ("type", "precision", "recall", "F1", "threshold", "precision at it", "coverage"):
        table.add_column(column, justify="left" if column == "type" else "right")
    for row in rows:
        table.add_row(*row)
    out = io.StringIO()
    Console(file=out, width=100, color_system=None, legacy_windows=False).print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().strip("\n").splitlines())


def _load_rows(path: Path, repo: str | None) -> list[TypeRow]:
    rows = load_jsonl(path, TypeRow, what="--issues")
    if repo is None:
        return rows
    kept = [row for row in rows if (row.repo or "").lower() == repo.lower()]
    if not kept:
        raise ConfigError(f"--issues {path}: no row of --repo {log_value(repo)}")
    return kept


def run_types_fit(flags: Mapping[str, Any]) -> str:
    """``types fit``: fit, measure and write the model; return the text to print.

    Raises:
        ConfigError: unreadable rows, too few of them, or an output that cannot be written
            (checked before fitting).
    """
    from rich.progress import Progress

    from bot.types.fit import FOLDS, fit_type_model

    out: Path = flags["out"]
    repo: str | None = flags.get("repo")
    check_output(out, what="--out")
    rows = _load_rows(flags["issues_path"], repo)
    with Progress(transient=True) as progress:
        task = progress.add_task("fitting", total=FOLDS * (FOLDS + 1) + 1)
        result = fit_type_model(
            rows,
            min_precision=flags["min_precision"],
            repo=repo,
            on_fit=lambda: progress.advance(task),
        )
    size = write_type_model(out, result.model)
    model = result.model
    figures = model.figures
    table = _table(
        f"{figures.folds}-fold cross-validated, {figures.rows} rows",
        [
            (
                kind,
                _share(s.precision),
                _share(s.recall),
                f"{s.f1:.3f}",
                _threshold(model.thresholds[kind]),
                _share(s.threshold_precision),
                _share(s.threshold_coverage),
            )
            for kind, s in figures.per_type.items()
        ],
    )
    lines = [
        table.rstrip("\n"),
        f"macro-F1 {figures.macro_f1:.3f}; at the thresholds (precision bound "
        f"{figures.min_precision:.0%}, chosen in inner folds) {figures.coverage:.1%} of the rows "
        "get a label",
        f"written to {log_value(str(out))} ({size:,} bytes)",
        "Next: commit it and name it in .github/triage-bot.yml as types: {model: PATH}; "
        "measure it on other rows with triage-bot eval --only types --types-model PATH",
    ]
    return "\n".join(lines) + "\n"


def types_report(model: TypeModel, rows: Sequence[TypeRow]) -> dict[str, Any]:
    """The eval report's ``types`` section: the model's top guess for each row against its
    type, and the figures at the model's thresholds."""
    guesses = model.guesses([(row.title, row.body) for row in rows])
    predictions = [
        Prediction(row.type, guess.type, guess.confidence)
        for row, guess in zip(rows, guesses, strict=True)
    ]
    types: list[TypeName] = list(model.types)
    scores = type_scores(predictions, types)
    at = at_thresholds(predictions, [model.thresholds] * len(predictions), types)
    return {
        "items": len(rows),
        "macro_f1": macro_f1(scores),
        "coverage": at.overall_coverage,
        "per_type": {
            kind: {
                "precision": scores[kind].precision,
                "recall": scores[kind].recall,
                "f1": scores[kind].f1,
                "threshold": model.thresholds[kind],
                "labelled": at.labelled[kind],
                "precision_at_threshold": at.precision[kind],
                "coverage_at_threshold": at.coverage[kind],
            }
            for kind in types
        },
        "outcomes": [
            {
                "id": row.id,
                "expected": row.type,
                "got": guess.type,
                "confidence": guess.confidence,
                "labelled": guess.clears,
            }
            for row, guess in zip(rows, guesses, strict=True)
        ],
    }


def run_types_eval(flags: Mapping[str, Any]) -> str:
    """``eval --only types``: apply the model to the rows, write the report; return the text
    to print.

    Raises:
        ConfigError: no ``--types-model``, unreadable rows, an output that cannot be written;
            :exc:`~bot.errors.TypeModelError` for a model file that cannot be applied.
    """
    path: Path | None = flags.get("types_model")
    if path is None:
        raise ConfigError("eval --only types needs --types-model, the model file to measure")
    check_output(flags["out"], what="--out")
    model = load_type_model(path)
    rows = load_jsonl(flags["issues_path"], TypeRow, what="--issues")[: flags.get("limit")]
    if not rows:
        raise ConfigError(f"--issues {flags['issues_path']}: no type rows")
    section = types_report(model, rows)
    report = {"types_model": str(path), "types": section}
    write_output(
        flags["out"], json.dumps(report, indent=2, ensure_ascii=False) + "\n", what="--out"
    )
    per_type = section["per_type"]
    table = _table(
        f"{len(rows)} rows, model {log_value(str(path))}",
        [
            (
                kind,
                _share(s["precision"]),
                _share(s["recall"]),
                f"{s['f1']:.3f}",
                _threshold(s["threshold"]),
                _share(s["precision_at_threshold"]),
                _share(s["coverage_at_threshold"]),
            )
            for kind, s in per_type.items()
        ],
    )
    return (
        f"{table.rstrip()}\nmacro-F1 {section['macro_f1']:.3f}; at the model's thresholds "
        f"{section['coverage']:.1%} of the rows get a label; report written to "
        f"{log_value(str(flags['out']))}\n"
    )
